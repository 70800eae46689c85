//! The debate workflow's state, driven through one debate by hand: the
//! updates the optimist, skeptic and moderator nodes return, one rejected
//! step, and the final state as LangChain-compatible JSON.
//!
//! Built with `#![deny(missing_docs)]` to show that the generated items are
//! documented.
#![deny(missing_docs)]

use agent_state::serde::{Deserialize, Serialize};
use agent_state::serde_json::json;
use agent_state::{ai, human, AgentState, Messages, StateError};

/// Where the workflow is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(crate = "agent_state::serde", rename_all = "lowercase")]
pub enum DebateStatus {
    /// Rounds are still being argued.
    Running,
    /// The moderator closed the debate.
    Completed,
    /// Something went wrong.
    Error,
}

/// Why a status change was refused.
#[derive(Debug)]
pub struct StatusError(DebateStatus, DebateStatus);

impl std::fmt::Display for StatusError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "a {:?} debate cannot become {:?}", self.0, self.1)
    }
}

/// The debate's status reducer: the type already rules out invalid names, so
/// this one validates transitions instead: a finished debate stays finished.
pub fn status_reducer(
    current: &DebateStatus,
    next: DebateStatus,
) -> Result<DebateStatus, StatusError> {
    match (current, next) {
        (DebateStatus::Running, next) => Ok(next),
        (done, next) if *done == next => Ok(next),
        (done, next) => Err(StatusError(*done, next)),
    }
}

/// State of the debate workflow.
#[derive(AgentState, Debug, Clone, PartialEq)]
#[state(rename_all = "camelCase")]
pub struct DebateState {
    /// Complete conversation history including user input and all agent responses.
    #[reducer(messages)]
    pub messages: Messages,
    /// Current debate round counter, 0-indexed.
    pub round: u32,
    /// The debate subject provided by the user.
    #[reducer(immutable)]
    pub topic: String,
    /// Maximum number of debate rounds before termination.
    #[reducer(immutable)]
    #[state(default = 3)]
    pub max_rounds: u32,
    /// Current workflow execution status.
    #[reducer(with = status_reducer)]
    #[state(default = DebateStatus::Running)]
    pub status: DebateStatus,
}

fn main() -> Result<(), StateError> {
    let topic = "Should AI be regulated?";
    // The workflow's API endpoint builds the initial state.
    let mut state = DebateState {
        topic: topic.to_owned(),
        max_rounds: 2,
        ..Default::default()
    };
    state.apply(DebateStateUpdate::new().message(human(format!("Debate topic: {topic}"))))?;

    while state.round < state.max_rounds {
        let round = state.round + 1;
        // optimist node: only the message
        state.apply(DebateStateUpdate::new().message(
            ai(format!("Round {round}: regulation builds trust.")).with_name("optimist"),
        ))?;
        // skeptic node: a message and the next round
        state.apply(
            DebateStateUpdate::new()
                .message(
                    ai(format!("Round {round}: rules freeze a moving field.")).with_name("skeptic"),
                )
                .round(round),
        )?;
    }
    // moderator node closes the debate
    state.apply(
        DebateStateUpdate::new()
            .message(ai("Both sides agree on audits; we stop here.").with_name("moderator"))
            .status(DebateStatus::Completed),
    )?;

    // A late node tries to reopen it in the same step as another message:
    // the whole step is refused, and the state is exactly as it was.
    let before = state.clone();
    let err = state
        .apply_all([
            DebateStateUpdate::new().message(ai("One more point!")),
            DebateStateUpdate::new().status(DebateStatus::Running),
        ])
        .unwrap_err();
    println!("rejected step: {err}");
    assert_eq!(state, before);

    // A client sending JSON cannot change the topic either.
    let err = state
        .apply_json(json!({"topic": "Cats or dogs?"}))
        .unwrap_err();
    println!("rejected JSON: {err}");

    println!("\ntranscript:");
    for msg in &state.messages {
        println!(
            "  [{:>9}] {}",
            msg.name.as_deref().unwrap_or(msg.kind.as_str()),
            msg.text()
        );
    }
    let json = agent_state::serde_json::to_string_pretty(&state).expect("a state serializes");
    println!("\nfinal state:\n{json}");
    Ok(())
}
