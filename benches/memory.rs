//! What a message history costs in memory: `cargo bench --bench memory`.
//!
//! A counting global allocator (this binary only: it would slow the timed
//! benchmarks) tracks the bytes live on the heap. Printed:
//!
//! * bytes per message of a `Messages` (its list, its id index and each
//!   message's own strings) against a plain `Vec<Message>` of the same
//!   messages, both built from a list of exact capacity, then both grown
//!   one message at a time (as a graph grows a history, with the list's
//!   doubling slack), and the ratio;
//! * first, in a fresh process, a 100,000-message debate state grown by
//!   100,000 `apply`s: the live heap bytes and the process's resident size
//!   before and after (`VmRSS` in `/proc/self/status`, Linux only).
//!
//! `-- --messages N` changes the 100,000.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

use agent_state::{AgentState, Message, Messages};

/// The system allocator, counting the bytes live.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call goes to `System` unchanged; the counter only observes.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size(), Ordering::Relaxed);
        // SAFETY: the caller's contract, passed on.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: the caller's contract, passed on.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LIVE.fetch_add(new_size, Ordering::Relaxed);
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: the caller's contract, passed on.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

fn live() -> usize {
    LIVE.load(Ordering::Relaxed)
}

/// The process's resident set, in bytes, where Linux tells it.
fn resident() -> Option<usize> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kib: usize = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

#[path = "support/debate.rs"]
mod debate;
use debate::{argument, DebateState, DebateStateUpdate};

/// The `i`-th message: alternating sides, about 40 characters, a uuid4-long
/// id (as a generated one is).
fn nth_message(i: usize) -> Message {
    argument(i).with_id(format!("00000000-0000-4000-8000-{i:012}"))
}

/// Live heap bytes `build` leaves behind, per message, and what it built.
fn per_message<T>(n: usize, build: impl FnOnce() -> T) -> (f64, T) {
    let before = live();
    let value = build();
    ((live() - before) as f64 / n as f64, value)
}

fn main() {
    let mut n = 100_000usize;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--bench" => {}
            "--messages" => n = args.next().and_then(|v| v.parse().ok()).expect("a count"),
            other => panic!("unknown argument `{other}`"),
        }
    }
    let (heap0, rss0) = (live(), resident());
    let mut state = DebateState {
        topic: "Should AI be regulated?".into(),
        ..Default::default()
    };
    for i in 0..n {
        let update = DebateStateUpdate::new().message(nth_message(i));
        state.apply(update).expect("applies");
    }
    let (heap, rss) = (live() - heap0, resident());
    println!(
        "A debate state grown to {} messages by {n} applies: {:.1} MiB live on the heap \
         ({:.0} B/message){}",
        state.messages.len(),
        heap as f64 / 1048576.0,
        heap as f64 / n as f64,
        match (rss0, rss) {
            (Some(a), Some(b)) => format!(
                ", resident size {:.1} → {:.1} MiB (+{:.1} MiB)",
                a as f64 / 1048576.0,
                b as f64 / 1048576.0,
                b.saturating_sub(a) as f64 / 1048576.0
            ),
            _ => String::new(),
        }
    );
    drop(state);

    println!(
        "\nMessage size: {} bytes inline (`size_of::<Message>()`).\n",
        std::mem::size_of::<Message>()
    );
    println!("| {n} messages | Vec<Message> (B/message) | Messages (B/message) | Messages ÷ Vec | index (B/message) |");
    println!("| --- | ---: | ---: | ---: | ---: |");
    let (plain, vec) = per_message(n, || (0..n).map(nth_message).collect::<Vec<_>>());
    drop(vec);
    let (indexed, msgs) = per_message(n, || {
        Messages::try_from_vec((0..n).map(nth_message).collect()).expect("distinct ids")
    });
    drop(msgs);
    row("built from an exact list", plain, indexed);
    let (plain, vec) = per_message(n, || {
        let mut v = Vec::new();
        (0..n).for_each(|i| v.push(nth_message(i)));
        v
    });
    drop(vec);
    let (indexed, msgs) = per_message(n, || {
        let mut m = Messages::new();
        (0..n).for_each(|i| m.push(nth_message(i)));
        m
    });
    drop(msgs);
    row("grown one at a time", plain, indexed);
}

fn row(how: &str, plain: f64, indexed: f64) {
    println!(
        "| {how} | {plain:.1} | {indexed:.1} | {:.3}× | {:.1} |",
        indexed / plain,
        indexed - plain
    );
}
