//! An authorize hook's filter on metadata: checked once for its shape
//! (what the official server refuses with a 500 naming the mistake), then
//! matched against a thread's or an assistant's metadata, and its plain
//! keys stamped into what a request creates.

use serde_json::{Map, Value};

/// How deep `$or` / `$and` may nest (the official server's limit).
const MAX_NESTING: usize = 2;

/// Why a filter cannot be used: the hook's mistake, said to the caller as
/// a 500 (as the official server says it).
pub(super) fn check(filter: &Value) -> Result<(), String> {
    let Value::Object(fields) = filter else {
        return Err(format!(
            "Auth handler returned an invalid filter: expected a JSON object, got {filter}"
        ));
    };
    check_fields(fields, 0)
}

fn check_fields(fields: &Map<String, Value>, depth: usize) -> Result<(), String> {
    if depth > MAX_NESTING {
        return Err("Your auth handler returned a filter with too many nested operators. The maximum depth for nested operators is 2. Please simplify your filter.".to_owned());
    }
    for (key, value) in fields {
        match key.as_str() {
            "$or" | "$and" => check_groups(key, value, depth)?,
            _ => check_condition(key, value)?,
        }
    }
    Ok(())
}

fn check_groups(op: &str, groups: &Value, depth: usize) -> Result<(), String> {
    let groups = groups.as_array().filter(|g| g.len() >= 2).ok_or_else(|| {
        format!("Your auth handler returned a filter with an invalid {op} operator. The {op} operator must be a list of at least 2 filter objects. Check the filter returned by your auth handler.")
    })?;
    for group in groups {
        let Value::Object(fields) = group else {
            return Err(format!(
                "Your auth handler returned a filter whose {op} holds {group}, not a filter object."
            ));
        };
        check_fields(fields, depth + 1)?;
    }
    Ok(())
}

fn check_condition(key: &str, condition: &Value) -> Result<(), String> {
    let Value::Object(op) = condition else {
        return Ok(());
    };
    match op.keys().next().map(String::as_str) {
        Some("$eq" | "$contains") if op.len() == 1 => Ok(()),
        _ => Err(format!(
            "Your auth handler returned a filter on `{key}` with {condition}: a condition is a value, {{\"$eq\": value}} or {{\"$contains\": value}}."
        )),
    }
}

/// Whether `metadata` matches a filter [`check`] accepted.
pub(super) fn matches(metadata: &Map<String, Value>, filter: &Value) -> bool {
    let Value::Object(fields) = filter else {
        return false;
    };
    fields.iter().all(|(key, condition)| match key.as_str() {
        "$or" => groups(condition).any(|g| matches(metadata, g)),
        "$and" => groups(condition).all(|g| matches(metadata, g)),
        _ => holds(metadata.get(key), condition),
    })
}

fn groups(value: &Value) -> impl Iterator<Item = &Value> {
    value.as_array().into_iter().flatten()
}

/// Whether a metadata value (`None`: the key is missing) meets a
/// condition: equal to a plain value or `$eq`'s, or a list that
/// `$contains` the value (every one of a list's).
fn holds(actual: Option<&Value>, condition: &Value) -> bool {
    let Some(actual) = actual else {
        return false;
    };
    let Some(op) = condition.as_object() else {
        return actual == condition;
    };
    match op.iter().next() {
        Some((name, wanted)) if name == "$eq" => actual == wanted,
        Some((name, wanted)) if name == "$contains" => {
            let Some(list) = actual.as_array() else {
                return false;
            };
            match wanted {
                Value::Array(all) => all.iter().all(|w| list.contains(w)),
                one => list.contains(one),
            }
        }
        _ => false,
    }
}

/// The keys a filter fixes to one value (plain values and `$eq`), which
/// what a request creates is given so that it matches.
pub(super) fn stamp(filter: &Value) -> Map<String, Value> {
    let Value::Object(fields) = filter else {
        return Map::new();
    };
    let fixed = fields.iter().filter_map(|(key, condition)| {
        if key.starts_with('$') {
            return None;
        }
        match condition.as_object() {
            None => Some((key.clone(), condition.clone())),
            Some(op) => Some((key.clone(), op.get("$eq")?.clone())),
        }
    });
    fixed.collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn meta(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn plain_eq_contains_or_and() {
        let m = meta(json!({"owner": "a", "tags": ["x", "y"], "n": 1}));
        assert!(matches(&m, &json!({"owner": "a"})));
        assert!(!matches(&m, &json!({"owner": "b"})));
        assert!(!matches(&m, &json!({"missing": "a"})));
        assert!(matches(&m, &json!({"n": {"$eq": 1}})));
        assert!(matches(&m, &json!({"tags": {"$contains": "x"}})));
        assert!(matches(&m, &json!({"tags": {"$contains": ["x", "y"]}})));
        assert!(!matches(&m, &json!({"tags": {"$contains": ["x", "z"]}})));
        assert!(!matches(&m, &json!({"owner": {"$contains": "a"}})));
        let either = json!({"$or": [{"owner": "b"}, {"n": 1}]});
        assert!(matches(&m, &either));
        let both = json!({"$and": [{"owner": "a"}, {"n": 2}]});
        assert!(!matches(&m, &both));
    }

    #[test]
    fn bad_shapes_are_named() {
        assert!(check(&json!({"owner": "a"})).is_ok());
        assert!(check(&json!(["owner"]))
            .unwrap_err()
            .contains("JSON object"));
        let one = check(&json!({"$or": [{"a": 1}]})).unwrap_err();
        assert!(one.contains("$or operator must be a list of at least 2"));
        let op = check(&json!({"a": {"$gt": 1}})).unwrap_err();
        assert!(op.contains("`a`"));
        let deep = json!({"$or": [{"$or": [{"$or": [{"$or": [{"a": 1}, {"a": 2}]}, {"a": 3}]}, {"a": 4}]}, {"a": 5}]});
        assert!(check(&deep).unwrap_err().contains("too many nested"));
    }

    #[test]
    fn stamps_fixed_keys_only() {
        let f = json!({"owner": "a", "org": {"$eq": "o"}, "tags": {"$contains": "x"}, "$or": []});
        assert_eq!(stamp(&f), meta(json!({"owner": "a", "org": "o"})));
    }
}
