//! ContextEditing against LangChain's `ContextEditingMiddleware` with
//! `ClearToolUsesEdit` (`tests/reference/middleware/context_editing.py`):
//! the approximate token count, then what the model is sent as tool
//! results are cleared, while the state keeps them.

use std::sync::Arc;

use agent_state::agent::middleware::{count_tokens_approximately, ClearToolUses, ContextEditing};
use agent_state::agent::{create_agent, FnTool, ToolRuntime};
use agent_state::json_schema::schemars::JsonSchema;
use agent_state::serde::Deserialize;
use agent_state::serde_json::{json, Value};
use agent_state::{ai, human, system, tool, Content, Message};

use crate::script::{calling, outcome, Chat, Script, Step};
use crate::support::recorded;

fn counted() -> Vec<(&'static str, Vec<Message>)> {
    let calls = calling(&[
        ("s", "c1", json!({"q": "it's", "n": [1, 2.5, true, null]})),
        ("t", "c2", json!({"nested": {"k": "v\nw", "e": {}}})),
    ]);
    let calls = Message {
        content: Content::Text("calling".into()),
        ..calls
    };
    let blocks = Content::Blocks(vec![
        json!({"type": "text", "text": "look"}),
        json!({"type": "image_url", "image_url": {"url": "http://x/y.png"}}),
        json!({"type": "other", "data": 1}),
        json!("bare"),
    ]);
    vec![
        ("plain", vec![human("hello")]),
        (
            "system_and_names",
            vec![system("Be brief."), human("hi there").with_name("ann")],
        ),
        (
            "tool_calls",
            vec![calls, tool("result", "c1").with_name("s")],
        ),
        ("unicode", vec![human("café ünïcode 日本語 ✓")]),
        ("blocks", vec![human(blocks)]),
    ]
}

#[test]
fn counts_tokens_as_langchain_does() {
    let expected = &recorded("context_editing")["tokens"];
    for (name, messages) in counted() {
        assert_eq!(
            json!(count_tokens_approximately(&messages)),
            expected[name],
            "{name}"
        );
    }
}

#[derive(Deserialize, JsonSchema)]
#[serde(crate = "agent_state::serde")]
#[schemars(crate = "agent_state::json_schema::schemars")]
struct Query {
    q: String,
}

/// Runs "find it" with three tool calls in turn under `edit`: the final
/// messages and what the model was sent each time.
fn run(edit: ClearToolUses) -> Value {
    let search = FnTool::sync("search", "Searches.", |a: Query, _: &ToolRuntime<Chat>| {
        format!("result {}: {}", a.q, "lorem ipsum ".repeat(20))
    });
    let keep_me = FnTool::sync(
        "keep_me",
        "Never cleared when excluded.",
        |a: Query, _: &ToolRuntime<Chat>| format!("kept {}: {}", a.q, "dolor sit ".repeat(20)),
    );
    let ask = |name, q, id| Step::Reply(calling(&[(name, id, json!({"q": q}))]));
    let model = Script::new([
        ask("search", "one", "c1"),
        ask("keep_me", "two", "c2"),
        ask("search", "three", "c3"),
        Step::Reply(ai("done")),
    ]);
    let agent = create_agent::<Chat, _>(Arc::clone(&model))
        .tool(search)
        .tool(keep_me)
        .middleware(ContextEditing::new().edit(edit))
        .compile()
        .unwrap();
    let mut out = outcome(&agent, "find it", || 0);
    out.as_object_mut().unwrap().remove("calls");
    out["seen"] = Value::from(model.seen());
    out
}

#[test]
fn clears_what_the_model_is_sent_as_langchain_does() {
    let expected = &recorded("context_editing")["agents"];
    let edit = |keep| ClearToolUses {
        trigger: 100,
        keep,
        ..ClearToolUses::default()
    };
    let cases = [
        ("keep_one", edit(1)),
        (
            "inputs_and_exclude",
            ClearToolUses {
                clear_tool_inputs: true,
                exclude_tools: vec!["keep_me".into()],
                placeholder: "[gone]".into(),
                ..edit(0)
            },
        ),
        (
            "clear_at_least",
            ClearToolUses {
                clear_at_least: 10,
                ..edit(0)
            },
        ),
        (
            "below_trigger",
            ClearToolUses {
                trigger: 100_000,
                ..edit(0)
            },
        ),
    ];
    for (name, edit) in cases {
        assert_eq!(run(edit), expected[name], "scenario {name}");
    }
}

#[test]
fn a_custom_counter_decides_the_trigger() {
    let messages = vec![
        human("q"),
        calling(&[("search", "c1", json!({"q": "a"}))]),
        tool("long result", "c1").with_name("search"),
    ];
    let never = ContextEditing::new()
        .edit(ClearToolUses {
            trigger: 10,
            keep: 0,
            ..ClearToolUses::default()
        })
        .token_counter(|_| 0);
    assert_eq!(never.apply(&messages), messages);
    let always = ContextEditing::new()
        .edit(ClearToolUses {
            trigger: 10,
            keep: 0,
            ..ClearToolUses::default()
        })
        .token_counter(|m| 1_000 * m.len() as u64);
    assert_eq!(always.apply(&messages)[2].text(), "[cleared]");
}
