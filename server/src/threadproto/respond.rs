//! `input.respond`'s params: one `interrupt_id` and its `response` (with
//! an optional `namespace`, a list of strings), or a `responses` batch of
//! such entries; each malformed case refused with the official server's
//! `invalid_argument` message. A batch resumes its interrupts together,
//! in one run.

use serde_json::{Map, Value};

/// An error code and its message.
pub(crate) type Refusal = (&'static str, String);

fn invalid(message: &str) -> Refusal {
    ("invalid_argument", message.to_owned())
}

/// The interrupts answered and their answers: one `interrupt_id` and
/// its `response`, or each entry of a `responses` batch (answered in one
/// run, as one resume map).
pub(crate) fn entries(params: &Map<String, Value>) -> Result<Vec<(String, Value)>, Refusal> {
    let Some(Value::Array(list)) = params.get("responses") else {
        return Ok(vec![one(
            params,
            "input.respond requires an interrupt_id.",
        )?]);
    };
    if list.is_empty() {
        return Err(invalid("input.respond requires at least one response."));
    }
    list.iter()
        .map(|item| match item.as_object() {
            Some(item) => one(
                item,
                "input.respond responses entries require an interrupt_id.",
            ),
            None => Err(invalid("input.respond responses entries must be objects.")),
        })
        .collect()
}

/// One entry: its `interrupt_id` (refused with `missing` without one), a
/// well-formed `namespace`, and its `response` (`null` when left out).
fn one(entry: &Map<String, Value>, missing: &str) -> Result<(String, Value), Refusal> {
    let Some(id) = entry.get("interrupt_id").and_then(Value::as_str) else {
        return Err(invalid(missing));
    };
    namespace(entry)?;
    let response = entry.get("response").cloned().unwrap_or(Value::Null);
    Ok((id.to_owned(), response))
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
