//! The run's context reaches an agent's tools and middleware (LangChain's
//! `ToolRuntime.context` and `runtime.context`), as it reaches nodes.
#![cfg(feature = "agent")]

use std::sync::{Arc, Mutex};

use agent_state::agent::{
    create_agent, input, AgentMiddleware, FnTool, Hooks, ModelFuture, ModelHandler, ModelRequest,
    ScriptedModel, ToolCallRequest, ToolFuture, ToolHandler, ToolRuntime,
};
use agent_state::base::{HasMessages, MessagesState};
use agent_state::checkpoint::block_on;
use agent_state::serde::Deserialize;
use agent_state::serde_json::Map;
use agent_state::{ai, AgentState, ToolCall};

/// Who the run serves.
struct User {
    did: String,
}

#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct Chat {
    #[state(flatten)]
    pub base: MessagesState,
}

#[derive(Deserialize, agent_state::schemars::JsonSchema)]
#[schemars(crate = "agent_state::schemars")]
#[serde(crate = "agent_state::serde")]
struct NoArgs {}

fn did_of(context: Option<&User>) -> String {
    context.map_or("nobody".to_owned(), |u| u.did.clone())
}

/// Puts the user in the system prompt and notes who each tool call is
/// for.
struct Personal {
    calls: Arc<Mutex<Vec<String>>>,
}

impl<S: HasMessages + Send + Sync + 'static> AgentMiddleware<S> for Personal {
    fn name(&self) -> &str {
        "personal"
    }

    fn hooks(&self) -> Hooks {
        Hooks::WRAP_MODEL_CALL | Hooks::WRAP_TOOL_CALL
    }

    fn wrap_model_call<'a>(
        &'a self,
        request: ModelRequest<S>,
        handler: ModelHandler<'a, S>,
    ) -> ModelFuture<'a> {
        let prompt = format!("You help {}.", did_of(request.context::<User>()));
        handler.call(request.with_system_prompt(prompt))
    }

    fn wrap_tool_call<'a>(
        &'a self,
        request: ToolCallRequest<S>,
        handler: ToolHandler<'a, S>,
    ) -> ToolFuture<'a, S> {
        let note = format!(
            "{} for {}",
            request.call.name,
            did_of(request.context::<User>())
        );
        self.calls.lock().unwrap().push(note);
        handler.call(request)
    }
}

#[test]
fn tools_and_middleware_read_the_runs_context() {
    let call = ToolCall::new("whoami", Map::new(), "c1");
    let model = Arc::new(ScriptedModel::new([ai("").with_tool_call(call), ai("done")]).recording());
    let whoami = FnTool::sync(
        "whoami",
        "Who is asking",
        |_: NoArgs, rt: &ToolRuntime<Chat>| did_of(rt.context::<User>()),
    );
    let calls = Arc::new(Mutex::new(Vec::new()));
    let agent = create_agent(Arc::clone(&model))
        .tool(whoami)
        .middleware(Personal {
            calls: Arc::clone(&calls),
        })
        .compile()
        .unwrap();
    let user = User {
        did: "did:plc:alice".to_owned(),
    };
    let out = block_on(agent.run(input::<Chat>("hi")).context(user)).unwrap();
    let answers: Vec<String> = out.state.messages().iter().map(|m| m.text()).collect();
    assert_eq!(answers, ["hi", "", "did:plc:alice", "done"]);
    assert_eq!(*calls.lock().unwrap(), ["whoami for did:plc:alice"]);
    let prompts: Vec<Option<String>> = model.seen().into_iter().map(|s| s.system_prompt).collect();
    let expected = Some("You help did:plc:alice.".to_owned());
    assert_eq!(prompts, [expected.clone(), expected]);
}
