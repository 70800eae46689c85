//! `MainAgentGraphState` of a portal's TypeScript LangGraph agent, field
//! for field, its fields grouped by owner as flattened parts: the runtime,
//! the conversation, the portal client, the editor, domain-indexer, memory
//! and user-preferences plugins. JSON stays flat, as the TypeScript graph
//! sees it.
//!
//! `main` runs a turn of the main agent: the runtime's input, a step where
//! the memory plugin and the editor plugin write together, the
//! `load_capability` meta-tool (written once, generic over any state with a
//! runtime part), a client update that is rejected, and then prints the
//! reference table LangGraph projects keep by hand and the final state.
#![deny(missing_docs)]

use std::collections::HashMap;

use agent_state::base::{MessagesState, MessagesStateUpdate};
use agent_state::serde::{Deserialize, Serialize};
use agent_state::serde_json::{json, Value};
use agent_state::{ai, human, AgentState, HasPart, StateError, StateUpdate, UnionVec};

/// Source client type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(crate = "agent_state::serde", rename_all = "lowercase")]
pub enum Client {
    /// The web portal.
    #[default]
    Portal,
    /// A Matrix client.
    Matrix,
    /// Slack.
    Slack,
}

/// User identification: DID and optional WebSocket id.
#[derive(AgentState, Debug, Clone, PartialEq)]
#[state(rename_all = "camelCase")]
pub struct Config {
    /// The WebSocket id of the live connection.
    pub ws_id: Option<String>,
    /// The user's DID.
    pub did: String,
}

/// Per-user personalization data from the Memory Agent.
#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct UserContextData {
    /// Who the user is.
    pub identity: Option<String>,
    /// What they do.
    pub work: Option<String>,
    /// What they want to achieve.
    pub goals: Option<String>,
    /// What they care about.
    pub interests: Option<String>,
    /// Who they work with.
    pub relationships: Option<String>,
    /// Recent activity summary.
    pub recent: Option<String>,
}

/// A browser tool the portal client offers for reverse calls.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(crate = "agent_state::serde")]
pub struct BrowserToolCall {
    /// Tool name.
    pub name: String,
    /// What it does.
    pub description: String,
    /// JSON Schema of its arguments.
    pub schema: Value,
}

/// An AG-UI custom action from the client.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(crate = "agent_state::serde")]
pub struct AgAction {
    /// Action name.
    pub name: String,
    /// JSON Schema of its arguments.
    pub schema: Value,
}

/// UCAN invocations for authorized MCP tool calls.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(crate = "agent_state::serde")]
pub struct McpUcanContext {
    /// Tool name → serialized UCAN invocation.
    pub invocations: HashMap<String, String>,
}

/// Fields the runtime owns (with the UCAN service for `mcpUcanContext`).
#[derive(AgentState, Debug, Clone, PartialEq)]
#[state(rename_all = "camelCase")]
pub struct RuntimeState {
    /// User identification — DID and optional WebSocket ID.
    #[reducer(merge)]
    pub config: Config,
    /// Source client type.
    pub client: Client,
    /// Matrix space ID for organizing pages — passed from the client via message metadata.
    pub space_id: Option<String>,
    /// UCAN invocations for authorized MCP tool calls.
    pub mcp_ucan_context: Option<McpUcanContext>,
    /// On-demand plugins the agent has loaded for this thread; never shrinks.
    #[reducer(union)]
    pub loaded_plugins: UnionVec<String>,
}

/// Fields the portal client provides.
#[derive(AgentState, Debug, Clone, PartialEq)]
#[state(rename_all = "camelCase")]
pub struct PortalClientState {
    /// Client-provided browser tools (reverse calls).
    pub browser_tools: Vec<BrowserToolCall>,
    /// AG-UI custom actions from client.
    pub ag_actions: Vec<AgAction>,
}

/// The editor plugin's field.
#[derive(AgentState, Debug, Clone, PartialEq)]
#[state(rename_all = "camelCase")]
pub struct EditorPluginState {
    /// Active BlockNote editor room (enables editor agent).
    pub editor_room_id: Option<String>,
}

/// The domain indexer plugin's field.
#[derive(AgentState, Debug, Clone, PartialEq)]
#[state(rename_all = "camelCase")]
pub struct DomainIndexerState {
    /// Context entity DID for domain-specific operations.
    pub current_entity_did: Option<String>,
}

/// The memory plugin's field, written by its enrichment middleware.
#[derive(AgentState, Debug, Clone, PartialEq)]
#[state(rename_all = "camelCase")]
pub struct MemoryPluginState {
    /// Per-user personalization data from Memory Agent.
    #[reducer(merge)]
    pub user_context: UserContextData,
}

/// The user-preferences plugin's field.
#[derive(AgentState, Debug, Clone, PartialEq)]
#[state(rename_all = "camelCase")]
pub struct UserPreferencesState {
    /// The user's preferences, as the user-preferences plugin stores them.
    pub user_preferences: Option<Value>,
}

/// The main agent graph's state (`apps/app/src/graph/state.ts`), one part
/// per owner.
#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct MainAgentGraphState {
    /// Runtime.
    #[state(flatten)]
    pub runtime: RuntimeState,
    /// Runtime and agent loop: the conversation.
    #[state(flatten)]
    pub conversation: MessagesState,
    /// Editor plugin.
    #[state(flatten)]
    pub editor: EditorPluginState,
    /// Domain indexer plugin.
    #[state(flatten)]
    pub domain_indexer: DomainIndexerState,
    /// Portal client.
    #[state(flatten)]
    pub portal: PortalClientState,
    /// Memory plugin.
    #[state(flatten)]
    pub memory: MemoryPluginState,
    /// User-preferences plugin.
    #[state(flatten)]
    pub user_preferences: UserPreferencesState,
}

type Update = MainAgentGraphStateUpdate;

/// The `load_capability` meta-tool, written once for every state that has
/// the runtime's part: it loads plugins, and loading one twice is a no-op.
pub fn load_capability<S: HasPart<RuntimeState>>(plugins: &[&str]) -> S::Update {
    S::lift(RuntimeStateUpdate::new().loaded_plugins(plugins.iter().map(|p| (*p).to_owned())))
}

fn main() -> Result<(), StateError> {
    let mut state = MainAgentGraphState::default();

    // The runtime applies the client's input, as flat JSON, to the new thread.
    state.apply_input_json(json!({
        "config": {"did": "did:ixo:alice", "wsId": "ws-17"},
        "client": "matrix",
        "spaceId": "!space:matrix.org",
        "messages": [{"role": "user", "content": "Draft the grant page for our solar co-op."}]
    }))?;

    // One step: the memory plugin enriches the user context while the
    // editor plugin opens a room. Each writes its own part; the updates
    // apply together.
    state.apply_all([
        Update::new().memory(
            MemoryPluginStateUpdate::new().user_context(
                UserContextDataUpdate::new()
                    .identity("Alice, co-op treasurer")
                    .goals("Fund 40 rooftop panels"),
            ),
        ),
        MainAgentGraphState::lift(
            EditorPluginStateUpdate::new().editor_room_id("!editor-42:matrix.org"),
        ),
    ])?;

    // The meta-tool loads plugins; the agent answers in the same update.
    state.apply(load_capability::<MainAgentGraphState>(&[
        "editor", "memory",
    ]))?;
    state.apply(load_capability::<MainAgentGraphState>(&["editor"]).with(
        MessagesStateUpdate::new().message(ai("Here is a first draft of the grant page.")),
    ))?;

    // Memory merges again: the fields it sets override, the rest stay.
    state.apply(MainAgentGraphState::lift(
        MemoryPluginStateUpdate::new()
            .user_context(UserContextDataUpdate::new().recent("Drafted the grant page")),
    ))?;

    // A client sends a typo'd key. LangGraph would drop it silently; here it
    // is an error that lists every valid (flat) key, and nothing is applied.
    let before = state.clone();
    let err = state
        .apply_json(json!({"editorRoomID": "!other:matrix.org", "messages": "hi"}))
        .unwrap_err();
    println!("rejected: {err}\n");
    assert_eq!(state, before);

    // The editor closes: `null` clears the room; an absent key would keep it.
    state.apply_json(json!({"editorRoomId": null, "messages": [human("Thanks!")]}))?;
    assert_eq!(state.runtime.loaded_plugins, ["editor", "memory"]);

    println!("{}", MainAgentGraphState::reference_table());
    let json = agent_state::serde_json::to_string_pretty(&state).expect("a state serializes");
    println!("state:\n{json}");
    Ok(())
}
