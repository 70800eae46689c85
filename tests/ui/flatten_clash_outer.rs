use agent_state::AgentState;

#[derive(AgentState)]
#[state(rename_all = "camelCase")]
pub struct LanguageState {
    pub detected_language: Option<String>,
}

#[derive(AgentState)]
pub struct Agent {
    #[state(flatten)]
    pub language: LanguageState,
    #[state(rename = "detectedLanguage")]
    pub language_code: String,
}

fn main() {}
