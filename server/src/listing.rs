//! What the search endpoints share: `sort_by` / `sort_order` over a list
//! of JSON records, and `select` (only the fields named).

use serde_json::{Map, Value};

use crate::error::ApiError;

/// Sorts `list` by the text of field `sort_by` (one of `keys`; `default`
/// when none is given), descending unless `sort_order` is `"asc"`.
pub(crate) fn sort(
    list: &mut [Value],
    sort_by: Option<&str>,
    sort_order: Option<&str>,
    keys: &[&str],
    default: &str,
) -> Result<(), ApiError> {
    let key = sort_by.unwrap_or(default);
    if !keys.contains(&key) {
        return Err(ApiError::Invalid(format!(
            "sort_by: `{key}` is not one of {}",
            keys.join(", ")
        )));
    }
    let descending = match sort_order.unwrap_or("desc") {
        "asc" => false,
        "desc" => true,
        other => {
            return Err(ApiError::Invalid(format!(
                "sort_order: `{other}` is not one of \"asc\", \"desc\""
            )))
        }
    };
    list.sort_by_key(|v| v[key].as_str().unwrap_or_default().to_owned());
    if descending {
        list.reverse();
    }
    Ok(())
}

/// Only the `select`ed fields of a record (all when none is named); a
/// name that is not one of `keys` is a 422 naming it.
pub(crate) fn select(record: Value, select: &[String], keys: &[&str]) -> Result<Value, ApiError> {
    if let Some(bad) = select.iter().find(|k| !keys.contains(&k.as_str())) {
        return Err(ApiError::Invalid(format!(
            "select: `{bad}` is not one of {}",
            keys.join(", ")
        )));
    }
    let Value::Object(all) = record else {
        return Ok(record);
    };
    if select.is_empty() {
        return Ok(Value::Object(all));
    }
    let mut out = Map::new();
    for key in select {
        out.insert(key.clone(), all.get(key).cloned().unwrap_or(Value::Null));
    }
    Ok(Value::Object(out))
}
