//! Tools that pause the run (`ToolRuntime::interrupt`): one call, and two
//! calls of one AI message pausing side by side, each answered by its
//! interrupt's id, as LangGraph runs each tool call as a task of its own;
//! `once` per call; hooks that pause the run and hooks that await.
#![cfg(feature = "agent")]

use agent_state::agent::{create_agent, input, FnTool, ScriptedModel};
use agent_state::base::{HasMessages, MessagesState};
use agent_state::checkpoint::{block_on, Checkpointer, MemoryCheckpointer};
use agent_state::graph::{BoxError, Graph, Input, Resume};
use agent_state::serde_json::{json, Value};
use agent_state::{ai, AgentState, MessageType, ToolCall};

#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct Chat {
    #[state(flatten)]
    pub base: MessagesState,
}

fn call(name: &str, id: &str) -> ToolCall {
    ToolCall::new(name, json!({}).as_object().cloned().unwrap(), id)
}

/// An agent whose tools `ask_a` and `ask_b` each ask a person a question
/// and answer with what they said.
fn agent(calls: &[&str]) -> Graph<Chat> {
    let mut first = ai("");
    for (i, name) in calls.iter().enumerate() {
        first = first.with_tool_call(call(name, &format!("call_{i}")));
    }
    let model = ScriptedModel::new([first, ai("Done.")]);
    let ask = |name: &'static str| {
        FnTool::sync(
            name,
            "Ask a person.",
            move |_: Value, rt: &_| -> Result<String, BoxError> {
                let rt: &agent_state::agent::ToolRuntime<Chat> = rt;
                let said: String = rt.interrupt(json!({"question": name}))?;
                Ok(format!("{name}: {said}"))
            },
        )
    };
    create_agent(model)
        .tool(ask("ask_a"))
        .tool(ask("ask_b"))
        .compile()
        .unwrap()
}

fn answers(state: &Chat) -> Vec<String> {
    state
        .messages()
        .iter()
        .filter(|m| m.kind == MessageType::Tool)
        .map(|m| m.text())
        .collect()
}

fn one_call_pauses_and_resumes<C: Checkpointer>(saver: &C) {
    let agent = agent(&["ask_a"]);
    let out = block_on(agent.run(input::<Chat>("go")).on_thread(saver, "one")).unwrap();
    assert_eq!(out.interrupts.len(), 1);
    assert_eq!(out.interrupts[0].value, json!({"question": "ask_a"}));
    let resume = Resume::value("yes");
    let out = block_on(agent.run(Input::ResumeWith(resume)).on_thread(saver, "one")).unwrap();
    assert_eq!(answers(&out.state), ["ask_a: yes"]);
    assert_eq!(out.state.messages().last().unwrap().text(), "Done.");
}

#[test]
fn a_tool_call_pauses_and_its_answer_comes_from_the_resume_value() {
    one_call_pauses_and_resumes(&MemoryCheckpointer::new());
}

/// Both calls pause in one step; each is answered by its interrupt's id,
/// one at a time: the first answer runs its call (and keeps its answer),
/// the other call still waits under the same id.
/// `savers` are three handles of one store (openings of one file, as three
/// processes would have), one per run.
fn two_calls_pause_side_by_side<C: Checkpointer>(savers: [&C; 3]) {
    let [saver, saver2, saver3] = savers;
    let agent = agent(&["ask_a", "ask_b"]);
    let out = block_on(agent.run(input::<Chat>("go")).on_thread(saver, "two")).unwrap();
    let questions: Vec<&Value> = out.interrupts.iter().map(|i| &i.value).collect();
    assert_eq!(
        questions,
        [&json!({"question": "ask_a"}), &json!({"question": "ask_b"})]
    );
    let (a, b) = (out.interrupts[0].id.clone(), out.interrupts[1].id.clone());
    assert_ne!(a, b);
    assert!(a.contains("call_0") && b.contains("call_1"), "{a} {b}");

    // One value for two pauses is refused: they are answered by id.
    let both = block_on(
        agent
            .run(Input::ResumeWith(Resume::value("x")))
            .on_thread(saver, "two"),
    );
    assert!(both.is_err());

    let out = block_on(
        agent
            .run(Input::ResumeWith(Resume::new().answer(&b, "bee")))
            .on_thread(saver2, "two"),
    )
    .unwrap();
    assert_eq!(out.interrupts.len(), 1);
    assert_eq!(out.interrupts[0].id, a);
    assert!(answers(&out.state).is_empty());

    let resume = Resume::new().answer(&a, "ay");
    let out = block_on(
        agent
            .run(Input::ResumeWith(resume))
            .on_thread(saver3, "two"),
    )
    .unwrap();
    assert!(out.interrupts.is_empty());
    assert_eq!(answers(&out.state), ["ask_a: ay", "ask_b: bee"]);
    assert_eq!(out.state.messages().last().unwrap().text(), "Done.");
}

#[test]
fn two_tool_calls_pause_side_by_side_and_are_answered_by_id() {
    let saver = MemoryCheckpointer::new();
    two_calls_pause_side_by_side([&saver, &saver, &saver]);
}

#[cfg(feature = "sqlite")]
#[test]
fn two_paused_tool_calls_are_answered_from_reopened_sqlite_files() {
    use agent_state::checkpoint::sqlite::SqliteCheckpointer;
    let dir = std::env::temp_dir().join(format!("agent-interrupts-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("two.db");
    let _ = std::fs::remove_file(&path);
    let open = || SqliteCheckpointer::open(&path).unwrap();
    two_calls_pause_side_by_side([&open(), &open(), &open()]);
    one_call_pauses_and_resumes(&open());
}

#[test]
fn two_paused_tool_calls_are_answered_in_one_resume() {
    let saver = MemoryCheckpointer::new();
    let agent = agent(&["ask_a", "ask_b"]);
    let out = block_on(agent.run(input::<Chat>("go")).on_thread(&saver, "both")).unwrap();
    let ids: Vec<String> = out.interrupts.iter().map(|i| i.id.clone()).collect();
    let resume = Resume::new().answer(&ids[0], "one").answer(&ids[1], "two");
    let out = block_on(
        agent
            .run(Input::ResumeWith(resume))
            .on_thread(&saver, "both"),
    )
    .unwrap();
    assert!(out.interrupts.is_empty());
    assert_eq!(answers(&out.state), ["ask_a: one", "ask_b: two"]);
}

/// `once` in two calls of one step, under one key: each call keeps its own
/// value (the key is the call's), and a resumed step returns each its own
/// kept value without running the work again.
#[test]
fn once_keys_are_each_calls_own() {
    let runs = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = std::sync::Arc::clone(&runs);
    let draw = FnTool::sync(
        "draw",
        "Draws a ticket, then asks a person.",
        move |_: Value, rt: &agent_state::agent::ToolRuntime<Chat>| -> Result<String, BoxError> {
            let ticket: String = rt.node().once("ticket", || {
                counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                Ok::<_, BoxError>(format!("ticket for {}", rt.call_id()))
            })?;
            let said: String = rt.interrupt(json!({"ticket": ticket}))?;
            Ok(format!("{ticket}: {said}"))
        },
    );
    let first = ai("")
        .with_tool_call(call("draw", "call_0"))
        .with_tool_call(call("draw", "call_1"));
    let agent = create_agent(ScriptedModel::new([first, ai("Done.")]))
        .tool(draw)
        .compile()
        .unwrap();
    let saver = MemoryCheckpointer::new();
    let out = block_on(agent.run(input::<Chat>("go")).on_thread(&saver, "t")).unwrap();
    let mut tickets: Vec<Value> = out.interrupts.iter().map(|i| i.value.clone()).collect();
    tickets.sort_by_key(|v| v.to_string());
    assert_eq!(
        tickets,
        [
            json!({"ticket": "ticket for call_0"}),
            json!({"ticket": "ticket for call_1"})
        ]
    );
    let mut resume = Resume::new();
    for i in &out.interrupts {
        resume = resume.answer(i.id.clone(), "ok");
    }
    let out = block_on(agent.run(Input::ResumeWith(resume)).on_thread(&saver, "t")).unwrap();
    assert_eq!(
        answers(&out.state),
        ["ticket for call_0: ok", "ticket for call_1: ok"]
    );
    assert_eq!(
        runs.load(std::sync::atomic::Ordering::SeqCst),
        2,
        "each ticket drawn once"
    );
}

/// A `before_model` hook that asks a person first (the node's context it
/// is given), and an `after_agent` hook that awaits (its `*_async`
/// variant): the run pauses in the hook, resumes there with the answer,
/// and the awaited hook writes after the loop.
mod hooks {
    use super::*;
    use agent_state::agent::{AgentMiddleware, HookFuture, HookOutput, HookResult, Hooks};
    use agent_state::base::MessagesStateUpdate;
    use agent_state::graph::NodeContext;

    struct Gate;

    impl AgentMiddleware<Chat> for Gate {
        fn name(&self) -> &str {
            "gate"
        }

        fn hooks(&self) -> Hooks {
            Hooks::BEFORE_MODEL | Hooks::AFTER_AGENT
        }

        fn before_model(&self, _: &Chat, ctx: &NodeContext) -> HookResult<Chat> {
            let go: bool = ctx.interrupt(json!({"ask": "may the model run?"}))?;
            assert!(go);
            Ok(HookOutput::none())
        }

        fn after_agent_async<'a>(
            &'a self,
            _: &'a Chat,
            _: &'a NodeContext,
        ) -> HookFuture<'a, Chat> {
            Box::pin(async {
                // Stands for awaited work (a store, a model).
                agent_state::futures::future::ready(()).await;
                let note = MessagesStateUpdate::new().message(ai("logged"));
                Ok(HookOutput::update(ChatUpdate::new().base(note)))
            })
        }
    }

    #[test]
    fn a_hook_pauses_the_run_and_an_awaited_hook_writes() {
        let agent = create_agent(ScriptedModel::new([ai("Hello.")]))
            .middleware(Gate)
            .compile()
            .unwrap();
        let saver = MemoryCheckpointer::new();
        let out = block_on(agent.run(input::<Chat>("hi")).on_thread(&saver, "h")).unwrap();
        assert_eq!(out.interrupts.len(), 1);
        assert_eq!(out.interrupts[0].node, "gate.before_model");
        assert_eq!(out.state.messages().len(), 1, "the model has not run");
        let resume = Input::ResumeWith(Resume::value(true));
        let out = block_on(agent.run(resume).on_thread(&saver, "h")).unwrap();
        let texts: Vec<String> = out.state.messages().iter().map(|m| m.text()).collect();
        assert_eq!(texts, ["hi", "Hello.", "logged"]);
    }
}
