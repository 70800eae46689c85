//! `GET /assistants/{id}/subgraphs[/{namespace}]`: the graph's nodes that
//! are graphs of their own, keyed by namespace (`child`, and with
//! `recurse` their own below as `child|grandchild`), each with the
//! schemas the server knows of it.

use std::collections::HashMap;
use std::sync::Arc;

use agent_state::graph::Outline;
use axum::extract::{Path, Query, State};
use axum::Json;
use serde_json::{json, Map, Value};

use super::unknown;
use crate::app::App;
use crate::auth::Scope;
use crate::error::ApiError;

/// Every subgraph (`?recurse=true`: at every depth).
pub(super) async fn all(
    State(app): State<Arc<App>>,
    scope: Scope,
    Path(id): Path<String>,
    Query(q): Query<HashMap<String, String>>,
) -> Result<Json<Value>, ApiError> {
    listed(&app, &scope, &id, None, &q).await
}

/// The subgraph at `namespace` (and, recursing, those below it).
pub(super) async fn under(
    State(app): State<Arc<App>>,
    scope: Scope,
    Path((id, namespace)): Path<(String, String)>,
    Query(q): Query<HashMap<String, String>>,
) -> Result<Json<Value>, ApiError> {
    listed(&app, &scope, &id, Some(&namespace), &q).await
}

async fn listed(
    app: &App,
    scope: &Scope,
    id: &str,
    namespace: Option<&str>,
    q: &HashMap<String, String>,
) -> Result<Json<Value>, ApiError> {
    let (_, assistant) = app.path_record(id, scope, unknown(scope)).await?;
    let recurse = matches!(q.get("recurse").map(String::as_str), Some("true" | "True"));
    let outline = assistant.graph.outline(usize::MAX);
    let mut found = Map::new();
    collect(&outline, "", namespace, recurse, &mut found);
    Ok(Json(Value::Object(found)))
}

/// Adds `outline`'s subgraphs under `prefix` to `found`: those whose
/// namespace is `namespace` (all when `None`), and with `recurse` theirs.
fn collect(
    outline: &Outline,
    prefix: &str,
    namespace: Option<&str>,
    recurse: bool,
    found: &mut Map<String, Value>,
) {
    for (name, child) in &outline.subgraphs {
        let ns = match prefix {
            "" => name.clone(),
            _ => format!("{prefix}|{name}"),
        };
        let inside = namespace.is_none_or(|n| n == ns || n.starts_with(&format!("{ns}|")));
        if !inside {
            continue;
        }
        if namespace.is_none_or(|n| n == ns) {
            found.insert(ns.clone(), described());
        }
        if recurse || namespace.is_some_and(|n| n != ns) {
            let below = namespace.filter(|n| *n != ns);
            collect(child, &ns, below, recurse, found);
        }
    }
}

/// What is known of a subgraph: its schemas are not kept apart from its
/// parent's (null each, as for a graph registered without schemas).
fn described() -> Value {
    json!({
        "input_schema": null,
        "output_schema": null,
        "state_schema": null,
        "config_schema": {},
        "context_schema": null,
    })
}
