//! What a served run was configured with, given to its nodes.

use serde_json::{Map, Value};

/// A served run's configuration: its assistant's `configurable` and
/// `context` with the run request's own merged over them key by key
/// (LangGraph's `config["configurable"]` and `Runtime.context`), so one
/// graph serves several assistants (a model name, a prompt) set apart by
/// their config. Given to every run as its context, except an AG-UI run
/// with browser tools (whose context is the tools); a node reads it with
/// `NodeContext::context::<RunConfig>()`.
///
/// ```
/// use agent_state::graph::NodeContext;
/// use agent_state_server::RunConfig;
///
/// /// The model a node asks for: the assistant's, unless the run says.
/// fn model(ctx: &NodeContext) -> String {
///     let config = ctx.context::<RunConfig>();
///     let model = config.and_then(|c| c.context.get("model")?.as_str());
///     model.unwrap_or("default").to_owned()
/// }
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct RunConfig {
    /// `config.configurable`, with the run's ids (`run_id`, `thread_id`,
    /// `graph_id`, `assistant_id`).
    pub configurable: Map<String, Value>,
    /// `context`.
    pub context: Map<String, Value>,
}

impl RunConfig {
    /// The configuration of `configurable` and `context`.
    pub(crate) fn new(configurable: Map<String, Value>, context: Map<String, Value>) -> Self {
        RunConfig {
            configurable,
            context,
        }
    }
}
