//! A portal's memory flow: the main agent remembers its user across
//! threads. `MainAgentGraphState` (declared in `main_agent_state.rs`) has
//! `userContext: UserContextData` with a merge reducer; a memory plugin,
//! written as one middleware, fills it from the store and writes it back:
//!
//! * `before_agent` reads the user's profile at `["users", did]` / `profile`
//!   (`did` from the state's `config.did`) into `userContext`;
//! * `wrap_model_call` tells the model what is known about the user;
//! * its `remember` tool lets the model note a fact (`work`, `goals`, ...)
//!   in `userContext`;
//! * `after_agent` notes the last human message as `recent` and writes the
//!   profile back to the store.
//!
//! Thread 1 introduces the user; thread 2, a new conversation, starts
//! knowing them. One SQLite file holds both the threads' checkpoints and
//! the store (`SqliteStore::sharing` the checkpointer's connection), so a
//! later process on the same `--db` knows the user too.
//!
//! ```sh
//! cargo run --example memory_agent            # a fresh file in the temp dir
//! cargo run --example memory_agent -- --db /tmp/memory.db
//! ```

#[path = "main_agent_state.rs"]
#[allow(dead_code)]
mod main_agent_state;

use std::path::PathBuf;
use std::sync::Arc;

use agent_state::agent::{
    create_agent, AgentMiddleware, FnModel, FnTool, HookFuture, HookOutput, Hooks, ModelError,
    ModelFuture, ModelHandler, ModelRequest, Tool, ToolOutput, ToolRuntime,
};
use agent_state::base::HasMessages;
use agent_state::checkpoint::block_on;
use agent_state::checkpoint::sqlite::SqliteCheckpointer;
use agent_state::graph::{BoxError, Graph, GraphState, Input, NodeContext};
use agent_state::schemars::JsonSchema;
use agent_state::serde::Deserialize;
use agent_state::serde_json::{json, Map, Value};
use agent_state::store::{SqliteStore, Store, StoreExt};
use agent_state::{ai, AgentState, HasPart, Message, MessageType, StateUpdate, ToolCall};
use main_agent_state::{
    MainAgentGraphState, MainAgentGraphStateUpdate, MemoryPluginState, MemoryPluginStateUpdate,
    RuntimeState, UserContextData, UserContextDataUpdate,
};

/// The user of both threads.
const DID: &str = "did:ixo:alice";

/// Where a profile lives in the store: one namespace per user.
fn namespace(did: &str) -> [&str; 2] {
    ["users", did]
}

/// The user's DID, as the runtime put it in the state.
fn did_of<S: HasPart<RuntimeState>>(state: &S) -> Result<&str, BoxError> {
    let did = state.part::<RuntimeState>().config.did.as_str();
    if did.is_empty() {
        return Err("memory: the state's `config.did` is empty, so whose memory is unknown".into());
    }
    Ok(did)
}

/// The run's store, or an error saying how to give one.
fn store_of(ctx: &NodeContext) -> Result<&Arc<dyn Store>, BoxError> {
    ctx.store()
        .ok_or_else(|| "memory: the agent has no store; give it one with `.store(..)`".into())
}

/// A profile as JSON, without its unset fields: merged as an update, it
/// sets only what is known.
fn profile_json(profile: &UserContextData) -> Value {
    let mut json = profile.to_json();
    if let Value::Object(map) = &mut json {
        map.retain(|_, v| !v.is_null());
    }
    json
}

/// The profile's known fields, one `name: value` line each, in the order
/// the profile declares them.
fn profile_lines(profile: &UserContextData) -> Vec<String> {
    let fields = [
        ("identity", &profile.identity),
        ("work", &profile.work),
        ("goals", &profile.goals),
        ("interests", &profile.interests),
        ("relationships", &profile.relationships),
        ("recent", &profile.recent),
    ];
    let known = fields
        .into_iter()
        .filter_map(|(name, v)| Some((name, v.as_ref()?)));
    known
        .map(|(name, value)| format!("{name}: {value}"))
        .collect()
}

/// What the `remember` tool is given: one fact about the user.
#[derive(Deserialize, JsonSchema)]
#[serde(crate = "agent_state::serde")]
#[schemars(crate = "agent_state::schemars")]
struct Fact {
    /// Which part of the profile: identity, work, goals, interests or
    /// relationships.
    field: String,
    /// What to remember.
    value: String,
}

/// The update of `userContext` a fact makes; an unknown field is the
/// tool's error, naming the ones there are.
fn fact_update(fact: Fact) -> Result<UserContextDataUpdate, BoxError> {
    let update = UserContextDataUpdate::new();
    Ok(match fact.field.as_str() {
        "identity" => update.identity(fact.value),
        "work" => update.work(fact.value),
        "goals" => update.goals(fact.value),
        "interests" => update.interests(fact.value),
        "relationships" => update.relationships(fact.value),
        other => {
            let known = "identity, work, goals, interests, relationships";
            return Err(format!("remember: no profile field `{other}` (one of {known})").into());
        }
    })
}

/// The portal's memory plugin, as one middleware.
struct Memory;

impl Memory {
    /// `remember`: a fact into this thread's `userContext`; `after_agent`
    /// stores it.
    fn remember<S>() -> FnTool<S>
    where
        S: HasPart<MemoryPluginState> + GraphState + Send + Sync + 'static,
        S::Update: Send,
    {
        FnTool::sync(
            "remember",
            "Remembers a fact about the user across conversations",
            |fact: Fact, _: &ToolRuntime<S>| {
                let update = MemoryPluginStateUpdate::new().user_context(fact_update(fact)?);
                Ok::<_, BoxError>(ToolOutput::update("Remembered.", S::lift(update)))
            },
        )
    }
}

impl<S> AgentMiddleware<S> for Memory
where
    S: HasPart<RuntimeState> + HasPart<MemoryPluginState> + HasMessages + GraphState,
    S: Send + Sync + 'static,
    S::Update: Send + Sync,
{
    fn name(&self) -> &str {
        "memory"
    }

    fn hooks(&self) -> Hooks {
        Hooks::BEFORE_AGENT | Hooks::AFTER_AGENT | Hooks::WRAP_MODEL_CALL
    }

    fn tools(&self) -> Vec<Arc<dyn Tool<S>>> {
        vec![Arc::new(Self::remember::<S>())]
    }

    /// The stored profile into `userContext`.
    fn before_agent_async<'a>(&'a self, state: &'a S, ctx: &'a NodeContext) -> HookFuture<'a, S> {
        Box::pin(async move {
            let store = store_of(ctx)?;
            let Some(item) = store.get(namespace(did_of(state)?), "profile").await? else {
                return Ok(HookOutput::none());
            };
            let update = UserContextDataUpdate::from_json(Value::Object(item.value))?;
            let update = MemoryPluginStateUpdate::new().user_context(update);
            Ok(HookOutput::update(S::lift(update)))
        })
    }

    /// The last human message as `recent`, and the profile back to the
    /// store.
    fn after_agent_async<'a>(&'a self, state: &'a S, ctx: &'a NodeContext) -> HookFuture<'a, S> {
        Box::pin(async move {
            let store = store_of(ctx)?;
            let mut profile = state.part::<MemoryPluginState>().user_context.clone();
            let said = state
                .messages()
                .iter()
                .rev()
                .find(|m| m.kind == MessageType::Human);
            let recent = said.map(|m| format!("said {:?}", m.text()));
            if let Some(recent) = &recent {
                profile.recent = Some(recent.clone());
            }
            let ns = namespace(did_of(state)?);
            store.put(ns, "profile", profile_json(&profile)).await?;
            let update = match recent {
                Some(recent) => UserContextDataUpdate::new().recent(recent),
                None => UserContextDataUpdate::new(),
            };
            let update = MemoryPluginStateUpdate::new().user_context(update);
            Ok(HookOutput::update(S::lift(update)))
        })
    }

    /// What is known about the user, in the system prompt.
    fn wrap_model_call<'a>(
        &'a self,
        request: ModelRequest<S>,
        handler: ModelHandler<'a, S>,
    ) -> ModelFuture<'a> {
        let profile = &request.state().part::<MemoryPluginState>().user_context;
        let known = profile_lines(profile);
        let prompt = if known.is_empty() {
            "You are the main agent. Nothing is known about the user yet.".to_owned()
        } else {
            format!(
                "You are the main agent. About the user: {}.",
                known.join("; ")
            )
        };
        handler.call(request.with_system_prompt(prompt))
    }
}

/// A `remember` call for `field`.
fn remember_call(id: &str, field: &str, value: &str) -> ToolCall {
    let mut args = Map::new();
    args.insert("field".to_owned(), json!(field));
    args.insert("value".to_owned(), json!(value));
    ToolCall::new("remember", args, id)
}

/// The scripted model (no network): when it knows nothing about the user
/// it notes what they said about themselves; after its tools answer it
/// says so; when the system prompt knows the user it greets them by it.
fn reply(request: &ModelRequest<MainAgentGraphState>) -> Result<Message, ModelError> {
    let last = request.messages().last().map(|m| m.kind);
    let prompt = request.system_prompt().unwrap_or_default();
    Ok(match last {
        Some(MessageType::Tool) => ai("Noted. I will remember that."),
        _ if prompt.contains("About the user:") => {
            let about = prompt.split("About the user: ").nth(1).unwrap_or_default();
            ai(format!("Welcome back! I remember: {about}"))
        }
        _ => ai("")
            .with_tool_call(remember_call("c1", "identity", "Alice, co-op treasurer"))
            .with_tool_call(remember_call(
                "c2",
                "work",
                "Runs the finances of a solar co-op",
            ))
            .with_tool_call(remember_call("c3", "goals", "Fund 40 rooftop panels")),
    })
}

/// The runtime's input for a turn: the user and their message, as the
/// client sends it (flat JSON).
fn turn(text: &str) -> Result<Input<MainAgentGraphState>, BoxError> {
    let update = MainAgentGraphStateUpdate::from_json(json!({
        "config": {"did": DID},
        "client": "portal",
        "messages": [{"role": "user", "content": text}],
    }))?;
    Ok(Input::Update(update))
}

/// `--db PATH`, or a fresh file in the temp directory.
fn db_path() -> Result<PathBuf, BoxError> {
    let mut args = std::env::args().skip(1);
    match (args.next().as_deref(), args.next()) {
        (None, _) => {
            let name = format!("memory_agent-{}.db", std::process::id());
            Ok(std::env::temp_dir().join(name))
        }
        (Some("--db"), Some(path)) => Ok(PathBuf::from(path)),
        _ => Err("usage: memory_agent [--db PATH]".into()),
    }
}

fn agent(store: Arc<dyn Store>) -> Result<Graph<MainAgentGraphState>, BoxError> {
    Ok(create_agent(FnModel(reply))
        .middleware(Memory)
        .store(store)
        .compile()?)
}

fn main() -> Result<(), BoxError> {
    let db = db_path()?;
    // One file holds the threads' checkpoints and the store's memories;
    // the store runs on the checkpointer's connection.
    let saver = Arc::new(SqliteCheckpointer::open(&db)?);
    let store: Arc<dyn Store> = Arc::new(SqliteStore::sharing(Arc::clone(&saver))?);
    let agent = agent(Arc::clone(&store))?;

    let intro = "Hi! I'm Alice; I run the finances of our solar co-op.";
    let first = block_on(agent.run(turn(intro)?).on_thread(&*saver, "thread-1"))?;
    println!(
        "Thread 1 answer: {}",
        first
            .state
            .messages()
            .last()
            .map(Message::text)
            .unwrap_or_default()
    );
    let stored = block_on(store.get(namespace(DID), "profile"))?.ok_or("no profile stored")?;
    println!(
        "Stored at [\"users\", {DID:?}] / profile: {}",
        Value::Object(stored.value)
    );

    let second = block_on(
        agent
            .run(turn("Where were we?")?)
            .on_thread(&*saver, "thread-2"),
    )?;
    let profile = &second.state.memory.user_context;
    for line in profile_lines(profile) {
        println!("Thread 2 userContext {line}");
    }
    println!(
        "Thread 2 answer: {}",
        second
            .state
            .messages()
            .last()
            .map(Message::text)
            .unwrap_or_default()
    );
    println!("Checkpoints and memories in {}", db.display());
    Ok(())
}
