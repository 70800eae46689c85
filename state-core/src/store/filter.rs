//! A search's filter on item values, with LangGraph's semantics: each
//! top-level field of the filter must match the item's field, by
//! equality (nested objects and lists compared field by field) or by
//! operators (`$eq`, `$ne`, `$gt`, `$gte`, `$lt`, `$lte`).

use serde_json::{Map, Number, Value};

use super::StoreError;

/// The operators a filter may use, as LangGraph's stores accept them.
const OPERATORS: [&str; 6] = ["$eq", "$ne", "$gt", "$gte", "$lt", "$lte"];

/// A checked search filter: unknown operators and order comparisons with
/// something other than a number are refused when it is made, so a search
/// never fails half-way through.
///
/// ```
/// use agent_state::store::Filter;
/// use serde_json::json;
///
/// let filter = Filter::from_json(json!({"kind": "note", "score": {"$gte": 3}}))?;
/// assert!(filter.matches(json!({"kind": "note", "score": 4}).as_object().unwrap()));
/// assert!(Filter::from_json(json!({"score": {"$near": 3}})).is_err());
/// # Ok::<(), agent_state::store::StoreError>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Filter {
    fields: Map<String, Value>,
}

impl Filter {
    /// No condition: every item matches.
    pub fn new() -> Self {
        Filter::default()
    }

    /// The filter a JSON object writes (`{"field": value}` or
    /// `{"field": {"$op": value}}`), checked; `null` is no filter.
    pub fn from_json(filter: Value) -> Result<Self, StoreError> {
        match filter {
            Value::Null => Ok(Filter::default()),
            Value::Object(fields) => {
                for (field, condition) in &fields {
                    check_condition(field, condition)?;
                }
                Ok(Filter { fields })
            }
            other => Err(StoreError::InvalidFilter {
                field: String::new(),
                reason: format!("a filter is a JSON object, not {}", kind(&other)),
            }),
        }
    }

    /// Adds `field == value`.
    pub fn eq(self, field: impl Into<String>, value: impl Into<Value>) -> Self {
        self.with(field.into(), value.into())
    }

    /// Adds `field` compared with `operator` (`"$gt"`, ...) to `value`,
    /// checked as [`from_json`](Self::from_json) checks it.
    pub fn op(
        self,
        field: impl Into<String>,
        operator: &str,
        value: impl Into<Value>,
    ) -> Result<Self, StoreError> {
        let field = field.into();
        let mut condition = match self.fields.get(&field) {
            Some(Value::Object(ops)) if is_operators(ops) => ops.clone(),
            _ => Map::new(),
        };
        condition.insert(operator.to_owned(), value.into());
        let condition = Value::Object(condition);
        check_condition(&field, &condition)?;
        Ok(self.with(field, condition))
    }

    fn with(mut self, field: String, condition: Value) -> Self {
        self.fields.insert(field, condition);
        self
    }

    /// Whether there is no condition.
    pub fn is_empty(&self) -> bool {
        self.fields.is_empty()
    }

    /// The filter as JSON, as [`from_json`](Self::from_json) reads it.
    pub fn as_json(&self) -> &Map<String, Value> {
        &self.fields
    }

    /// Whether an item's value matches every condition.
    pub fn matches(&self, value: &Map<String, Value>) -> bool {
        self.fields
            .iter()
            .all(|(field, condition)| compare(value.get(field), condition))
    }
}

fn is_operators(condition: &Map<String, Value>) -> bool {
    condition.keys().any(|key| key.starts_with('$'))
}

fn check_condition(field: &str, condition: &Value) -> Result<(), StoreError> {
    let Value::Object(inner) = condition else {
        return Ok(());
    };
    if !is_operators(inner) {
        for (key, nested) in inner {
            check_condition(&format!("{field}.{key}"), nested)?;
        }
        return Ok(());
    }
    for (operator, operand) in inner {
        let refuse = |reason: String| {
            Err(StoreError::InvalidFilter {
                field: field.to_owned(),
                reason,
            })
        };
        if !OPERATORS.contains(&operator.as_str()) {
            return refuse(format!(
                "unknown operator `{operator}`; expected one of {}",
                OPERATORS.join(", ")
            ));
        }
        if is_order(operator) && as_f64(operand).is_none() {
            return refuse(format!(
                "`{operator}` compares numbers, not {}",
                kind(operand)
            ));
        }
    }
    Ok(())
}

fn is_order(operator: &str) -> bool {
    matches!(operator, "$gt" | "$gte" | "$lt" | "$lte")
}

/// LangGraph's `_compare_values`: a missing field reads as `null`.
fn compare(have: Option<&Value>, want: &Value) -> bool {
    match want {
        Value::Object(want) if is_operators(want) => want
            .iter()
            .all(|(operator, operand)| apply(have, operator, operand)),
        Value::Object(want) => match have {
            Some(Value::Object(have)) => want.iter().all(|(k, v)| compare(have.get(k), v)),
            _ => false,
        },
        Value::Array(want) => match have {
            Some(Value::Array(have)) => {
                have.len() == want.len() && have.iter().zip(want).all(|(h, w)| compare(Some(h), w))
            }
            _ => false,
        },
        scalar => equal(have.unwrap_or(&Value::Null), scalar),
    }
}

fn apply(have: Option<&Value>, operator: &str, operand: &Value) -> bool {
    let have = have.unwrap_or(&Value::Null);
    match operator {
        "$eq" => equal(have, operand),
        "$ne" => !equal(have, operand),
        _ => match (as_f64(have), as_f64(operand)) {
            (Some(a), Some(b)) => match operator {
                "$gt" => a > b,
                "$gte" => a >= b,
                "$lt" => a < b,
                _ => a <= b,
            },
            // Python raises on `float(None)`; an item without the field,
            // or with a non-number, simply does not match.
            _ => false,
        },
    }
}

/// JSON equality with numbers compared by value (`1 == 1.0`, as Python).
fn equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => number_eq(x, y),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| equal(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| equal(v, w)))
        }
        _ => a == b,
    }
}

fn number_eq(x: &Number, y: &Number) -> bool {
    match (x.as_i64(), y.as_i64()) {
        (Some(a), Some(b)) => a == b,
        _ => x.as_f64() == y.as_f64(),
    }
}

fn as_f64(value: &Value) -> Option<f64> {
    value.as_f64()
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn matches(filter: Value, value: Value) -> bool {
        Filter::from_json(filter)
            .unwrap()
            .matches(value.as_object().unwrap())
    }

    #[test]
    fn equality_operators_and_nesting_follow_langgraph() {
        assert!(matches(json!({"a": 1}), json!({"a": 1.0})));
        assert!(matches(
            json!({"a": {"b": [1, 2]}}),
            json!({"a": {"b": [1, 2], "c": 3}})
        ));
        assert!(!matches(
            json!({"a": {"b": [1]}}),
            json!({"a": {"b": [1, 2]}})
        ));
        assert!(matches(
            json!({"n": {"$gt": 1, "$lte": 3}}),
            json!({"n": 3})
        ));
        assert!(!matches(json!({"n": {"$gt": 1}}), json!({"m": 3})));
        assert!(matches(json!({"n": {"$ne": "x"}}), json!({})));
        assert!(matches(json!({"gone": null}), json!({})));
    }

    #[test]
    fn bad_filters_name_the_field() {
        let err = Filter::from_json(json!({"a": {"b": {"$near": 1}}})).unwrap_err();
        assert!(err.to_string().contains("`a.b`"), "{err}");
        assert!(err.to_string().contains("$near"), "{err}");
        let err = Filter::from_json(json!({"a": {"$gt": "x"}})).unwrap_err();
        assert!(err.to_string().contains("compares numbers"), "{err}");
        assert!(Filter::from_json(json!([1])).is_err());
    }
}
