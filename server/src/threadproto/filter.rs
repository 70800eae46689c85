//! What a `POST /threads/{id}/stream/events` body subscribes to: its
//! `channels`, `namespaces` (prefixes, a segment matching with or
//! without its `:task` suffix) and `depth` below them, and `since` (the
//! last `seq` the client saw); and which events that lets through.

use std::collections::BTreeSet;

use serde_json::Value;

/// The channels a subscription may name (besides any `custom:<name>`).
pub(crate) const CHANNELS: [&str; 9] = [
    "values",
    "updates",
    "checkpoints",
    "messages",
    "tools",
    "custom",
    "lifecycle",
    "input",
    "tasks",
];

/// A stream's subscription.
#[derive(Debug)]
pub(crate) struct Filter {
    channels: BTreeSet<String>,
    namespaces: Option<Vec<Vec<String>>>,
    depth: Option<usize>,
    /// Events up to this `seq` are not sent again.
    pub since: u64,
}

/// Whether `name` is a channel of the protocol.
pub(crate) fn is_channel(name: &str) -> bool {
    CHANNELS.contains(&name) || name.strip_prefix("custom:").is_some_and(|n| !n.is_empty())
}

/// Reads a body; a missing or bad `channels` is an error naming it
/// (the official server's 400 details). A `namespaces`, `depth` or
/// `since` of the wrong kind is ignored, as there.
pub(crate) fn read(body: &Value) -> Result<Filter, String> {
    let list = match body.get("channels") {
        Some(Value::Array(list)) if !list.is_empty() => list,
        _ => return Err("channels is required and must be a non-empty array".to_owned()),
    };
    let bad: Vec<String> = list
        .iter()
        .filter(|c| !c.as_str().is_some_and(is_channel))
        .map(|c| c.as_str().map_or_else(|| python_repr(c), str::to_owned))
        .collect();
    if !bad.is_empty() {
        let shown: Vec<&str> = bad.iter().take(5).map(String::as_str).collect();
        return Err(format!(
            "channels contains unsupported entries: {}. Allowed: values, updates, messages, tools, custom, lifecycle, input, tasks, or any `custom:<name>`.",
            shown.join(", ")
        ));
    }
    let channels = list
        .iter()
        .filter_map(Value::as_str)
        .map(str::to_owned)
        .collect();
    Ok(Filter {
        channels,
        namespaces: namespaces(body.get("namespaces")),
        depth: body
            .get("depth")
            .and_then(Value::as_u64)
            .map(|d| d as usize),
        since: body.get("since").and_then(Value::as_u64).unwrap_or(0),
    })
}

/// The lists of strings among `value`'s entries, `None` when none.
fn namespaces(value: Option<&Value>) -> Option<Vec<Vec<String>>> {
    let kept: Vec<Vec<String>> = value?
        .as_array()?
        .iter()
        .filter_map(|ns| {
            let segments = ns.as_array()?;
            segments
                .iter()
                .map(|s| s.as_str().map(str::to_owned))
                .collect::<Option<Vec<_>>>()
        })
        .collect();
    (!kept.is_empty()).then_some(kept)
}

/// A value as Python's `repr` writes the few kinds a channel list may
/// hold by mistake (numbers, booleans, null, lists, objects).
fn python_repr(value: &Value) -> String {
    match value {
        Value::Null => "None".to_owned(),
        Value::Bool(true) => "True".to_owned(),
        Value::Bool(false) => "False".to_owned(),
        other => other.to_string(),
    }
}

impl Filter {
    /// Whether `event` (an envelope on the tape) goes to this stream.
    pub(crate) fn admits(&self, event: &Value) -> bool {
        if event["seq"].as_u64().unwrap_or(0) <= self.since {
            return false;
        }
        let method = event["method"].as_str().unwrap_or_default();
        let channel = if method == "input.requested" {
            "input"
        } else {
            method
        };
        let wanted = match channel {
            "custom" => {
                let name = event["params"]["data"]["name"].as_str();
                self.channels.contains("custom")
                    || name.is_some_and(|n| self.channels.contains(&format!("custom:{n}")))
            }
            other => self.channels.contains(other),
        };
        wanted && self.in_namespaces(&event["params"]["namespace"])
    }

    fn in_namespaces(&self, ns: &Value) -> bool {
        let Some(prefixes) = &self.namespaces else {
            return true;
        };
        let ns: Vec<&str> = ns
            .as_array()
            .map(|l| l.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        prefixes.iter().any(|prefix| {
            under(&ns, prefix) && self.depth.is_none_or(|d| ns.len() - prefix.len() <= d)
        })
    }
}

/// Whether `ns` starts with `prefix`; a prefix segment without `:`
/// matches a segment whose part before `:` it equals.
fn under(ns: &[&str], prefix: &[String]) -> bool {
    prefix.len() <= ns.len()
        && prefix
            .iter()
            .zip(ns)
            .all(|(p, s)| p == s || (!p.contains(':') && s.split(':').next() == Some(p.as_str())))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn event(method: &str, ns: Value, seq: u64) -> Value {
        json!({"seq": seq, "method": method, "params": {"namespace": ns, "data": {}}})
    }

    #[test]
    fn prefixes_match_with_or_without_the_task_suffix_and_depth_limits() {
        let f =
            read(&json!({"channels": ["values"], "namespaces": [["child"]], "depth": 0})).unwrap();
        assert!(f.admits(&event("values", json!(["child:1"]), 1)));
        assert!(!f.admits(&event("values", json!(["child:1", "x:2"]), 2)));
        assert!(!f.admits(&event("values", json!([]), 3)));
        let root = read(&json!({"channels": ["values"], "namespaces": [[]], "depth": 0})).unwrap();
        assert!(root.admits(&event("values", json!([]), 1)));
        assert!(!root.admits(&event("values", json!(["child:1"]), 1)));
    }

    #[test]
    fn since_input_and_custom_names() {
        let f = read(&json!({"channels": ["input", "custom:progress"], "since": 2})).unwrap();
        assert!(!f.admits(&event("input.requested", json!([]), 2)));
        assert!(f.admits(&event("input.requested", json!([]), 3)));
        let named = json!({"seq": 4, "method": "custom", "params": {"namespace": [], "data": {"name": "progress"}}});
        assert!(f.admits(&named));
        assert!(!f.admits(&event("custom", json!([]), 5)));
    }

    #[test]
    fn bad_channels_are_named() {
        let e = read(&json!({"channels": ["values", "debug", 3, null]})).unwrap_err();
        assert!(
            e.starts_with("channels contains unsupported entries: debug, 3, None."),
            "{e}"
        );
        assert!(read(&json!({"channels": "values"})).is_err());
        assert!(read(&json!([])).is_err());
    }
}
