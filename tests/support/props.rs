//! The round-trip property, over every field type and reducer of
//! [`Everything`]: whatever `save_step` accepts reloads equal to the state
//! in memory, and an update's JSON reads back as the update; what it
//! refuses changes and stores nothing. Run against memory and SQLite
//! (`tests/checkpoint.rs`) and PostgreSQL (`tests/checkpoint_postgres.rs`).
//!
//! The values reach for what breaks a round trip: floats of every class
//! (NaN, infinities, extremes, subnormals, -0.0, integral floats of 16+
//! digits), any unicode (astral, control characters, U+0000), JSON nested
//! around [`MAX_FIELD_DEPTH`], keys shaped like the store's markers, every
//! message type with tool calls, content blocks and the fields that do not
//! read back (`Some(null)`, tool messages without a call id).

use std::cell::Cell;
use std::collections::{BTreeMap, HashMap};

use agent_state::checkpoint::{Checkpointer, SnapshotPolicy, Thread};
use agent_state::serde_json::{Map, Number, Value};
use agent_state::{
    Content, FieldWrite, Message, MessageOp, MessageOps, MessageType, Messages, StateUpdate,
    ToolCall, ToolStatus, MAX_FIELD_DEPTH,
};
use proptest::prelude::*;
use proptest::sample::select;
use proptest::test_runner::{Config, TestCaseError, TestRunner};

use super::everything::{save_checked, Everything, EverythingUpdate, Mode, Profile, ProfileUpdate};

/// One case: steps of node writes, and whether to snapshot every step.
#[derive(Debug, Clone)]
pub struct Case {
    /// Each step's writes, one update per node.
    pub steps: Vec<Vec<EverythingUpdate>>,
    /// Snapshot after every step (else never: loads replay everything).
    pub snapshot_every_step: bool,
}

/// Outcomes over a whole run, to show the generator reaches both.
#[derive(Debug, Default)]
pub struct Outcomes {
    /// Steps stored and reloaded equal.
    pub stored: Cell<usize>,
    /// Steps refused, nothing stored.
    pub refused: Cell<usize>,
}

/// Runs `cases` cases through `play` (which stores them in one backend).
pub fn run(cases: u32, play: impl Fn(&Case) -> Result<(), String>) {
    // No regression files: a failure prints its minimal case.
    let config = Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    };
    let mut runner = TestRunner::new(config);
    runner
        .run(&case(), |case| play(&case).map_err(TestCaseError::fail))
        .unwrap_or_else(|e| panic!("{e}"));
}

/// Plays one case on a new thread `thread_id` of `a`, reloading through
/// `b`; panics (inside `save_checked`) when a rule breaks.
pub async fn play<C: Checkpointer>(
    a: &C,
    b: &C,
    thread_id: &str,
    case: &Case,
    outcomes: &Outcomes,
) -> Result<(), String> {
    let initial = Everything {
        origin: "\u{1F600} origin \u{7}".into(),
        // `char::default()` is U+0000, which PostgreSQL cannot store.
        letter: 'a',
        ..Everything::default()
    };
    let mut thread = Thread::create(a, thread_id, initial)
        .await
        .map_err(|e| e.to_string())?;
    thread.set_snapshot_policy(if case.snapshot_every_step {
        SnapshotPolicy {
            ratio: 0.0,
            min_bytes: 0,
        }
    } else {
        SnapshotPolicy::never()
    });
    for step in &case.steps {
        let writes: Vec<(String, EverythingUpdate)> = step
            .iter()
            .enumerate()
            .map(|(i, u)| (format!("n{i}"), u.clone()))
            .collect();
        let stored = save_checked(&mut thread, writes)
            .await
            .map_err(|e| e.to_string())?;
        if stored {
            outcomes.stored.set(outcomes.stored.get() + 1);
            for update in step {
                let back = EverythingUpdate::from_json(update.to_json())
                    .map_err(|e| format!("an accepted update's JSON does not read back: {e}"))?;
                prop_assert_eq_str(&back, &normalized(update))?;
            }
        } else {
            outcomes.refused.set(outcomes.refused.get() + 1);
        }
    }
    let loaded = Thread::<Everything, _>::open(b, thread_id)
        .await
        .map_err(|e| e.to_string())?;
    prop_assert_eq_str(loaded.state(), thread.state())
}

/// `Remove("__remove_all__")` is LangChain's remove-all, with the same
/// JSON: an update holding it reads back holding `RemoveAll`.
fn normalized(update: &EverythingUpdate) -> EverythingUpdate {
    let fix = |ops: &mut MessageOps| {
        for op in &mut ops.0 {
            if matches!(op, MessageOp::Remove(id) if id == agent_state::REMOVE_ALL_MESSAGES) {
                *op = MessageOp::RemoveAll;
            }
        }
    };
    let mut update = update.clone();
    if let Some(FieldWrite::Reduce(ops)) = &mut update.messages {
        fix(ops);
    }
    if let Some(FieldWrite::Reduce(ops)) = &mut update.transcript {
        fix(ops);
    }
    update
}

fn prop_assert_eq_str<T: PartialEq + std::fmt::Debug>(left: &T, right: &T) -> Result<(), String> {
    if left == right {
        Ok(())
    } else {
        Err(format!("{left:#?}\n!=\n{right:#?}"))
    }
}

// ---- values ----------------------------------------------------------------

const KEYS: &[&str] = &[
    "__overwrite__",
    "__reduce__",
    "type",
    "value",
    "id",
    "a",
    "",
    "\u{0}",
    "\u{1F600}",
];

const WORDS: &[&str] = &[
    "__overwrite__",
    "__reduce__",
    "__remove_all__",
    "remove",
    "tool",
    "",
    "\u{0}",
    "\u{1}\u{1f}\u{7f}",
    "\u{10FFFF}",
    "\"\\",
];

fn float() -> BoxedStrategy<f64> {
    prop_oneof![
        4 => any::<f64>(),
        3 => select(vec![
            f64::MAX, f64::MIN, f64::MIN_POSITIVE, -f64::MIN_POSITIVE, 5e-324, -5e-324,
            2.225_073_858_507_201e-308, -0.0, 0.0, 1e16, -1e16, 1.5e19, -9.2e18, 1e15,
            9_007_199_254_740_993.0, 0.1, 1.0 / 3.0, f64::NAN, f64::INFINITY, f64::NEG_INFINITY,
        ]),
        1 => -1e20..1e20f64,
        1 => any::<i64>().prop_map(|i| i as f64),
    ]
    .boxed()
}

fn text() -> BoxedStrategy<String> {
    let odd_char = prop_oneof![
        3 => any::<char>(),
        1 => select(vec!['\0', '\u{1F600}', '\u{10FFFF}', '\u{7}', '\u{7f}', '"', '\\', '\u{FEFF}']),
    ];
    prop_oneof![
        2 => any::<String>(),
        1 => select(WORDS).prop_map(str::to_owned),
        2 => prop::collection::vec(odd_char, 0..6).prop_map(|c| c.into_iter().collect()),
    ]
    .boxed()
}

fn key() -> BoxedStrategy<String> {
    prop_oneof![select(KEYS).prop_map(str::to_owned), text()].boxed()
}

fn leaf() -> BoxedStrategy<Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        float().prop_map(|f| Number::from_f64(f).map_or(Value::Null, Value::Number)),
        text().prop_map(Value::String),
    ]
    .boxed()
}

/// Any JSON, shallow; now and then nested around the depth limit, or an
/// object shaped like a marker.
fn json() -> BoxedStrategy<Value> {
    let shallow = leaf().prop_recursive(5, 32, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map(key(), inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    });
    prop_oneof![
        8 => shallow,
        1 => deep(),
        1 => (select(KEYS), leaf()).prop_map(|(k, v)| single(k, v)),
        1 => (select(WORDS), leaf()).prop_map(|(t, v)| {
            let mut m = Map::new();
            m.insert("type".into(), Value::from(t));
            m.insert("value".into(), v);
            Value::Object(m)
        }),
    ]
    .boxed()
}

fn single(key: &str, value: Value) -> Value {
    let mut map = Map::new();
    map.insert(key.to_owned(), value);
    Value::Object(map)
}

/// Arrays and objects nested from 3 below the limit to 2 above it.
fn deep() -> BoxedStrategy<Value> {
    (
        MAX_FIELD_DEPTH - 3..=MAX_FIELD_DEPTH + 2,
        leaf(),
        any::<u64>(),
        select(KEYS),
    )
        .prop_map(|(depth, leaf, pattern, key)| {
            (0..depth).fold(leaf, |inner, level| {
                if pattern >> (level % 64) & 1 == 0 {
                    Value::Array(vec![inner])
                } else {
                    single(key, inner)
                }
            })
        })
        .boxed()
}

fn object() -> BoxedStrategy<Map<String, Value>> {
    prop::collection::btree_map(key(), json(), 0..3)
        .prop_map(|m| m.into_iter().collect())
        .boxed()
}

fn json_map() -> BoxedStrategy<BTreeMap<String, Value>> {
    prop::collection::btree_map(key(), json(), 0..3).boxed()
}

// ---- messages --------------------------------------------------------------

fn message() -> BoxedStrategy<Message> {
    let kind = select(vec![
        MessageType::Human,
        MessageType::Ai,
        MessageType::System,
        MessageType::Tool,
    ]);
    let content = prop_oneof![
        2 => text().prop_map(Content::Text),
        1 => prop::collection::vec(json(), 0..3).prop_map(Content::Blocks),
    ];
    let id = prop::option::of(prop_oneof![
        select(vec!["m1", "m2", "m3", "__remove_all__", ""]).prop_map(str::to_owned),
        text(),
    ]);
    let call = (text(), object(), prop::option::of(text())).prop_map(|(name, args, id)| ToolCall {
        name,
        args,
        id,
    });
    let head = (
        kind,
        content,
        id,
        prop::option::of(text()),
        object(),
        object(),
    );
    let tool = (
        prop::collection::vec(call, 0..2),
        prop::collection::vec(json(), 0..2),
        prop::option::of(json()),
        prop::option::of(prop_oneof![Just(String::new()), text()]),
        prop::option::of(select(vec![ToolStatus::Success, ToolStatus::Error])),
        prop::option::of(json()),
    );
    (head, tool)
        .prop_map(|((kind, content, id, name, kwargs, meta), tool)| {
            let (tool_calls, invalid_tool_calls, usage_metadata, tool_call_id, status, artifact) =
                tool;
            Message {
                kind,
                content,
                id,
                name,
                additional_kwargs: kwargs,
                response_metadata: meta,
                tool_calls,
                invalid_tool_calls,
                usage_metadata,
                tool_call_id,
                status,
                artifact,
            }
        })
        .boxed()
}

fn message_ops() -> BoxedStrategy<MessageOps> {
    let op = prop_oneof![
        6 => message().prop_map(MessageOp::Upsert),
        1 => select(vec!["m1", "m2", "__remove_all__"]).prop_map(|id| MessageOp::Remove(id.into())),
        1 => Just(MessageOp::RemoveAll),
    ];
    prop::collection::vec(op, 0..3).prop_map(MessageOps).boxed()
}

// ---- writes ----------------------------------------------------------------

/// A reducer field's write: mostly through the reducer, now and then an
/// overwrite.
fn write<T: std::fmt::Debug + Clone + 'static, P: std::fmt::Debug + Clone + 'static>(
    whole: impl Strategy<Value = T> + 'static,
    partial: impl Strategy<Value = P> + 'static,
) -> BoxedStrategy<FieldWrite<T, P>> {
    prop_oneof![
        4 => partial.prop_map(FieldWrite::Reduce),
        1 => whole.prop_map(FieldWrite::Overwrite),
    ]
    .boxed()
}

fn mode() -> BoxedStrategy<Mode> {
    prop_oneof![
        Just(Mode::Idle),
        text().prop_map(Mode::Named),
        any::<(i32, i32)>().prop_map(|(a, b)| Mode::Pair(a, b)),
        (float(), float()).prop_map(|(x, y)| Mode::At { x, y }),
    ]
    .boxed()
}

fn profile() -> BoxedStrategy<Profile> {
    (
        text(),
        json_map(),
        prop::collection::vec(float(), 0..3),
        text(),
        any::<Option<i64>>(),
    )
        .prop_map(|(name, attrs, history, r#type, value)| Profile {
            name,
            attrs,
            history,
            r#type,
            value,
        })
        .boxed()
}

/// A nested update; `type` and `value` alone make it a marker's shape.
fn profile_update() -> BoxedStrategy<ProfileUpdate> {
    let ty = prop_oneof![Just("__overwrite__".to_owned()), text()];
    (
        prop::option::of(text()),
        prop::option::of(write(json_map(), json_map())),
        prop::option::of(write(
            prop::collection::vec(float(), 0..2),
            prop::collection::vec(float(), 0..2),
        )),
        prop::option::of(ty),
        prop::option::of(any::<Option<i64>>()),
    )
        .prop_map(|(name, attrs, history, ty, value)| {
            let mut update = ProfileUpdate::new();
            update.name = name;
            update.attrs = attrs;
            update.history = history;
            update.r#type = ty;
            update.value = value;
            update
        })
        .boxed()
}

/// One field of an update, set.
#[derive(Debug, Clone)]
enum Set {
    Messages(FieldWrite<Messages, MessageOps>),
    Transcript(FieldWrite<Vec<Message>, MessageOps>),
    Score(f64),
    Ratio(f32),
    Maybe(Option<f64>),
    Count(u64),
    Delta(i64),
    Wide(u128),
    Flag(bool),
    Letter(char),
    Text(String),
    Note(Option<String>),
    Twice(Option<Option<u8>>),
    Mode(Mode),
    Raw(Value),
    Facts(FieldWrite<HashMap<String, f64>, HashMap<String, f64>>),
    Tree(FieldWrite<BTreeMap<String, Value>, BTreeMap<String, Value>>),
    Doc(FieldWrite<Value, Value>),
    Object(FieldWrite<Map<String, Value>, Map<String, Value>>),
    Profile(FieldWrite<Profile, ProfileUpdate>),
    Tags(FieldWrite<agent_state::UnionVec<String>, Vec<String>>),
    Seen(FieldWrite<std::collections::BTreeSet<i64>, Vec<i64>>),
    Hashed(FieldWrite<std::collections::HashSet<String>, Vec<String>>),
    Log(FieldWrite<Vec<Value>, Vec<Value>>),
    Samples(FieldWrite<std::collections::VecDeque<f64>, Vec<f64>>),
    Best(FieldWrite<f64, f64>),
    Layers(FieldWrite<Vec<BTreeMap<String, Value>>, BTreeMap<String, Value>>),
    Notes(FieldWrite<Vec<String>, Vec<String>>),
    Pinned(Option<String>),
}

impl Set {
    fn apply(self, u: &mut EverythingUpdate) {
        match self {
            Set::Messages(w) => u.messages = Some(w),
            Set::Transcript(w) => u.transcript = Some(w),
            Set::Score(v) => u.score = Some(v),
            Set::Ratio(v) => u.ratio = Some(v),
            Set::Maybe(v) => u.maybe = Some(v),
            Set::Count(v) => u.count = Some(v),
            Set::Delta(v) => u.delta = Some(v),
            Set::Wide(v) => u.wide = Some(v),
            Set::Flag(v) => u.flag = Some(v),
            Set::Letter(v) => u.letter = Some(v),
            Set::Text(v) => u.text = Some(v),
            Set::Note(v) => u.note = Some(v),
            Set::Twice(v) => u.twice = Some(v),
            Set::Mode(v) => u.mode = Some(v),
            Set::Raw(v) => u.raw = Some(v),
            Set::Facts(w) => u.facts = Some(w),
            Set::Tree(w) => u.tree = Some(w),
            Set::Doc(w) => u.doc = Some(w),
            Set::Object(w) => u.object = Some(w),
            Set::Profile(w) => u.profile = Some(w),
            Set::Tags(w) => u.tags = Some(w),
            Set::Seen(w) => u.seen = Some(w),
            Set::Hashed(w) => u.hashed = Some(w),
            Set::Log(w) => u.log = Some(w),
            Set::Samples(w) => u.samples = Some(w),
            Set::Best(w) => u.best = Some(w),
            Set::Layers(w) => u.layers = Some(w),
            Set::Notes(w) => u.part.notes = Some(w),
            Set::Pinned(v) => u.part.pinned = Some(v),
        }
    }
}

fn set() -> BoxedStrategy<Set> {
    let strings = || prop::collection::vec(text(), 0..3);
    let floats = || prop::collection::vec(float(), 0..3);
    let plain = prop_oneof![
        float().prop_map(Set::Score),
        any::<f32>().prop_map(Set::Ratio),
        prop::option::of(float()).prop_map(Set::Maybe),
        any::<u64>().prop_map(Set::Count),
        any::<i64>().prop_map(Set::Delta),
        prop_oneof![any::<u64>().prop_map(u128::from), any::<u128>()].prop_map(Set::Wide),
        any::<bool>().prop_map(Set::Flag),
        any::<char>().prop_map(Set::Letter),
        text().prop_map(Set::Text),
        prop::option::of(text()).prop_map(Set::Note),
        any::<Option<Option<u8>>>().prop_map(Set::Twice),
        mode().prop_map(Set::Mode),
        json().prop_map(Set::Raw),
        prop::option::of(text()).prop_map(Set::Pinned),
    ];
    let facts = prop::collection::hash_map(key(), float(), 0..3);
    let reducers = prop_oneof![
        write(
            prop::collection::vec(message(), 0..2).prop_map(Messages::from),
            message_ops()
        )
        .prop_map(Set::Messages),
        write(prop::collection::vec(message(), 0..2), message_ops()).prop_map(Set::Transcript),
        write(facts.clone(), facts).prop_map(Set::Facts),
        write(json_map(), json_map()).prop_map(Set::Tree),
        write(json(), json()).prop_map(Set::Doc),
        write(object(), object()).prop_map(Set::Object),
        write(profile(), profile_update()).prop_map(Set::Profile),
        write(strings().prop_map(agent_state::UnionVec::from), strings()).prop_map(Set::Tags),
        write(
            prop::collection::btree_set(any::<i64>(), 0..3),
            prop::collection::vec(any::<i64>(), 0..3)
        )
        .prop_map(Set::Seen),
        write(prop::collection::hash_set(text(), 0..3), strings()).prop_map(Set::Hashed),
        write(
            prop::collection::vec(json(), 0..3),
            prop::collection::vec(json(), 0..3)
        )
        .prop_map(Set::Log),
        write(floats().prop_map(Into::into), floats()).prop_map(Set::Samples),
        write(float(), float()).prop_map(Set::Best),
        write(prop::collection::vec(json_map(), 0..2), json_map()).prop_map(Set::Layers),
        write(strings(), strings()).prop_map(Set::Notes),
    ];
    prop_oneof![plain, reducers].boxed()
}

fn update() -> BoxedStrategy<EverythingUpdate> {
    prop::collection::vec(set(), 0..4)
        .prop_map(|sets| {
            let mut update = EverythingUpdate::new();
            for s in sets {
                s.apply(&mut update);
            }
            update
        })
        .boxed()
}

fn case() -> BoxedStrategy<Case> {
    (
        prop::collection::vec(prop::collection::vec(update(), 1..3), 1..5),
        any::<bool>(),
    )
        .prop_map(|(steps, snapshot_every_step)| Case {
            steps,
            snapshot_every_step,
        })
        .boxed()
}
