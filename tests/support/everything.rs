//! A state with every reducer over every kind of field type, and the body of
//! the round-trip fuzz target: bytes → JSON updates → apply → save → load.
//!
//! Shared by the fuzz crate (`fuzz/fuzz_targets/round_trip.rs` includes this
//! file) and by the tests, which run the body over a bounded corpus and
//! drive the state with the property test of `props.rs`. It uses nothing but
//! `agent_state` (with its re-exported serde and serde_json), so it builds
//! in both.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet, VecDeque};

use agent_state::checkpoint::{
    block_on, CheckpointError, Checkpointer, MemoryCheckpointer, SnapshotPolicy, Source, Thread,
};
use agent_state::serde::{Deserialize, Serialize};
use agent_state::serde_json::{json, Map, Number, Value};
use agent_state::{AgentState, Message, Messages, StateUpdate, MAX_FIELD_DEPTH};

/// A plain enum field: unit, newtype, tuple and struct variants.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(crate = "agent_state::serde")]
pub enum Mode {
    /// A unit variant: a string.
    #[default]
    Idle,
    /// `{"Named": ".."}`.
    Named(String),
    /// `{"Pair": [a, b]}`.
    Pair(i32, i32),
    /// `{"At": {"x": .., "y": ..}}`.
    At {
        /// A float inside a variant.
        x: f64,
        /// Another.
        y: f64,
    },
}

/// A nested state, merged field by field; its fields `type` and `value`
/// make an update of it look like LangGraph's `{"type": "__overwrite__",
/// "value": v}`.
#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct Profile {
    /// A plain string.
    pub name: String,
    /// Merged keys.
    #[reducer(merge)]
    pub attrs: BTreeMap<String, Value>,
    /// Appended floats.
    #[reducer(append)]
    pub history: Vec<f64>,
    /// Named like the marker's tag.
    pub r#type: String,
    /// Named like the marker's value.
    pub value: Option<i64>,
}

/// A flattened part.
#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct Notes {
    /// Appended.
    #[reducer(append)]
    pub notes: Vec<String>,
    /// Replaced.
    pub pinned: Option<String>,
}

/// The `with` reducer of `layers`: pushes the map it gets.
// A `with` reducer takes `&T` of its field's type.
#[allow(clippy::ptr_arg)]
pub fn push_layer(
    current: &Vec<BTreeMap<String, Value>>,
    layer: BTreeMap<String, Value>,
) -> Result<Vec<BTreeMap<String, Value>>, String> {
    if layer.contains_key("reject") {
        return Err("a layer named `reject`".to_owned());
    }
    let mut next = current.clone();
    next.push(layer);
    Ok(next)
}

/// The `with` reducer of `best`: keeps the largest.
pub fn keep_max(current: &f64, next: f64) -> Result<f64, String> {
    Ok(current.max(next))
}

/// Every reducer, over every kind of field type a state holds.
#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct Everything {
    /// The messages reducer over `Messages`.
    #[reducer(messages)]
    pub messages: Messages,
    /// The messages reducer over a `Vec`.
    #[reducer(messages)]
    pub transcript: Vec<Message>,
    /// Floats.
    pub score: f64,
    /// Single precision.
    pub ratio: f32,
    /// An optional float.
    pub maybe: Option<f64>,
    /// Integers.
    pub count: u64,
    /// Signed.
    pub delta: i64,
    /// Wider than JSON reads back beyond 64 bits.
    pub wide: u128,
    /// A boolean.
    pub flag: bool,
    /// A char.
    pub letter: char,
    /// Text.
    pub text: String,
    /// Optional text.
    pub note: Option<String>,
    /// `Some(None)` has no JSON of its own.
    pub twice: Option<Option<u8>>,
    /// An enum.
    pub mode: Mode,
    /// Any JSON, replaced.
    pub raw: Value,
    /// Merged map of floats.
    #[reducer(merge)]
    pub facts: HashMap<String, f64>,
    /// Merged map of JSON.
    #[reducer(merge)]
    pub tree: BTreeMap<String, Value>,
    /// Merged JSON object.
    #[reducer(merge)]
    pub doc: Value,
    /// Merged `Map`.
    #[reducer(merge)]
    pub object: Map<String, Value>,
    /// Merged nested state.
    #[reducer(merge)]
    pub profile: Profile,
    /// Union, order kept.
    #[reducer(union)]
    pub tags: agent_state::UnionVec<String>,
    /// Union of a set.
    #[reducer(union)]
    pub seen: BTreeSet<i64>,
    /// Union of a hash set.
    #[reducer(union)]
    pub hashed: HashSet<String>,
    /// Appended JSON.
    #[reducer(append)]
    pub log: Vec<Value>,
    /// Appended floats in a deque.
    #[reducer(append)]
    pub samples: VecDeque<f64>,
    /// A user's reducer over floats.
    #[reducer(with = keep_max)]
    pub best: f64,
    /// A user's reducer taking maps.
    #[reducer(with = push_layer, update = BTreeMap<String, Value>)]
    pub layers: Vec<BTreeMap<String, Value>>,
    /// Set when the state is built.
    #[reducer(immutable)]
    pub origin: String,
    /// A flattened part.
    #[state(flatten)]
    pub part: Notes,
}

/// What one run of the body did, for the corpus test's tally.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Tally {
    /// JSON updates `from_json` refused.
    pub unread: usize,
    /// Steps `save_step` refused (nothing stored).
    pub refused: usize,
    /// Steps stored and reloaded equal.
    pub stored: usize,
}

/// The fuzz body: reads `data` as a few steps of JSON updates of
/// [`Everything`], saves each through a [`Thread`] on a memory store (whose
/// records are the JSON text SQLite and PostgreSQL keep), and checks the
/// rules: a step `save_step` accepts reloads equal to the state in memory;
/// one it refuses changes and stores nothing. Panics when a rule breaks.
pub fn round_trip(data: &[u8]) -> Tally {
    let mut bytes = Bytes::new(data);
    let snapshot_every_step = bytes.byte().is_multiple_of(2);
    let saver = if snapshot_every_step {
        MemoryCheckpointer::new().with_snapshot_policy(SnapshotPolicy {
            ratio: 0.0,
            min_bytes: 0,
        })
    } else {
        MemoryCheckpointer::new().with_snapshot_policy(SnapshotPolicy::never())
    };
    let steps: Vec<Vec<Value>> = if let Some(json) = whole_json(data) {
        vec![vec![json]]
    } else {
        (0..1 + bytes.byte() % 3)
            .map(|_| (0..1 + bytes.byte() % 2).map(|_| bytes.update()).collect())
            .collect()
    };
    block_on(run_steps(&saver, steps)).unwrap_or_else(|e| panic!("{e}"))
}

/// Input that is a JSON object already (a corpus file written by hand).
fn whole_json(data: &[u8]) -> Option<Value> {
    // `{` as a number: a brace in a byte literal would read as a block to
    // line-counting tools.
    const OPEN_BRACE: u8 = 0x7B;
    if data.first() != Some(&OPEN_BRACE) {
        return None;
    }
    agent_state::serde_json::from_slice(data).ok()
}

async fn run_steps<C: Checkpointer>(
    saver: &C,
    steps: Vec<Vec<Value>>,
) -> Result<Tally, CheckpointError> {
    let mut tally = Tally::default();
    let initial = Everything {
        origin: "fuzz".into(),
        letter: 'a',
        ..Everything::default()
    };
    let mut thread = Thread::create(saver, "fuzz", initial).await?;
    for step in steps {
        let mut updates = Vec::new();
        for json in step {
            match EverythingUpdate::from_json(json) {
                Ok(update) => updates.push(update),
                Err(e) => {
                    assert!(!e.to_string().is_empty());
                    tally.unread += 1;
                }
            }
        }
        if updates.is_empty() {
            continue;
        }
        let writes: Vec<_> = updates
            .into_iter()
            .enumerate()
            .map(|(i, u)| (format!("node{i}"), u))
            .collect();
        if save_checked(&mut thread, writes).await? {
            tally.stored += 1;
        } else {
            tally.refused += 1;
        }
    }
    let loaded = Thread::<Everything, _>::open(saver, "fuzz").await?;
    assert_eq!(
        loaded.state(),
        thread.state(),
        "a reload equals what was saved"
    );
    assert_eq!(loaded.head(), thread.head());
    Ok(tally)
}

/// Saves one step and checks the rules; `true` when it was stored.
pub async fn save_checked<C: Checkpointer + ?Sized>(
    thread: &mut Thread<'_, Everything, C>,
    writes: Vec<(String, EverythingUpdate)>,
) -> Result<bool, CheckpointError> {
    let before = thread.state().clone();
    let head = thread.head().cloned();
    match thread.save_step(Source::Update, writes).await {
        Ok(_) => {
            let loaded = Thread::<Everything, _>::open(thread.saver(), thread.thread_id()).await?;
            assert_eq!(
                loaded.state(),
                thread.state(),
                "an accepted step reloads equal"
            );
            Ok(true)
        }
        Err(CheckpointError::Rejected(error)) => {
            assert_eq!(
                thread.state(),
                &before,
                "a refused step changes nothing: {error}"
            );
            assert_eq!(thread.head(), head.as_ref(), "and stores nothing: {error}");
            let loaded = Thread::<Everything, _>::open(thread.saver(), thread.thread_id()).await?;
            assert_eq!(loaded.state(), &before, "and stores nothing: {error}");
            Ok(false)
        }
        Err(other) => Err(other),
    }
}

/// Reads values out of fuzz bytes; past the end, zeros.
struct Bytes<'a> {
    data: &'a [u8],
    at: usize,
}

/// Keys that mean something somewhere: markers, message fields, odd text.
const KEYS: &[&str] = &[
    "__overwrite__",
    "__reduce__",
    "type",
    "value",
    "id",
    "role",
    "content",
    "tool_call_id",
    "tool_calls",
    "args",
    "name",
    "reject",
    "",
    "a",
    "\u{0}",
    "\u{1F600}",
    "\u{7f}",
];

/// Strings that mean something somewhere.
const WORDS: &[&str] = &[
    "human",
    "ai",
    "tool",
    "user",
    "assistant",
    "system",
    "developer",
    "remove",
    "__remove_all__",
    "__overwrite__",
    "__reduce__",
    "x",
    "",
    "\u{10FFFF}\u{1F600}",
    "\u{0}\u{1}\u{1f}\"\\",
    "ünïcödé",
];

impl<'a> Bytes<'a> {
    fn new(data: &'a [u8]) -> Self {
        Self { data, at: 0 }
    }

    fn byte(&mut self) -> u8 {
        let b = self.data.get(self.at).copied().unwrap_or(0);
        self.at += 1;
        b
    }

    fn done(&self) -> bool {
        self.at >= self.data.len()
    }

    fn u64(&mut self) -> u64 {
        (0..8).fold(0, |n, _| n << 8 | u64::from(self.byte()))
    }

    fn pick<'s>(&mut self, from: &[&'s str]) -> &'s str {
        from[usize::from(self.byte()) % from.len()]
    }

    /// A string: a known word, or text made of the next bytes (any char).
    fn string(&mut self) -> String {
        if self.byte().is_multiple_of(2) {
            return self.pick(WORDS).to_owned();
        }
        let len = self.byte() % 8;
        (0..len)
            .map(|_| {
                let n = u32::from(self.byte()) << 12 | u32::from(self.byte());
                char::from_u32(n % 0x11_0000).unwrap_or('\u{FFFD}')
            })
            .collect()
    }

    fn float(&mut self) -> Value {
        let f = match self.byte() % 4 {
            0 => f64::from_bits(self.u64()),
            1 => [f64::MAX, f64::MIN_POSITIVE, 5e-324, -0.0, 1e16, 1.5e19, 0.1]
                [usize::from(self.byte()) % 7],
            2 => f64::from(self.byte()) / 7.0,
            _ => (self.u64() >> 11) as f64,
        };
        Number::from_f64(f).map_or(Value::Null, Value::Number)
    }

    /// Any JSON, with nesting near [`MAX_FIELD_DEPTH`] now and then.
    fn value(&mut self, depth: usize) -> Value {
        if self.done() || depth > MAX_FIELD_DEPTH + 4 {
            return Value::Null;
        }
        match self.byte() % 11 {
            0 => Value::Null,
            1 => Value::Bool(self.byte().is_multiple_of(2)),
            2 => json!(self.u64() as i64),
            3 => json!(self.u64()),
            4 => self.float(),
            5 => Value::String(self.string()),
            6 => (0..self.byte() % 4)
                .map(|_| self.value(depth + 1))
                .collect(),
            7 => Value::Object(self.object(depth)),
            8 => {
                // A nest at the limit: the field's value is `depth + levels` deep.
                let levels =
                    (MAX_FIELD_DEPTH + usize::from(self.byte() % 6)).saturating_sub(depth + 3);
                (0..levels).fold(self.value(MAX_FIELD_DEPTH + 5), |inner, _| json!([inner]))
            }
            9 => self.message(depth),
            _ => json!([self.pick(&["tool", "human", "ai", "user"]), self.string()]),
        }
    }

    fn object(&mut self, depth: usize) -> Map<String, Value> {
        (0..self.byte() % 4)
            .map(|_| {
                let key = if self.byte().is_multiple_of(2) {
                    self.pick(KEYS).to_owned()
                } else {
                    self.string()
                };
                (key, self.value(depth + 1))
            })
            .collect()
    }

    /// A message in one of the shapes LangChain reads.
    fn message(&mut self, depth: usize) -> Value {
        let mut map = Map::new();
        let tag = if self.byte().is_multiple_of(2) {
            "type"
        } else {
            "role"
        };
        map.insert(tag.into(), json!(self.pick(WORDS)));
        map.insert(
            "content".into(),
            match self.byte() % 3 {
                0 => Value::String(self.string()),
                1 => json!([{"type": "text", "text": self.string()}, self.value(depth + 3)]),
                _ => Value::Null,
            },
        );
        for field in ["id", "tool_call_id", "name"] {
            if self.byte().is_multiple_of(2) {
                map.insert(field.into(), Value::String(self.string()));
            }
        }
        if self.byte().is_multiple_of(3) {
            let args = Value::Object(self.object(depth + 3));
            map.insert(
                "tool_calls".into(),
                json!([{"name": self.string(), "args": args, "id": self.string()}]),
            );
        }
        for field in ["usage_metadata", "artifact", "additional_kwargs"] {
            if self.byte().is_multiple_of(4) {
                map.insert(field.into(), self.value(depth + 1));
            }
        }
        Value::Object(map)
    }

    /// A value for the field `name`, of its type more often than not.
    fn field_value(&mut self, name: &str) -> Value {
        if self.byte().is_multiple_of(8) {
            return self.value(0);
        }
        match name {
            "messages" | "transcript" => (0..self.byte() % 3)
                .map(|_| match self.byte() % 4 {
                    0 => json!({"type": "remove", "id": self.pick(WORDS)}),
                    _ => self.message(1),
                })
                .collect(),
            "score" | "ratio" | "maybe" | "best" => self.float(),
            "count" | "wide" => json!(self.u64()),
            "delta" => json!(self.u64() as i64),
            "flag" => json!(self.byte().is_multiple_of(2)),
            "letter" => json!(char::from(self.byte()).to_string()),
            "text" | "note" | "pinned" => Value::String(self.string()),
            "twice" => json!(self.byte()),
            "mode" => json!({"At": {"x": self.float(), "y": self.float()}}),
            "facts" => (0..self.byte() % 3)
                .map(|_| (self.pick(KEYS).to_owned(), self.float()))
                .collect::<Map<_, _>>()
                .into(),
            "profile" => {
                json!({"name": self.string(), "type": self.pick(WORDS), "value": self.u64() as i64 >> 8,
                                "attrs": self.object(1), "history": [self.float()]})
            }
            "tags" | "hashed" | "notes" => json!([self.string(), self.string()]),
            "seen" => json!([self.u64() as i64, self.byte()]),
            "log" | "samples" => (0..self.byte() % 3).map(|_| self.float()).collect(),
            _ => Value::Object(self.object(0)),
        }
    }

    /// One update: a few fields, some written as an overwrite or with the
    /// escape of a reduce write.
    fn update(&mut self) -> Value {
        let fields: Vec<&str> = Everything::schema().fields.iter().map(|f| f.name).collect();
        let mut map = Map::new();
        for _ in 0..1 + self.byte() % 3 {
            let name = fields[usize::from(self.byte()) % fields.len()];
            let value = self.field_value(name);
            let value = match self.byte() % 10 {
                0 => json!({"__overwrite__": value}),
                1 => json!({"__reduce__": value}),
                _ => value,
            };
            map.insert(name.to_owned(), value);
        }
        Value::Object(map)
    }
}
