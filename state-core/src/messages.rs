//! The message history type and the operations an update carries on it.
//!
//! [`Messages`] keeps an id → position index beside the list, so the
//! messages reducer finds "is this id already here?" in O(1): an update costs
//! in proportion to the messages it carries, not to the history. The rules of
//! the reducer itself live in [`crate::reducer::messages`].

use std::fmt;
use std::ops::Deref;

use serde::de::{self, DeserializeOwned, Deserializer};
use serde::ser::{SerializeMap, SerializeSeq, Serializer};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::message::{unwrap_constructor, Message};
use crate::positions::Positions;

/// The id LangChain uses for "remove every message".
pub const REMOVE_ALL_MESSAGES: &str = "__remove_all__";

/// What the messages reducer needs of a message type: an id it can read and
/// assign. Implement it to keep your own message type in a
/// `#[reducer(messages)]` field.
///
/// ```
/// use agent_state::{add_messages, MessageLike};
///
/// #[derive(Debug, Clone, PartialEq)]
/// struct Line { id: Option<String>, text: String }
///
/// impl MessageLike for Line {
///     fn id(&self) -> Option<&str> { self.id.as_deref() }
///     fn set_id(&mut self, id: String) { self.id = Some(id); }
/// }
///
/// let merged = add_messages(
///     vec![Line { id: Some("a".into()), text: "old".into() }],
///     [Line { id: Some("a".into()), text: "new".into() }],
/// ).unwrap();
/// assert_eq!(merged[0].text, "new");
/// ```
pub trait MessageLike {
    /// The message's id, if it has one.
    fn id(&self) -> Option<&str>;
    /// Gives the message an id (called only when it has none).
    fn set_id(&mut self, id: String);

    /// Why the message may not enter a state, if it may not: the reducer
    /// refuses a step carrying one. By default every message may.
    fn validate(&self) -> Result<(), String> {
        Ok(())
    }
}

impl MessageLike for Message {
    fn id(&self) -> Option<&str> {
        self.id.as_deref()
    }

    fn set_id(&mut self, id: String) {
        self.id = Some(id);
    }

    /// [`Message::validate`]: a message that would not read back as itself
    /// (a tool message without `tool_call_id`, ...).
    #[inline]
    fn validate(&self) -> Result<(), String> {
        match Message::validate(self) {
            Ok(()) => Ok(()),
            Err(e) => Err(error_text(&e)),
        }
    }
}

/// A message's error as the text the reducer reports, out of line.
#[cold]
fn error_text(error: &crate::message::MessageError) -> String {
    error.to_string()
}

/// A request to remove the message with `id` (LangChain's `RemoveMessage`);
/// with the id [`REMOVE_ALL_MESSAGES`] it removes every message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoveMessage {
    /// The id of the message to remove.
    pub id: String,
}

impl RemoveMessage {
    /// Removes the message with `id`.
    pub fn new(id: impl Into<String>) -> Self {
        Self { id: id.into() }
    }

    /// Removes every message (LangChain's `RemoveMessage(id=REMOVE_ALL_MESSAGES)`).
    pub fn all() -> Self {
        Self::new(REMOVE_ALL_MESSAGES)
    }
}

/// One operation on a message history.
#[derive(Debug, Clone, PartialEq)]
pub enum MessageOp<M = Message> {
    /// Append the message, or replace the one with the same id in place.
    Upsert(M),
    /// Remove the message with this id; an error if there is none.
    Remove(String),
    /// Remove every message; what follows in the same update applies to the
    /// empty history.
    RemoveAll,
}

impl<M> From<RemoveMessage> for MessageOp<M> {
    fn from(remove: RemoveMessage) -> Self {
        if remove.id == REMOVE_ALL_MESSAGES {
            Self::RemoveAll
        } else {
            Self::Remove(remove.id)
        }
    }
}

impl<M: MessageLike> From<M> for MessageOp<M> {
    #[inline]
    fn from(msg: M) -> Self {
        Self::Upsert(msg)
    }
}

impl From<&str> for MessageOp<Message> {
    /// A bare string is a new human message, as in LangChain.
    fn from(text: &str) -> Self {
        Self::Upsert(Message::from(text))
    }
}

impl From<String> for MessageOp<Message> {
    /// A bare string is a new human message, as in LangChain.
    fn from(text: String) -> Self {
        Self::Upsert(Message::from(text))
    }
}

impl<M: Serialize> Serialize for MessageOp<M> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Upsert(msg) => msg.serialize(serializer),
            Self::Remove(id) => remove_json(serializer, id),
            Self::RemoveAll => remove_json(serializer, REMOVE_ALL_MESSAGES),
        }
    }
}

fn remove_json<S: Serializer>(serializer: S, id: &str) -> Result<S::Ok, S::Error> {
    let mut map = serializer.serialize_map(Some(3))?;
    map.serialize_entry("type", "remove")?;
    map.serialize_entry("content", "")?;
    map.serialize_entry("id", id)?;
    map.end()
}

impl<M: DeserializeOwned> MessageOp<M> {
    /// Reads LangChain's `{"type": "remove", "id": ...}` as a removal and
    /// anything else as a message; a message object LangChain serialised
    /// (`{"lc": 1, "type": "constructor", "id": [.., "RemoveMessage"],
    /// "kwargs": {..}}`) as the flat form of its class.
    pub fn from_json(value: Value) -> Result<Self, String> {
        let value = match value {
            Value::Object(map) => {
                Value::Object(unwrap_constructor(map).map_err(|e| e.to_string())?)
            }
            other => other,
        };
        if let Value::Object(map) = &value {
            if map.get("type").and_then(Value::as_str) == Some("remove") {
                return match map.get("id") {
                    Some(Value::String(id)) if id == REMOVE_ALL_MESSAGES => Ok(Self::RemoveAll),
                    Some(Value::String(id)) => Ok(Self::Remove(id.clone())),
                    _ => Err("a remove message needs a string `id`".to_owned()),
                };
            }
        }
        serde_json::from_value(value)
            .map(Self::Upsert)
            .map_err(|e| e.to_string())
    }
}

impl<'de, M: DeserializeOwned> Deserialize<'de> for MessageOp<M> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Self::from_json(Value::deserialize(deserializer)?).map_err(de::Error::custom)
    }
}

/// The operations one update carries for a messages field, in order.
///
/// Its JSON is what a LangGraph node returns for `messages`: a single message
/// (or string, or remove) or a list of them.
#[derive(Debug, Clone, PartialEq)]
pub struct MessageOps<M = Message>(pub Vec<MessageOp<M>>);

impl<M> Default for MessageOps<M> {
    fn default() -> Self {
        Self(Vec::new())
    }
}

impl<M> MessageOps<M> {
    /// Adds one operation.
    pub fn push(&mut self, op: impl Into<MessageOp<M>>) {
        self.0.push(op.into());
    }
}

impl<M, O: Into<MessageOp<M>>> FromIterator<O> for MessageOps<M> {
    fn from_iter<I: IntoIterator<Item = O>>(iter: I) -> Self {
        Self(iter.into_iter().map(Into::into).collect())
    }
}

impl<M, O: Into<MessageOp<M>>> Extend<O> for MessageOps<M> {
    /// The first items get exactly the room they need: an update of one
    /// message holds one (a `Vec`'s first growth would make room for four,
    /// a block too large for the allocator's fastest path).
    #[inline]
    fn extend<I: IntoIterator<Item = O>>(&mut self, iter: I) {
        let iter = iter.into_iter();
        if self.0.capacity() == 0 {
            self.0.reserve_exact(iter.size_hint().0);
        }
        self.0.extend(iter.map(Into::into));
    }
}

impl<M> IntoIterator for MessageOps<M> {
    type Item = MessageOp<M>;
    type IntoIter = std::vec::IntoIter<MessageOp<M>>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.into_iter()
    }
}

impl<M: Serialize> Serialize for MessageOps<M> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(serializer)
    }
}

impl<'de, M: DeserializeOwned> Deserialize<'de> for MessageOps<M> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        match Value::deserialize(deserializer)? {
            Value::Array(items) => items
                .into_iter()
                .enumerate()
                .map(|(i, item)| {
                    MessageOp::from_json(item)
                        .map_err(|e| de::Error::custom(format_args!("item {i}: {e}")))
                })
                .collect::<Result<_, _>>()
                .map(Self),
            single => MessageOp::from_json(single)
                .map(|op| Self(vec![op]))
                .map_err(de::Error::custom),
        }
    }
}

/// A message history with an id index.
///
/// Every message in it has an id and no two share one. It reads like a slice
/// (`messages.last()`, `messages.iter()`, `messages[0]`); changes go through
/// the messages reducer, or through [`Messages::push`] and friends, which keep
/// the index right. The index holds positions, not ids: an id is stored
/// once, in its message.
#[derive(Clone)]
pub struct Messages<M = Message> {
    items: Vec<M>,
    index: Positions,
}

impl<M> Default for Messages<M> {
    fn default() -> Self {
        Self {
            items: Vec::new(),
            index: Positions::default(),
        }
    }
}

impl<M: MessageLike> Messages<M> {
    /// An empty history.
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends `msg`, or replaces the message with its id in place; a message
    /// without an id gets a new one.
    pub fn push(&mut self, msg: M) {
        upsert(&mut self.items, &mut self.index, msg);
    }

    /// Removes and returns the last message.
    pub fn pop(&mut self) -> Option<M> {
        let last = self.items.last()?;
        let hash = self.index.hash(id_of(last));
        self.index.remove(hash, self.items.len() - 1);
        self.items.pop()
    }

    /// The message with `id`.
    pub fn get_by_id(&self, id: &str) -> Option<&M> {
        self.position(id).map(|at| &self.items[at])
    }

    /// The position of the message with `id`.
    pub fn position(&self, id: &str) -> Option<usize> {
        find_id(&self.index, &self.items, id)
    }

    /// Whether a message with `id` is here.
    pub fn contains_id(&self, id: &str) -> bool {
        self.position(id).is_some()
    }

    /// Removes every message.
    pub fn clear(&mut self) {
        self.items.clear();
        self.index.clear();
    }

    /// The messages as a `Vec`.
    pub fn into_vec(self) -> Vec<M> {
        self.items
    }

    /// Builds a history from messages that must have distinct ids (missing
    /// ids are assigned). Use this to load a stored history: a duplicate id
    /// there is corruption, reported rather than silently merged.
    pub fn try_from_vec(mut items: Vec<M>) -> Result<Self, DuplicateId> {
        let mut index = Positions::with_capacity(items.len());
        for at in 0..items.len() {
            ensure_id(&mut items[at]);
            if find_or_file(&items[..at], &mut index, &items[at]).is_some() {
                let id = id_of(&items[at]).to_owned();
                return Err(DuplicateId { id });
            }
        }
        Ok(Self { items, index })
    }

    pub(crate) fn parts_mut(&mut self) -> (&mut Vec<M>, &mut Positions) {
        (&mut self.items, &mut self.index)
    }
}

/// The id an indexed message is filed under: its id (every message of a
/// [`Messages`] has one; a `Vec` history's messages without one are not
/// indexed).
#[inline]
fn id_of<M: MessageLike>(msg: &M) -> &str {
    msg.id().unwrap_or_default()
}

/// The position of the message with `id` in `items`, through `index`.
#[inline]
pub(crate) fn find_id<M: MessageLike>(index: &Positions, items: &[M], id: &str) -> Option<usize> {
    index.find(index.hash(id), |at| id_of(&items[at]) == id)
}

/// Gives `msg` a fresh id if it has none (LangGraph assigns a uuid4).
#[inline]
pub(crate) fn ensure_id<M: MessageLike>(msg: &mut M) {
    if msg.id().is_none() {
        msg.set_id(crate::id::new_message_id());
    }
}

/// Appends `msg`, or replaces the message with its id in place, keeping
/// `index` right. Returns the position when it replaced one. One probe of
/// the index finds the id or the free slot for it; nothing is allocated
/// for the index.
#[inline]
pub(crate) fn upsert<M: MessageLike>(
    items: &mut Vec<M>,
    index: &mut Positions,
    mut msg: M,
) -> Option<usize> {
    ensure_id(&mut msg);
    let found = find_or_file(items, index, &msg);
    match found {
        Some(at) => {
            items[at] = msg;
            Some(at)
        }
        None => {
            items.push(msg);
            None
        }
    }
}

/// The position of the message with `msg`'s id, or, when there is none,
/// `None`, having filed `msg`'s id at the end of `items`, where the caller
/// then pushes `msg`.
#[inline]
pub(crate) fn find_or_file<M: MessageLike>(
    items: &[M],
    index: &mut Positions,
    msg: &M,
) -> Option<usize> {
    let id = id_of(msg);
    let hash = index.hash(id);
    index.find_or_insert(hash, items.len(), |at| id_of(&items[at]) == id)
}

/// The id → position index of `items`. When a plain list holds one id
/// twice (a `Vec` loaded from elsewhere; [`Messages`] never does), the
/// **last** of them is indexed, so a new message with that id replaces the
/// last one, as LangGraph's `add_messages` does.
pub(crate) fn build_index<M: MessageLike>(items: &[M]) -> Positions {
    let mut index = Positions::with_capacity(items.len());
    for (at, msg) in items.iter().enumerate() {
        if let Some(id) = msg.id() {
            let hash = index.hash(id);
            index.set(hash, at, |p| items[p].id() == Some(id));
        }
    }
    index
}

/// Two messages of one stored history share an id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DuplicateId {
    /// The repeated id.
    pub id: String,
}

impl fmt::Display for DuplicateId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "two messages share the id `{}`", self.id)
    }
}

impl std::error::Error for DuplicateId {}

impl<M> Deref for Messages<M> {
    type Target = [M];

    fn deref(&self) -> &[M] {
        &self.items
    }
}

impl<'a, M> IntoIterator for &'a Messages<M> {
    type Item = &'a M;
    type IntoIter = std::slice::Iter<'a, M>;

    fn into_iter(self) -> Self::IntoIter {
        self.items.iter()
    }
}

impl<M> IntoIterator for Messages<M> {
    type Item = M;
    type IntoIter = std::vec::IntoIter<M>;

    fn into_iter(self) -> Self::IntoIter {
        self.items.into_iter()
    }
}

impl<M: MessageLike> FromIterator<M> for Messages<M> {
    /// Collects with the reducer's rules: a repeated id replaces the earlier
    /// message in place.
    fn from_iter<I: IntoIterator<Item = M>>(iter: I) -> Self {
        let mut out = Self::new();
        for msg in iter {
            out.push(msg);
        }
        out
    }
}

impl<M: MessageLike> From<Vec<M>> for Messages<M> {
    fn from(items: Vec<M>) -> Self {
        items.into_iter().collect()
    }
}

impl<M: PartialEq> PartialEq for Messages<M> {
    fn eq(&self, other: &Self) -> bool {
        self.items == other.items
    }
}

impl<M: fmt::Debug> fmt::Debug for Messages<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(&self.items).finish()
    }
}

impl<M: Serialize> Serialize for Messages<M> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut seq = serializer.serialize_seq(Some(self.items.len()))?;
        for msg in &self.items {
            seq.serialize_element(msg)?;
        }
        seq.end()
    }
}

impl<'de, M: MessageLike + Deserialize<'de>> Deserialize<'de> for Messages<M> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let items = Vec::<M>::deserialize(deserializer)?;
        Self::try_from_vec(items).map_err(de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn remove_json_needs_a_string_id() {
        let err = MessageOp::<Message>::from_json(json!({"type": "remove"})).unwrap_err();
        assert_eq!(err, "a remove message needs a string `id`");
        let err =
            serde_json::from_value::<MessageOps>(json!([{"type": "remove", "id": 3}])).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("item 0: a remove message needs"),
            "{err}"
        );
    }

    #[test]
    fn a_history_with_a_repeated_id_is_refused_naming_it() {
        let err = Messages::try_from_vec(vec![
            crate::human("a").with_id("x"),
            crate::human("b").with_id("y"),
            crate::ai("c").with_id("x"),
        ])
        .unwrap_err();
        assert_eq!(err.id, "x");
        let json = json!([{"type": "human", "content": "a", "id": "x"},
                          {"type": "ai", "content": "b", "id": "x"}]);
        let err = serde_json::from_value::<Messages>(json).unwrap_err();
        assert!(err.to_string().contains('x'), "{err}");
        let ok =
            Messages::try_from_vec(vec![crate::human("a").with_id("x"), crate::ai("b")]).unwrap();
        assert_eq!(ok.position("x"), Some(0));
        assert_eq!(ok[1].id.as_ref().map(String::len), Some(36));
    }

    #[test]
    fn push_pop_and_lookup_keep_the_index() {
        let mut msgs: Messages = Messages::new();
        msgs.push(crate::human("a").with_id("a"));
        msgs.push(crate::human("b"));
        msgs.push(crate::ai("a2").with_id("a"));
        assert_eq!(msgs.len(), 2);
        assert_eq!(
            msgs.get_by_id("a").map(Message::text),
            Some("a2".to_owned())
        );
        let last = msgs.pop().unwrap();
        assert!(!msgs.contains_id(last.id.as_deref().unwrap()));
        assert_eq!(msgs.position("a"), Some(0));
    }
}
