//! `messages` mode's second source: the whole messages a node returns in
//! its update, streamed once each after the node ran, as LangGraph does.
//! A message whose id the run has already seen (streamed as pieces,
//! returned before, or in the state a node started from) is not streamed
//! again.
//!
//! Messages are found in the update's messages fields (`#[reducer(messages)]`)
//! through its JSON, which is only made when `messages` mode is on. Removals
//! and overwrites stream nothing (LangGraph streams no message out of an
//! `Overwrite` either); an overwrite's messages count as seen.

use std::collections::HashSet;

use serde_json::Value;

use crate::message::Message;
use crate::schema::ReducerKind;
use crate::state::{AgentState, StateUpdate};

/// The JSON names of `S`'s messages fields.
pub(crate) fn message_fields<S: AgentState>() -> Vec<&'static str> {
    S::schema()
        .fields
        .iter()
        .filter(|f| matches!(f.reducer, ReducerKind::Messages))
        .map(|f| f.name)
        .collect()
}

/// The ids of the messages `state` holds in its messages fields.
pub(crate) fn state_ids<S: AgentState>(state: &S, fields: &[&str]) -> Vec<String> {
    if fields.is_empty() {
        return Vec::new();
    }
    let json = state.to_json();
    fields
        .iter()
        .filter_map(|f| json.get(*f)?.as_array())
        .flatten()
        .filter_map(|m| Some(m.get("id")?.as_str()?.to_owned()))
        .collect()
}

/// The messages `update` adds or replaces (in field order, then in the
/// order written), and the ids of those it sets by overwriting.
pub(crate) fn returned<U: StateUpdate>(update: &U, fields: &[&str]) -> (Vec<Message>, Vec<String>) {
    let (mut upserts, mut overwritten) = (Vec::new(), Vec::new());
    if fields.is_empty() || update.is_empty() {
        return (upserts, overwritten);
    }
    let Value::Object(mut json) = update.to_json() else {
        return (upserts, overwritten);
    };
    for field in fields {
        match json.remove(*field) {
            Some(Value::Array(items)) => upserts.extend(items.into_iter().filter_map(message)),
            Some(Value::Object(wrapped)) => {
                let items = wrapped
                    .get("__overwrite__")
                    .or_else(|| wrapped.get("value"))
                    .and_then(Value::as_array);
                overwritten.extend(
                    items
                        .into_iter()
                        .flatten()
                        .filter_map(|m| Some(m.get("id")?.as_str()?.to_owned())),
                );
            }
            _ => {}
        }
    }
    (upserts, overwritten)
}

/// A message written as an upsert; a removal (`{"type": "remove"}`) or
/// what does not read as a message is none.
fn message(item: Value) -> Option<Message> {
    if !item.is_object() || item.get("type").and_then(Value::as_str) == Some("remove") {
        return None;
    }
    Message::from_json(item).ok()
}

/// The ids a run's `messages` stream has shown or that a node started
/// from: what it does not stream again.
#[derive(Default)]
pub(crate) struct Seen {
    ids: HashSet<String>,
}

impl Seen {
    /// Records `id`; whether it was new.
    pub(crate) fn insert(&mut self, id: &str) -> bool {
        if self.ids.contains(id) {
            return false;
        }
        self.ids.insert(id.to_owned())
    }

    /// Records every id of `ids`.
    pub(crate) fn extend(&mut self, ids: impl IntoIterator<Item = String>) {
        self.ids.extend(ids);
    }
}
