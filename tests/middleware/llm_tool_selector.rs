//! LlmToolSelector against LangChain's `LLMToolSelectorMiddleware`
//! (`tests/reference/middleware/llm_tool_selector.py`): the selection call
//! (prompt, structured-output tool, schema), max_tools, always_include,
//! retries, on_parsing_failure, invalid selections.

use std::sync::Arc;

use agent_state::agent::middleware::{LlmToolSelector, OnParsingFailure};
use agent_state::agent::{create_agent, FnTool, ToolRuntime};
use agent_state::serde_json::{json, Value};
use agent_state::{ai, Message};

use crate::script::{calling, outcome, Chat, Script, Step};
use crate::support::recorded;

/// A tool answering `"<says> <args[key]>"`, as the reference's tools do.
fn tool(name: &str, description: &str, key: &'static str, says: &'static str) -> FnTool<Chat> {
    FnTool::sync(
        name,
        description,
        move |args: Value, _: &ToolRuntime<Chat>| {
            format!("{says} {}", args[key].as_str().unwrap_or_default())
        },
    )
}

fn pick(names: &[&str]) -> Step {
    Step::Reply(calling(&[(
        "ToolSelectionResponse",
        "sel",
        json!({"tools": names}),
    )]))
}

/// Runs the question through an agent with the four tools and `selector`
/// (selecting with `selector_script`'s model, else the agent's).
fn run(
    main: Vec<Step>,
    selector_script: Option<Vec<Step>>,
    selector: LlmToolSelector<Chat>,
) -> Value {
    let main = if selector_script.is_none() {
        Script::with_schemas(main)
    } else {
        Script::new(main)
    };
    let picker = selector_script.map(Script::with_schemas);
    let selector = match &picker {
        Some(model) => selector.model(Arc::clone(model)),
        None => selector,
    };
    let agent = create_agent::<Chat, _>(Arc::clone(&main))
        .tool(tool(
            "weather",
            "Gets the weather of a city.",
            "city",
            "sunny in",
        ))
        .tool(tool(
            "calendar",
            "Lists the events of a day.",
            "day",
            "nothing on",
        ))
        .tool(tool("email", "Sends an email.", "to", "sent to"))
        .tool(tool("search", "Searches the web.", "q", "found"))
        .system_prompt("You help.")
        .middleware(selector)
        .compile()
        .unwrap();
    let mut out = outcome(&agent, "weather in Paris, then mail Bob", || 0);
    out.as_object_mut().unwrap().remove("calls");
    out["main_seen"] = Value::from(main.seen());
    if let Some(model) = picker {
        out["selector_seen"] = Value::from(model.seen());
    }
    out
}

/// Only the selection tool's schema is compared: the agent's own tools'
/// schemas are pydantic's on one side and schemars' on the other.
fn selection_schemas_only(mut run: Value) -> Value {
    for key in ["main_seen", "selector_seen"] {
        for seen in run[key].as_array_mut().into_iter().flatten() {
            if seen["tools"] != json!(["ToolSelectionResponse"]) {
                seen.as_object_mut().unwrap().remove("tool_schemas");
            }
        }
    }
    run
}

fn reply(text: &str) -> Step {
    Step::Reply(ai(text))
}

#[test]
fn selects_tools_as_langchain_does() {
    let expected = recorded("llm_tool_selector");
    let call_weather: Message = calling(&[("weather", "w1", json!({"city": "Paris"}))]);
    let cases = [
        (
            "agent_model_selects",
            run(
                vec![pick(&["email", "weather", "calendar"]), reply("done")],
                None,
                LlmToolSelector::new()
                    .max_tools(2)
                    .always_include(["search"]),
            ),
        ),
        (
            "separate_model_every_call",
            run(
                vec![Step::Reply(call_weather), reply("done")],
                Some(vec![pick(&["weather", "weather"]), pick(&["calendar"])]),
                LlmToolSelector::new().system_prompt("Pick tools."),
            ),
        ),
        (
            "retries_then_all",
            run(
                vec![reply("done")],
                Some(vec![reply("no idea")]),
                LlmToolSelector::new().on_parsing_failure(OnParsingFailure::All),
            ),
        ),
        (
            "fallback_list",
            run(
                vec![reply("done")],
                Some(vec![reply("no idea")]),
                LlmToolSelector::new()
                    .max_retries(0)
                    .max_tools(1)
                    .on_parsing_failure(OnParsingFailure::Tools(vec![
                        "email".into(),
                        "search".into(),
                    ])),
            ),
        ),
    ];
    for (name, ours) in cases {
        assert_eq!(
            selection_schemas_only(ours),
            selection_schemas_only(expected[name].clone()),
            "scenario {name}"
        );
    }
}

#[test]
fn fails_the_call_in_langchains_words() {
    let expected = recorded("llm_tool_selector");
    let cases = [
        (
            "invalid_selection",
            run(
                vec![reply("unused")],
                Some(vec![pick(&["weather", "nope"])]),
                LlmToolSelector::new(),
            ),
        ),
        (
            "malformed_error",
            run(
                vec![reply("unused")],
                Some(vec![reply("no idea")]),
                LlmToolSelector::new().max_retries(0),
            ),
        ),
        (
            "missing_always_include",
            run(
                vec![reply("unused")],
                Some(vec![pick(&["weather"])]),
                LlmToolSelector::new().always_include(["fax"]),
            ),
        ),
    ];
    for (name, mut ours) in cases {
        let theirs = &expected[name];
        let said = ours["raised"].take();
        let said = said.as_str().expect("the run should fail");
        let message = theirs["raised"]
            .as_str()
            .unwrap()
            .trim_start_matches("ValueError: ");
        assert!(
            said.contains(message),
            "{name}: {said} should say {message}"
        );
        assert_eq!(ours["main_seen"], theirs["main_seen"], "{name}");
        assert_eq!(ours["selector_seen"], theirs["selector_seen"], "{name}");
    }
}
