//! ModelFallback against LangChain's `ModelFallbackMiddleware`
//! (`tests/reference/middleware/model_fallback.py`): the models tried in
//! order, what each was sent, the last error when all fail.

use std::sync::Arc;

use agent_state::agent::middleware::ModelFallback;
use agent_state::agent::{create_agent, ChatModel};
use agent_state::serde_json::{json, Value};

use crate::script::{outcome, Chat, Script, Step};
use crate::support::recorded;

/// Runs "hi" through `primary` with `fallbacks`: the outcome, each model's
/// call count and what each was sent.
fn run(primary: Vec<Step>, fallbacks: Vec<Vec<Step>>) -> Value {
    let models: Vec<Arc<Script>> = std::iter::once(primary)
        .chain(fallbacks)
        .map(Script::new)
        .collect();
    let mut middleware = ModelFallback::new(Arc::clone(&models[1]));
    for model in &models[2..] {
        // A shared model, as an agent's several middleware would share it.
        let shared: Arc<dyn ChatModel<Chat>> = Arc::clone(model) as _;
        middleware = middleware.then_shared(shared);
    }
    let agent = create_agent::<Chat, _>(Arc::clone(&models[0]))
        .system_prompt("Be brief.")
        .middleware(middleware)
        .compile()
        .unwrap();
    let mut out = outcome(&agent, "hi", || 0);
    out["calls"] = models.iter().map(|m| m.calls()).collect();
    out["seen"] = models.iter().map(|m| Value::from(m.seen())).collect();
    out
}

fn reply(text: &str) -> Step {
    Step::Reply(agent_state::ai(text))
}

#[test]
fn falls_back_in_order_as_langchain_does() {
    let expected = recorded("model_fallback");
    let ours = run(
        vec![Step::Api(503, "primary down")],
        vec![
            vec![Step::Api(401, "bad key")],
            vec![reply("from fallback 2")],
        ],
    );
    assert_eq!(ours, expected["second_fallback_answers"]);
    let ours = run(vec![reply("from primary")], vec![vec![reply("unused")]]);
    assert_eq!(ours, expected["primary_answers"]);
}

#[test]
fn returns_the_last_error_when_every_model_fails() {
    let expected = &recorded("model_fallback")["all_fail"];
    let mut ours = run(
        vec![Step::Api(503, "primary down")],
        vec![vec![Step::RateLimited("busy")]],
    );
    let said = ours["raised"].take();
    let said = said.as_str().expect("the run should fail");
    assert!(
        said.contains("busy") && !said.contains("primary down"),
        "{said}"
    );
    assert_eq!(ours["calls"], expected["calls"]);
    assert_eq!(ours["seen"], expected["seen"]);
    assert_eq!(json!(ours.get("messages")), json!(null));
}

#[test]
fn fallbacks_are_added_in_order_owned_or_shared() {
    let shared: Arc<dyn ChatModel<Chat>> = Script::new([reply("c")]);
    let chain = ModelFallback::new(Script::new([reply("a")]))
        .then(Script::new([reply("b")]))
        .then_shared(shared);
    assert_eq!(chain.len(), 3);
    assert!(!chain.is_empty());
}
