//! The bodies of the routes that create and change assistants, read
//! field by field: a value of the wrong type is a 422 naming the field,
//! before anything is stored.

use serde_json::{Map, Value};

use crate::error::ApiError;

/// A request body as a JSON object, its fields read by type.
pub(super) struct Form(Map<String, Value>);

/// The 422 for a field whose value has the wrong type, logged.
fn wrong(key: &str, expected: &str, got: &Value) -> ApiError {
    tracing::info!(
        field = key,
        "refused: an assistant body field of the wrong type"
    );
    ApiError::Invalid(format!("{key}: {got} is not of type {expected}"))
}

impl Form {
    /// The body, which must be a JSON object.
    pub(super) fn new(body: Value) -> Result<Self, ApiError> {
        match body {
            Value::Object(map) => Ok(Form(map)),
            other => Err(wrong("body", "\"object\"", &other)),
        }
    }

    /// An object field: absent is `None`, anything but an object a 422.
    pub(super) fn object(&self, key: &str) -> Result<Option<Map<String, Value>>, ApiError> {
        match self.0.get(key) {
            None => Ok(None),
            Some(Value::Object(map)) => Ok(Some(map.clone())),
            Some(other) => Err(wrong(key, "\"object\"", other)),
        }
    }

    /// A text field: absent or null is `None`, anything but text a 422.
    pub(super) fn text(&self, key: &str) -> Result<Option<String>, ApiError> {
        match self.0.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(other) => Err(wrong(key, "\"string\"", other)),
        }
    }

    /// A whole number field (at least 0): absent or null is `None`.
    pub(super) fn count(&self, key: &str) -> Result<Option<i64>, ApiError> {
        match self.0.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => match v.as_i64().filter(|n| *n >= 0) {
                Some(n) => Ok(Some(n)),
                None => Err(wrong(key, "\"integer\" (0 or more)", v)),
            },
        }
    }

    /// A text field that must be one of `allowed`.
    pub(super) fn choice(&self, key: &str, allowed: &[&str]) -> Result<Option<String>, ApiError> {
        let value = self.text(key)?;
        match value {
            Some(v) if !allowed.contains(&v.as_str()) => {
                tracing::info!(field = key, value = %v, "refused: not an allowed value");
                let names: Vec<String> = allowed.iter().map(|a| format!("\"{a}\"")).collect();
                Err(ApiError::Invalid(format!(
                    "{key}: \"{v}\" is not one of {}",
                    names.join(" or ")
                )))
            }
            other => Ok(other),
        }
    }
}

/// An assistant's `config` and `context` as the official server keeps
/// them: each mirrors the other (`config.configurable` is the context);
/// both given is a 400.
pub(super) fn config_and_context(
    config: Option<Map<String, Value>>,
    context: Option<Map<String, Value>>,
) -> Result<(Option<Value>, Option<Value>), ApiError> {
    let configurable = config
        .as_ref()
        .and_then(|c| c.get("configurable"))
        .filter(|c| c.as_object().is_some_and(|m| !m.is_empty()) || !c.is_object())
        .cloned();
    let context = context.filter(|c| !c.is_empty());
    match (configurable, context) {
        (Some(_), Some(_)) => {
            tracing::info!("refused: an assistant with both configurable and context");
            Err(ApiError::BadRequest(
                "Cannot specify both configurable and context: set context alone (the \
                 replacement for configurable since LangGraph 0.6)."
                    .to_owned(),
            ))
        }
        (Some(configurable), None) => Ok((config.map(Value::Object), Some(configurable))),
        (None, Some(context)) => {
            let mut config = config.unwrap_or_default();
            config.insert("configurable".into(), Value::Object(context.clone()));
            Ok((Some(Value::Object(config)), Some(Value::Object(context))))
        }
        (None, None) => Ok((config.map(Value::Object), None)),
    }
}
