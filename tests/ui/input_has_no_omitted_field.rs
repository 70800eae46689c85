use agent_state::AgentState;

#[derive(AgentState)]
pub struct Tracker {
    #[state(omit_from_input)]
    pub business_idea_complete: bool,
    pub hint: Option<String>,
}

fn main() {
    let _ = TrackerInput::new().hint("x").business_idea_complete(true);
}
