//! The cost goals of a typed update, each printed as a ratio measured in
//! one run: `cargo bench --bench goals`.
//!
//! Every line pits two timed loops against each other, sampled in turn (a
//! sample of one, then of the other, and so on), so a slow spell on the
//! shared machine lands on both and the ratio of their medians holds. A
//! sample times a batch of iterations whose inputs were built before the
//! clock started; what an iteration returns is kept until the clock stops,
//! so its drop is not timed (as divan's `bench_local_values`).
//!
//! The lines:
//!
//! * **append at 10,000 vs the physical limit**: `state.apply(update)` with
//!   one message (with an id, then without one: the reducer makes a uuid4),
//!   then `messages.pop()` to keep the history at N; against the least any
//!   indexed history can do for the same message: `Vec::push` plus the
//!   insert of its id in a hash table of positions (hashbrown's
//!   `HashTable<u32>`, foldhash), and the same undo (`Vec::pop`, the id's
//!   removal). The goal is an absolute 220 ns; the ratio says how close to
//!   the floor that is;
//! * **flat**: the same append at 100,000 against at 100;
//! * **typed vs hand**: the debate update (a message and `round`) and a
//!   replacement (a message whose id is in the middle of the history)
//!   through `apply`, against the same change written by hand
//!   (`messages.push(m); round = r`);
//! * **union vs append**: one new item into a `#[reducer(union)]`
//!   `UnionVec<String>` of 10,000 against one appended to a
//!   `#[reducer(append)]` `Vec<String>` of 10,000, both through `apply`
//!   then `pop`.
//!
//! `-- --samples K` (default 2,000 per side) and `-- --batch B` (default
//! 64 iterations per sample) trade time for steadiness; `-- --only NAME`
//! runs the lines whose name contains NAME; `-- --profile NAME@N --iters I`
//! runs one side's loop I times and nothing else, for
//! `valgrind --tool=callgrind --toggle-collect='goals::timed*'`, which
//! counts the instructions of the timed iterations only.

use std::hash::BuildHasher;
use std::hint::black_box;
use std::time::{Duration, Instant};

use agent_state::{ai, AgentState, Message, UnionVec};
use hashbrown::hash_table::Entry;
use hashbrown::{DefaultHashBuilder, HashTable};

#[path = "support/debate.rs"]
mod debate;
use debate::{argument, DebateState, DebateStateUpdate};

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

/// The `i`-th message of a history: alternating sides, ids `msg-<i>`.
fn nth_message(i: usize) -> Message {
    argument(i).with_id(format!("msg-{i}"))
}

fn state_with(n: usize) -> DebateState {
    DebateState {
        messages: (0..n).map(nth_message).collect(),
        topic: "Should AI be regulated?".into(),
        ..Default::default()
    }
}

/// A generator of messages with ids no history here holds.
fn fresh_messages() -> impl FnMut() -> Message {
    let mut next = 0u64;
    move || {
        next += 1;
        ai("A new point.").with_id(format!("new-{next}"))
    }
}

/// The floor: a list and the least index that finds a message by id, a
/// hash table of positions (no id copied into it).
struct Floor {
    items: Vec<Message>,
    index: HashTable<u32>,
    hasher: DefaultHashBuilder,
}

impl Floor {
    fn with(n: usize) -> Self {
        let mut floor = Floor {
            items: Vec::with_capacity(n + 1),
            index: HashTable::with_capacity(
                std::env::var("CAP")
                    .ok()
                    .and_then(|v| v.parse::<usize>().ok())
                    .unwrap_or(1)
                    * (n + 1),
            ),
            hasher: DefaultHashBuilder::default(),
        };
        for i in 0..n {
            floor.push(nth_message(i));
        }
        floor
    }

    fn id(msg: &Message) -> &str {
        msg.id.as_deref().expect("the floor's messages have ids")
    }

    /// `Vec::push` and the id's insert (a lookup that finds the free slot).
    fn push(&mut self, msg: Message) {
        let (items, hasher) = (&self.items, &self.hasher);
        let id = Self::id(&msg);
        let hash = hasher.hash_one(id);
        match self.index.entry(
            hash,
            |&at| Self::id(&items[at as usize]) == id,
            |&at| hasher.hash_one(Self::id(&items[at as usize])),
        ) {
            Entry::Vacant(slot) => {
                slot.insert(items.len() as u32);
            }
            Entry::Occupied(_) => unreachable!("fresh ids"),
        }
        self.items.push(msg);
    }

    /// `Vec::pop` and the id's removal.
    fn pop(&mut self) -> Option<Message> {
        let msg = self.items.pop()?;
        let at = self.items.len() as u32;
        if let Ok(entry) = self
            .index
            .find_entry(self.hasher.hash_one(Self::id(&msg)), |&i| i == at)
        {
            entry.remove();
        }
        Some(msg)
    }
}

/// Times a batch of iterations: the inputs are built first, the outputs
/// dropped after the clock stops. Returns the time per iteration.
type Sample<'a> = Box<dyn FnMut(usize) -> Duration + 'a>;

fn sampler<'a, I: 'a, O: 'a>(
    mut input: impl FnMut() -> I + 'a,
    mut run: impl FnMut(I) -> O + 'a,
) -> Sample<'a> {
    Box::new(move |batch| {
        let inputs: Vec<I> = (0..batch).map(|_| input()).collect();
        let mut outputs: Vec<O> = Vec::with_capacity(batch);
        let start = Instant::now();
        for item in inputs {
            outputs.push(black_box(timed(&mut run, black_box(item))));
        }
        let took = start.elapsed();
        drop(outputs);
        took / u32::try_from(batch).expect("a batch fits u32")
    })
}

/// One timed iteration: its own function, so a profiler can count what it
/// runs (`valgrind --tool=callgrind --toggle-collect='goals::timed*'`).
#[inline(never)]
fn timed<I, O>(run: &mut impl FnMut(I) -> O, input: I) -> O {
    run(input)
}

/// The timed loops, by name.
fn side(name: &str) -> Sample<'static> {
    let (case, n) = name.rsplit_once('@').expect("name@size");
    let n: usize = n.parse().expect("a size");
    match case {
        "append_with_id" => {
            let mut state = state_with(n);
            let mut gen = fresh_messages();
            sampler(
                move || DebateStateUpdate::new().message(gen()),
                move |u| {
                    state.apply(u).expect("applies");
                    state.messages.pop()
                },
            )
        }
        "append_no_id" => {
            let mut state = state_with(n);
            sampler(
                || DebateStateUpdate::new().message(ai("A new point.")),
                move |u| {
                    state.apply(u).expect("applies");
                    state.messages.pop()
                },
            )
        }
        "floor" => {
            let mut floor = Floor::with(n);
            sampler(fresh_messages(), move |m| {
                floor.push(m);
                floor.pop()
            })
        }
        "debate_typed" | "debate_hand" => debate_side(case, n),
        "replace_typed" | "replace_hand" => replace_side(case, n),
        "union" | "append" => list_side(case, n),
        other => panic!("no loop named `{other}`"),
    }
}

/// The debate update (a message and `round`), typed or by hand.
fn debate_side(case: &str, n: usize) -> Sample<'static> {
    match case {
        "debate_typed" => {
            let mut state = state_with(n);
            let mut gen = fresh_messages();
            let mut round = 0u32;
            sampler(
                move || {
                    round = round.wrapping_add(1);
                    DebateStateUpdate::new().message(gen()).round(round)
                },
                move |u| {
                    state.apply(u).expect("applies");
                    state.messages.pop()
                },
            )
        }
        "debate_hand" => {
            let mut state = state_with(n);
            let mut gen = fresh_messages();
            let mut round = 0u32;
            sampler(
                move || {
                    round = round.wrapping_add(1);
                    (gen(), round)
                },
                move |(m, r)| {
                    // The whole state, as `apply` has it (a closure would
                    // otherwise capture `round` apart, as a copy).
                    let state = &mut state;
                    state.messages.push(m);
                    state.round = r;
                    state.messages.pop()
                },
            )
        }
        _ => unreachable!("a debate loop"),
    }
}

/// A message replaced in the middle of the history, typed or by hand.
fn replace_side(case: &str, n: usize) -> Sample<'static> {
    match case {
        "replace_typed" => {
            let mut state = state_with(n);
            let id = format!("msg-{}", n / 2);
            sampler(
                move || DebateStateUpdate::new().message(ai("Revised.").with_id(id.as_str())),
                move |u| state.apply(u).expect("applies"),
            )
        }
        "replace_hand" => {
            let mut state = state_with(n);
            let id = format!("msg-{}", n / 2);
            sampler(
                move || ai("Revised.").with_id(id.as_str()),
                move |m| state.messages.push(m),
            )
        }
        _ => unreachable!("a replace loop"),
    }
}

/// One item into a `union` list or an `append` list of `n`.
fn list_side(case: &str, n: usize) -> Sample<'static> {
    let union = case == "union";
    let items = || (0..n).map(|i| format!("plugin-{i}"));
    let mut state = Lists {
        plugins: items().collect(),
        log: items().collect(),
    };
    let mut next = 0u64;
    sampler(
        move || {
            next += 1;
            let item = format!("new-{next}");
            if union {
                ListsUpdate::new().plugin(item)
            } else {
                ListsUpdate::new().add_log(item)
            }
        },
        move |u| {
            state.apply(u).expect("applies");
            if union {
                state.plugins.pop()
            } else {
                state.log.pop()
            }
        },
    )
}

/// Medians of `a` and `b`, sampled in turn.
fn compare(a: &mut Sample, b: &mut Sample, samples: usize, batch: usize) -> (f64, f64) {
    for _ in 0..samples / 20 + 1 {
        a(batch);
        b(batch);
    }
    let (mut ta, mut tb) = (Vec::with_capacity(samples), Vec::with_capacity(samples));
    for _ in 0..samples {
        ta.push(a(batch));
        tb.push(b(batch));
    }
    (median_ns(ta), median_ns(tb))
}

fn median_ns(mut times: Vec<Duration>) -> f64 {
    times.sort_unstable();
    times[times.len() / 2].as_secs_f64() * 1e9
}

/// One printed line: what is compared, the two loops, and the goal.
struct Line {
    name: &'static str,
    ours: &'static str,
    reference: &'static str,
    goal: Goal,
}

enum Goal {
    /// The first loop at most this many ns (the ratio is informative).
    Ns(f64),
    /// The ratio ours / reference at most this.
    Ratio(f64),
}

const LINES: &[Line] = &[
    Line {
        name: "append 1 message with an id at 10,000 ÷ physical limit",
        ours: "append_with_id@10000",
        reference: "floor@10000",
        goal: Goal::Ns(220.0),
    },
    Line {
        name: "append 1 message without an id at 10,000 ÷ physical limit",
        ours: "append_no_id@10000",
        reference: "floor@10000",
        goal: Goal::Ns(220.0),
    },
    Line {
        name: "physical limit at 100,000 ÷ at 100",
        ours: "floor@100000",
        reference: "floor@100",
        goal: Goal::Ratio(f64::INFINITY),
    },
    Line {
        name: "append with an id at 100,000 ÷ at 100 (flat)",
        ours: "append_with_id@100000",
        reference: "append_with_id@100",
        goal: Goal::Ratio(1.5),
    },
    Line {
        name: "append without an id at 100,000 ÷ at 100 (flat)",
        ours: "append_no_id@100000",
        reference: "append_no_id@100",
        goal: Goal::Ratio(1.5),
    },
    Line {
        name: "typed debate update ÷ by hand, at 10,000",
        ours: "debate_typed@10000",
        reference: "debate_hand@10000",
        goal: Goal::Ratio(1.1),
    },
    Line {
        name: "typed replace ÷ by hand, at 10,000",
        ours: "replace_typed@10000",
        reference: "replace_hand@10000",
        goal: Goal::Ratio(1.1),
    },
    Line {
        name: "1 item into a union of 10,000 ÷ 1 appended",
        ours: "union@10000",
        reference: "append@10000",
        goal: Goal::Ratio(1.0),
    },
];

struct Args {
    samples: usize,
    batch: usize,
    only: Option<String>,
    profile: Option<String>,
    iters: usize,
}

fn args() -> Args {
    let mut out = Args {
        samples: 2_000,
        batch: 64,
        only: None,
        profile: None,
        iters: 100_000,
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut value = || it.next().unwrap_or_else(|| panic!("{arg} needs a value"));
        match arg.as_str() {
            "--bench" => {}
            "--samples" => out.samples = value().parse().expect("a count"),
            "--batch" => out.batch = value().parse().expect("a count"),
            "--only" => out.only = Some(value()),
            "--profile" => out.profile = Some(value()),
            "--iters" => out.iters = value().parse().expect("a count"),
            other => panic!("unknown argument `{other}`"),
        }
    }
    out
}

fn main() {
    let args = args();
    if let Some(name) = &args.profile {
        let mut run = side(name);
        let batch = args.batch;
        for _ in 0..args.iters / batch {
            run(batch);
        }
        return;
    }
    println!(
        "| goal | ours (ns) | reference (ns) | ratio | target | met |\n| --- | ---: | ---: | ---: | --- | --- |"
    );
    for line in LINES {
        if args
            .only
            .as_deref()
            .is_some_and(|o| !line.ours.contains(o) && !line.name.contains(o))
        {
            continue;
        }
        let (mut a, mut b) = (side(line.ours), side(line.reference));
        let (ours, reference) = compare(&mut a, &mut b, args.samples, args.batch);
        let ratio = ours / reference;
        let (target, met) = match line.goal {
            Goal::Ns(ns) => (format!("≤ {ns:.0} ns"), ours <= ns),
            Goal::Ratio(r) if r.is_infinite() => ("(the floor's own growth)".to_owned(), true),
            Goal::Ratio(r) => (format!("≤ {r}×"), ratio <= r),
        };
        println!(
            "| {} | {ours:.1} | {reference:.1} | {ratio:.2}× | {target} | {} |",
            line.name,
            if met { "yes" } else { "**no**" }
        );
    }
}
