//! What streaming a run costs, on the debate the server streams: the
//! runtime's stream the Agent Server reads each run from, in process (the
//! HTTP side, against the official server, is `benches/` at the root).
//!
//! ```sh
//! cargo bench -p debate-server --bench stream
//! cargo bench -p debate-server --bench stream -- --rounds 100 --reps 15 --steps 10000 --consumer-us 50
//! ```
//!
//! Three figures, each printed:
//!
//! 1. **Events per second** through `Run::stream` on a debate of
//!    `--rounds` rounds (default 100: 300 node steps, each debater's answer
//!    streamed a word at a time by the scripted model, no pause between
//!    words), no checkpointer, in the modes the page asks for plus the
//!    moderator's (`values`, `updates`, `messages`, `custom`); the consumer
//!    only counts them. Also with each event made into JSON (`to_json`,
//!    then text), most of what a server pays on top. Medians of `--reps`
//!    runs. The rounds are past the 10 a client may ask for.
//! 2. **The cost of streaming**: the same debate `.await`ed (no stream: the
//!    debaters see that nobody streams `messages` and copy no token) against
//!    streamed in those modes, and in `updates` only, as ratios of the
//!    medians of `--reps` runs of each (default 15), run in turn so that
//!    the machine's noise falls on all of them alike.
//! 3. **Memory held flat with a slow consumer**: a run of `--steps` steps
//!    (default 10,000) of a node that streams three tokens and a custom
//!    value per step, read by a consumer that sleeps `--consumer-us` µs
//!    (default 50) per event, so the run waits for it (backpressure). The
//!    state does not grow (a counter), so what the heap holds is the run
//!    and the stream's buffer: it is sampled (live bytes, from a counting
//!    allocator) at steps 100, 1,000 and every 1,000 after, and should stay
//!    flat; for scale, the bytes the events would take if all were held.
//!    The debate itself cannot show this: its state grows with every
//!    message.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use agent_state::checkpoint::block_on;
use agent_state::futures::StreamExt;
use agent_state::graph::{
    BoxError, Graph, Input, NodeContext, StateGraph, StreamEvent, StreamMode, StreamModes, END,
    START,
};
use agent_state::{AgentState, MessageChunk};
use debate_server::bounds::Rounds;
use debate_server::debate::{build_graph, DebateState, ScriptedModel};

/// The system allocator, counting the bytes live.
struct Counting;

static LIVE: AtomicIsize = AtomicIsize::new(0);

// SAFETY: every call is forwarded to `System` unchanged; the counter is
// only arithmetic on the sizes.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: the caller's layout, as `GlobalAlloc::alloc` requires.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: `ptr` came from `alloc` with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LIVE.fetch_add(
            new_size as isize - layout.size() as isize,
            Ordering::Relaxed,
        );
        // SAFETY: as `GlobalAlloc::realloc` requires, passed on.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

struct Config {
    rounds: u32,
    reps: usize,
    steps: u32,
    consumer: Duration,
}

fn config() -> Result<Config, String> {
    let mut config = Config {
        rounds: 100,
        reps: 15,
        steps: 10_000,
        consumer: Duration::from_micros(50),
    };
    let mut args = std::env::args().skip(1).filter(|a| a != "--bench");
    while let Some(flag) = args.next() {
        let value = args
            .next()
            .ok_or_else(|| format!("`{flag}` needs a value"))?;
        let number = |v: &str| v.parse::<u64>().map_err(|e| format!("{flag} `{v}`: {e}"));
        match flag.as_str() {
            "--rounds" => config.rounds = number(&value)? as u32,
            "--reps" => config.reps = number(&value)?.max(1) as usize,
            "--steps" => config.steps = number(&value)? as u32,
            "--consumer-us" => config.consumer = Duration::from_micros(number(&value)?),
            other => {
                return Err(format!(
                    "unknown option `{other}`; expected --rounds, --reps, --steps or --consumer-us"
                ))
            }
        }
    }
    Ok(config)
}

/// The page's modes and `custom`.
fn server_modes() -> StreamModes {
    [
        StreamMode::Values,
        StreamMode::Updates,
        StreamMode::Messages,
        StreamMode::Custom,
    ]
    .into()
}

/// A debate of `rounds` rounds, more than a client may ask the server for.
fn debate_input(rounds: u32) -> Input<DebateState> {
    let state = DebateState::new("Should AI be regulated?", 1).expect("a topic in bounds");
    Input::State(DebateState {
        max_rounds: Rounds::unbounded(rounds),
        ..state
    })
}

/// One streamed debate: its events, per mode, and how long it took; with
/// `json`, each event is also encoded as the server encodes it.
fn streamed(
    graph: &Graph<DebateState>,
    rounds: u32,
    modes: StreamModes,
    json: bool,
) -> (usize, Duration) {
    let started = Instant::now();
    let mut stream = graph.run(debate_input(rounds)).stream(modes);
    let mut events = 0;
    let mut bytes = 0;
    while let Some(event) = block_on(stream.next()) {
        let event = event.expect("the debate runs");
        if json {
            bytes += event.to_json().to_string().len();
        }
        events += 1;
    }
    std::hint::black_box(bytes);
    (events, started.elapsed())
}

fn plain(graph: &Graph<DebateState>, rounds: u32) -> Duration {
    let started = Instant::now();
    let out = block_on(graph.run(debate_input(rounds))).expect("the debate runs");
    assert!(out.next.is_empty());
    started.elapsed()
}

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

fn events_per_second(graph: &Graph<DebateState>, config: &Config) {
    let modes = server_modes();
    // One untimed run first, to warm the allocator and the caches.
    let (events, _) = streamed(graph, config.rounds, modes, false);
    let (mut times, mut json_times) = (Vec::new(), Vec::new());
    for _ in 0..config.reps {
        times.push(streamed(graph, config.rounds, modes, false).1);
        json_times.push(streamed(graph, config.rounds, modes, true).1);
    }
    let (time, json_time) = (median(times), median(json_times));
    println!(
        "\n1. Events through the stream, a {}-round debate ({} node steps), modes values,updates,messages,custom, median of {} runs:",
        config.rounds,
        3 * config.rounds,
        config.reps
    );
    println!(
        "   {events} events in {:.1} ms: {:.0} events/s ({:.2} µs/event)",
        ms(time),
        events as f64 / time.as_secs_f64(),
        time.as_secs_f64() * 1e6 / events as f64
    );
    println!(
        "   each also encoded as the server's JSON: {:.1} ms, {:.0} events/s",
        ms(json_time),
        events as f64 / json_time.as_secs_f64()
    );
}

fn streaming_cost(graph: &Graph<DebateState>, config: &Config) {
    let (mut none, mut all, mut updates) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..config.reps {
        none.push(plain(graph, config.rounds));
        all.push(streamed(graph, config.rounds, server_modes(), false).1);
        updates.push(streamed(graph, config.rounds, StreamMode::Updates.into(), false).1);
    }
    let (none, all, updates) = (median(none), median(all), median(updates));
    println!(
        "\n2. The cost of streaming, the same debate, median of {} runs each:",
        config.reps
    );
    println!(
        "   not streamed (.await):              {:>8.2} ms",
        ms(none)
    );
    println!(
        "   streamed, updates only:             {:>8.2} ms   ratio {:.2}",
        ms(updates),
        updates.as_secs_f64() / none.as_secs_f64()
    );
    println!(
        "   streamed, values,updates,messages,custom: {:>5.2} ms   ratio {:.2}",
        ms(all),
        all.as_secs_f64() / none.as_secs_f64()
    );
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// The ticker's state: it does not grow.
#[derive(AgentState, Debug, Clone, PartialEq)]
struct Ticker {
    n: u32,
    last: String,
}

async fn tick(s: Arc<Ticker>, ctx: NodeContext) -> Result<TickerUpdate, BoxError> {
    let writer = ctx.writer();
    let id = format!("tick-{}", s.n);
    for word in ["one", " two", " three"] {
        writer
            .message(MessageChunk::ai(word).with_id(id.clone()))
            .await;
    }
    writer.send(s.n).await?;
    Ok(TickerUpdate::new().n(s.n + 1).last(id))
}

fn ticker(steps: u32) -> Graph<Ticker> {
    StateGraph::<Ticker>::new()
        .add_node("tick", tick)
        .add_edge(START, "tick")
        .add_conditional_edges_to(
            "tick",
            move |s: &Ticker| if s.n < steps { "tick" } else { END },
            ["tick", END],
        )
        .with_recursion_limit(steps as usize + 10)
        .compile()
        .expect("the ticker compiles")
}

fn slow_consumer(config: &Config) {
    let graph = ticker(config.steps);
    // Made before counting starts, so that its growth is not counted.
    let mut samples = Vec::with_capacity(config.steps as usize / 1000 + 2);
    let live_before = LIVE.load(Ordering::Relaxed);
    let mut stream = graph
        .run(Input::Update(TickerUpdate::new()))
        .stream(server_modes());
    let (mut events, mut peak) = (0usize, 0isize);
    let started = Instant::now();
    while let Some(event) = block_on(stream.next()) {
        let event = event.expect("the ticker runs");
        events += 1;
        let live = LIVE.load(Ordering::Relaxed) - live_before;
        peak = peak.max(live);
        if let StreamEvent::Values { step, .. } = &event {
            let step = step + 1;
            if step == 100 || (step > 0 && step % 1000 == 0) {
                samples.push((step, live, peak));
            }
        }
        drop(event);
        std::thread::sleep(config.consumer);
    }
    let took = started.elapsed();
    println!(
        "\n3. Memory with a slow consumer: {} steps, {events} events, the consumer sleeping {} µs per event ({:.1} s):",
        config.steps,
        config.consumer.as_micros(),
        took.as_secs_f64()
    );
    println!(
        "   {:>6}  {:>12}  {:>12}",
        "step", "live bytes", "peak so far"
    );
    for (step, live, peak) in &samples {
        println!("   {step:>6}  {live:>12}  {peak:>12}");
    }
    // Against step 1,000 (or the first sample): by then every buffer the
    // run keeps has been made.
    let base = samples.iter().find(|s| s.0 == 1000).or(samples.first());
    let (first, last) = (base.map_or(0, |s| s.2), samples.last().map_or(0, |s| s.2));
    println!(
        "   peak at step {} / peak at step {}: {:.2} (flat: 1); every event held instead would take ≥ {} bytes",
        samples.last().map_or(0, |s| s.0),
        base.map_or(0, |s| s.0),
        last as f64 / first.max(1) as f64,
        events * std::mem::size_of::<StreamEvent<Ticker>>()
    );
}

fn main() {
    let config = config().unwrap_or_else(|message| {
        eprintln!("{message}");
        std::process::exit(2);
    });
    let graph = build_graph(Arc::new(ScriptedModel::default())).expect("the debate compiles");
    println!("Streaming the debate (scripted model, no pause between tokens, no checkpointer).");
    events_per_second(&graph, &config);
    streaming_cost(&graph, &config);
    slow_consumer(&config);
}
