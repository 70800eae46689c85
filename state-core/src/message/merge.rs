//! LangChain's rules for adding message chunks: `merge_content`,
//! `merge_dicts`, `merge_lists` (list items with one `index` merged into
//! one) and `add_usage` (token counts summed, nested counts too).

use std::fmt;

use serde_json::{Map, Value};

use super::Content;

/// Why two chunks cannot be added: LangChain raises a `TypeError` or a
/// `ValueError` in these cases.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum MergeError {
    /// The chunks are of different message types (an AI chunk and a human
    /// one).
    Kind {
        /// The left chunk's type.
        left: &'static str,
        /// The right chunk's type.
        right: &'static str,
    },
    /// A key holds values of two JSON types, or of a type that does not
    /// add (two different booleans or floats).
    Value {
        /// The key, dotted from the top of the map (`response_metadata.x`).
        key: String,
        /// What is wrong.
        reason: String,
    },
    /// Two tool message chunks answer different calls.
    ToolCallId {
        /// The left chunk's call.
        left: String,
        /// The right chunk's call.
        right: String,
    },
}

impl fmt::Display for MergeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Kind { left, right } => {
                write!(f, "cannot add a `{right}` chunk to a `{left}` chunk")
            }
            Self::Value { key, reason } => write!(f, "cannot merge `{key}`: {reason}"),
            Self::ToolCallId { left, right } => write!(
                f,
                "cannot add chunks of tool messages answering different calls (`{left}` and `{right}`)"
            ),
        }
    }
}

impl std::error::Error for MergeError {}

/// LangChain's `merge_content`: two strings concatenate; a string before a
/// list becomes its first item; two lists merge as [`merge_lists`]; a string
/// after a list is appended to its last item when that is a string, else
/// added as an item (an empty string is nothing).
pub(crate) fn merge_content(left: &mut Content, right: Content) -> Result<(), MergeError> {
    match (&mut *left, right) {
        (Content::Text(l), Content::Text(r)) => l.push_str(&r),
        (Content::Text(l), Content::Blocks(r)) => {
            let mut blocks = vec![Value::String(std::mem::take(l))];
            blocks.extend(r);
            *left = Content::Blocks(blocks);
        }
        (Content::Blocks(l), Content::Blocks(r)) => merge_lists(l, r, "content")?,
        (Content::Blocks(l), Content::Text(r)) => match l.last_mut() {
            Some(Value::String(last)) => last.push_str(&r),
            _ if r.is_empty() => {}
            Some(_) => l.push(Value::String(r)),
            None => {}
        },
    }
    Ok(())
}

/// LangChain's `merge_dicts`: a key new to `left`, or `null` there, takes
/// the right value; a `null` on the right changes nothing; strings
/// concatenate (except equal `id`, `output_version` and `model_provider`
/// values, and an `index` starting with `lc_`); objects merge, lists merge
/// ([`merge_lists`]); equal values stay; integers add (except `index`,
/// `created` and `timestamp`, where the right one wins); anything else is
/// an error naming the key.
pub(crate) fn merge_dicts(
    left: &mut Map<String, Value>,
    right: Map<String, Value>,
    path: &str,
) -> Result<(), MergeError> {
    for (key, r) in right {
        let Some(l) = left.get_mut(&key) else {
            left.insert(key, r);
            continue;
        };
        if l.is_null() {
            *l = r;
            continue;
        }
        if r.is_null() {
            continue;
        }
        merge_value(l, r, &key, &format!("{path}.{key}"))?;
    }
    Ok(())
}

/// One key of [`merge_dicts`], both sides not `null`.
fn merge_value(l: &mut Value, r: Value, key: &str, path: &str) -> Result<(), MergeError> {
    let error = |reason: String| MergeError::Value {
        key: path.to_owned(),
        reason,
    };
    match (&mut *l, r) {
        (Value::String(a), Value::String(b)) => {
            let kept = (key == "index" && a.starts_with("lc_"))
                || (matches!(key, "id" | "output_version" | "model_provider") && *a == b);
            if !kept {
                a.push_str(&b);
            }
        }
        (Value::Object(a), Value::Object(b)) => merge_dicts(a, b, path)?,
        (Value::Array(a), Value::Array(b)) => merge_lists(a, b, path)?,
        (a, b) if *a == b => {}
        (Value::Number(a), Value::Number(b)) if a.is_i64() && b.is_i64() => {
            *l = if matches!(key, "index" | "created" | "timestamp") {
                Value::Number(b)
            } else {
                let sum = a
                    .as_i64()
                    .unwrap_or(0)
                    .saturating_add(b.as_i64().unwrap_or(0));
                Value::from(sum)
            };
        }
        (a, b) if std::mem::discriminant(&*a) != std::mem::discriminant(&b) => {
            return Err(error(format!(
                "it is {} on the left and {} on the right",
                crate::error::json_type(a),
                crate::error::json_type(&b)
            )))
        }
        (a, _) => {
            return Err(error(format!(
                "two different {} values do not add",
                crate::error::json_type(a)
            )))
        }
    }
    Ok(())
}

/// LangChain's `merge_lists`: an item of `right` that is an object with an
/// integer `index` (or one starting with `lc_`) merges ([`merge_dicts`],
/// its `type` key left out) into the item of `left` with that index whose
/// `id` does not differ from it; any other item is appended.
pub(crate) fn merge_lists(
    left: &mut Vec<Value>,
    right: Vec<Value>,
    path: &str,
) -> Result<(), MergeError> {
    for item in right {
        let Some(index) = list_index(&item) else {
            left.push(item);
            continue;
        };
        let id = item.get("id").cloned();
        let found = left
            .iter()
            .position(|l| l.get("index") == Some(&index) && ids_agree(l.get("id"), id.as_ref()));
        match (found, item) {
            (Some(at), Value::Object(mut map)) => {
                map.remove("type");
                if let Value::Object(target) = &mut left[at] {
                    merge_dicts(target, map, path)?;
                }
            }
            (_, item) => left.push(item),
        }
    }
    Ok(())
}

/// The `index` that makes a list item merge with another, if it has one.
fn list_index(item: &Value) -> Option<Value> {
    let index = item.as_object()?.get("index")?;
    let merges =
        index.is_i64() || index.is_u64() || index.as_str().is_some_and(|s| s.starts_with("lc_"));
    merges.then(|| index.clone())
}

/// Two items' ids agree when either is missing or empty, or they are equal.
fn ids_agree(left: Option<&Value>, right: Option<&Value>) -> bool {
    let blank = |v: Option<&Value>| v.is_none_or(|v| v.is_null() || v.as_str() == Some(""));
    blank(left) || blank(right) || left == right
}

/// LangChain's `add_usage`: every integer count added, nested objects
/// (`input_token_details`, ..) key by key; a side without usage adds
/// nothing.
pub(crate) fn add_usage(left: &mut Option<Value>, right: Option<Value>) {
    let Some(right) = right else { return };
    match left {
        None => *left = Some(right),
        Some(l) => add_counts(l, right),
    }
}

fn add_counts(left: &mut Value, right: Value) {
    match (left, right) {
        (Value::Object(l), Value::Object(r)) => {
            for (key, value) in r {
                match l.get_mut(&key) {
                    Some(slot) => add_counts(slot, value),
                    None => {
                        l.insert(key, value);
                    }
                }
            }
        }
        (l @ Value::Number(_), Value::Number(r)) => {
            let sum = l
                .as_u64()
                .unwrap_or(0)
                .saturating_add(r.as_u64().unwrap_or(0));
            *l = Value::from(sum);
        }
        (l, r) => *l = r,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn map(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap()
    }

    #[test]
    fn dicts_merge_as_langchain_merges_them() {
        let mut left = map(json!({"model_name": "m", "n": 1, "id": "a", "x": null, "index": 1}));
        let right =
            map(json!({"model_name": "m", "n": 2, "id": "a", "x": "v", "index": 4, "y": 1}));
        merge_dicts(&mut left, right, "response_metadata").unwrap();
        // Strings concatenate (LangChain's own quirk for a repeated
        // model name), except equal ids; integers add, but an index is the
        // right one; null takes the other side.
        assert_eq!(
            Value::Object(left),
            json!({"model_name": "mm", "n": 3, "id": "a", "x": "v", "index": 4, "y": 1})
        );
        let mut same = map(json!({"n": 1}));
        merge_dicts(&mut same, map(json!({"n": 1})), "m").unwrap();
        assert_eq!(same["n"], 1, "equal values stay, as in LangChain");
    }

    #[test]
    fn mismatched_types_are_errors_naming_the_key() {
        let mut left = map(json!({"finish": "stop"}));
        let err = merge_dicts(&mut left, map(json!({"finish": 1})), "response_metadata");
        let err = err.unwrap_err();
        assert!(
            err.to_string().contains("response_metadata.finish"),
            "{err}"
        );
        let mut flags = map(json!({"b": true}));
        assert!(merge_dicts(&mut flags, map(json!({"b": false})), "m").is_err());
    }

    #[test]
    fn list_items_with_one_index_merge() {
        let mut left = vec![json!({"index": 0, "id": "c1", "name": "get", "args": "{\"ci"})];
        let right = vec![
            json!({"index": 0, "id": null, "args": "ty\": 1}", "type": "tool_call_chunk"}),
            json!({"index": 0, "id": "c2", "name": "other", "args": "{}"}),
            json!("plain"),
        ];
        merge_lists(&mut left, right, "tool_call_chunks").unwrap();
        assert_eq!(left[0]["args"], "{\"city\": 1}");
        assert_eq!(left[0]["id"], "c1");
        // Another id at the same index is another call.
        assert_eq!(left[1]["name"], "other");
        assert_eq!(left[2], "plain");
    }

    #[test]
    fn content_merges_strings_and_blocks() {
        let mut c = Content::Text("ab".into());
        merge_content(
            &mut c,
            Content::Blocks(vec![json!({"type": "text", "text": "c"})]),
        )
        .unwrap();
        assert_eq!(
            c,
            Content::Blocks(vec![json!("ab"), json!({"type": "text", "text": "c"})])
        );
        let mut blocks = Content::Blocks(vec![json!({"type": "text", "text": "a", "index": 0})]);
        let more = Content::Blocks(vec![json!({"type": "text", "text": "b", "index": 0})]);
        merge_content(&mut blocks, more).unwrap();
        assert_eq!(
            blocks,
            Content::Blocks(vec![json!({"type": "text", "text": "ab", "index": 0})])
        );
        merge_content(&mut blocks, Content::Text(String::new())).unwrap();
        merge_content(&mut blocks, Content::Text("z".into())).unwrap();
        assert_eq!(blocks.text(), "abz");
    }

    #[test]
    fn usage_adds_nested_counts() {
        let mut usage = Some(
            json!({"input_tokens": 5, "output_tokens": 0, "total_tokens": 5,
            "input_token_details": {"cache_read": 3}}),
        );
        add_usage(
            &mut usage,
            Some(
                json!({"input_tokens": 0, "output_tokens": 10, "total_tokens": 10,
                "output_token_details": {"reasoning": 4}}),
            ),
        );
        assert_eq!(
            usage.unwrap(),
            json!({"input_tokens": 5, "output_tokens": 10, "total_tokens": 15,
                "input_token_details": {"cache_read": 3}, "output_token_details": {"reasoning": 4}})
        );
        let mut none = None;
        add_usage(&mut none, None);
        assert_eq!(none, None);
    }
}
