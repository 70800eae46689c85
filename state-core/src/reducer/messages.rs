//! `messages`: LangGraph's `add_messages` (JS `messagesStateReducer`).
//!
//! The rules, for one update (a batch of operations), applied in order:
//!
//! * a message without an id gets a fresh uuid4 string;
//! * a message whose id is new is appended; one whose id is already present
//!   replaces that message in place (position kept, its type may change), so
//!   a repeated id inside one batch ends with the last one at the first one's
//!   position;
//! * a removal of a present id takes effect at the end of the batch, and a
//!   later message with the same id in the batch cancels it (position kept);
//! * a removal of an id that is not present is an error naming the id, even
//!   when a message with that id comes later in the batch;
//! * remove-all drops the history and whatever came before it in the batch;
//!   what follows applies to the empty history through the same rules (unlike
//!   LangGraph, which copies what follows unchecked).
//!
//! Several updates of one step apply one after the other. Everything is
//! checked first ([`MessagesField::stage`]), against the index plus a small
//! overlay of what the step adds and removes, and only then written
//! ([`MessagesField::commit`]), so an error leaves the history untouched and
//! an update costs O(its operations) on [`Messages`]. A removal compacts the
//! list once per update that removes, which is O(history); appends and
//! in-place replacements never are.

use std::collections::HashSet;

use crate::error::{ErrorKind, StateError};
use crate::messages::{
    build_index, ensure_id, upsert, MessageLike, MessageOp, MessageOps, Messages,
    REMOVE_ALL_MESSAGES,
};
use crate::positions::Positions;
use crate::write::FieldWrite;
use crate::writes::Writes;

/// A field type the `messages` reducer can serve.
#[diagnostic::on_unimplemented(
    message = "`#[reducer(messages)]` cannot serve a field of type `{Self}`",
    label = "not a message list",
    note = "the messages reducer works on `agent_state::Messages<M>` and `Vec<M>` where `M: agent_state::MessageLike`"
)]
pub trait MessagesField: Sized {
    /// The message type.
    type Message: MessageLike;
    /// A checked step, ready to commit.
    type Staged;

    /// Checks a step's updates against the current history, assigning ids to
    /// messages that have none. Changes nothing.
    fn stage(&self, updates: Writes<MessageOps<Self::Message>>)
        -> Result<Self::Staged, StateError>;

    /// Writes a staged step. Cannot fail.
    fn commit(&mut self, staged: Self::Staged);

    /// Gives every message of a whole value (an overwrite) an id where it has
    /// none. [`Messages`] always has them.
    fn assign_ids(&mut self) {}
}

/// Updates whose removals have been checked and whose messages all have ids.
#[derive(Debug)]
pub struct StagedMessages<M> {
    updates: Writes<MessageOps<M>>,
    /// Whether every operation is an upsert (no removal, no remove-all):
    /// the commit then appends and replaces without any bookkeeping.
    upserts_only: bool,
}

/// Where the removed id was asked for: carried by the error.
fn not_found(id: &str) -> StateError {
    StateError::new("", ErrorKind::MessageNotFound { id: id.to_owned() })
}

/// Gives every message of `ops` an id and checks every removal, against the
/// ids `present_before` reports plus what earlier batches of the step did.
/// With `validate`, a message that may not enter a state
/// ([`MessageLike::validate`]) rejects the step. Returns whether every
/// operation is an upsert.
#[inline]
fn check<M: MessageLike>(
    updates: &mut [MessageOps<M>],
    present_before: impl Fn(&str) -> bool,
    validate: bool,
) -> Result<bool, StateError> {
    // Ids are assigned on our own copy: the caller's values are never touched.
    if let [MessageOps(ops)] = updates {
        if let [MessageOp::Upsert(msg)] = &mut ops[..] {
            // Most steps: one message, checked without the loops below.
            if validate {
                msg.validate().map_err(|e| invalid_item(0, &e))?;
            }
            ensure_id(msg);
            return Ok(true);
        }
    }
    let mut any_removal = false;
    let mut any_remove_all = false;
    for update in updates.iter_mut() {
        for (at, op) in update.0.iter_mut().enumerate() {
            match op {
                MessageOp::Upsert(msg) => {
                    if validate {
                        msg.validate().map_err(|e| invalid_item(at, &e))?;
                    }
                    ensure_id(msg);
                }
                // LangGraph's `RemoveMessage(id="__remove_all__")` removes
                // all, and it is stored as such: one meaning, however it was
                // built.
                MessageOp::Remove(id) if id == REMOVE_ALL_MESSAGES => {
                    *op = MessageOp::RemoveAll;
                    any_remove_all = true;
                }
                MessageOp::Remove(_) => any_removal = true,
                MessageOp::RemoveAll => any_remove_all = true,
            }
        }
    }
    if !any_removal {
        // Only removals can fail: appends and replacements always apply.
        return Ok(!any_remove_all);
    }
    check_removals(updates, present_before)?;
    Ok(false)
}

/// The error for item `at` of an update, which may not enter a state.
#[cold]
fn invalid_item(at: usize, why: &str) -> StateError {
    StateError::invalid_value("", format_args!("item {at}: {why}"))
}

/// Checks every removal of a step, in order, against the history and what
/// the step's earlier operations added and removed.
#[inline(never)]
fn check_removals<M: MessageLike>(
    updates: &[MessageOps<M>],
    present_before: impl Fn(&str) -> bool,
) -> Result<(), StateError> {
    // The overlay: what the step so far added to and removed from the history.
    let mut cleared = false;
    let mut added: HashSet<&str> = HashSet::new();
    let mut removed: HashSet<&str> = HashSet::new();
    for update in updates.iter() {
        let ops = after_last_remove_all(&update.0);
        if ops.len() < update.0.len() {
            cleared = true;
            added.clear();
            removed.clear();
        }
        let mut pending: HashSet<&str> = HashSet::new();
        for op in ops {
            let present = |id: &str, added: &HashSet<&str>, removed: &HashSet<&str>| {
                added.contains(id) || (!cleared && !removed.contains(id) && present_before(id))
            };
            match op {
                MessageOp::Upsert(msg) => {
                    let id = msg.id().expect("ids assigned above");
                    if present(id, &added, &removed) {
                        pending.remove(id);
                    } else {
                        added.insert(id);
                    }
                }
                MessageOp::Remove(id) => {
                    if !present(id, &added, &removed) {
                        return Err(not_found(id));
                    }
                    pending.insert(id);
                }
                MessageOp::RemoveAll => unreachable!("sliced after the last remove-all"),
            }
        }
        for id in pending {
            if !added.remove(id) {
                removed.insert(id);
            }
        }
    }
    Ok(())
}

fn after_last_remove_all<M>(ops: &[MessageOp<M>]) -> &[MessageOp<M>] {
    match ops
        .iter()
        .rposition(|op| matches!(op, MessageOp::RemoveAll))
    {
        Some(at) => &ops[at + 1..],
        None => ops,
    }
}

/// Applies checked batches to a list and its id index. Total: a removal of
/// an id that is not there is skipped, an id-less message gets an id.
#[inline]
fn apply<M: MessageLike>(items: &mut Vec<M>, index: &mut Positions, staged: StagedMessages<M>) {
    let updates = match staged.updates {
        // Most steps: one update of one message, without an iterator.
        Writes::One(MessageOps(mut ops)) if staged.upserts_only && ops.len() == 1 => {
            if let Some(MessageOp::Upsert(msg)) = ops.pop() {
                upsert(items, index, msg);
            }
            return;
        }
        updates => updates,
    };
    for MessageOps(ops) in updates {
        if !staged.upserts_only {
            apply_batch(items, index, ops);
        } else {
            for op in ops {
                if let MessageOp::Upsert(msg) = op {
                    upsert(items, index, msg);
                }
            }
        }
    }
}

/// One batch with removals or a remove-all: the removals take effect at its
/// end, unless a later message of the batch re-adds the id.
fn apply_batch<M: MessageLike>(items: &mut Vec<M>, index: &mut Positions, ops: Vec<MessageOp<M>>) {
    let start = match ops
        .iter()
        .rposition(|op| matches!(op, MessageOp::RemoveAll))
    {
        Some(at) => {
            items.clear();
            index.clear();
            at + 1
        }
        None => 0,
    };
    let mut pending: HashSet<String> = HashSet::new();
    for op in ops.into_iter().skip(start) {
        match op {
            MessageOp::Upsert(msg) => {
                if let Some(at) = upsert(items, index, msg) {
                    // A re-add cancels a removal earlier in the batch.
                    if let Some(id) = items[at].id().filter(|_| !pending.is_empty()) {
                        pending.remove(id);
                    }
                }
            }
            MessageOp::Remove(id) => {
                pending.insert(id);
            }
            MessageOp::RemoveAll => unreachable!("skipped past the last remove-all"),
        }
    }
    if !pending.is_empty() {
        items.retain(|msg| msg.id().is_none_or(|id| !pending.contains(id)));
        *index = build_index(items);
    }
}

impl<M: MessageLike> MessagesField for Messages<M> {
    type Message = M;
    type Staged = StagedMessages<M>;

    #[inline]
    fn stage(&self, mut updates: Writes<MessageOps<M>>) -> Result<Self::Staged, StateError> {
        let upserts_only = check(updates.as_mut_slice(), |id| self.contains_id(id), true)?;
        Ok(StagedMessages {
            updates,
            upserts_only,
        })
    }

    #[inline]
    fn commit(&mut self, staged: Self::Staged) {
        let (items, index) = self.parts_mut();
        apply(items, index, staged);
    }
}

/// A plain `Vec` works too, for message types from other crates, at
/// LangGraph's cost: each update builds an id index, O(history).
impl<M: MessageLike> MessagesField for Vec<M> {
    type Message = M;
    type Staged = StagedMessages<M>;

    fn stage(&self, mut updates: Writes<MessageOps<M>>) -> Result<Self::Staged, StateError> {
        let ids: HashSet<&str> = self.iter().filter_map(MessageLike::id).collect();
        let upserts_only = check(updates.as_mut_slice(), |id| ids.contains(id), true)?;
        Ok(StagedMessages {
            updates,
            upserts_only,
        })
    }

    fn commit(&mut self, staged: Self::Staged) {
        let mut index = build_index(self);
        apply(self, &mut index, staged);
    }

    fn assign_ids(&mut self) {
        self.iter_mut().for_each(ensure_id);
    }
}

/// Gives every message of a messages field's write an id where it has none.
pub fn assign_message_ids<T: MessagesField>(write: &mut FieldWrite<T, MessageOps<T::Message>>) {
    match write {
        FieldWrite::Reduce(ops) => {
            for op in &mut ops.0 {
                if let MessageOp::Upsert(msg) = op {
                    ensure_id(msg);
                }
            }
        }
        FieldWrite::Overwrite(value) => value.assign_ids(),
    }
}

/// The messages reducer on its own, for code that does not derive a state:
/// `left` with `right`'s operations applied, or the error naming the id of a
/// removal that found nothing.
///
/// ```
/// use agent_state::{add_messages, ai, human, RemoveMessage, MessageOp};
///
/// let history = vec![human("hi").with_id("1"), ai("hello").with_id("2")];
/// let next = add_messages(history, [
///     MessageOp::from(ai("hello!").with_id("2")), // same id: replaced in place
///     MessageOp::from(RemoveMessage::new("1")),
///     MessageOp::from(human("bye")),              // new: appended, id assigned
/// ]).unwrap();
/// assert_eq!(next.len(), 2);
/// assert_eq!(next[0].text(), "hello!");
/// assert!(next[1].id.is_some());
///
/// let err = add_messages(next, [MessageOp::from(RemoveMessage::new("nope"))]).unwrap_err();
/// assert_eq!(err.to_string(), "attempting to delete a message with an ID that doesn't exist ('nope')");
/// ```
pub fn add_messages<M, O>(
    left: Vec<M>,
    right: impl IntoIterator<Item = O>,
) -> Result<Vec<M>, MessageNotFound>
where
    M: MessageLike,
    O: Into<MessageOp<M>>,
{
    let mut left = left;
    let mut ops = [right.into_iter().collect::<MessageOps<M>>()];
    let upserts_only = {
        // The reducer alone: no state, so no rule on what may enter one.
        let ids: HashSet<&str> = left.iter().filter_map(MessageLike::id).collect();
        check(&mut ops, |id| ids.contains(id), false).map_err(|e| match e.kind() {
            ErrorKind::MessageNotFound { id } => MessageNotFound { id: id.clone() },
            _ => unreachable!("unvalidated, the messages reducer fails only on missing ids"),
        })?
    };
    let [ops] = ops;
    left.commit(StagedMessages {
        updates: Writes::One(ops),
        upserts_only,
    });
    Ok(left)
}

/// A removal named an id that is not in the history.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MessageNotFound {
    /// The id.
    pub id: String,
}

impl std::fmt::Display for MessageNotFound {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "attempting to delete a message with an ID that doesn't exist ('{}')",
            self.id
        )
    }
}

impl std::error::Error for MessageNotFound {}

#[cfg(test)]
mod tests {
    //! One test per rule of LANGGRAPH.md's messages table.
    use super::*;
    use crate::message::{ai, human, Message, MessageType};
    use crate::messages::RemoveMessage;

    fn history(ids: &[&str]) -> Messages {
        ids.iter()
            .map(|id| human(format!("m{id}")).with_id(*id))
            .collect()
    }

    fn ids(msgs: &[Message]) -> Vec<&str> {
        msgs.iter().map(|m| m.id.as_deref().unwrap()).collect()
    }

    fn step(state: &mut Messages, updates: Vec<Vec<MessageOp>>) -> Result<(), StateError> {
        let staged = state.stage(updates.into_iter().map(MessageOps).collect())?;
        state.commit(staged);
        Ok(())
    }

    fn up(msg: Message) -> MessageOp {
        MessageOp::Upsert(msg)
    }

    fn rm(id: &str) -> MessageOp {
        MessageOp::Remove(id.into())
    }

    #[test]
    fn an_invalid_message_later_in_a_batch_is_named_by_its_place() {
        let mut state = history(&["a"]);
        let before = state.clone();
        let bad = Message::new(MessageType::Tool, "42");
        let err = step(&mut state, vec![vec![up(ai("fine")), up(bad)]]).unwrap_err();
        assert!(err.to_string().contains("item 1"), "{err}");
        assert!(err.to_string().contains("tool_call_id"), "{err}");
        assert_eq!(state, before);
    }

    #[test]
    fn missing_ids_are_assigned_without_touching_the_callers_value() {
        let original = ai("no id");
        let mut state = Messages::new();
        step(&mut state, vec![vec![up(original.clone())]]).unwrap();
        assert!(original.id.is_none());
        assert_eq!(state[0].id.as_ref().map(String::len), Some(36));
    }

    #[test]
    fn same_id_replaces_in_place_and_may_change_type() {
        let mut state = history(&["1", "2", "3"]);
        step(&mut state, vec![vec![up(ai("new").with_id("2"))]]).unwrap();
        assert_eq!(ids(&state), ["1", "2", "3"]);
        assert_eq!(state[1].kind, MessageType::Ai);
        assert_eq!(state[1].text(), "new");
    }

    #[test]
    fn new_id_appends_and_later_ops_of_the_batch_see_it() {
        let mut state = history(&["1"]);
        step(
            &mut state,
            vec![vec![
                up(human("a").with_id("2")),
                up(human("b").with_id("2")),
                up(human("c").with_id("3")),
                rm("3"),
            ]],
        )
        .unwrap();
        assert_eq!(ids(&state), ["1", "2"]);
        assert_eq!(state[1].text(), "b");
    }

    #[test]
    fn duplicate_ids_in_a_batch_last_wins_at_first_position() {
        let mut state = Messages::new();
        step(
            &mut state,
            vec![vec![
                up(human("first").with_id("x")),
                up(human("y").with_id("y")),
                up(human("last").with_id("x")),
            ]],
        )
        .unwrap();
        assert_eq!(ids(&state), ["x", "y"]);
        assert_eq!(state[0].text(), "last");
    }

    #[test]
    fn removing_an_absent_id_is_an_error_and_changes_nothing() {
        let mut state = history(&["1", "2"]);
        let before = state.clone();
        let err = step(
            &mut state,
            vec![vec![up(human("new")), rm("1"), rm("nope")]],
        )
        .unwrap_err();
        assert_eq!(
            err.kind(),
            &ErrorKind::MessageNotFound { id: "nope".into() }
        );
        assert_eq!(state, before);
    }

    #[test]
    fn removal_before_the_append_of_its_id_is_an_error() {
        let mut state = history(&["1"]);
        let err = step(
            &mut state,
            vec![vec![rm("2"), up(human("late").with_id("2"))]],
        )
        .unwrap_err();
        assert_eq!(err.kind(), &ErrorKind::MessageNotFound { id: "2".into() });
        assert_eq!(ids(&state), ["1"]);
    }

    #[test]
    fn removal_removes_and_readd_in_the_same_batch_cancels_it() {
        let mut state = history(&["1", "2", "3"]);
        step(&mut state, vec![vec![rm("2")]]).unwrap();
        assert_eq!(ids(&state), ["1", "3"]);

        let mut state = history(&["1", "2", "3"]);
        step(&mut state, vec![vec![rm("2"), up(ai("back").with_id("2"))]]).unwrap();
        assert_eq!(ids(&state), ["1", "2", "3"]);
        assert_eq!(state[1].text(), "back");
    }

    #[test]
    fn remove_all_clears_then_applies_what_follows_with_the_same_rules() {
        let mut state = history(&["1", "2"]);
        step(
            &mut state,
            vec![vec![
                rm("absent-before-marker-is-ignored"),
                MessageOp::from(RemoveMessage::all()),
                up(human("a").with_id("a")),
                up(human("a2").with_id("a")),
                up(human("b").with_id("b")),
                rm("b"),
            ]],
        )
        .unwrap();
        assert_eq!(ids(&state), ["a"]);
        assert_eq!(state[0].text(), "a2");

        // After the marker the history is empty: an old id is gone.
        let mut state = history(&["1", "2"]);
        let err = step(&mut state, vec![vec![MessageOp::RemoveAll, rm("1")]]).unwrap_err();
        assert_eq!(err.kind(), &ErrorKind::MessageNotFound { id: "1".into() });
        assert_eq!(ids(&state), ["1", "2"]);
    }

    #[test]
    fn updates_of_a_step_apply_one_after_the_other() {
        // A removal in a later update of the step sees an append of an
        // earlier one; a removal in an earlier update is final for later ones.
        let mut state = history(&["1"]);
        step(
            &mut state,
            vec![vec![up(human("two").with_id("2"))], vec![rm("2")]],
        )
        .unwrap();
        assert_eq!(ids(&state), ["1"]);

        let mut state = history(&["1", "2"]);
        let err = step(&mut state, vec![vec![rm("1")], vec![rm("1")]]).unwrap_err();
        assert_eq!(err.kind(), &ErrorKind::MessageNotFound { id: "1".into() });
        assert_eq!(ids(&state), ["1", "2"]);

        // Removed in one update, re-added by the next: appended at the end.
        let mut state = history(&["1", "2"]);
        step(
            &mut state,
            vec![vec![rm("1")], vec![up(human("again").with_id("1"))]],
        )
        .unwrap();
        assert_eq!(ids(&state), ["2", "1"]);
    }

    #[test]
    fn vec_fields_follow_the_same_rules() {
        let left: Vec<Message> = history(&["1", "2"]).into_vec();
        let out = add_messages(
            left.clone(),
            [
                up(ai("x").with_id("1")),
                rm("2"),
                up(human("z").with_id("3")),
            ],
        )
        .unwrap();
        assert_eq!(ids(&out), ["1", "3"]);
        assert_eq!(out[0].text(), "x");
        let err = add_messages(left, [rm("9")]).unwrap_err();
        assert_eq!(err.id, "9");
    }

    #[test]
    fn vec_history_with_a_repeated_id_replaces_the_last_of_them() {
        // A plain list loaded from elsewhere may hold one id twice; LangGraph
        // indexes it by a dict comprehension, so the last one is replaced.
        let left = vec![
            human("first").with_id("1"),
            human("other").with_id("2"),
            human("second").with_id("1"),
        ];
        let out = add_messages(left.clone(), [up(ai("new").with_id("1"))]).unwrap();
        let texts: Vec<String> = out.iter().map(Message::text).collect();
        assert_eq!(texts, ["first", "other", "new"]);
        // Through a derived state's step too, and a later step still finds it.
        let mut state = left;
        let staged = state
            .stage(Writes::Many(vec![
                MessageOps(vec![up(ai("a").with_id("1"))]),
                MessageOps(vec![up(ai("b").with_id("1")), rm("2")]),
            ]))
            .unwrap();
        state.commit(staged);
        let texts: Vec<String> = state.iter().map(Message::text).collect();
        assert_eq!(texts, ["first", "b"]);
        // Removal still removes every message with the id.
        let out = add_messages(state, [rm("1")]).unwrap();
        assert!(out.is_empty());
    }

    #[test]
    fn index_stays_right_after_removals() {
        let mut state = history(&["1", "2", "3", "4"]);
        step(&mut state, vec![vec![rm("1"), rm("3")]]).unwrap();
        assert_eq!(state.position("2"), Some(0));
        assert_eq!(state.position("4"), Some(1));
        assert!(!state.contains_id("3"));
        step(&mut state, vec![vec![up(ai("four").with_id("4"))]]).unwrap();
        assert_eq!(state[1].text(), "four");
    }
}
