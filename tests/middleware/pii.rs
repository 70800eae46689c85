//! Pii against LangChain's `PIIMiddleware`
//! (`tests/reference/middleware/pii.py`): every built-in detector and a
//! custom pattern under every strategy, to the exact string, then agents
//! redacting input, tool results and output, and blocking.

use std::sync::Arc;

use agent_state::agent::middleware::{Pii, PiiError, PiiStrategy, BUILTIN_PII};
use agent_state::agent::{create_agent, input, FnTool, ToolRuntime};
use agent_state::base::HasMessages;
use agent_state::checkpoint::block_on;
use agent_state::json_schema::schemars::JsonSchema;
use agent_state::serde::Deserialize;
use agent_state::serde_json::{json, Value};
use agent_state::{human, Content, Message};

use crate::script::{calling, plain_all, Chat, Script, Step};
use crate::support::recorded;

const TEXTS: [&str; 7] = [
    "Mail john.doe@example.com or JANE@Mail.Example.ORG today; a@b.c is short, x@y.co fine",
    "Card 4111 1111 1111 1111, bad 4111 1111 1111 1112, dashed 5500-0000-0000-0004, plain 4012888888881881",
    "IPs 192.168.1.1 and 10.0.0.255 but not 999.1.1.1 or 01.2.3.4 or 1.2.3.4.5",
    "MACs 00:1A:2B:3C:4D:5E and aa-bb-cc-dd-ee-ff, not 00:1A:2B:3C:4D",
    "See https://example.com/path?q=1, http://x, www.rust-lang.org and docs.rs/regex/latest plus example.com in prose",
    "Unicode: café josé@exemple.fr ok, ünïcode 4111-1111-1111-1111 and https://пример.рф/путь",
    "nothing here",
];
const STRATEGIES: [(&str, PiiStrategy); 4] = [
    ("redact", PiiStrategy::Redact),
    ("mask", PiiStrategy::Mask),
    ("hash", PiiStrategy::Hash),
    ("block", PiiStrategy::Block),
];

/// What LangChain's rule gives for `text`: the text, or `raised: ...`.
fn apply(pii: &Pii, text: &str) -> String {
    pii.apply(text).unwrap_or_else(|e| format!("raised: {e}"))
}

#[test]
fn every_detector_and_strategy_gives_langchains_strings() {
    let expected = &recorded("pii")["strings"];
    for kind in BUILTIN_PII {
        for (name, strategy) in STRATEGIES {
            let pii = Pii::new(kind).unwrap().strategy(strategy);
            let ours: Vec<String> = TEXTS.iter().map(|t| apply(&pii, t)).collect();
            assert_eq!(
                json!(ours),
                expected[format!("{kind}/{name}")],
                "{kind}/{name}"
            );
        }
    }
    let keys = [
        "key sk-abcdefgh1234 and sk-XYZ98765432 but not sk-short",
        "none",
    ];
    for (name, strategy) in STRATEGIES {
        let pii = Pii::with_pattern("api_key", r"sk-[a-zA-Z0-9]{8,}")
            .unwrap()
            .strategy(strategy);
        let ours: Vec<String> = keys.iter().map(|t| apply(&pii, t)).collect();
        assert_eq!(
            json!(ours),
            expected[format!("api_key/{name}")],
            "api_key/{name}"
        );
    }
}

#[derive(Deserialize, JsonSchema)]
#[serde(crate = "agent_state::serde")]
#[schemars(crate = "agent_state::json_schema::schemars")]
struct Query {
    #[allow(dead_code)]
    q: String,
}

/// Runs `question` through an agent with a `lookup` tool and `middleware`:
/// the messages (or the error) and what the model was sent.
fn run(middleware: Vec<Pii>, script: Vec<Message>, question: Message) -> Value {
    let lookup = FnTool::sync(
        "lookup",
        "Looks a customer up.",
        |_: Query, _: &ToolRuntime<Chat>| "Customer: bob@corp.io, card 4111-1111-1111-1111",
    );
    let model = Script::new(script.into_iter().map(Step::Reply));
    let mut agent = create_agent::<Chat, _>(Arc::clone(&model)).tool(lookup);
    for m in middleware {
        agent = agent.middleware(m);
    }
    let agent = agent.compile().unwrap();
    let seen = || Value::from(model.seen());
    match block_on(agent.run(input::<Chat>(question))) {
        Ok(out) => json!({"messages": plain_all(out.state.messages()), "seen": seen()}),
        Err(error) => json!({"raised": error.to_string(), "seen": seen()}),
    }
}

#[test]
fn agents_redact_as_langchain_does() {
    let expected = &recorded("pii")["agents"];
    let ai = agent_state::ai;
    let ours = run(
        vec![
            Pii::new("email").unwrap(),
            Pii::new("ip").unwrap().strategy(PiiStrategy::Mask),
        ],
        vec![ai("noted")],
        human("I am ann@example.com on 192.168.0.7"),
    );
    assert_eq!(ours, expected["input"]);
    let email = Pii::new("email")
        .unwrap()
        .strategy(PiiStrategy::Hash)
        .apply_to_input(false);
    let ours = run(
        vec![
            email.apply_to_tool_results(true).apply_to_output(true),
            Pii::new("credit_card")
                .unwrap()
                .strategy(PiiStrategy::Mask)
                .apply_to_tool_results(true),
        ],
        vec![
            calling(&[("lookup", "call_1", json!({"q": "bob"}))]),
            ai("Bob is bob@corp.io at 10.1.2.3"),
        ],
        human("Who is bob? ann@example.com asks"),
    );
    assert_eq!(ours, expected["tool_results_and_output"]);
    let blocks = Content::Blocks(vec![
        json!({"type": "text", "text": "see https://a.example/x"}),
        json!({"type": "image", "url": "u"}),
    ]);
    let ours = run(
        vec![Pii::new("url").unwrap()],
        vec![ai("ok")],
        human(blocks),
    );
    assert_eq!(ours, expected["blocks_as_content"]);
}

#[test]
fn block_stops_the_run_naming_the_type() {
    let expected = &recorded("pii")["agents"]["block"];
    let pii = Pii::new("email").unwrap().strategy(PiiStrategy::Block);
    let ours = run(
        vec![pii],
        vec![agent_state::ai("unused")],
        human("write to ann@example.com"),
    );
    assert_eq!(ours["seen"], expected["seen"]);
    let said = ours["raised"].as_str().expect("the run should fail");
    let theirs = expected["raised"].as_str().unwrap();
    let message = theirs.trim_start_matches("PIIDetectionError: ");
    assert!(said.contains(message), "{said} should say {message}");
}

#[test]
fn unknown_types_and_bad_patterns_are_errors_naming_them() {
    let error = Pii::new("passport").unwrap_err();
    assert!(matches!(&error, PiiError::UnknownType { kind } if kind == "passport"));
    assert_eq!(
        error.to_string(),
        r#"Unknown PII type: passport. Must be one of ["email", "credit_card", "ip", "mac_address", "url"] or provide a custom detector."#
    );
    let error = Pii::with_pattern("key", "sk-[").unwrap_err();
    assert!(matches!(&error, PiiError::BadPattern { kind, .. } if kind == "key"));
    assert!(error
        .to_string()
        .starts_with("the pattern of PII type `key` does not compile"));
}
