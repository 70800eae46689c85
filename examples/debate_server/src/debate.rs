//! The debate workflow with debaters that stream: an optimist and a skeptic
//! answer through a [`ChatModel`] and stream its tokens into the run's
//! `messages` mode as they come; a moderator closes each round and reports
//! it in `custom` mode.
//!
//! The model is [`ScriptedModel`] (the same arguments every run, a token at
//! a time, a pause between tokens) unless a real one is given.

use std::sync::Arc;
use std::time::Duration;

use agent_state::agent::{ChatChunk, ChatModel, ModelError, ModelRequest};
use agent_state::base::{MessagesState, MessagesStateUpdate};
use agent_state::futures::future::BoxFuture;
use agent_state::futures::stream::{self, BoxStream};
use agent_state::futures::StreamExt;
use agent_state::graph::{
    BoxError, Graph, GraphError, NodeContext, StateGraph, StreamMode, END, START,
};
use agent_state::serde::{Deserialize, Serialize};
use agent_state::serde_json::json;
use agent_state::{ai, AgentState, Message, MessageChunk};

use crate::bounds::{BoundsError, Rounds, Topic};

/// Where the workflow is (the workflow's `DebateStatus`).
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

/// The debate's status reducer: a finished debate stays finished.
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

/// State of the debate, its conversation as the base part so
/// that a [`ChatModel`] can read it.
#[derive(AgentState, Debug, Clone, PartialEq)]
#[state(rename_all = "camelCase")]
pub struct DebateState {
    /// The conversation: every argument and verdict.
    #[state(flatten)]
    pub base: MessagesState,
    /// Rounds argued so far.
    pub round: u32,
    /// The debate subject provided by the user.
    #[reducer(immutable)]
    pub topic: Topic,
    /// Rounds before the moderator closes the debate.
    #[reducer(immutable)]
    pub max_rounds: Rounds,
    /// Where the workflow is.
    #[reducer(with = status_reducer)]
    #[state(default = DebateStatus::Running)]
    pub status: DebateStatus,
}

impl DebateState {
    /// A new debate on `topic` in `max_rounds` rounds: the state a client's
    /// input `{"topic", "maxRounds"}` builds (the server reads it into
    /// this state's immutable fields).
    pub fn new(topic: &str, max_rounds: u32) -> Result<Self, BoundsError> {
        Ok(Self {
            topic: Topic::new(topic)?,
            max_rounds: Rounds::new(max_rounds)?,
            ..Self::default()
        })
    }
}

/// A debater.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Argues for.
    Optimist,
    /// Argues against.
    Skeptic,
}

impl Role {
    /// Its node's name.
    pub fn name(self) -> &'static str {
        match self {
            Role::Optimist => "optimist",
            Role::Skeptic => "skeptic",
        }
    }

    /// What the model is told to be.
    fn prompt(self, state: &DebateState) -> String {
        let side = match self {
            Role::Optimist => "argue that the benefits win",
            Role::Skeptic => "argue that the risks win",
        };
        format!(
            "You are the {} in a debate on \"{}\", round {} of {}: {side}. \
             Answer the last argument in two sentences.",
            self.name(),
            state.topic,
            state.round + 1,
            state.max_rounds
        )
    }

    fn of_prompt(prompt: Option<&str>) -> Self {
        match prompt {
            Some(p) if p.starts_with("You are the skeptic") => Role::Skeptic,
            _ => Role::Optimist,
        }
    }
}

/// A scripted chat model: the same arguments every run, picked by role and
/// round, streamed a word at a time with `token_delay` between words (no
/// pause, and no timer, when it is zero).
#[derive(Debug, Clone, Copy, Default)]
pub struct ScriptedModel {
    /// The pause before each token, as a real model's.
    pub token_delay: Duration,
}

const OPTIMIST: [&str; 4] = [
    "Clear rules let good products ship faster: builders know where the lines are.",
    "Audits of high-risk systems catch failures before they reach patients and courts.",
    "Shared safety standards make it cheaper for small teams to compete with giants.",
    "Regulation done well is an accelerator, the way seat belts made cars sellable.",
];

const SKEPTIC: [&str; 4] = [
    "Rules written today will freeze yesterday's models into law.",
    "Compliance costs fall hardest on the small labs you want to protect.",
    "Regulators lack the expertise to audit systems that change every month.",
    "Badly scoped rules push research offshore without making anyone safer.",
];

impl ScriptedModel {
    /// The argument `role` makes in the round `state` is in.
    pub fn line(role: Role, state: &DebateState) -> String {
        let lines = match role {
            Role::Optimist => &OPTIMIST,
            Role::Skeptic => &SKEPTIC,
        };
        let line = lines[state.round as usize % lines.len()];
        format!("{line} ({} on \"{}\")", role.name(), state.topic)
    }

    fn answer(request: &ModelRequest<DebateState>) -> String {
        Self::line(Role::of_prompt(request.system_prompt()), request.state())
    }
}

/// `text` cut before each space: the words as a model streams them.
fn tokens(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut start = 0;
    for (i, _) in text.match_indices(' ') {
        if i > start {
            out.push(text[start..i].to_owned());
            start = i;
        }
    }
    out.push(text[start..].to_owned());
    out
}

impl ChatModel<DebateState> for ScriptedModel {
    fn invoke<'a>(
        &'a self,
        request: &'a ModelRequest<DebateState>,
    ) -> BoxFuture<'a, Result<Message, ModelError>> {
        Box::pin(async move { Ok(ai(Self::answer(request))) })
    }

    fn stream<'a>(
        &'a self,
        request: &'a ModelRequest<DebateState>,
    ) -> BoxStream<'a, Result<ChatChunk, ModelError>> {
        let words = tokens(&Self::answer(request));
        let last = words.len() - 1;
        let delay = self.token_delay;
        stream::iter(words.into_iter().enumerate())
            .then(move |(i, word)| async move {
                if !delay.is_zero() {
                    tokio::time::sleep(delay).await;
                }
                let chunk = MessageChunk::ai(word);
                Ok(if i == last { chunk.as_last() } else { chunk })
            })
            .boxed()
    }
}

/// The model the debaters call.
pub type Model = Arc<dyn ChatModel<DebateState>>;

/// The debate graph: optimist → skeptic → moderator, then another round or
/// the end.
pub fn build_graph(model: Model) -> Result<Graph<DebateState>, GraphError> {
    let mut graph = StateGraph::<DebateState>::new();
    for role in [Role::Optimist, Role::Skeptic] {
        let model = Arc::clone(&model);
        graph = graph.add_node(role.name(), move |state, ctx| {
            let model = Arc::clone(&model);
            async move { speak(&*model, role, state, ctx).await }
        });
    }
    graph
        .add_node("moderator", moderate)
        .add_edge(START, "optimist")
        .add_edge("optimist", "skeptic")
        .add_edge("skeptic", "moderator")
        .add_conditional_edges_to(
            "moderator",
            |s: &DebateState| match s.status {
                DebateStatus::Running => "optimist",
                _ => END,
            },
            ["optimist", END],
        )
        .compile()
}

/// A debater's turn: the model's answer streamed token by token into the
/// `messages` mode, added up into the message the state keeps. The pieces
/// carry an id made of the thread, step and node (unless the provider gave
/// one), so a step run again after a crash streams under the same id.
async fn speak(
    model: &dyn ChatModel<DebateState>,
    role: Role,
    state: Arc<DebateState>,
    ctx: NodeContext,
) -> Result<DebateStateUpdate, BoxError> {
    if state.topic.is_empty() {
        return Err("the debate has no topic: start it with an input naming `topic`".into());
    }
    let request = ModelRequest::new(Arc::clone(&state)).with_system_prompt(role.prompt(&state));
    let writer = ctx.writer();
    let streaming = writer.is_on(StreamMode::Messages);
    let id = format!(
        "{}/{}/{}",
        ctx.thread_id().unwrap_or("run"),
        ctx.step(),
        role.name()
    );
    let mut pieces = model.stream(&request);
    let mut whole: Option<MessageChunk> = None;
    while let Some(piece) = pieces.next().await {
        let mut piece = piece?;
        piece.id.get_or_insert_with(|| id.clone());
        piece.name = Some(role.name().to_owned());
        if streaming {
            writer.message(piece.clone()).await;
        }
        match &mut whole {
            Some(whole) => whole.add(piece)?,
            None => whole = Some(piece),
        }
    }
    let message = whole.ok_or("the model answered nothing")?.into_message();
    let update = DebateStateUpdate::new().base(MessagesStateUpdate::new().message(message));
    Ok(match role {
        Role::Optimist => update,
        Role::Skeptic => update.round(state.round + 1),
    })
}

/// The moderator closes a round, and the debate after the last; it reports
/// the round in `custom` mode.
fn moderate(s: &DebateState, ctx: &NodeContext) -> Result<DebateStateUpdate, BoxError> {
    let done = s.round >= s.max_rounds.get();
    ctx.writer()
        .write(json!({"round": s.round, "maxRounds": s.max_rounds.get(), "done": done}))?;
    let text = if done {
        format!(
            "Round {} of {} closed. The debate is over.",
            s.round, s.max_rounds
        )
    } else {
        format!("Round {} of {} closed. Next round.", s.round, s.max_rounds)
    };
    let message = ai(text).with_name("moderator");
    let update = DebateStateUpdate::new().base(MessagesStateUpdate::new().message(message));
    Ok(if done {
        update.status(DebateStatus::Completed)
    } else {
        update
    })
}

/// The model for the debaters: a real one when the `openai` feature is on
/// and `OPENAI_API_KEY` is set, else [`ScriptedModel`] with `token_delay`;
/// with what it is, for the log.
pub fn model_from_env(token_delay: Duration) -> (Model, String) {
    #[cfg(feature = "openai")]
    if std::env::var_os("OPENAI_API_KEY").is_some() {
        let model = agent_state::agent::openai::OpenAiChat::from_env();
        return (Arc::new(model), "an OpenAI-compatible model".to_owned());
    }
    let scripted = ScriptedModel { token_delay };
    let what = format!(
        "the scripted model ({} ms between tokens)",
        token_delay.as_millis()
    );
    (Arc::new(scripted), what)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_add_up_to_the_text() {
        let text = "Clear rules let  good products ship.";
        assert_eq!(tokens(text).concat(), text);
        assert_eq!(tokens(text)[..2], ["Clear", " rules"]);
        assert_eq!(tokens("one"), ["one"]);
    }

    #[test]
    fn a_finished_debate_stays_finished() {
        let done = DebateStatus::Completed;
        assert!(status_reducer(&done, DebateStatus::Running).is_err());
        assert_eq!(status_reducer(&DebateStatus::Running, done).unwrap(), done);
    }
}
