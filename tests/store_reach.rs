//! The store reaches what LangGraph lets reach it: a graph's nodes
//! (`compile(store=..)`, `runtime.store`), a run given its own, a
//! subgraph's nodes, and an agent's tools, hooks and wrappers
//! (`create_agent(store=..)`, `ToolRuntime.store`, `request.runtime.store`).

use std::sync::Arc;

use agent_state::checkpoint::{block_on, MemoryCheckpointer};
use agent_state::graph::{BoxError, Graph, Input, NodeContext, StateGraph, END, START};
use agent_state::store::{MemoryStore, Store, StoreExt};
use agent_state::AgentState;
use serde_json::json;

#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct Notes {
    /// What this run writes to the store.
    pub note: String,
    /// What the nodes read from the store.
    #[reducer(append)]
    pub read: Vec<String>,
}

fn shared() -> Arc<dyn Store> {
    Arc::new(MemoryStore::new())
}

/// The note at `["notes"]` / `last`, or `none`.
async fn last_note(ctx: &NodeContext) -> Result<String, BoxError> {
    let store = ctx.store().ok_or("this graph needs a store")?;
    let item = store.get(["notes"], "last").await?;
    Ok(item.map_or("none".to_owned(), |i| i.value["text"].to_string()))
}

/// `write` puts the run's note (when it has one) after reading the last
/// one; `read` reads it back in a later step. Both async, awaiting the
/// store across their awaits.
fn notes_graph() -> StateGraph<Notes> {
    StateGraph::<Notes>::new()
        .add_node("write", |s: Arc<Notes>, ctx: NodeContext| async move {
            let before = last_note(&ctx).await?;
            if !s.note.is_empty() {
                let store = ctx.store().ok_or("this graph needs a store")?;
                store
                    .put(["notes"], "last", json!({ "text": s.note }))
                    .await?;
            }
            Ok::<_, BoxError>(NotesUpdate::new().read(vec![format!("write saw {before}")]))
        })
        .add_node("read", |_: Arc<Notes>, ctx: NodeContext| async move {
            let now = last_note(&ctx).await?;
            Ok::<_, BoxError>(NotesUpdate::new().read(vec![format!("read saw {now}")]))
        })
        .add_edge(START, "write")
        .add_edge("write", "read")
        .add_edge("read", END)
}

fn note(text: &str) -> Input<Notes> {
    Input::Update(NotesUpdate::new().note(text.to_owned()))
}

#[test]
fn a_later_node_and_another_thread_read_what_a_node_wrote() {
    let graph = notes_graph().compile().unwrap().with_store(shared());
    let saver = MemoryCheckpointer::new();
    let first = block_on(graph.run(note("tea")).on_thread(&saver, "t-1")).unwrap();
    assert_eq!(first.state.read, ["write saw none", "read saw \"tea\""]);
    let second = block_on(graph.run(note("")).on_thread(&saver, "t-2")).unwrap();
    assert_eq!(second.state.read, ["write saw \"tea\"", "read saw \"tea\""]);
    let stored = block_on(graph.store().unwrap().get(["notes"], "last")).unwrap();
    assert_eq!(stored.unwrap().value["text"], "tea");
}

#[test]
fn the_builders_store_is_the_compiled_graphs() {
    let store = shared();
    let graph = notes_graph()
        .with_store(Arc::clone(&store))
        .compile()
        .unwrap();
    block_on(graph.run(note("jam"))).unwrap();
    let stored = block_on(store.get(["notes"], "last")).unwrap();
    assert_eq!(stored.unwrap().value["text"], "jam");
}

#[test]
fn a_runs_store_overrides_the_compiled_one() {
    let compiled = shared();
    let own = shared();
    let graph = notes_graph()
        .compile()
        .unwrap()
        .with_store(Arc::clone(&compiled));
    let out = block_on(graph.run(note("milk")).store(Arc::clone(&own))).unwrap();
    assert_eq!(out.state.read, ["write saw none", "read saw \"milk\""]);
    assert!(block_on(compiled.get(["notes"], "last")).unwrap().is_none());
    let stored = block_on(own.get(["notes"], "last")).unwrap();
    assert_eq!(stored.unwrap().value["text"], "milk");
}

#[test]
fn a_run_without_a_store_gives_none_and_the_nodes_error() {
    let graph = notes_graph().compile().unwrap();
    assert!(graph.store().is_none());
    let error = block_on(graph.run(note("x"))).unwrap_err();
    assert!(
        error.to_string().contains("this graph needs a store"),
        "{error}"
    );
    let probe = StateGraph::<Notes>::new()
        .add_node("probe", |_: &Notes, ctx: &NodeContext| {
            let has = ctx.store().is_some();
            NotesUpdate::new().read(vec![format!("store: {has}")])
        })
        .add_edge(START, "probe")
        .compile()
        .unwrap();
    let out = block_on(probe.run(note(""))).unwrap();
    assert_eq!(out.state.read, ["store: false"]);
}

/// A parent whose `sub` node is `child` over the same state.
fn parent_of(child: Graph<Notes>) -> Graph<Notes> {
    StateGraph::<Notes>::new()
        .add_node(
            "sub",
            child.mapped(
                |_: &Notes| Notes::default(),
                |c: &Notes| NotesUpdate::new().read(c.read.clone()),
            ),
        )
        .add_edge(START, "sub")
        .add_edge("sub", END)
        .compile()
        .unwrap()
}

/// A child graph whose one node reads the last note.
fn reading_child() -> StateGraph<Notes> {
    StateGraph::<Notes>::new()
        .add_node("inner", |_: Arc<Notes>, ctx: NodeContext| async move {
            let now = last_note(&ctx).await?;
            Ok::<_, BoxError>(NotesUpdate::new().read(vec![format!("inner saw {now}")]))
        })
        .add_edge(START, "inner")
}

#[test]
fn a_subgraphs_nodes_use_their_parents_store() {
    let store = shared();
    block_on(store.put(["notes"], "last", json!({ "text": "bread" }))).unwrap();
    let other = shared();
    // The child's own store gives way to the parent's run's.
    let child = reading_child().compile().unwrap().with_store(other);
    let parent = parent_of(child).with_store(Arc::clone(&store));
    let plain = block_on(parent.run(note(""))).unwrap();
    assert_eq!(plain.state.read, ["inner saw \"bread\""]);
    let saver = MemoryCheckpointer::new();
    let on_thread = block_on(parent.run(note("")).on_thread(&saver, "t")).unwrap();
    assert_eq!(on_thread.state.read, ["inner saw \"bread\""]);
}

#[test]
fn a_subgraph_keeps_its_own_store_when_its_parent_has_none() {
    let own = shared();
    block_on(own.put(["notes"], "last", json!({ "text": "cheese" }))).unwrap();
    let child = reading_child().compile().unwrap().with_store(own);
    let out = block_on(parent_of(child).run(note(""))).unwrap();
    assert_eq!(out.state.read, ["inner saw \"cheese\""]);
}

#[cfg(feature = "agent")]
mod agent {
    use super::*;
    use agent_state::agent::{
        create_agent, input, AgentMiddleware, FnTool, HookOutput, HookResult, Hooks, ModelFuture,
        ModelHandler, ModelRequest, ScriptedModel, ToolCallRequest, ToolFuture, ToolHandler,
        ToolRuntime,
    };
    use agent_state::base::{HasMessages, MessagesState};
    use agent_state::serde::Deserialize;
    use agent_state::{ai, ToolCall};

    #[derive(AgentState, Debug, Clone, PartialEq)]
    pub struct Chat {
        #[state(flatten)]
        pub base: MessagesState,
        /// What `before_agent` recalled from the store.
        pub recalled: Option<String>,
    }

    /// A fact to keep across threads.
    #[derive(Deserialize, agent_state::schemars::JsonSchema)]
    #[schemars(crate = "agent_state::schemars")]
    #[serde(crate = "agent_state::serde")]
    struct Fact {
        text: String,
    }

    /// Saves a fact under `["memories"]` / `fact`; a clear error of its
    /// own without a store.
    fn remember() -> FnTool<Chat> {
        FnTool::new(
            "remember",
            "Keeps a fact about the user",
            |fact: Fact, rt: ToolRuntime<Chat>| async move {
                let store = rt
                    .store()
                    .ok_or("remember needs a store: give the agent one with .store(..)")?;
                store
                    .put(["memories"], "fact", json!({ "text": fact.text }))
                    .await?;
                Ok::<_, BoxError>("kept")
            },
        )
    }

    fn remember_call(text: &str) -> ToolCall {
        let args = json!({ "text": text });
        ToolCall::new("remember", args.as_object().unwrap().clone(), "c1")
    }

    /// Reads the fact back into `recalled` before the loop.
    struct Recall;

    impl AgentMiddleware<Chat> for Recall {
        fn name(&self) -> &str {
            "recall"
        }

        fn hooks(&self) -> Hooks {
            Hooks::BEFORE_AGENT
        }

        fn before_agent_async<'a>(
            &'a self,
            _: &'a Chat,
            ctx: &'a NodeContext,
        ) -> agent_state::agent::HookFuture<'a, Chat> {
            Box::pin(async move {
                let Some(store) = ctx.store() else {
                    return Ok(HookOutput::none());
                };
                let fact = store.get(["memories"], "fact").await?;
                let Some(fact) = fact else {
                    return Ok(HookOutput::none());
                };
                let text = fact.value["text"].as_str().unwrap_or("").to_owned();
                let result: HookResult<Chat> =
                    Ok(HookOutput::update(ChatUpdate::new().recalled(text)));
                result
            })
        }
    }

    #[test]
    fn a_tools_memory_reaches_the_next_runs_before_agent() {
        let model = ScriptedModel::new([
            ai("").with_tool_call(remember_call("likes tea")),
            ai("noted"),
            ai("hello again"),
        ]);
        let store = shared();
        let agent = create_agent(model)
            .tool(remember())
            .middleware(Recall)
            .store(Arc::clone(&store))
            .compile()
            .unwrap();
        let saver = MemoryCheckpointer::new();
        let first = block_on(
            agent
                .run(input::<Chat>("I like tea"))
                .on_thread(&saver, "t-1"),
        );
        let first = first.unwrap();
        assert_eq!(first.state.recalled, None);
        assert_eq!(first.state.messages()[2].text(), "kept");
        let second = block_on(agent.run(input::<Chat>("hi")).on_thread(&saver, "t-2")).unwrap();
        assert_eq!(second.state.recalled.as_deref(), Some("likes tea"));
    }

    /// Puts the remembered fact in the system prompt, and notes in the
    /// store each tool call it lets through.
    struct Prompted;

    impl<S: HasMessages + Send + Sync + 'static> AgentMiddleware<S> for Prompted {
        fn name(&self) -> &str {
            "prompted"
        }

        fn hooks(&self) -> Hooks {
            Hooks::WRAP_MODEL_CALL | Hooks::WRAP_TOOL_CALL
        }

        fn wrap_model_call<'a>(
            &'a self,
            request: ModelRequest<S>,
            handler: ModelHandler<'a, S>,
        ) -> ModelFuture<'a> {
            Box::pin(async move {
                let fact = match request.store() {
                    Some(store) => store.get(["memories"], "fact").await.ok().flatten(),
                    None => None,
                };
                let known = fact.map_or("nothing".to_owned(), |f| f.value["text"].to_string());
                let prompt = format!("The user: {known}.");
                handler.call(request.with_system_prompt(prompt)).await
            })
        }

        fn wrap_tool_call<'a>(
            &'a self,
            request: ToolCallRequest<S>,
            handler: ToolHandler<'a, S>,
        ) -> ToolFuture<'a, S> {
            Box::pin(async move {
                if let Some(store) = request.store() {
                    let entry = json!({ "tool": request.call.name });
                    let logged = store.put(["calls"], request.call_id(), entry).await;
                    logged.expect("the call is logged");
                }
                handler.call(request).await
            })
        }
    }

    #[test]
    fn wrappers_reach_the_store_through_their_requests() {
        let calls = [
            ai("").with_tool_call(remember_call("plays chess")),
            ai("ok"),
        ];
        let model = Arc::new(ScriptedModel::new(calls).recording());
        let store = shared();
        let agent = create_agent(Arc::clone(&model))
            .tool(remember())
            .middleware(Prompted)
            .compile()
            .unwrap();
        let run = agent.run(input::<Chat>("I play chess"));
        block_on(run.store(Arc::clone(&store))).unwrap();
        let prompts: Vec<Option<String>> =
            model.seen().into_iter().map(|s| s.system_prompt).collect();
        let before = Some("The user: nothing.".to_owned());
        let after = Some("The user: \"plays chess\".".to_owned());
        assert_eq!(prompts, [before, after]);
        let logged = block_on(store.get(["calls"], "c1")).unwrap().unwrap();
        assert_eq!(logged.value["tool"], "remember");
    }

    #[test]
    fn a_tool_needing_a_store_says_so_when_the_run_has_none() {
        let model = ScriptedModel::new([ai("").with_tool_call(remember_call("x")), ai("ok")]);
        let agent = create_agent(model)
            .tool(remember())
            .middleware(Recall)
            .middleware(Prompted)
            .compile()
            .unwrap();
        assert!(agent.store().is_none());
        let out = block_on(agent.run(input::<Chat>("hi"))).unwrap();
        let answer = &out.state.messages()[2];
        assert_eq!(
            answer.text(),
            "Error: tool `remember` failed: remember needs a store: give the agent one with .store(..)"
        );
        assert_eq!(out.state.recalled, None);
    }
}
