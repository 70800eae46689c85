//! Which tool calls wait for a reviewer, what they may decide, what they
//! are told ([`InterruptOn`]), and the middleware's errors ([`HitlError`]).

use std::fmt;
use std::sync::Arc;

use super::request::DecisionType;
use crate::graph::NodeContext;
use crate::message::ToolCall;

/// Writes a reviewed call's description from the call, the agent's state
/// and the hook's context (LangChain's description callable).
pub type DescribeFn<S> = Arc<dyn Fn(&ToolCall, &S, &NodeContext) -> String + Send + Sync>;

/// Decides whether one call of a configured tool waits for review
/// (LangChain's `when`); `false` lets it run unreviewed. It runs again on
/// resume and must answer the same for the same call.
pub type WhenFn<S> = Arc<dyn Fn(&ToolCall, &S, &NodeContext) -> bool + Send + Sync>;

/// How one tool's calls are reviewed (LangChain's `InterruptOnConfig`, or
/// `True`/`False` through `From<bool>`).
pub struct InterruptOn<S> {
    pub(crate) allowed_decisions: Vec<DecisionType>,
    pub(crate) description: Option<Describe<S>>,
    pub(crate) when: Option<WhenFn<S>>,
}

/// A fixed description or one written per call.
pub(crate) enum Describe<S> {
    Text(String),
    With(DescribeFn<S>),
}

impl<S> Clone for InterruptOn<S> {
    fn clone(&self) -> Self {
        Self {
            allowed_decisions: self.allowed_decisions.clone(),
            description: self.description.as_ref().map(|d| match d {
                Describe::Text(text) => Describe::Text(text.clone()),
                Describe::With(f) => Describe::With(Arc::clone(f)),
            }),
            when: self.when.clone(),
        }
    }
}

impl<S> InterruptOn<S> {
    /// Review every call, allowing `decisions` (an empty list is refused
    /// by [`HumanInTheLoop::new`](super::HumanInTheLoop::new)).
    pub fn allow(decisions: impl IntoIterator<Item = DecisionType>) -> Self {
        Self {
            allowed_decisions: decisions.into_iter().collect(),
            description: None,
            when: None,
        }
    }

    /// Review every call, allowing all four decisions (`interrupt_on: True`).
    pub fn all() -> Self {
        Self::allow(DecisionType::ALL)
    }

    /// Tells the reviewer `text` instead of the default description.
    #[must_use]
    pub fn description(mut self, text: impl Into<String>) -> Self {
        self.description = Some(Describe::Text(text.into()));
        self
    }

    /// Writes the reviewer's description per call.
    #[must_use]
    pub fn describe_with(
        mut self,
        f: impl Fn(&ToolCall, &S, &NodeContext) -> String + Send + Sync + 'static,
    ) -> Self {
        self.description = Some(Describe::With(Arc::new(f)));
        self
    }

    /// Reviews only the calls `f` picks; the others run unreviewed.
    #[must_use]
    pub fn when(
        mut self,
        f: impl Fn(&ToolCall, &S, &NodeContext) -> bool + Send + Sync + 'static,
    ) -> Self {
        self.when = Some(Arc::new(f));
        self
    }

    /// The decisions it allows.
    pub fn allowed_decisions(&self) -> &[DecisionType] {
        &self.allowed_decisions
    }
}

/// A tool's entry in `interrupt_on`: a config, or `true`/`false`.
pub enum InterruptOnEntry<S> {
    /// Reviewed with this config.
    On(InterruptOn<S>),
    /// Not reviewed.
    Off,
}

impl<S> From<bool> for InterruptOnEntry<S> {
    fn from(on: bool) -> Self {
        if on {
            Self::On(InterruptOn::all())
        } else {
            Self::Off
        }
    }
}

impl<S> From<InterruptOn<S>> for InterruptOnEntry<S> {
    fn from(config: InterruptOn<S>) -> Self {
        Self::On(config)
    }
}

/// What went wrong in [`HumanInTheLoop`](super::HumanInTheLoop): a bad
/// config when it is built, a resume value that does not fit the request
/// when the run is resumed (the hook fails; nothing of its step is
/// applied).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum HitlError {
    /// A tool's config allows no decision.
    NoDecisions {
        /// The tool.
        tool: String,
    },
    /// The resume value has a different number of decisions than there
    /// are reviewed calls.
    DecisionCount {
        /// Decisions given.
        decisions: usize,
        /// Calls reviewed.
        calls: usize,
    },
    /// A decision the tool's config does not allow.
    NotAllowed {
        /// The tool.
        tool: String,
        /// The call's id.
        call_id: String,
        /// The decision given.
        decision: DecisionType,
        /// The decisions allowed.
        allowed: Vec<DecisionType>,
    },
    /// Per call: an edit naming another tool than the call's.
    EditRenames {
        /// The call's tool.
        tool: String,
        /// The call's id.
        call_id: String,
        /// The tool the edit names.
        to: String,
    },
}

impl fmt::Display for HitlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NoDecisions { tool } => write!(
                f,
                "invalid `interrupt_on` config for tool `{tool}`: `allowed_decisions` must \
                 be a non-empty list of decision types (e.g. [approve, reject])"
            ),
            Self::DecisionCount { decisions, calls } => write!(
                f,
                "number of human decisions ({decisions}) does not match number of hanging \
                 tool calls ({calls})"
            ),
            Self::NotAllowed {
                tool,
                call_id,
                decision,
                allowed,
            } => {
                let allowed: Vec<&str> = allowed.iter().map(|d| d.as_str()).collect();
                write!(
                    f,
                    "decision type `{decision}` is not allowed for tool `{tool}` (call \
                     `{call_id}`); expected one of [{}] based on the tool's configuration",
                    allowed.join(", ")
                )
            }
            Self::EditRenames { tool, call_id, to } => write!(
                f,
                "the edit of call `{call_id}` names tool `{to}`; an edit answering a call \
                 of `{tool}` must keep the tool"
            ),
        }
    }
}

impl std::error::Error for HitlError {}
