//! What a typed update costs, and that it stays flat as the history grows.
//!
//! Run with `cargo bench --bench apply`.
//!
//! Every benchmark keeps one `DebateState` alive across iterations and builds
//! its input (a message or an update) with divan's `with_inputs`, so input
//! construction (message, id string, update) is **not** timed. What **is**
//! timed, per iteration, is said on each benchmark; in short:
//!
//! * appends: the write (`apply` / `push`) **plus** the undo that keeps the
//!   history at N (`Messages::pop`, which removes the id from the index).
//!   The popped message is returned, so its drop is deferred by divan and
//!   not timed. Typed and hand-written benches undo identically, so their
//!   ratio is fair;
//! * replacements: the write only (the history does not grow); this includes
//!   dropping the replaced message, in both typed and hand-written forms.
//!
//! `typed_vs_hand` is the typed-update-versus-hand-written comparison; the
//! other groups check that the cost does not depend on the history size N.
//! `union_vs_append` adds one item to a `#[reducer(union)]` list of N items
//! (indexed: a lookup, not a scan) against appending one to a
//! `#[reducer(append)]` list (no lookup at all).

use agent_state::serde::{Deserialize, Serialize};
use agent_state::{ai, human, AgentState, Message, Messages, UnionVec};

fn main() {
    // Fixed batches of 64 iterations, 1000 samples per case: a few seconds in
    // all, and enough samples for a stable median on a noisy machine.
    // Command-line options (`--sample-count`, ...) still override these.
    divan::Divan::default()
        .sample_count(1000)
        .sample_size(64)
        .config_with_args()
        .main();
}

/// History sizes every benchmark runs at.
const SIZES: &[usize] = &[100, 1_000, 10_000, 100_000];

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(crate = "agent_state::serde", rename_all = "lowercase")]
enum DebateStatus {
    Running,
    Completed,
}

/// A finished debate stays finished.
fn status_reducer(current: &DebateStatus, update: DebateStatus) -> Result<DebateStatus, String> {
    match current {
        DebateStatus::Running => Ok(update),
        done if *done == update => Ok(update),
        done => Err(format!("cannot leave {done:?}")),
    }
}

/// The debate state of `tests/debate.rs`, trimmed.
#[derive(AgentState, Debug, Clone, PartialEq)]
struct DebateState {
    /// Complete conversation history.
    #[reducer(messages)]
    messages: Messages,
    /// Current round.
    round: u32,
    /// The debate subject.
    #[reducer(immutable)]
    topic: String,
    /// Workflow status.
    #[reducer(with = status_reducer)]
    #[state(default = DebateStatus::Running)]
    status: DebateStatus,
}

/// A state whose history holds `n` messages with ids `msg-0` .. `msg-{n-1}`.
fn state_with(n: usize) -> DebateState {
    let messages: Messages = (0..n)
        .map(|i| {
            let msg = if i % 2 == 0 {
                human(format!("argument {i}: regulation protects people"))
            } else {
                ai(format!("argument {i}: regulation slows progress"))
            };
            msg.with_id(format!("msg-{i}"))
        })
        .collect();
    let state = DebateState {
        messages,
        topic: "Should AI be regulated?".into(),
        ..Default::default()
    };
    assert_eq!(state.messages.len(), n);
    assert_eq!(state.status, DebateStatus::Running);
    state
}

/// A generator of messages with ids not in any history of [`state_with`].
fn fresh_messages(text: &'static str) -> impl FnMut() -> Message {
    let mut next = 0u64;
    move || {
        next += 1;
        ai(text).with_id(format!("new-{next}"))
    }
}

/// Typed update against the same change written by hand.
mod typed_vs_hand {
    use super::*;

    /// Timed: `state.apply(update)` with one message (fresh id) and `round`,
    /// then `state.messages.pop()`. Not timed: building the update.
    #[divan::bench(args = SIZES)]
    fn typed(bencher: divan::Bencher, n: usize) {
        let mut state = state_with(n);
        let mut gen = fresh_messages("Yes, with care.");
        let mut round = 0u32;
        bencher
            .with_inputs(|| {
                round = round.wrapping_add(1);
                DebateStateUpdate::new().message(gen()).round(round)
            })
            .bench_local_values(|update| {
                state.apply(update).unwrap();
                state.messages.pop()
            });
        assert_eq!(state.messages.len(), n);
    }

    /// Timed: `state.messages.push(msg); state.round = r;`, then
    /// `state.messages.pop()`. Not timed: building the message.
    #[divan::bench(args = SIZES)]
    fn hand(bencher: divan::Bencher, n: usize) {
        let mut state = state_with(n);
        let mut gen = fresh_messages("Yes, with care.");
        let mut round = 0u32;
        bencher
            .with_inputs(|| {
                round = round.wrapping_add(1);
                (gen(), round)
            })
            .bench_local_values(|(msg, r)| {
                state.messages.push(msg);
                state.round = r;
                state.messages.pop()
            });
        assert_eq!(state.messages.len(), n);
    }
}

/// One message appended to a history of N, then popped to keep N fixed.
mod append {
    use super::*;

    /// Timed: `apply` of an update with one message carrying a fresh id, then
    /// `pop`.
    #[divan::bench(args = SIZES)]
    fn with_id(bencher: divan::Bencher, n: usize) {
        let mut state = state_with(n);
        let mut gen = fresh_messages("A new point.");
        bencher
            .with_inputs(|| DebateStateUpdate::new().message(gen()))
            .bench_local_values(|update| {
                state.apply(update).unwrap();
                state.messages.pop()
            });
        assert_eq!(state.messages.len(), n);
    }

    /// Timed: `apply` of an update with one message without id (the reducer
    /// generates a uuid4-form id, part of the timed work), then `pop`.
    #[divan::bench(args = SIZES)]
    fn no_id(bencher: divan::Bencher, n: usize) {
        let mut state = state_with(n);
        bencher
            .with_inputs(|| DebateStateUpdate::new().message(ai("A new point.")))
            .bench_local_values(|update| {
                state.apply(update).unwrap();
                state.messages.pop()
            });
        assert_eq!(state.messages.len(), n);
    }

    /// Baseline for `no_id`: `Messages::push` of a message without id (also
    /// generates the id), then `pop`.
    #[divan::bench(args = SIZES)]
    fn no_id_hand(bencher: divan::Bencher, n: usize) {
        let mut state = state_with(n);
        bencher
            .with_inputs(|| ai("A new point."))
            .bench_local_values(|msg| {
                state.messages.push(msg);
                state.messages.pop()
            });
        assert_eq!(state.messages.len(), n);
    }
}

/// An update whose message id is already in the middle of the history: the
/// message is replaced in place and the history stays at N.
mod replace {
    use super::*;

    /// Timed: `apply` of the update (index lookup, in-place write, drop of
    /// the replaced message). Not timed: building the update.
    #[divan::bench(args = SIZES)]
    fn typed(bencher: divan::Bencher, n: usize) {
        let mut state = state_with(n);
        let id = format!("msg-{}", n / 2);
        bencher
            .with_inputs(|| DebateStateUpdate::new().message(ai("Revised.").with_id(id.as_str())))
            .bench_local_values(|update| state.apply(update).unwrap());
        assert_eq!(state.messages.len(), n);
        assert_eq!(state.messages[n / 2].text(), "Revised.");
    }

    /// Timed: `state.messages.push(msg)` with the existing id (same upsert).
    #[divan::bench(args = SIZES)]
    fn hand(bencher: divan::Bencher, n: usize) {
        let mut state = state_with(n);
        let id = format!("msg-{}", n / 2);
        bencher
            .with_inputs(|| ai("Revised.").with_id(id.as_str()))
            .bench_local_values(|msg| state.messages.push(msg));
        assert_eq!(state.messages.len(), n);
        assert_eq!(state.messages[n / 2].text(), "Revised.");
    }
}

/// One superstep of three nodes: optimist, skeptic, moderator (who also
/// advances the round), each appending one message with a fresh id.
mod apply_all {
    use super::*;

    fn step(gen: &mut impl FnMut() -> Message, round: &mut u32) -> [(Message, Option<u32>); 3] {
        *round = round.wrapping_add(1);
        [
            (gen().with_name("optimist"), None),
            (gen().with_name("skeptic"), None),
            (gen().with_name("moderator"), Some(*round)),
        ]
    }

    /// Timed: `apply_all` of the three updates, then three `pop`s.
    #[divan::bench(args = SIZES)]
    fn typed(bencher: divan::Bencher, n: usize) {
        let mut state = state_with(n);
        let mut gen = fresh_messages("My turn.");
        let mut round = 0u32;
        bencher
            .with_inputs(|| {
                step(&mut gen, &mut round).map(|(msg, r)| {
                    let update = DebateStateUpdate::new().message(msg);
                    match r {
                        Some(r) => update.round(r),
                        None => update,
                    }
                })
            })
            .bench_local_values(|updates| {
                state.apply_all(updates).unwrap();
                [
                    state.messages.pop(),
                    state.messages.pop(),
                    state.messages.pop(),
                ]
            });
        assert_eq!(state.messages.len(), n);
    }

    /// Timed: the same three pushes and round write by hand, then three
    /// `pop`s.
    #[divan::bench(args = SIZES)]
    fn hand(bencher: divan::Bencher, n: usize) {
        let mut state = state_with(n);
        let mut gen = fresh_messages("My turn.");
        let mut round = 0u32;
        bencher
            .with_inputs(|| step(&mut gen, &mut round))
            .bench_local_values(|writes| {
                for (msg, r) in writes {
                    state.messages.push(msg);
                    if let Some(r) = r {
                        state.round = r;
                    }
                }
                [
                    state.messages.pop(),
                    state.messages.pop(),
                    state.messages.pop(),
                ]
            });
        assert_eq!(state.messages.len(), n);
    }
}

/// One list per reducer that grows a collection.
#[derive(AgentState, Debug, Clone, PartialEq)]
struct Lists {
    /// Each item once, in first-seen order.
    #[reducer(union)]
    plugins: UnionVec<String>,
    /// Every item, in order.
    #[reducer(append)]
    log: Vec<String>,
}

/// Lists of `n` distinct items each.
fn lists_with(n: usize) -> Lists {
    let items = || (0..n).map(|i| format!("plugin-{i}"));
    Lists {
        plugins: items().collect(),
        log: items().collect(),
    }
}

/// One new item into a union of N against one appended to a list of N.
mod union_vs_append {
    use super::*;

    /// Timed: `state.apply(update)` adding one item the union does not hold
    /// (a lookup in its index, then a push), then `plugins.pop()`. Not
    /// timed: building the update.
    #[divan::bench(args = SIZES)]
    fn union(bencher: divan::Bencher, n: usize) {
        let mut state = lists_with(n);
        let mut next = 0u64;
        bencher
            .with_inputs(|| {
                next += 1;
                ListsUpdate::new().plugin(format!("new-{next}"))
            })
            .bench_local_values(|update| {
                state.apply(update).unwrap();
                state.plugins.pop()
            });
        assert_eq!(state.plugins.len(), n);
    }

    /// Timed: `state.apply(update)` appending one item, then `log.pop()`.
    #[divan::bench(args = SIZES)]
    fn append(bencher: divan::Bencher, n: usize) {
        let mut state = lists_with(n);
        let mut next = 0u64;
        bencher
            .with_inputs(|| {
                next += 1;
                ListsUpdate::new().add_log(format!("new-{next}"))
            })
            .bench_local_values(|update| {
                state.apply(update).unwrap();
                state.log.pop()
            });
        assert_eq!(state.log.len(), n);
    }
}
