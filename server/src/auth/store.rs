//! The Store's requests as LangGraph's hooks see them (`namespace` as a
//! list, whatever field or query parameter it came in), what a hook
//! changed carried back to the request, and a search narrowed to the
//! hook's filter.

use axum::http::{StatusCode, Uri};
use axum::Json;
use serde_json::{json, Map, Value};

use super::guard::{early, Early};
use super::{Action, Refusal};

/// For each action, the hooks' field and the body's field it comes from.
fn fields(action: Action) -> &'static [(&'static str, &'static str)] {
    match action {
        Action::Put => &[
            ("namespace", "namespace"),
            ("key", "key"),
            ("value", "value"),
            ("index", "index"),
            ("ttl", "ttl"),
        ],
        Action::Delete => &[("namespace", "namespace"), ("key", "key")],
        Action::Search => &[
            ("namespace", "namespace_prefix"),
            ("filter", "filter"),
            ("limit", "limit"),
            ("offset", "offset"),
            ("query", "query"),
        ],
        Action::ListNamespaces => &[
            ("namespace", "prefix"),
            ("suffix", "suffix"),
            ("max_depth", "max_depth"),
            ("limit", "limit"),
            ("offset", "offset"),
        ],
        _ => &[],
    }
}

/// The hooks' value: from the body, or for a read (`GET /store/items`)
/// from the query, its dotted namespace as a list.
pub(super) fn value(action: Action, body: Option<&Map<String, Value>>, uri: &Uri) -> Value {
    if action == Action::Get {
        let query = query_pairs(uri);
        let find = |k: &str| query.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
        let namespace = find("namespace").unwrap_or_default();
        return json!({
            "namespace": namespace.split('.').collect::<Vec<_>>(),
            "key": find("key"),
            "refresh_ttl": find("refresh_ttl").map(|r| r.eq_ignore_ascii_case("true")),
        });
    }
    let body = body.cloned().unwrap_or_default();
    let payload = fields(action).iter().map(|(hook, field)| {
        let v = body.get(*field).cloned().unwrap_or(Value::Null);
        ((*hook).to_owned(), v)
    });
    Value::Object(payload.collect())
}

/// Carries the hooks' changes back: into `body`, or for a read into the
/// URI's query. Whether the body changed.
pub(super) fn write_back(
    action: Action,
    value: &Value,
    body: &mut Map<String, Value>,
    uri: &mut Uri,
) -> bool {
    if action == Action::Get {
        rewrite_query(value, uri);
        return false;
    }
    let mut changed = false;
    for (hook, field) in fields(action) {
        let new = value.get(*hook).cloned().unwrap_or(Value::Null);
        let old = body.get(*field).cloned().unwrap_or(Value::Null);
        if new != old {
            body.insert((*field).to_owned(), new);
            changed = true;
        }
    }
    changed
}

/// A search narrowed to the hook's filter on item values, beside the
/// search's own: a key both fix to different values finds nothing, so
/// the answer is an empty list, here.
pub(super) fn narrow(action: Action, value: &mut Value, filter: &Value) -> Result<(), Early> {
    if action != Action::Search {
        return Ok(());
    }
    let Some(value) = value.as_object_mut() else {
        return Ok(());
    };
    let own = value.entry("filter").or_insert(Value::Null);
    if own.is_null() {
        *own = json!({});
    }
    let (Some(own), Some(extra)) = (own.as_object_mut(), filter.as_object()) else {
        return Ok(());
    };
    for (key, wanted) in extra {
        match own.get(key) {
            None => {
                own.insert(key.clone(), wanted.clone());
            }
            Some(same) if same == wanted => {}
            Some(other) if !other.is_object() && !wanted.is_object() => {
                return Err(early(Json(json!({"items": []}))));
            }
            Some(_) => {
                let detail = format!(
                    "The search's filter on `{key}` cannot be combined with the auth handler's"
                );
                return Err(early(Refusal::new(
                    StatusCode::UNPROCESSABLE_ENTITY,
                    detail,
                )));
            }
        }
    }
    Ok(())
}

/// The query's parameters, decoded.
fn query_pairs(uri: &Uri) -> Vec<(String, String)> {
    let query = axum::extract::Query::<Vec<(String, String)>>::try_from_uri(uri);
    query.map(|q| q.0).unwrap_or_default()
}

/// `GET /store/items`'s query with the hooks' namespace (dotted) and key.
fn rewrite_query(value: &Value, uri: &mut Uri) {
    let namespace: Vec<&str> = value
        .get("namespace")
        .and_then(Value::as_array)
        .map(|ns| ns.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut pairs = query_pairs(uri);
    pairs.retain(|(k, _)| k != "namespace" && k != "key");
    pairs.push(("namespace".to_owned(), namespace.join(".")));
    if let Some(key) = value.get("key").and_then(Value::as_str) {
        pairs.push(("key".to_owned(), key.to_owned()));
    }
    let query: Vec<String> = pairs
        .iter()
        .map(|(k, v)| format!("{}={}", encode(k), encode(v)))
        .collect();
    let at = format!("{}?{}", uri.path(), query.join("&"));
    if let Ok(new) = at.parse() {
        *uri = new;
    }
}

/// Percent-encodes all but the unreserved characters.
fn encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~".contains(&byte) {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_read_query_is_rewritten_with_the_hooks_namespace() {
        let mut uri: Uri = "/store/items?namespace=a.b&key=k%201&refresh_ttl=true"
            .parse()
            .unwrap();
        let mut v = value(Action::Get, None, &uri);
        assert_eq!(v["namespace"], json!(["a", "b"]));
        assert_eq!(v["key"], json!("k 1"));
        v["namespace"] = json!(["user 1", "a", "b"]);
        write_back(Action::Get, &v, &mut Map::new(), &mut uri);
        let back = value(Action::Get, None, &uri);
        assert_eq!(back["namespace"], json!(["user 1", "a", "b"]));
        assert_eq!(back["key"], json!("k 1"));
        assert_eq!(back["refresh_ttl"], json!(true));
    }
}
