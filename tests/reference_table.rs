//! The reference table of `MainAgentGraphState` (a portal's agent), rendered
//! from the schema and compared with the checked-in
//! `tests/expected/main_agent_state.md`. Run with `UPDATE_EXPECTED=1` to
//! rewrite the file after an intended change.

#[allow(dead_code)]
#[path = "../examples/main_agent_state.rs"]
mod main_agent_state;

use agent_state::AgentState;
use main_agent_state::MainAgentGraphState;

const EXPECTED: &str = "tests/expected/main_agent_state.md";

/// The table, under a heading, as the seeds' reference page has it.
fn render() -> String {
    let schema = MainAgentGraphState::schema();
    let mut out = format!(
        "# Reference: State Schema\n\n> `{}`: {}\n\n## State Fields\n\n",
        schema.name,
        schema
            .doc
            .split("\n\n")
            .next()
            .unwrap_or_default()
            .replace('\n', " ")
    );
    out.push_str(&MainAgentGraphState::reference_table());
    out.push_str("\n## Owners\n\n");
    for part in &schema.parts {
        out.push_str(&format!(
            "- `{}` ({}): {}\n",
            part.state, part.field, part.doc
        ));
    }
    out
}

#[test]
fn main_agent_state_table_matches_the_checked_in_file() {
    let rendered = render();
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(EXPECTED);
    if std::env::var_os("UPDATE_EXPECTED").is_some() {
        std::fs::write(&path, &rendered).unwrap();
    }
    let expected = std::fs::read_to_string(&path).unwrap();
    assert_eq!(
        rendered, expected,
        "the rendered table differs from {EXPECTED}; rerun with UPDATE_EXPECTED=1 if the change is intended"
    );
}

#[test]
fn every_seed_field_is_in_the_table_with_its_owner() {
    let schema = MainAgentGraphState::schema();
    let owners: Vec<(&str, &str)> = schema.fields.iter().map(|f| (f.name, f.owner)).collect();
    for (field, owner) in [
        ("config", "RuntimeState"),
        ("client", "RuntimeState"),
        ("messages", "MessagesState"),
        ("editorRoomId", "EditorPluginState"),
        ("currentEntityDid", "DomainIndexerState"),
        ("browserTools", "PortalClientState"),
        ("agActions", "PortalClientState"),
        ("userContext", "MemoryPluginState"),
        ("spaceId", "RuntimeState"),
        ("mcpUcanContext", "RuntimeState"),
        ("userPreferences", "UserPreferencesState"),
        ("loadedPlugins", "RuntimeState"),
    ] {
        assert!(owners.contains(&(field, owner)), "{field} owned by {owner}");
    }
    assert_eq!(owners.len(), 12);
}
