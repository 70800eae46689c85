//! `input.respond`'s params: one `interrupt_id` and its `response` (with
//! an optional `namespace`, a list of strings), or a `responses` batch of
//! such entries; each malformed case refused with the official server's
//! `invalid_argument` message.

use serde_json::{Map, Value};

/// An error code and its message.
pub(crate) type Refusal = (&'static str, String);

fn invalid(message: &str) -> Refusal {
    ("invalid_argument", message.to_owned())
}

/// The interrupt answered and the answer. A batch of more than one
/// entry is refused as `unsupported`: a run here resumes one interrupt
/// with one value.
pub(crate) fn entry(params: &Map<String, Value>) -> Result<(String, Value), Refusal> {
    if let Some(Value::Array(list)) = params.get("responses") {
        if list.is_empty() {
            return Err(invalid("input.respond requires at least one response."));
        }
        let mut entries = Vec::new();
        for item in list {
            let Some(item) = item.as_object() else {
                return Err(invalid("input.respond responses entries must be objects."));
            };
            let Some(id) = item.get("interrupt_id").and_then(Value::as_str) else {
                return Err(invalid(
                    "input.respond responses entries require an interrupt_id.",
                ));
            };
            namespace(item)?;
            entries.push((
                id.to_owned(),
                item.get("response").cloned().unwrap_or(Value::Null),
            ));
        }
        if entries.len() > 1 {
            let message = "input.respond: this server resumes one interrupt per command; send each response in its own input.respond";
            return Err(("unsupported", message.to_owned()));
        }
        return Ok(entries.remove(0));
    }
    let Some(id) = params.get("interrupt_id").and_then(Value::as_str) else {
        return Err(invalid("input.respond requires an interrupt_id."));
    };
    namespace(params)?;
    Ok((
        id.to_owned(),
        params.get("response").cloned().unwrap_or(Value::Null),
    ))
}

/// `namespace`, when given, is a list of strings.
fn namespace(params: &Map<String, Value>) -> Result<(), Refusal> {
    let ok = match params.get("namespace") {
        None => true,
        Some(Value::Array(list)) => list.iter().all(Value::is_string),
        Some(_) => false,
    };
    match ok {
        true => Ok(()),
        false => Err(invalid(
            "input.respond requires namespace to be a list of strings.",
        )),
    }
}
