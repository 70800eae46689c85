//! `messages` mode's second source: the whole messages a node returns in
//! its update, streamed once each after the node ran, as LangGraph does.
//! A message whose id the run has already seen (streamed as pieces,
//! returned before, or in the state a node started from) is not streamed
//! again.
//!
//! LangGraph streams every message a node returns at the top level of its
//! update, whatever the field's reducer: a message, or the messages of a
//! list. Here that is a messages field (`#[reducer(messages)]`) or any
//! other field whose Rust type names `Message` (`Option<Message>`,
//! `Vec<Message>`), read through the update's JSON, which is only made
//! when `messages` mode is on. Removals and overwrites stream nothing
//! (LangGraph streams no message out of an `Overwrite` either); an
//! overwrite's messages count as seen.
//!
//! A message without an id gets one before it streams, in the update
//! itself, so the stream and the state agree (LangGraph's handler sets the
//! id on the message object the state then holds). A messages field's
//! ids are assigned by `StateUpdate::assign_message_ids`; another field's
//! through the update's JSON, read back as the update — except in a state
//! with an `untracked` field, whose writes JSON does not carry: there the
//! id is the streamed message's alone.

use std::collections::HashSet;

use serde_json::{Map, Value};

use crate::id::new_message_id;
use crate::message::Message;
use crate::schema::{FieldSchema, ReducerKind};
use crate::state::{AgentState, StateUpdate};

/// The JSON names of `S`'s fields that may hold messages.
pub(crate) fn message_fields<S: AgentState>() -> Vec<&'static str> {
    S::schema()
        .fields
        .iter()
        .filter(|f| holds_messages(f))
        .map(|f| f.name)
        .collect()
}

/// A messages field, or a field whose type names `Message` as one of its
/// path segments (`Message`, `Option<Message>`, `Vec<agent_state::Message>`).
fn holds_messages(field: &FieldSchema) -> bool {
    match field.reducer {
        ReducerKind::Messages => true,
        ReducerKind::Untracked => false,
        _ => field
            .ty
            .split(|c: char| !(c.is_alphanumeric() || c == '_'))
            .any(|segment| segment == "Message"),
    }
}

/// The ids of the messages `state` holds in its messages fields.
pub(crate) fn state_ids<S: AgentState>(state: &S, fields: &[&str]) -> Vec<String> {
    if fields.is_empty() {
        return Vec::new();
    }
    let json = state.to_json();
    fields
        .iter()
        .filter_map(|f| json.get(*f))
        .flat_map(|value| match value {
            Value::Array(items) => items.iter().collect(),
            item => vec![item],
        })
        .filter_map(|m| Some(m.get("id")?.as_str()?.to_owned()))
        .collect()
}

/// The messages `update` adds or replaces (in field order, then in the
/// order written), and the ids of those it sets by overwriting. A message
/// without an id is given one, in `update` too where its JSON can say so.
pub(crate) fn returned<U: StateUpdate>(
    update: &mut U,
    fields: &[&str],
) -> (Vec<Message>, Vec<String>) {
    let mut found = Found::default();
    if fields.is_empty() || update.is_empty() {
        return (found.upserts, found.overwritten);
    }
    let Value::Object(mut json) = update.to_json() else {
        return (found.upserts, found.overwritten);
    };
    for field in fields {
        if let Some(value) = json.get_mut(*field) {
            found.read(value);
        }
    }
    if found.ids_given && round_trips::<U::State>() {
        if let Ok(given) = U::from_json(Value::Object(json)) {
            *update = given;
        }
    }
    (found.upserts, found.overwritten)
}

/// Whether an update's JSON carries all its writes (an `untracked`
/// field's never are).
fn round_trips<S: AgentState>() -> bool {
    !S::schema()
        .fields
        .iter()
        .any(|f| f.reducer == ReducerKind::Untracked)
}

/// What one update's message fields hold.
#[derive(Default)]
struct Found {
    upserts: Vec<Message>,
    overwritten: Vec<String>,
    /// Whether a message was given an id in the JSON.
    ids_given: bool,
}

impl Found {
    /// One field's value: a list of messages, one message, or an overwrite.
    fn read(&mut self, value: &mut Value) {
        if let Value::Object(map) = &*value {
            if let Some(items) = overwritten(map) {
                let ids = items.iter().filter_map(|m| m.get("id")?.as_str());
                self.overwritten.extend(ids.map(str::to_owned));
                return;
            }
        }
        match value {
            Value::Array(items) => items.iter_mut().for_each(|item| self.item(item)),
            item @ Value::Object(_) => self.item(item),
            _ => {}
        }
    }

    /// A message written as an upsert; a removal (`{"type": "remove"}`)
    /// or what does not read as a message is none.
    fn item(&mut self, item: &mut Value) {
        let Value::Object(map) = item else { return };
        if map.get("type").and_then(Value::as_str) == Some("remove") {
            return;
        }
        let Ok(mut message) = Message::from_json(Value::Object(map.clone())) else {
            return;
        };
        if message.id.is_none() {
            let id = new_message_id();
            map.insert("id".to_owned(), Value::String(id.clone()));
            message.id = Some(id);
            self.ids_given = true;
        }
        self.upserts.push(message);
    }
}

/// The items an overwrite sets (`{"__overwrite__": v}` or, after a JSON
/// round trip, `{"type": "__overwrite__", "value": v}`), if `map` is one.
fn overwritten(map: &Map<String, Value>) -> Option<&[Value]> {
    let value = match map.get("__overwrite__") {
        Some(v) => v,
        None if map.get("type").and_then(Value::as_str) == Some("__overwrite__") => {
            map.get("value")?
        }
        None => return None,
    };
    Some(match value {
        Value::Array(items) => items,
        item => std::slice::from_ref(item),
    })
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
