//! What the reviewer is shown ([`HitlRequest`]) and what they answer
//! ([`HitlResponse`]), in LangChain's JSON shape, and the state part that
//! carries edited calls from `after_model` to `wrap_tool_call`.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use agent_state_derive::AgentState;

/// A decision a reviewer can make about a tool call (LangChain's
/// `DecisionType`): `"approve"`, `"edit"`, `"reject"` or `"respond"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DecisionType {
    /// Run the call as the model made it.
    Approve,
    /// Run another call (name and arguments) in its place.
    Edit,
    /// Do not run it; the model is told it was rejected.
    Reject,
    /// Do not run it; the reviewer's text is the tool's answer.
    Respond,
}

impl DecisionType {
    /// All four, in LangChain's order: what `interrupt_on: true` allows.
    pub const ALL: [Self; 4] = [Self::Approve, Self::Edit, Self::Reject, Self::Respond];

    /// Its JSON name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Approve => "approve",
            Self::Edit => "edit",
            Self::Reject => "reject",
            Self::Respond => "respond",
        }
    }
}

impl fmt::Display for DecisionType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A tool call as a reviewer edits it (LangChain's `Action`): the tool's
/// name and its arguments.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Action {
    /// The tool to run.
    pub name: String,
    /// Its arguments, a JSON object.
    pub args: Map<String, Value>,
}

/// One tool call put to the reviewer (LangChain's `ActionRequest`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ActionRequest {
    /// The tool the model called.
    pub name: String,
    /// The arguments it called it with.
    pub args: Map<String, Value>,
    /// What the reviewer is told about the call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// Which decisions a reviewed call allows (LangChain's `ReviewConfig`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReviewConfig {
    /// The tool it is about.
    pub action_name: String,
    /// The decisions the reviewer may make.
    pub allowed_decisions: Vec<DecisionType>,
}

/// The interrupt's payload (LangChain's `HITLRequest`): the reviewed calls
/// of one AI message, in order, each with its review config at the same
/// position.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HitlRequest {
    /// The calls to review.
    pub action_requests: Vec<ActionRequest>,
    /// What may be decided about each.
    pub review_configs: Vec<ReviewConfig>,
}

/// A reviewer's decision about one call (LangChain's `Decision`, tagged by
/// `type`): `{"type": "approve"}`, `{"type": "edit", "edited_action":
/// {...}}`, `{"type": "reject", "message": "..."}` (message optional) or
/// `{"type": "respond", "message": "..."}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum Decision {
    /// Run the call as the model made it.
    Approve,
    /// Run `edited_action` in its place; the AI message keeps the model's
    /// call, and the tool's answer starts with the edit notice.
    Edit {
        /// The call to run instead.
        edited_action: Action,
    },
    /// Do not run it: an error tool message tells the model, with the
    /// reviewer's reason if given.
    Reject {
        /// Why, framed to the model as the user's reason.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message: Option<String>,
    },
    /// Do not run it: `message` is the tool's (successful) answer.
    Respond {
        /// The answer the model gets.
        message: String,
    },
}

impl Decision {
    /// Its type.
    pub fn kind(&self) -> DecisionType {
        match self {
            Self::Approve => DecisionType::Approve,
            Self::Edit { .. } => DecisionType::Edit,
            Self::Reject { .. } => DecisionType::Reject,
            Self::Respond { .. } => DecisionType::Respond,
        }
    }
}

/// The resume value (LangChain's `HITLResponse`): one decision per
/// reviewed call, in the order of the request's `action_requests`.
///
/// ```
/// use agent_state::agent::middleware::{Decision, HitlResponse};
/// use agent_state::graph::Resume;
///
/// let resume = Resume::value(HitlResponse {
///     decisions: vec![Decision::Reject { message: Some("Not today.".into()) }],
/// });
/// # let _ = resume;
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HitlResponse {
    /// The decisions, one per reviewed call.
    pub decisions: Vec<Decision>,
}

/// How [`HumanInTheLoop`](super::HumanInTheLoop) pauses (LangChain's
/// `interrupt_mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum InterruptMode {
    /// One interrupt per model turn, from `after_model`: a [`HitlRequest`]
    /// answered with a [`HitlResponse`] (LangChain's default).
    #[default]
    Batched,
    /// One interrupt per reviewed call, as the call starts (from
    /// `wrap_tool_call`): a [`ToolApprovalRequest`] answered with one
    /// [`Decision`], by the interrupt's id; the calls of one AI message
    /// pause side by side.
    PerCall,
}

/// The interrupt's payload in [`InterruptMode::PerCall`] (LangChain's
/// `ToolApprovalRequest`, tagged `"type": "tool_approval"`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename = "tool_approval")]
pub struct ToolApprovalRequest {
    /// The id of the call it is about.
    pub tool_call_id: String,
    /// The tool, as the model called it.
    pub name: String,
    /// The arguments, as the model sent them.
    pub args: Map<String, Value>,
    /// What the reviewer is told.
    pub description: String,
}

/// [`HumanInTheLoop`](super::HumanInTheLoop)'s part of the state: the
/// reviewers' edits of the last AI message's calls, by call id, read by its
/// `wrap_tool_call` when the calls run (LangChain's private
/// `hitl_edited_tool_calls`). Put it in the agent's state with
/// `#[state(flatten)]`.
#[derive(AgentState, Debug, Clone, PartialEq)]
#[state(crate = crate)]
pub struct HumanInTheLoopState {
    /// The call each edited call id runs instead.
    #[state(private)]
    pub hitl_edited_tool_calls: BTreeMap<String, Action>,
}
