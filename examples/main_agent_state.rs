//! `MainAgentGraphState` of seeds 000–002, field for field, with the updates
//! a turn of the main agent makes: the runtime's input, the memory plugin's
//! enrichment, the editor plugin, the `load_capability` meta-tool, and a
//! client update that is rejected.
#![deny(missing_docs)]

use std::collections::HashMap;

use agent_state::serde::{Deserialize, Serialize};
use agent_state::serde_json::{json, Value};
use agent_state::{ai, human, AgentState, Messages, StateError};

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

/// The main agent graph's state (`apps/app/src/graph/state.ts`).
///
/// Owners, per seed 002: runtime (`config`, `client`, `messages`,
/// `spaceId`, `mcpUcanContext`, `loadedPlugins`), editor plugin
/// (`editorRoomId`), domain indexer plugin (`currentEntityDid`), portal
/// client (`browserTools`, `agActions`), memory plugin (`userContext`),
/// user-preferences plugin (`userPreferences`).
#[derive(AgentState, Debug, Clone, PartialEq)]
#[state(rename_all = "camelCase")]
pub struct MainAgentGraphState {
    /// User identification — DID and optional WebSocket ID.
    #[reducer(merge)]
    pub config: Config,
    /// Source client type.
    pub client: Client,
    /// Conversation history (LangGraph message reducer).
    #[reducer(messages)]
    pub messages: Messages,
    /// Active BlockNote editor room (enables editor agent).
    pub editor_room_id: Option<String>,
    /// Context entity DID for domain-specific operations.
    pub current_entity_did: Option<String>,
    /// Client-provided browser tools (reverse calls).
    pub browser_tools: Vec<BrowserToolCall>,
    /// AG-UI custom actions from client.
    pub ag_actions: Vec<AgAction>,
    /// Per-user personalization data from Memory Agent.
    #[reducer(merge)]
    pub user_context: UserContextData,
    /// Matrix space ID for organizing pages, passed from the client via message metadata.
    pub space_id: Option<String>,
    /// UCAN invocations for authorized MCP tool calls.
    pub mcp_ucan_context: Option<McpUcanContext>,
    /// The user-preferences plugin's data, as that plugin stores it.
    pub user_preferences: Option<Value>,
    /// On-demand plugins the agent has loaded for this thread; never shrinks.
    #[reducer(union)]
    pub loaded_plugins: Vec<String>,
}

type Update = MainAgentGraphStateUpdate;

fn main() -> Result<(), StateError> {
    let mut state = MainAgentGraphState::default();

    // The runtime applies the client's input, as JSON, to the new thread.
    state.apply_json(json!({
        "config": {"did": "did:ixo:alice", "wsId": "ws-17"},
        "client": "matrix",
        "spaceId": "!space:matrix.org",
        "messages": [{"role": "user", "content": "Draft the grant page for our solar co-op."}]
    }))?;

    // One step: the memory plugin enriches the user context while the
    // editor plugin opens a room. Their updates apply together.
    state.apply_all([
        Update::new().user_context(
            UserContextDataUpdate::new()
                .identity("Alice, co-op treasurer")
                .goals("Fund 40 rooftop panels"),
        ),
        Update::new().editor_room_id("!editor-42:matrix.org"),
    ])?;

    // The `load_capability` meta-tool loads plugins; loading one twice is a no-op.
    state.apply(Update::new().loaded_plugins(["editor", "memory"]))?;
    state.apply(
        Update::new()
            .loaded_plugin("editor")
            .message(ai("Here is a first draft of the grant page.")),
    )?;

    // Memory merges again: the fields it sets override, the rest stay.
    state.apply(
        Update::new().user_context(UserContextDataUpdate::new().recent("Drafted the grant page")),
    )?;

    // A client sends a typo'd key. LangGraph would drop it silently; here it
    // is an error that lists the valid keys, and nothing is applied.
    let before = state.clone();
    let err = state
        .apply_json(json!({"editorRoomID": "!other:matrix.org", "messages": "hi"}))
        .unwrap_err();
    println!("rejected: {err}\n");
    assert_eq!(state, before);

    // The editor closes: `null` clears the room; an absent key would keep it.
    state.apply_json(json!({"editorRoomId": null, "messages": [human("Thanks!")]}))?;

    println!("fields:");
    for field in &MainAgentGraphState::schema().fields {
        println!(
            "  {:<18} {:<28} {:<9} {}",
            field.name,
            field.ty,
            field.reducer.to_string(),
            field.doc
        );
    }
    let json = agent_state::serde_json::to_string_pretty(&state).expect("a state serializes");
    println!("\nstate:\n{json}");
    Ok(())
}
