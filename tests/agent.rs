//! The agent loop: hook order against LangChain v1's documented order,
//! wrap nesting, concurrent tools, bad calls, tools that update the state,
//! resume without re-running a finished tool call, panics.
#![cfg(feature = "agent")]

mod support;

use std::future::{Future, IntoFuture};
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use agent_state::agent::{
    create_agent, input, AgentBuilder, AgentError, AgentMiddleware, ChatModel, FnModel, FnTool,
    HookOutput, HookResult, Hooks, Jump, ModelError, ModelFuture, ModelHandler, ModelRequest,
    ModelResponse, ScriptedModel, Tool, ToolCallRequest, ToolFuture, ToolHandler, ToolOutput,
    ToolRuntime,
};
use agent_state::base::{HasMessages, MessagesState, MessagesStateUpdate};
use agent_state::checkpoint::{block_on, Checkpointer, MemoryCheckpointer};
use agent_state::futures::future::BoxFuture;
use agent_state::futures::stream::{self, BoxStream, StreamExt};
use agent_state::graph::{Command, GraphError, Input, NodeContext, StreamEvent, StreamMode};
use agent_state::serde::Deserialize;
use agent_state::serde_json::{json, Map, Value};
use agent_state::{
    ai, AgentState, HasPart, Message, MessageChunk, MessageType, StateUpdate, ToolCall, ToolStatus,
};

/// A middleware's part: a log every hook appends to, and a flag a tool sets.
#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct NotesState {
    /// What ran, in order.
    #[reducer(append)]
    pub log: Vec<String>,
    /// Set by the `finish` tool.
    pub done: bool,
    /// A plain field two tools may fight over.
    pub owner: Option<String>,
}

/// The agent's state.
#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct Chat {
    #[state(flatten)]
    pub base: MessagesState,
    #[state(flatten)]
    pub notes: NotesState,
}

fn args(value: Value) -> Map<String, Value> {
    value.as_object().cloned().unwrap_or_default()
}

fn call(name: &str, id: &str, value: Value) -> ToolCall {
    ToolCall::new(name, args(value), id)
}

fn calls(list: &[(&str, &str)]) -> Message {
    list.iter().fold(ai(""), |m, (name, id)| {
        m.with_tool_call(call(name, id, json!({})))
    })
}

#[derive(Deserialize, agent_state::schemars::JsonSchema)]
#[serde(crate = "agent_state::serde")]
#[schemars(crate = "agent_state::schemars")]
struct NoArgs {}

/// A tool that answers its name and counts its runs.
fn echo(name: &'static str, runs: &Arc<AtomicUsize>) -> FnTool<Chat> {
    let runs = Arc::clone(runs);
    FnTool::sync(
        name,
        "Echoes its name",
        move |_: NoArgs, _: &ToolRuntime<Chat>| {
            runs.fetch_add(1, Ordering::SeqCst);
            format!("{name} ran")
        },
    )
}

fn tool_messages(state: &Chat) -> Vec<(String, String, Option<ToolStatus>)> {
    state
        .messages()
        .iter()
        .filter(|m| m.kind == MessageType::Tool)
        .map(|m| {
            (
                m.tool_call_id.clone().unwrap_or_default(),
                m.text(),
                m.status,
            )
        })
        .collect()
}

// --- hook order -------------------------------------------------------------

/// Logs every hook to a shared trace and to the state's log.
struct Tracer {
    name: &'static str,
    trace: Arc<Mutex<Vec<String>>>,
}

impl Tracer {
    fn note(&self, what: &str) -> String {
        let line = format!("{}.{what}", self.name);
        self.trace.lock().unwrap().push(line.clone());
        line
    }

    fn hook<S: HasPart<NotesState>>(&self, what: &str, state: &S) -> HookResult<S> {
        let seen = state.part::<NotesState>().log.len();
        let line = format!("{} (saw {seen})", self.note(what));
        Ok(HookOutput::update(S::lift(
            NotesStateUpdate::new().add_log(line),
        )))
    }
}

impl<S: HasPart<NotesState> + HasMessages + Send + Sync + 'static> AgentMiddleware<S> for Tracer
where
    S::Update: Send,
{
    fn name(&self) -> &str {
        self.name
    }

    fn before_agent(&self, state: &S, _: &NodeContext) -> HookResult<S> {
        self.hook("before_agent", state)
    }

    fn before_model(&self, state: &S, _: &NodeContext) -> HookResult<S> {
        self.hook("before_model", state)
    }

    fn after_model(&self, state: &S, _: &NodeContext) -> HookResult<S> {
        self.hook("after_model", state)
    }

    fn after_agent(&self, state: &S, _: &NodeContext) -> HookResult<S> {
        self.hook("after_agent", state)
    }

    fn wrap_model_call<'a>(
        &'a self,
        request: ModelRequest<S>,
        handler: ModelHandler<'a, S>,
    ) -> ModelFuture<'a> {
        Box::pin(async move {
            self.note("wrap_model_call>");
            let out = handler.call(request).await;
            self.note("<wrap_model_call");
            out
        })
    }

    fn wrap_tool_call<'a>(
        &'a self,
        request: ToolCallRequest<S>,
        handler: ToolHandler<'a, S>,
    ) -> ToolFuture<'a, S> {
        Box::pin(async move {
            self.note("wrap_tool_call>");
            let out = handler.call(request).await;
            self.note("<wrap_tool_call");
            out
        })
    }
}

/// LangChain v1's documented order: `before_*` first to last, `after_*`
/// last to first, `wrap_*` nested with the first middleware outermost.
#[test]
fn hooks_run_in_langchains_order() {
    let trace = Arc::new(Mutex::new(Vec::new()));
    let runs = Arc::new(AtomicUsize::new(0));
    let model = ScriptedModel::new([calls(&[("echo", "c1")]), ai("done")]);
    let mut builder = create_agent(model).tool(echo("echo", &runs));
    for name in ["m1", "m2", "m3"] {
        let trace = Arc::clone(&trace);
        builder = builder.middleware(Tracer { name, trace });
    }
    let agent = builder.compile().unwrap();
    let out = block_on(agent.run(input::<Chat>("hi"))).unwrap();

    let turn = [
        "m1.before_model",
        "m2.before_model",
        "m3.before_model",
        "m1.wrap_model_call>",
        "m2.wrap_model_call>",
        "m3.wrap_model_call>",
        "m3.<wrap_model_call",
        "m2.<wrap_model_call",
        "m1.<wrap_model_call",
        "m3.after_model",
        "m2.after_model",
        "m1.after_model",
    ];
    let mut expected = vec!["m1.before_agent", "m2.before_agent", "m3.before_agent"];
    expected.extend(turn);
    expected.extend([
        "m1.wrap_tool_call>",
        "m2.wrap_tool_call>",
        "m3.wrap_tool_call>",
        "m3.<wrap_tool_call",
        "m2.<wrap_tool_call",
        "m1.<wrap_tool_call",
    ]);
    expected.extend(turn);
    expected.extend(["m3.after_agent", "m2.after_agent", "m1.after_agent"]);
    assert_eq!(*trace.lock().unwrap(), expected);

    // Each node hook is its own step and sees the updates of those before it.
    let log = &out.state.notes.log;
    assert_eq!(log[0], "m1.before_agent (saw 0)");
    assert_eq!(log[2], "m3.before_agent (saw 2)");
    assert_eq!(log.last().unwrap(), "m1.after_agent (saw 17)");
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    assert_eq!(out.state.messages().last().unwrap().text(), "done");
}

/// The graph the agent compiles to: LangChain's node names.
#[test]
fn the_agent_is_a_graph_with_langchains_node_names() {
    let runs = Arc::new(AtomicUsize::new(0));
    let trace = Arc::new(Mutex::new(Vec::new()));
    let agent = create_agent(ScriptedModel::new([]))
        .tool(echo("echo", &runs))
        .middleware(Tracer { name: "m1", trace })
        .compile()
        .unwrap();
    let names: Vec<&str> = agent.node_names().collect();
    for name in [
        "model",
        "tools",
        "m1.before_agent",
        "m1.before_model",
        "m1.after_model",
        "m1.after_agent",
    ] {
        assert!(names.contains(&name), "{name} missing from {names:?}");
    }
}

/// The agent of a case of `tests/expected/agent_drawings.txt`.
fn drawing_case(case: &str) -> AgentBuilder<Chat> {
    let runs = Arc::new(AtomicUsize::new(0));
    let tool = |name| echo(name, &runs);
    let node = Hooks::BEFORE_AGENT | Hooks::BEFORE_MODEL | Hooks::AFTER_MODEL | Hooks::AFTER_AGENT;
    let hooked = |name, hooks| Toolbox {
        name,
        tools: &[],
        hooks,
    };
    let agent = create_agent(ScriptedModel::new([]));
    match case {
        "bare" => agent,
        "tools" => agent.tool(tool("echo")),
        "hooks_no_tools" => agent.middleware(hooked("m1", node)),
        "hooks_and_tools" => agent.tool(tool("echo")).middleware(hooked("m1", node)),
        "two_middleware" => agent
            .tool(tool("echo"))
            .middleware(hooked("m1", node))
            .middleware(hooked("m2", node)),
        "wrap_model_call" => agent
            .tool(tool("echo"))
            .middleware(hooked("wrap", Hooks::WRAP_MODEL_CALL)),
        "middleware_tools" => agent
            .tool(tool("echo"))
            .tool(tool("alpha"))
            .middleware(Toolbox {
                name: "bm",
                tools: &["mwtool"],
                hooks: Hooks::BEFORE_MODEL,
            }),
        "return_direct" => agent
            .tool(tool("echo"))
            .tool(tool("direct").return_direct()),
        "after_model_no_tools" => agent.middleware(hooked("am", Hooks::AFTER_MODEL)),
        "after_agent_and_tools" => agent
            .tool(tool("echo"))
            .middleware(hooked("aa", Hooks::AFTER_AGENT)),
        "wrap_tool_call_no_tools" => agent.middleware(hooked("wt", Hooks::WRAP_TOOL_CALL)),
        other => panic!("no agent for the case `{other}`"),
    }
}

/// `to_mermaid()` of an agent is LangChain's `draw_mermaid()` of the same
/// agent, to the character: node order, static edges solid, the model →
/// tools edge dashed to LangChain's targets (no `model -.-> model` unless
/// a `wrap_model_call` may answer), the tools node's label, and a tools
/// node for a `wrap_tool_call` alone.
#[test]
fn agents_are_drawn_as_langchain_draws_them() {
    let expected = include_str!("expected/agent_drawings.txt");
    let cases: Vec<(&str, &str)> = expected
        .split("=== ")
        .skip(1)
        .map(|case| case.split_once('\n').unwrap())
        .collect();
    assert_eq!(cases.len(), 11);
    for (case, body) in cases {
        let drawn = drawing_case(case).compile().unwrap().to_mermaid();
        let langchain = format!(
            "---\nconfig:\n  flowchart:\n    curve: linear\n---\ngraph TD;\n{body}\
             \tclassDef default fill:#f2f0ff,line-height:1.2\n\tclassDef first fill-opacity:0\n\
             \tclassDef last fill:#bfb6fc\n"
        );
        assert_eq!(drawn, langchain, "{case}:\n{drawn}");
    }
}

// --- wrap nesting -------------------------------------------------------------

/// Retries a failed model call once.
struct Retry;

impl<S: HasMessages + Send + Sync + 'static> AgentMiddleware<S> for Retry {
    fn name(&self) -> &str {
        "retry"
    }

    fn hooks(&self) -> Hooks {
        Hooks::WRAP_MODEL_CALL
    }

    fn wrap_model_call<'a>(
        &'a self,
        request: ModelRequest<S>,
        handler: ModelHandler<'a, S>,
    ) -> ModelFuture<'a> {
        Box::pin(async move {
            match handler.call(request.clone()).await {
                Ok(response) => Ok(response),
                Err(_) => handler.call(request).await,
            }
        })
    }
}

#[test]
fn a_retry_calls_the_model_twice() {
    let calls = Arc::new(AtomicUsize::new(0));
    let seen = Arc::clone(&calls);
    let model = FnModel(
        move |_: &ModelRequest<Chat>| match seen.fetch_add(1, Ordering::SeqCst) {
            0 => Err(ModelError::other("the provider is overloaded")),
            _ => Ok(ai("second time lucky")),
        },
    );
    let agent = create_agent(model).middleware(Retry).compile().unwrap();
    let out = block_on(agent.run(input::<Chat>("hi"))).unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    assert_eq!(
        out.state.messages().last().unwrap().text(),
        "second time lucky"
    );

    // Without the retry the error stops the run, naming the model node.
    let failing = FnModel(|_: &ModelRequest<Chat>| Err(ModelError::other("down")));
    let agent = create_agent(failing).compile().unwrap();
    match block_on(agent.run(input::<Chat>("hi"))).unwrap_err() {
        GraphError::Node { node, error, .. } => {
            assert_eq!(node, "model");
            assert_eq!(error.to_string(), "the model failed: down");
        }
        other => panic!("expected a node error, got {other}"),
    }
}

/// Answers from a cache without calling the model; edits the prompt from
/// the state otherwise.
struct Cache;

impl<S: HasPart<NotesState> + HasMessages + Send + Sync + 'static> AgentMiddleware<S> for Cache {
    fn name(&self) -> &str {
        "cache"
    }

    fn hooks(&self) -> Hooks {
        Hooks::WRAP_MODEL_CALL
    }

    fn wrap_model_call<'a>(
        &'a self,
        request: ModelRequest<S>,
        handler: ModelHandler<'a, S>,
    ) -> ModelFuture<'a> {
        if request
            .messages()
            .last()
            .is_some_and(|m| m.text() == "cached?")
        {
            return Box::pin(async { Ok(ModelResponse::new(ai("from the cache"))) });
        }
        let done = request.state().part::<NotesState>().done;
        let prompt = format!(
            "{} done={done}",
            request.system_prompt().unwrap_or_default()
        );
        handler.call(request.with_system_prompt(prompt))
    }
}

#[test]
fn a_short_circuit_calls_the_model_zero_times_and_an_edit_reaches_it() {
    let model = Arc::new(ScriptedModel::new([ai("from the model")]).recording());
    let agent = create_agent(Arc::clone(&model))
        .system_prompt("Be brief.")
        .middleware(Cache)
        .compile()
        .unwrap();
    let out = block_on(agent.run(input::<Chat>("cached?"))).unwrap();
    assert_eq!(model.calls(), 0);
    assert_eq!(
        out.state.messages().last().unwrap().text(),
        "from the cache"
    );

    let out = block_on(agent.run(input::<Chat>("fresh"))).unwrap();
    assert_eq!(model.calls(), 1);
    assert_eq!(
        out.state.messages().last().unwrap().text(),
        "from the model"
    );
    let seen = model.seen();
    assert_eq!(
        seen[0].system_prompt.as_deref(),
        Some("Be brief. done=false")
    );
    assert_eq!(seen[0].messages.len(), 1);
}

/// Retries a failed tool call once; answers calls to `cached` itself.
struct ToolRetry;

impl AgentMiddleware<Chat> for ToolRetry {
    fn name(&self) -> &str {
        "tool_retry"
    }

    fn hooks(&self) -> Hooks {
        Hooks::WRAP_TOOL_CALL
    }

    fn wrap_tool_call<'a>(
        &'a self,
        request: ToolCallRequest<Chat>,
        handler: ToolHandler<'a, Chat>,
    ) -> ToolFuture<'a, Chat> {
        if request.call.name == "cached" {
            return Box::pin(async { Ok(ToolOutput::text("from the cache")) });
        }
        Box::pin(async move {
            match handler.call(request.clone()).await {
                Ok(out) => Ok(out),
                Err(_) => handler.call(request).await,
            }
        })
    }
}

#[test]
fn a_tool_wrapper_retries_and_short_circuits() {
    let tries = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&tries);
    let flaky = FnTool::sync(
        "flaky",
        "Fails once",
        move |_: NoArgs, _: &ToolRuntime<Chat>| match counted.fetch_add(1, Ordering::SeqCst) {
            0 => Err("try again"),
            _ => Ok("worked"),
        },
    );
    let model = ScriptedModel::new([calls(&[("flaky", "c1"), ("cached", "c2")]), ai("ok")]);
    let agent = create_agent(model)
        .tool(flaky)
        .middleware(ToolRetry)
        .compile()
        .unwrap();
    let out = block_on(agent.run(input::<Chat>("go"))).unwrap();
    assert_eq!(tries.load(Ordering::SeqCst), 2);
    let answers = tool_messages(&out.state);
    assert_eq!(answers[0].1, "worked");
    assert_eq!(
        answers[1].1, "from the cache",
        "an unknown tool a wrapper answers"
    );
}

/// With no tools of its own, an agent with a `wrap_tool_call` still has
/// the tools node (LangChain makes one for the wrapper): the wrapper
/// answers a call the model makes, and the model hears the answer.
#[test]
fn a_tool_wrapper_alone_answers_calls_without_tools() {
    let model = Arc::new(ScriptedModel::new([calls(&[("cached", "c1")]), ai("ok")]).recording());
    let agent = create_agent(Arc::clone(&model))
        .middleware(ToolRetry)
        .compile()
        .unwrap();
    assert!(agent.node_names().any(|n| n == "tools"));
    let out = block_on(agent.run(input::<Chat>("go"))).unwrap();
    assert_eq!(model.calls(), 2);
    assert!(model.seen()[0].tools.is_empty());
    assert_eq!(tool_messages(&out.state)[0].1, "from the cache");
    assert_eq!(out.state.messages().last().unwrap().text(), "ok");
}

// --- tools ---------------------------------------------------------------

/// Pending until `count` reaches `target`, waking itself; gives up (false)
/// after `budget` polls, so a sequential run fails instead of hanging.
struct Barrier {
    count: Arc<AtomicUsize>,
    target: usize,
    budget: usize,
}

impl Future for Barrier {
    type Output = bool;
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<bool> {
        if self.count.load(Ordering::SeqCst) >= self.target {
            return Poll::Ready(true);
        }
        if self.budget == 0 {
            return Poll::Ready(false);
        }
        self.budget -= 1;
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

/// A tool that arrives at the barrier and waits for the others.
fn meeting(name: &'static str, arrived: &Arc<AtomicUsize>) -> FnTool<Chat> {
    let arrived = Arc::clone(arrived);
    FnTool::new(name, "Meets the others", move |_: NoArgs, _| {
        let arrived = Arc::clone(&arrived);
        async move {
            arrived.fetch_add(1, Ordering::SeqCst);
            let all = Barrier {
                count: arrived,
                target: 3,
                budget: 10_000,
            };
            if all.await {
                Ok(format!("{name} met everyone"))
            } else {
                Err(format!("{name} waited alone"))
            }
        }
    })
}

#[test]
fn the_tools_of_one_response_overlap_in_time() {
    let arrived = Arc::new(AtomicUsize::new(0));
    let model = ScriptedModel::new([
        calls(&[("a", "c1"), ("b", "c2"), ("c", "c3")]),
        ai("all met"),
    ]);
    let agent = create_agent(model)
        .tool(meeting("a", &arrived))
        .tool(meeting("b", &arrived))
        .tool(meeting("c", &arrived))
        .compile()
        .unwrap();
    let mut steps = Vec::new();
    let out = block_on(
        agent
            .run(input::<Chat>("meet"))
            .on_step(|e| steps.push(e.writes.iter().map(|w| w.node.clone()).collect::<Vec<_>>())),
    )
    .unwrap();
    let answers = tool_messages(&out.state);
    assert_eq!(
        answers,
        [
            (
                "c1".into(),
                "a met everyone".into(),
                Some(ToolStatus::Success)
            ),
            (
                "c2".into(),
                "b met everyone".into(),
                Some(ToolStatus::Success)
            ),
            (
                "c3".into(),
                "c met everyone".into(),
                Some(ToolStatus::Success)
            ),
        ]
    );
    // One step holds the three answers.
    assert!(steps.contains(&vec!["tools".to_owned(); 3]), "{steps:?}");
}

#[derive(Deserialize, agent_state::schemars::JsonSchema)]
#[serde(crate = "agent_state::serde")]
#[schemars(crate = "agent_state::schemars")]
struct Repeat {
    /// What to say.
    text: String,
    /// How many times.
    times: u32,
}

fn repeat() -> FnTool<Chat> {
    FnTool::sync(
        "repeat",
        "Repeats a text",
        |a: Repeat, _: &ToolRuntime<Chat>| a.text.repeat(a.times as usize),
    )
}

#[test]
fn bad_arguments_and_unknown_tools_are_answered_with_errors_the_model_sees() {
    let model = Arc::new(
        ScriptedModel::new([
            ai("")
                .with_tool_call(call("repeat", "c1", json!({"text": "ab", "times": "two"})))
                .with_tool_call(call("repeat", "c2", json!({"times": 2})))
                .with_tool_call(call("shout", "c3", json!({})))
                .with_tool_call(call("repeat", "c4", json!({"text": "ab", "times": 2}))),
            ai("sorry"),
        ])
        .recording(),
    );
    let agent = create_agent(Arc::clone(&model))
        .tool(repeat())
        .compile()
        .unwrap();
    let out = block_on(agent.run(input::<Chat>("go"))).unwrap();
    let answers = tool_messages(&out.state);
    assert_eq!(answers.len(), 4);
    let (_, bad_type, status) = &answers[0];
    assert_eq!(*status, Some(ToolStatus::Error));
    assert!(
        bad_type.contains("`repeat`") && bad_type.contains("at `times`"),
        "{bad_type}"
    );
    assert!(
        bad_type.contains("invalid type: string \"two\", expected u32"),
        "{bad_type}"
    );
    assert!(
        answers[1].1.contains("missing field `text`"),
        "{}",
        answers[1].1
    );
    assert_eq!(
        answers[2].1,
        "Error: shout is not a valid tool, try one of [repeat]."
    );
    assert_eq!(answers[3].1, "abab");
    assert_eq!(answers[3].2, Some(ToolStatus::Success));
    // The model saw the errors on its next call.
    assert_eq!(model.calls(), 2);
    assert_eq!(model.seen()[1].messages.len(), 6);
}

/// A middleware with tools (each an `echo`) and no-op hooks.
struct Toolbox {
    name: &'static str,
    tools: &'static [&'static str],
    hooks: Hooks,
}

impl AgentMiddleware<Chat> for Toolbox {
    fn name(&self) -> &str {
        self.name
    }

    fn hooks(&self) -> Hooks {
        self.hooks
    }

    fn tools(&self) -> Vec<Arc<dyn Tool<Chat>>> {
        let runs = Arc::new(AtomicUsize::new(0));
        let tool = |name| Arc::new(echo(name, &runs)) as Arc<dyn Tool<Chat>>;
        self.tools.iter().copied().map(tool).collect()
    }
}

/// LangChain 1.4.7 offers the middleware's tools first, in middleware
/// order, then the agent's own; its unknown-tool answer lists them so, in
/// these words (the same agent run on LangChain answers the same text).
#[test]
fn the_model_is_offered_the_middlewares_tools_first_as_langchain_offers_them() {
    let model = Arc::new(ScriptedModel::new([calls(&[("nope", "c1")]), ai("ok")]).recording());
    let runs = Arc::new(AtomicUsize::new(0));
    let agent = create_agent(Arc::clone(&model))
        .tool(echo("zeta", &runs))
        .middleware(Toolbox {
            name: "m1",
            tools: &["m1_tool"],
            hooks: Hooks::NONE,
        })
        .tool(echo("alpha", &runs))
        .middleware(Toolbox {
            name: "m2",
            tools: &["m2_b", "m2_a"],
            hooks: Hooks::NONE,
        })
        .compile()
        .unwrap();
    let out = block_on(agent.run(input::<Chat>("hi"))).unwrap();
    let offered = ["m1_tool", "m2_b", "m2_a", "zeta", "alpha"];
    for seen in model.seen() {
        assert_eq!(seen.tools, offered);
    }
    let answer = &out.state.messages()[2];
    assert_eq!(
        answer.text(),
        "Error: nope is not a valid tool, try one of [m1_tool, m2_b, m2_a, zeta, alpha]."
    );
    assert_eq!(
        (answer.name.as_deref(), answer.status),
        (Some("nope"), Some(ToolStatus::Error))
    );
}

/// An AI message whose calls have arguments that are not JSON.
fn broken(calls: &[(&str, &str)]) -> Message {
    let mut message = ai("");
    for (name, id) in calls {
        let call = agent_state::agent::invalid_tool_call(
            name,
            "{\"text\": ",
            Some((*id).into()),
            "EOF while parsing",
        );
        message.invalid_tool_calls.push(call);
    }
    message
}

/// LangChain's answer to an invalid call (`create_agent`, 1.4.7).
fn malformed(name: &str, id: &str) -> String {
    format!("Tool call {name} with id {id} could not be executed - arguments were malformed or truncated.")
}

/// As LangChain 1.4.7's `create_agent` (run side by side with the same
/// script): a response whose only calls are invalid ends the run, with no
/// tool run and no second model call; the next call (the thread's next
/// turn) is sent the history with each such call answered by an error
/// tool message right after its AI message, and the state keeps it so.
#[test]
fn a_response_of_only_invalid_calls_ends_the_turn_and_the_next_call_sees_them_answered() {
    let saver = MemoryCheckpointer::new();
    let model =
        Arc::new(ScriptedModel::new([broken(&[("repeat", "c1")]), ai("fixed")]).recording());
    let agent = create_agent(Arc::clone(&model))
        .tool(repeat())
        .compile()
        .unwrap();
    let first = agent.run(input::<Chat>("go")).on_thread(&saver, "t");
    let out = block_on(first).unwrap();
    assert_eq!(model.calls(), 1);
    assert!(out.next.is_empty());
    let kinds = |m: &[Message]| m.iter().map(|m| m.kind).collect::<Vec<_>>();
    use MessageType::{Ai, Human, Tool};
    assert_eq!(kinds(out.state.messages()), [Human, Ai]);

    // Streamed in `messages` mode, the answer comes from the model node
    // (LangChain's model node returns it), whole.
    let second = agent
        .run(input::<Chat>("again"))
        .on_thread(&saver, "t")
        .stream([StreamMode::Messages]);
    let events = block_on(second.collect::<Vec<_>>());
    let answer = events.iter().find_map(|e| match e.as_ref().unwrap() {
        StreamEvent::Message(m) if m.chunk.kind == MessageType::Tool => Some(m),
        _ => None,
    });
    let answer = answer.expect("the repaired answer streams");
    assert_eq!(answer.node, "model");
    assert_eq!(answer.chunk.text(), malformed("repeat", "c1"));
    let Some(Ok(StreamEvent::End(out))) = events.last() else {
        panic!("the stream ends with the run's output")
    };
    assert_eq!(model.calls(), 2);
    let sent = &model.seen()[1].messages;
    assert_eq!(kinds(sent), [Human, Ai, Tool, Human]);
    assert_eq!(sent[2].text(), malformed("repeat", "c1"));
    assert_eq!(
        (sent[2].tool_call_id.as_deref(), sent[2].status),
        (Some("c1"), Some(ToolStatus::Error))
    );
    let messages = out.state.messages();
    assert_eq!(kinds(messages), [Human, Ai, Tool, Human, Ai]);
    assert_eq!(messages[2].text(), malformed("repeat", "c1"));
    assert!(messages[2].id.is_some());
    assert_eq!(messages[4].text(), "fixed");
}

/// Valid and invalid calls in one response: the valid one runs; the next
/// model call sees the invalid one answered right after the AI message,
/// before the valid call's answer, as in LangChain.
#[test]
fn invalid_calls_beside_valid_ones_are_answered_before_the_next_model_call() {
    let mut mixed = broken(&[("repeat", "c1"), ("", "c3")]);
    mixed
        .tool_calls
        .push(call("repeat", "c2", json!({"text": "ab", "times": 2})));
    let model = Arc::new(ScriptedModel::new([mixed, ai("fixed")]).recording());
    let agent = create_agent(Arc::clone(&model))
        .tool(repeat())
        .compile()
        .unwrap();
    let out = block_on(agent.run(input::<Chat>("go"))).unwrap();
    assert_eq!(model.calls(), 2);
    let answers = |m: &[Message]| -> Vec<String> {
        m.iter()
            .filter(|m| m.kind == MessageType::Tool)
            .map(Message::text)
            .collect()
    };
    let expected = [
        malformed("repeat", "c1"),
        malformed("unknown", "c3"),
        "abab".into(),
    ];
    assert_eq!(answers(&model.seen()[1].messages), expected);
    assert_eq!(answers(out.state.messages()), expected);
    assert_eq!(out.state.messages()[2].kind, MessageType::Tool);
}

#[derive(Deserialize, agent_state::schemars::JsonSchema)]
#[serde(crate = "agent_state::serde")]
#[schemars(crate = "agent_state::schemars")]
struct Finish {
    /// Who finished.
    who: String,
}

/// The deep agent's shape: a tool returning a `Command` whose update sets a part
/// and answers the call.
fn finish() -> FnTool<Chat> {
    FnTool::sync(
        "finish",
        "Marks the work done",
        |a: Finish, rt: &ToolRuntime<Chat>| {
            let update = Chat::lift(NotesStateUpdate::new().done(true).owner(a.who.clone()))
                .with(MessagesStateUpdate::new().message(rt.answer(format!("done by {}", a.who))));
            ToolOutput::command(Command::update(update))
        },
    )
}

/// Forgets the answer: the update is refused, the call answered with why.
fn forgetful() -> FnTool<Chat> {
    FnTool::sync(
        "forgetful",
        "Sets done, answers nothing",
        |_: NoArgs, _: &ToolRuntime<Chat>| {
            ToolOutput::command(Command::update(Chat::lift(
                NotesStateUpdate::new().done(true),
            )))
        },
    )
}

/// The short form: an answer and an update, the agent writes the message.
fn claim() -> FnTool<Chat> {
    FnTool::sync(
        "claim",
        "Claims the work",
        |a: Finish, _: &ToolRuntime<Chat>| {
            let update = Chat::lift(NotesStateUpdate::new().owner(a.who.clone()));
            ToolOutput::update(format!("claimed by {}", a.who), update)
        },
    )
}

#[test]
fn a_tool_returning_a_command_updates_a_part() {
    let model = ScriptedModel::new([
        ai("").with_tool_call(call("finish", "c1", json!({"who": "ada"}))),
        ai("finished"),
    ]);
    let agent = create_agent(model).tool(finish()).compile().unwrap();
    let out = block_on(agent.run(input::<Chat>("finish it"))).unwrap();
    assert!(out.state.notes.done);
    assert_eq!(out.state.notes.owner.as_deref(), Some("ada"));
    let answers = tool_messages(&out.state);
    assert_eq!(
        answers,
        [("c1".into(), "done by ada".into(), Some(ToolStatus::Success))]
    );

    let model = ScriptedModel::new([calls(&[("forgetful", "c1")]), ai("oh")]);
    let agent = create_agent(model).tool(forgetful()).compile().unwrap();
    let out = block_on(agent.run(input::<Chat>("go"))).unwrap();
    assert!(
        !out.state.notes.done,
        "an update without its answer is not applied"
    );
    let answers = tool_messages(&out.state);
    assert!(
        answers[0].1.contains("no tool message answering call `c1`"),
        "{}",
        answers[0].1
    );
    assert_eq!(answers[0].2, Some(ToolStatus::Error));
}

#[test]
fn two_tools_writing_one_plain_field_fail_the_step_whole() {
    let model = ScriptedModel::new([
        ai("")
            .with_tool_call(call("claim", "c1", json!({"who": "ada"})))
            .with_tool_call(call("finish", "c2", json!({"who": "bob"}))),
        ai("never"),
    ]);
    let agent = create_agent(model)
        .tool(claim())
        .tool(finish())
        .compile()
        .unwrap();
    let saver = MemoryCheckpointer::new();
    let err = block_on(agent.run(input::<Chat>("go")).on_thread(&saver, "t")).unwrap_err();
    match &err {
        GraphError::InvalidUpdate { nodes, error, .. } => {
            assert_eq!(error.field(), "owner");
            assert_eq!(nodes, &["tools", "tools"]);
        }
        other => panic!("expected an invalid update, got {other}"),
    }
    // Nothing of the step was applied: the calls are still pending.
    let out = block_on(
        agent
            .run(Input::Resume)
            .on_thread(&saver, "t")
            .stop_after(0),
    )
    .unwrap();
    assert!(!out.state.notes.done);
    assert_eq!(out.next, ["tools"]);
}

#[test]
fn a_panicking_tool_is_answered_and_the_thread_goes_on() {
    let runs = Arc::new(AtomicUsize::new(0));
    let boom = FnTool::sync(
        "boom",
        "Panics",
        |_: NoArgs, _: &ToolRuntime<Chat>| -> String { panic!("boom at the tool") },
    );
    let model = ScriptedModel::new([calls(&[("boom", "c1"), ("echo", "c2")]), ai("recovered")]);
    let agent = create_agent(model)
        .tool(boom)
        .tool(echo("echo", &runs))
        .compile()
        .unwrap();
    let saver = MemoryCheckpointer::new();
    let out = block_on(agent.run(input::<Chat>("go")).on_thread(&saver, "t")).unwrap();
    let answers = tool_messages(&out.state);
    assert_eq!(
        answers[0].1,
        "Error: tool `boom` panicked: boom at the tool"
    );
    assert_eq!(answers[0].2, Some(ToolStatus::Error));
    assert_eq!(answers[1].1, "echo ran");
    assert_eq!(out.state.messages().last().unwrap().text(), "recovered");
    assert!(out.next.is_empty());
}

#[test]
fn a_failing_tool_is_answered_with_its_error() {
    let failing = FnTool::sync("fetch", "Fails", |_: NoArgs, _: &ToolRuntime<Chat>| {
        Err::<String, _>("connection refused")
    });
    let model = ScriptedModel::new([calls(&[("fetch", "c1")]), ai("ok")]);
    let agent = create_agent(model).tool(failing).compile().unwrap();
    let out = block_on(agent.run(input::<Chat>("go"))).unwrap();
    let answers = tool_messages(&out.state);
    assert_eq!(
        answers[0].1,
        "Error: tool `fetch` failed: connection refused"
    );
}

// --- resume -------------------------------------------------------------------

fn resumable(runs: &Arc<AtomicUsize>) -> AgentBuilder<Chat> {
    let model = ScriptedModel::new([
        calls(&[("a", "c1"), ("b", "c2")]),
        calls(&[("a", "c3")]),
        ai("all done"),
    ]);
    create_agent(model)
        .tool(echo("a", runs))
        .tool(echo("b", runs))
}

/// Stops the run after each step in turn and resumes it: every tool call
/// runs once, the model is called three times, the result is the same.
fn resumes_without_rerunning<C: Checkpointer>(saver: &C) {
    for stop in 1..=5 {
        let runs = Arc::new(AtomicUsize::new(0));
        let agent = resumable(&runs).compile().unwrap();
        let thread = format!("stop-{stop}");
        let first = agent
            .run(input::<Chat>("go"))
            .on_thread(saver, &thread)
            .stop_after(stop);
        let out = block_on(first).unwrap();
        assert!(!out.next.is_empty(), "stopped after {stop} steps");
        let before = runs.load(Ordering::SeqCst);
        // A new agent, as after a restart: its script starts over where the
        // stored conversation says the model is.
        let again = Arc::new(AtomicUsize::new(0));
        let model_calls = out
            .state
            .messages()
            .iter()
            .filter(|m| m.kind == MessageType::Ai)
            .count();
        let agent = resume_agent(&again, model_calls);
        let out = block_on(agent.run(Input::Resume).on_thread(saver, &thread)).unwrap();
        assert!(out.next.is_empty());
        assert_eq!(
            before + again.load(Ordering::SeqCst),
            3,
            "stopped after {stop}"
        );
        assert_eq!(tool_messages(&out.state).len(), 3);
        assert_eq!(out.state.messages().last().unwrap().text(), "all done");
    }
}

/// The resumable agent, its script advanced past the replies already made.
fn resume_agent(runs: &Arc<AtomicUsize>, made: usize) -> agent_state::graph::Graph<Chat> {
    let script = [
        calls(&[("a", "c1"), ("b", "c2")]),
        calls(&[("a", "c3")]),
        ai("all done"),
    ];
    let model = ScriptedModel::new(script.into_iter().skip(made));
    create_agent(model)
        .tool(echo("a", runs))
        .tool(echo("b", runs))
        .compile()
        .unwrap()
}

#[test]
fn a_stopped_thread_resumes_without_rerunning_a_finished_tool_call_in_memory() {
    resumes_without_rerunning(&MemoryCheckpointer::new());
}

#[cfg(feature = "sqlite")]
#[test]
fn a_stopped_thread_resumes_without_rerunning_a_finished_tool_call_on_sqlite() {
    use agent_state::checkpoint::sqlite::SqliteCheckpointer;
    let path = support::temp_db("agent-resume");
    resumes_without_rerunning(&SqliteCheckpointer::open(&path).unwrap());
    // And the stored thread reloads in a new connection, as after a restart.
    let saver = SqliteCheckpointer::open(&path).unwrap();
    let runs = Arc::new(AtomicUsize::new(0));
    let agent = resume_agent(&runs, 3);
    let out = block_on(agent.run(Input::Resume).on_thread(&saver, "stop-3")).unwrap();
    assert_eq!(runs.load(Ordering::SeqCst), 0);
    assert_eq!(tool_messages(&out.state).len(), 3);
}

/// A tool that answers once `release` is set, polling itself meanwhile.
fn held(name: &'static str, release: &Arc<std::sync::atomic::AtomicBool>) -> FnTool<Chat> {
    let release = Arc::clone(release);
    FnTool::new(name, "Waits to be released", move |_: NoArgs, _| {
        let release = Arc::clone(&release);
        async move {
            support::flow::WaitFor(release).await;
            Ok::<_, String>(format!("{name} released"))
        }
    })
}

/// Waits until the tools step keeps the answer of call `id`.
async fn until_answer_kept(saver: &dyn Checkpointer, thread: &str, id: &str) {
    let key = format!("once:{id}");
    loop {
        let head = saver.head(thread).await.unwrap().unwrap().meta.id;
        let pending = saver.pending(thread, head).await.unwrap();
        if pending.iter().any(|w| w.task == "tools" && w.key == key) {
            return;
        }
        Yield(false).await;
    }
}

/// Yields once to the executor.
struct Yield(bool);

impl Future for Yield {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if std::mem::replace(&mut self.0, true) {
            Poll::Ready(())
        } else {
            cx.waker().wake_by_ref();
            Poll::Pending
        }
    }
}

/// A run dropped in the middle of a tools step (a crash, a cancelled
/// request): the call that had finished keeps its answer, so the resumed
/// run does not make it again; only the unfinished call runs.
fn a_crash_mid_tools_step_reruns_only_unfinished_calls(saver: &dyn Checkpointer) {
    let runs = Arc::new(AtomicUsize::new(0));
    let release = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let agent = |made: usize| {
        let script = [calls(&[("a", "c1"), ("held", "c2")]), ai("both answered")];
        create_agent(ScriptedModel::new(script.into_iter().skip(made)))
            .tool(echo("a", &runs))
            .tool(held("held", &release))
            .compile()
            .unwrap()
    };
    let first = agent(0);
    let run = first
        .run(input::<Chat>("go"))
        .on_thread(saver, "crash")
        .into_future();
    let watch = Box::pin(until_answer_kept(saver, "crash", "c1"));
    match block_on(futures::future::select(run, watch)) {
        futures::future::Either::Left((out, _)) => {
            panic!("the run ended: {:?}", out.map(|o| o.next))
        }
        futures::future::Either::Right(((), run)) => drop(run),
    }
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    release.store(true, Ordering::SeqCst);
    let out = block_on(agent(1).run(Input::Resume).on_thread(saver, "crash")).unwrap();
    assert_eq!(
        runs.load(Ordering::SeqCst),
        1,
        "the finished call was not made again"
    );
    let answers: Vec<String> = tool_messages(&out.state).into_iter().map(|t| t.1).collect();
    assert_eq!(answers, ["a ran", "held released"]);
    assert_eq!(out.state.messages().last().unwrap().text(), "both answered");
}

#[test]
fn a_crash_mid_tools_step_reruns_only_unfinished_calls_in_memory() {
    a_crash_mid_tools_step_reruns_only_unfinished_calls(&MemoryCheckpointer::new());
}

#[cfg(feature = "sqlite")]
#[test]
fn a_crash_mid_tools_step_reruns_only_unfinished_calls_on_sqlite() {
    use agent_state::checkpoint::sqlite::SqliteCheckpointer;
    let path = support::temp_db("agent-crash");
    a_crash_mid_tools_step_reruns_only_unfinished_calls(&SqliteCheckpointer::open(&path).unwrap());
}

// --- jumps, return_direct, building -----------------------------------------

/// Jumps to the end before the model when the user says "stop".
struct Guard;

impl<S: HasMessages + Send + Sync + 'static> AgentMiddleware<S> for Guard {
    fn name(&self) -> &str {
        "guard"
    }

    fn hooks(&self) -> Hooks {
        Hooks::BEFORE_MODEL
    }

    fn before_model(&self, state: &S, _: &NodeContext) -> HookResult<S> {
        let stop = state.messages().last().is_some_and(|m| m.text() == "stop");
        Ok(if stop {
            HookOutput::update(S::lift(MessagesStateUpdate::new().message(ai("stopped"))))
                .and_jump(Jump::End)
        } else {
            HookOutput::none()
        })
    }
}

#[test]
fn a_hook_can_jump_to_the_end() {
    let model = Arc::new(ScriptedModel::new([ai("answered")]));
    let agent = create_agent(Arc::clone(&model))
        .middleware(Guard)
        .compile()
        .unwrap();
    let out = block_on(agent.run(input::<Chat>("stop"))).unwrap();
    assert_eq!(model.calls(), 0);
    assert_eq!(out.state.messages().last().unwrap().text(), "stopped");
    let out = block_on(agent.run(input::<Chat>("go"))).unwrap();
    assert_eq!(model.calls(), 1);
    assert_eq!(out.state.messages().last().unwrap().text(), "answered");
}

/// Sends a draft back to the model once, from `after_model`.
struct Redraft;

impl<S: HasMessages + Send + Sync + 'static> AgentMiddleware<S> for Redraft {
    fn name(&self) -> &str {
        "redraft"
    }

    fn hooks(&self) -> Hooks {
        Hooks::AFTER_MODEL
    }

    fn after_model(&self, state: &S, _: &NodeContext) -> HookResult<S> {
        let draft = state.messages().last().is_some_and(|m| m.text() == "draft");
        Ok(if draft {
            HookOutput::jump(Jump::Model)
        } else {
            HookOutput::none()
        })
    }
}

/// Runs the tools of the last AI message from `before_model`: the calls a
/// `wrap_model_call` short-circuited with.
struct ToolsFirst;

impl<S: HasMessages + Send + Sync + 'static> AgentMiddleware<S> for ToolsFirst {
    fn name(&self) -> &str {
        "tools_first"
    }

    fn hooks(&self) -> Hooks {
        Hooks::BEFORE_AGENT
    }

    fn before_agent(&self, state: &S, _: &NodeContext) -> HookResult<S> {
        let pending = state
            .messages()
            .last()
            .is_some_and(|m| !m.tool_calls.is_empty());
        Ok(if pending {
            HookOutput::jump(Jump::Tools)
        } else {
            HookOutput::none()
        })
    }
}

#[test]
fn hooks_can_jump_to_the_model_and_to_the_tools() {
    let model = Arc::new(ScriptedModel::new([ai("draft"), ai("final")]));
    let agent = create_agent(Arc::clone(&model))
        .middleware(Redraft)
        .compile()
        .unwrap();
    let out = block_on(agent.run(input::<Chat>("write"))).unwrap();
    assert_eq!(model.calls(), 2);
    assert_eq!(out.state.messages().last().unwrap().text(), "final");

    // An input that ends with tool calls: `before_agent` sends them to the
    // tools before any model call.
    let runs = Arc::new(AtomicUsize::new(0));
    let model = Arc::new(ScriptedModel::new([ai("after the tool")]));
    let agent = create_agent(Arc::clone(&model))
        .tool(echo("echo", &runs))
        .middleware(ToolsFirst)
        .compile()
        .unwrap();
    let out = block_on(agent.run(input::<Chat>(calls(&[("echo", "c1")])))).unwrap();
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    assert_eq!(model.calls(), 1);
    assert_eq!(tool_messages(&out.state)[0].1, "echo ran");
}

#[test]
fn a_return_direct_tool_ends_the_loop() {
    let runs = Arc::new(AtomicUsize::new(0));
    let model = Arc::new(ScriptedModel::new([calls(&[("echo", "c1")]), ai("never")]));
    let agent = create_agent(Arc::clone(&model))
        .tool(echo("echo", &runs).return_direct())
        .compile()
        .unwrap();
    let out = block_on(agent.run(input::<Chat>("go"))).unwrap();
    assert_eq!(model.calls(), 1);
    assert_eq!(out.state.messages().last().unwrap().text(), "echo ran");
}

#[test]
fn tokens_stream_to_the_sink() {
    let chunks = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&chunks);
    let agent = create_agent(ScriptedModel::new([ai("hello there")]))
        .on_token(move |c| sink.lock().unwrap().push((c.text(), c.last)))
        .compile()
        .unwrap();
    let out = block_on(agent.run(input::<Chat>("hi"))).unwrap();
    // The whole reply as one piece, then the empty piece that closes it.
    assert_eq!(
        *chunks.lock().unwrap(),
        [("hello there".to_owned(), false), (String::new(), true)]
    );
    assert_eq!(out.state.messages().last().unwrap().text(), "hello there");
}

/// A model that streams its reply word by word and marks pieces last
/// itself, wrongly: its first word and its last.
struct Marking(&'static str);

impl<S: Send + Sync> ChatModel<S> for Marking {
    fn invoke<'a>(&'a self, _: &'a ModelRequest<S>) -> BoxFuture<'a, Result<Message, ModelError>> {
        Box::pin(async move { Ok(ai(self.0)) })
    }

    fn stream<'a>(
        &'a self,
        _: &'a ModelRequest<S>,
    ) -> BoxStream<'a, Result<MessageChunk, ModelError>> {
        let words: Vec<&str> = self.0.split_inclusive(' ').collect();
        let marked = |(i, w): (usize, &str)| {
            let chunk = MessageChunk::ai(w);
            Ok(if i == 0 || i + 1 == words.len() {
                chunk.as_last()
            } else {
                chunk
            })
        };
        let chunks: Vec<_> = words.iter().copied().enumerate().map(marked).collect();
        stream::iter(chunks).boxed()
    }
}

/// A streamed piece: its text, whether it is marked last, and its JSON's
/// `chunk_position`.
type Piece = (String, bool, Value);

/// The pieces the model node streamed, per message id in order.
fn streamed_pieces(events: &[Result<StreamEvent<Chat>, GraphError>]) -> Vec<(String, Vec<Piece>)> {
    let mut messages: Vec<(String, Vec<Piece>)> = Vec::new();
    for event in events {
        let event = event.as_ref().unwrap();
        let StreamEvent::Message(m) = event else {
            continue;
        };
        if m.node != "model" || m.message.is_some() {
            continue;
        }
        let id = m.chunk.id.clone().unwrap();
        let piece = (
            m.chunk.text(),
            m.chunk.last,
            event.to_json()[0]["chunk_position"].clone(),
        );
        match messages.last_mut() {
            Some((last, pieces)) if *last == id => pieces.push(piece),
            _ => messages.push((id, vec![piece])),
        }
    }
    messages
}

/// LangChain's model stream ends each message with an empty chunk marked
/// `chunk_position: "last"`; the loop sends it for any model (scripted,
/// a function, one that streams and marks pieces itself), once per
/// message, with the id of the message the state keeps.
#[test]
fn every_streamed_message_ends_with_one_empty_last_chunk_whatever_the_model() {
    let turn = |r: &ModelRequest<Chat>| {
        let answered = r.messages().iter().any(|m| m.kind == MessageType::Tool);
        Ok(if answered {
            ai("done")
        } else {
            calls(&[("echo", "c1")])
        })
    };
    let models: Vec<(&str, Arc<dyn ChatModel<Chat>>, usize)> = vec![
        (
            "scripted",
            Arc::new(ScriptedModel::new([calls(&[("echo", "c1")]), ai("done")])),
            2,
        ),
        ("function", Arc::new(FnModel(turn)), 2),
        ("streaming", Arc::new(Marking("Tea is a fine choice.")), 1),
    ];
    for (what, model, replies) in models {
        let runs = Arc::new(AtomicUsize::new(0));
        let agent = create_agent(model)
            .tool(echo("echo", &runs))
            .compile()
            .unwrap();
        let stream = agent
            .run(input::<Chat>("go"))
            .stream([StreamMode::Messages]);
        let events = block_on(stream.collect::<Vec<_>>());
        let Some(Ok(StreamEvent::End(out))) = events.last() else {
            panic!("{what}: no end")
        };
        let streamed = streamed_pieces(&events);
        assert_eq!(streamed.len(), replies, "{what}: {streamed:?}");
        let kept: Vec<&Message> = out
            .state
            .messages()
            .iter()
            .filter(|m| m.kind == MessageType::Ai)
            .collect();
        for ((id, pieces), kept) in streamed.iter().zip(kept) {
            let (end, body) = pieces.split_last().unwrap();
            assert_eq!(
                *end,
                (String::new(), true, json!("last")),
                "{what}: {pieces:?}"
            );
            assert!(
                body.iter().all(|p| !p.1 && p.2.is_null()),
                "{what}: {pieces:?}"
            );
            assert_eq!(kept.id.as_ref(), Some(id), "{what}");
            let text: String = body.iter().map(|p| p.0.as_str()).collect();
            assert_eq!(text, kept.text(), "{what}");
        }
    }
}

#[test]
fn duplicate_names_do_not_build() {
    let runs = Arc::new(AtomicUsize::new(0));
    let err = create_agent(ScriptedModel::new([]))
        .tool(echo("echo", &runs))
        .tool(echo("echo", &runs))
        .compile()
        .err()
        .unwrap();
    assert!(matches!(&err, AgentError::DuplicateTool { name } if name == "echo"));
    let err = create_agent::<Chat, _>(ScriptedModel::new([]))
        .middleware(Guard)
        .middleware(Guard)
        .compile()
        .err()
        .unwrap();
    assert_eq!(
        err.to_string(),
        "middleware `guard` is added twice; middleware names must be unique"
    );
}

#[test]
fn a_tool_definition_carries_the_json_schema_of_its_arguments() {
    let tool = repeat();
    let def = agent_state::agent::Tool::definition(&tool);
    assert_eq!(def.name, "repeat");
    assert_eq!(def.parameters["type"], "object");
    assert_eq!(def.parameters["properties"]["times"]["type"], "integer");
    assert_eq!(
        def.parameters["properties"]["text"]["description"],
        "What to say."
    );
    assert_eq!(def.parameters["required"], json!(["text", "times"]));
    assert!(def.parameters.get("$schema").is_none());
}

/// A tool that asks a person first: `ToolRuntime::interrupt` pauses the
/// run; resumed, the tool is called again and gets the answer, while the
/// sibling call that had finished is not made again.
#[test]
fn a_tool_that_interrupts_pauses_the_run_and_is_answered_when_resumed() {
    let runs = Arc::new(AtomicUsize::new(0));
    let ask = FnTool::sync(
        "ask",
        "Asks a person",
        |_: NoArgs, rt: &ToolRuntime<Chat>| -> Result<String, agent_state::graph::BoxError> {
            let answer: String = rt.interrupt(format!("may I run {}?", rt.call_id()))?;
            Ok(format!("the person said {answer}"))
        },
    );
    let model = ScriptedModel::new([calls(&[("ask", "c1"), ("echo", "c2")]), ai("done")]);
    let agent = create_agent(model)
        .tool(ask)
        .tool(echo("echo", &runs))
        .compile()
        .unwrap();
    let saver = MemoryCheckpointer::new();
    let paused = block_on(agent.run(input::<Chat>("go")).on_thread(&saver, "t")).unwrap();
    assert_eq!(paused.interrupts.len(), 1, "{:?}", paused.state.messages());
    assert_eq!(paused.interrupts[0].value, json!("may I run c1?"));
    assert_eq!(paused.state.messages().len(), 2, "no call is answered yet");
    assert_eq!(runs.load(Ordering::SeqCst), 1);

    let resume = Input::ResumeWith(agent_state::graph::Resume::value("yes"));
    let done = block_on(agent.run(resume).on_thread(&saver, "t")).unwrap();
    assert!(done.interrupts.is_empty());
    let texts: Vec<String> = done.state.messages().iter().map(|m| m.text()).collect();
    assert_eq!(texts[2], "the person said yes");
    assert_eq!(texts[3], "echo ran");
    assert_eq!(texts.last().unwrap(), "done");
    assert_eq!(
        runs.load(Ordering::SeqCst),
        1,
        "the finished call is not made again"
    );
}
