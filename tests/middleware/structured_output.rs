//! Structured output (`create_agent(response_format=..)`), side by side
//! with LangChain 1.4.7 (`tests/reference/middleware/structured_output.py`):
//! the same scripted answers give the same messages, the same retry
//! messages, the same structured value, the same requests (tools, tool
//! choice, schema) and the same errors.
//!
//! Deliberate differences, normalised before comparing and checked on
//! their own: the answer to the structured call shows the value as JSON
//! (LangChain prints the Python object), and validation messages carry
//! serde's words where LangChain's carry pydantic's.

use std::sync::{Arc, Mutex};

use agent_state::agent::{
    create_agent, input, AgentError, AutoStrategy, FnModel, FnTool, HandleErrors,
    IntoResponseFormat, ModelError, ModelRequest, ProviderStrategy, ScriptedModel,
    StructuredErrorKind, StructuredOutputError, StructuredResponse, StructuredResponseUpdate,
    ToolChoice, ToolRuntime, ToolStrategy,
};
use agent_state::base::{HasMessages, MessagesState};
use agent_state::checkpoint::MemoryCheckpointer;
use agent_state::graph::{GraphError, Input};
use agent_state::serde::{Deserialize, Serialize};
use agent_state::serde_json::{json, Map, Value};
use agent_state::{ai, AgentState, Message, StateInput, ToolCall};

use super::support::{parser_words_hidden, recorded};

/// The weather in a city.
#[derive(Serialize, Deserialize, agent_state::schemars::JsonSchema, Debug, Clone, PartialEq)]
#[serde(crate = "agent_state::serde")]
#[schemars(crate = "agent_state::schemars")]
struct Weather {
    city: String,
    celsius: f64,
}

#[derive(AgentState, Debug, Clone, PartialEq)]
#[state(json_schema)]
struct Chat {
    #[state(flatten)]
    base: MessagesState,
    #[state(flatten)]
    answer: StructuredResponse<Weather>,
}

#[derive(Deserialize, agent_state::schemars::JsonSchema)]
#[serde(crate = "agent_state::serde")]
#[schemars(crate = "agent_state::schemars")]
struct City {
    city: String,
}

fn forecast() -> FnTool<Chat> {
    FnTool::sync(
        "get_forecast",
        "The forecast for a city.",
        |args: City, _: &ToolRuntime<Chat>| format!("sunny in {}, 21.5 C", args.city),
    )
}

fn call(name: &str, args: Value, id: &str) -> ToolCall {
    ToolCall::new(name, args.as_object().cloned().unwrap_or_default(), id)
}

fn calls(calls: &[(&str, Value, &str)]) -> Message {
    calls.iter().fold(ai(""), |message, (name, args, id)| {
        message.with_tool_call(call(name, args.clone(), id))
    })
}

fn good() -> Value {
    json!({"city": "Paris", "celsius": 21.5})
}

fn bad() -> Value {
    json!({"city": "Paris", "celsius": "warm"})
}

/// What one model call was given, as the reference script prints it.
fn request_json(request: &ModelRequest<Chat>) -> Value {
    let tools: Vec<Value> = request
        .tools()
        .iter()
        .map(|t| json!({"name": t.name, "description": t.description}))
        .collect();
    let choice = match &request.settings().tool_choice {
        None => Value::Null,
        Some(ToolChoice::Required) => json!("any"),
        Some(other) => json!(format!("{other:?}")),
    };
    let mut out = json!({"tools": tools, "tool_choice": choice});
    if let Some(format) = &request.settings().response_format {
        let keys = |key: &str| -> Vec<String> {
            let mut keys: Vec<String> = match &format.schema[key] {
                Value::Object(map) => map.keys().cloned().collect(),
                Value::Array(items) => items
                    .iter()
                    .filter_map(|v| v.as_str().map(str::to_owned))
                    .collect(),
                _ => Vec::new(),
            };
            keys.sort();
            keys
        };
        out["response_format"] = json!({
            "type": "json_schema",
            "name": format.name,
            "strict": format.strict.unwrap_or(false),
            "properties": keys("properties"),
            "required": keys("required"),
        });
    }
    out
}

/// A message as the reference script prints it.
fn message_json(message: &Message) -> Value {
    let full = agent_state::serde_json::to_value(message).unwrap();
    let mut out = Map::new();
    out.insert("type".into(), full["type"].clone());
    let content = parser_words_hidden(&message.text());
    out.insert("content".into(), json!(content));
    if !message.tool_calls.is_empty() {
        let calls: Vec<Value> = message
            .tool_calls
            .iter()
            .map(|c| json!({"name": c.name, "args": c.args, "id": c.id}))
            .collect();
        out.insert("tool_calls".into(), json!(calls));
    }
    if full["type"] == "tool" {
        for key in ["name", "tool_call_id", "status"] {
            out.insert(key.into(), full[key].clone());
        }
    }
    Value::Object(out)
}

/// Runs the scenario as the reference script does: the answers in order,
/// every request recorded.
async fn run<F>(replies: Vec<Message>, with_tools: bool, format: F) -> Value
where
    F: IntoResponseFormat<Value = Weather>,
{
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&seen);
    let model = FnModel(move |request: &ModelRequest<Chat>| {
        let mut log = log.lock().unwrap();
        log.push(request_json(request));
        replies
            .get(log.len() - 1)
            .cloned()
            .ok_or_else(|| ModelError::other("the script is done"))
    });
    let mut builder = create_agent(model).response_format(format);
    if with_tools {
        builder = builder.tool(forecast());
    }
    let result = builder
        .compile()
        .unwrap()
        .run(input::<Chat>("Weather in Paris?"))
        .await;
    let requests = Value::Array(seen.lock().unwrap().clone());
    match result {
        Ok(out) => json!({
            "messages": out.state.messages().iter().map(message_json).collect::<Vec<_>>(),
            "structured_response": out.state.answer.structured_response,
            "requests": requests,
        }),
        Err(error) => json!({
            "error": parser_words_hidden(&structured_error(&error).to_string()),
            "requests": requests,
        }),
    }
}

/// The structured output error that failed the run.
fn structured_error(error: &GraphError) -> &StructuredOutputError {
    match error {
        GraphError::Node { error, .. } => error
            .downcast_ref::<StructuredOutputError>()
            .unwrap_or_else(|| panic!("not a structured output error: {error}")),
        other => panic!("not a node error: {other}"),
    }
}

/// LangChain prints the value as a Python object, we print JSON: both
/// become `<value>` once ours is checked to be the JSON.
fn value_hidden(mut scenario: Value, ours: bool) -> Value {
    let prefix = "Returning structured response: ";
    if let Some(messages) = scenario["messages"].as_array_mut() {
        for message in messages {
            let Some(text) = message["content"].as_str() else {
                continue;
            };
            if let Some(value) = text.strip_prefix(prefix) {
                if ours {
                    let parsed: Weather = agent_state::serde_json::from_str(value).unwrap();
                    assert_eq!(json!(parsed), good());
                }
                message["content"] = json!(format!("{prefix}<value>"));
            }
        }
    }
    scenario
}

async fn scenario(name: &str) -> Value {
    match name {
        "tool_strategy_retries" => {
            let replies = vec![
                calls(&[("get_forecast", json!({"city": "Paris"}), "c1")]),
                calls(&[("Weather", bad(), "c2")]),
                calls(&[("Weather", good(), "c3"), ("Weather", good(), "c4")]),
                calls(&[("Weather", good(), "c5")]),
            ];
            run(replies, true, ToolStrategy::<Weather>::new()).await
        }
        "tool_strategy_without_tools" => {
            let replies = vec![ai("It is sunny."), calls(&[("Weather", good(), "c1")])];
            run(replies, false, ToolStrategy::<Weather>::new()).await
        }
        "tool_strategy_with_another_call" => {
            let replies = vec![calls(&[
                ("get_forecast", json!({"city": "Paris"}), "c1"),
                ("Weather", good(), "c2"),
            ])];
            run(replies, true, ToolStrategy::<Weather>::new()).await
        }
        "custom_messages" => {
            let replies = vec![
                calls(&[("Weather", bad(), "c1")]),
                calls(&[("Weather", good(), "c2")]),
            ];
            let strategy = ToolStrategy::<Weather>::new()
                .tool_message_content("Got it.")
                .handle_errors("Try again.");
            run(replies, true, strategy).await
        }
        "errors_not_handled" => {
            let replies = vec![calls(&[("Weather", bad(), "c1")])];
            run(
                replies,
                true,
                ToolStrategy::<Weather>::new().handle_errors(false),
            )
            .await
        }
        "provider_strategy" => {
            let replies = vec![
                calls(&[("get_forecast", json!({"city": "Paris"}), "c1")]),
                // Python's `json.dumps`, spaces and all.
                ai(r#"{"city": "Paris", "celsius": 21.5}"#),
            ];
            run(
                replies,
                true,
                ProviderStrategy::<Weather>::new().strict(true),
            )
            .await
        }
        "provider_strategy_bad_json" => {
            let replies = vec![ai("sunny, 21.5")];
            run(replies, true, ProviderStrategy::<Weather>::new()).await
        }
        other => panic!("no scenario {other}"),
    }
}

#[tokio::test]
async fn every_scenario_runs_as_langchain_runs_it() {
    let expected = recorded("structured_output");
    let names: Vec<&String> = expected
        .as_object()
        .unwrap()
        .keys()
        .filter(|name| *name != "drawings")
        .collect();
    assert_eq!(names.len(), 7);
    for name in names {
        let ours = value_hidden(scenario(name).await, true);
        let theirs = value_hidden(expected[name].clone(), false);
        assert_eq!(ours, theirs, "scenario {name}");
    }
}

/// Ours differs where LangChain prints a Python object: the value as JSON.
#[tokio::test]
async fn the_structured_call_is_answered_with_the_value_as_json() {
    let out = scenario("tool_strategy_without_tools").await;
    let last = out["messages"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(
        last["content"],
        r#"Returning structured response: {"city":"Paris","celsius":21.5}"#
    );
    assert_eq!(last["name"], "Weather");
}

fn weather_agent(
    replies: Vec<Message>,
    strategy: ToolStrategy<Weather>,
) -> (Arc<ScriptedModel>, agent_state::graph::Graph<Chat>) {
    let model = Arc::new(ScriptedModel::new(replies).recording());
    let agent = create_agent(Arc::clone(&model))
        .tool(forecast())
        .response_format(strategy)
        .compile()
        .unwrap();
    (model, agent)
}

/// The retry message quotes serde's words inside LangChain's.
#[tokio::test]
async fn a_value_that_does_not_parse_is_retried_with_serdes_words() {
    let replies = vec![
        calls(&[("Weather", bad(), "c1")]),
        calls(&[("Weather", good(), "c2")]),
    ];
    let (model, agent) = weather_agent(replies, ToolStrategy::new());
    let out = agent.run(input::<Chat>("Weather?")).await.unwrap();
    assert_eq!(model.calls(), 2);
    assert_eq!(
        out.state.messages()[2].text(),
        "Error: Failed to parse structured output for tool 'Weather': Failed to parse data to \
         Weather: invalid type: string \"warm\", expected f64.\n Please fix your mistakes."
    );
    let want = Weather {
        city: "Paris".into(),
        celsius: 21.5,
    };
    assert_eq!(out.state.answer.structured_response, Some(want));
}

/// `HandleErrors::Only` retries the kinds it lists and fails on the
/// others (LangChain's exception classes).
#[tokio::test]
async fn only_the_listed_kinds_of_error_are_retried() {
    let only_multiple = || ToolStrategy::new().handle_errors(StructuredErrorKind::MultipleOutputs);
    let twice = calls(&[("Weather", good(), "c1"), ("Weather", good(), "c2")]);
    let replies = vec![twice, calls(&[("Weather", good(), "c3")])];
    let (model, agent) = weather_agent(replies, only_multiple());
    agent.run(input::<Chat>("Weather?")).await.unwrap();
    assert_eq!(model.calls(), 2);

    let (model, agent) = weather_agent(vec![calls(&[("Weather", bad(), "c1")])], only_multiple());
    let error = agent.run(input::<Chat>("Weather?")).await.unwrap_err();
    assert_eq!(
        structured_error(&error).kind(),
        StructuredErrorKind::Validation
    );
    assert_eq!(model.calls(), 1);
}

/// A handler writes the retry message (LangChain's callable).
#[tokio::test]
async fn a_handler_writes_the_retry_message() {
    let handler = HandleErrors::with(|e: &StructuredOutputError| format!("{:?}, again", e.kind()));
    let replies = vec![
        calls(&[("Weather", bad(), "c1")]),
        calls(&[("Weather", good(), "c2")]),
    ];
    let (_, agent) = weather_agent(replies, ToolStrategy::new().handle_errors(handler));
    let out = agent.run(input::<Chat>("Weather?")).await.unwrap();
    assert_eq!(out.state.messages()[2].text(), "Validation, again");
}

/// A thread keeps the value, in its state and its output JSON; the next
/// turn's model call clears it when it gives none (LangChain's
/// `structured_response: None`), so a turn never shows the last one's.
#[tokio::test]
async fn a_thread_keeps_the_value_until_the_next_turn_gives_none() {
    let saver = MemoryCheckpointer::new();
    let replies = vec![calls(&[("Weather", good(), "c1")]), ai("You are welcome.")];
    let (_, agent) = weather_agent(replies, ToolStrategy::new());
    let first = agent.run(input::<Chat>("Weather?")).on_thread(&saver, "t");
    let out = first.await.unwrap();
    assert_eq!(out.state.to_output_json()["structured_response"], good());
    let stored = agent.get_state(&saver, "t").await.unwrap();
    assert_eq!(stored.values.to_json()["structured_response"], good());
    assert!(stored.next.is_empty());

    let second = agent.run(input::<Chat>("Thanks")).on_thread(&saver, "t");
    let out = second.await.unwrap();
    assert_eq!(out.state.answer.structured_response, None);
    assert_eq!(out.state.messages().len(), 5);
    assert_eq!(
        out.state.to_output_json()["structured_response"],
        Value::Null
    );
}

/// The input may not set it (LangChain's `OmitFromInput`): refused by
/// name, as a typed update and as JSON, before anything runs.
#[tokio::test]
async fn the_input_may_not_set_the_value() {
    let weather = Weather {
        city: "Paris".into(),
        celsius: 30.0,
    };
    let (model, agent) = weather_agent(vec![], ToolStrategy::new());
    let update = Chat::lift(StructuredResponseUpdate::new().structured_response(weather));
    let error = agent.run(Input::Update(update)).await.unwrap_err();
    assert!(matches!(error, GraphError::InvalidInput { .. }), "{error}");
    assert!(error.to_string().contains("structured_response"), "{error}");
    assert_eq!(model.calls(), 0);

    let json = json!({"structured_response": good()});
    let error = <Chat as AgentState>::Input::from_json(json).unwrap_err();
    assert!(error.to_string().contains("structured_response"), "{error}");
}

/// `AutoStrategy`: the provider's structured output when the model says
/// it has it (the schema in the settings, no extra tool), else the tool.
#[tokio::test]
async fn auto_picks_the_provider_when_the_model_supports_it() {
    let native = Arc::new(
        ScriptedModel::new([ai(good().to_string())])
            .with_structured_output()
            .recording(),
    );
    let agent = create_agent(Arc::clone(&native))
        .tool(forecast())
        .response_format(AutoStrategy::<Weather>::new())
        .compile()
        .unwrap();
    let out = agent.run(input::<Chat>("Weather?")).await.unwrap();
    assert_eq!(json!(out.state.answer.structured_response), good());
    let seen = &native.seen()[0];
    assert_eq!(seen.tools, ["get_forecast"]);
    assert_eq!(seen.tool_choice, None);
    let format = seen.response_format.as_ref().expect("the schema is sent");
    assert_eq!(format.name, "Weather");
    assert_eq!(
        format.description.as_deref(),
        Some("The weather in a city.")
    );

    let plain = Arc::new(ScriptedModel::new([calls(&[("Weather", good(), "c1")])]).recording());
    let agent = create_agent(Arc::clone(&plain))
        .tool(forecast())
        .response_format(AutoStrategy::<Weather>::new())
        .compile()
        .unwrap();
    let out = agent.run(input::<Chat>("Weather?")).await.unwrap();
    assert_eq!(json!(out.state.answer.structured_response), good());
    let seen = &plain.seen()[0];
    assert_eq!(seen.tools, ["get_forecast", "Weather"]);
    assert_eq!(seen.tool_choice, Some(ToolChoice::Required));
    assert_eq!(seen.response_format, None);
}

/// The provider's text that does not read as the type fails the run with
/// an error naming the type (LangChain does not retry it either).
#[tokio::test]
async fn provider_text_of_the_wrong_shape_names_the_type() {
    let model = ScriptedModel::new([ai(r#"{"city": "Paris"}"#)]);
    let agent = create_agent(model)
        .response_format(ProviderStrategy::<Weather>::new())
        .compile()
        .unwrap();
    let error = agent.run(input::<Chat>("Weather?")).await.unwrap_err();
    assert_eq!(
        structured_error(&error).to_string(),
        "Failed to parse structured output for tool 'Weather': Failed to parse data to Weather: \
         missing field `celsius`."
    );
    assert!(error.to_string().contains("Weather"), "{error}");
}

/// A name and description of one's own for the structured tool.
#[tokio::test]
async fn the_tool_may_be_renamed_and_described() {
    let strategy = ToolStrategy::<Weather>::new()
        .name("report")
        .description("Report the weather.");
    let captured = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&captured);
    let model = FnModel(move |request: &ModelRequest<Chat>| {
        log.lock().unwrap().extend(request.tools().to_vec());
        Ok(calls(&[("report", good(), "c1")]))
    });
    let agent = create_agent(model)
        .response_format(strategy)
        .compile()
        .unwrap();
    let out = agent.run(input::<Chat>("Weather?")).await.unwrap();
    assert_eq!(json!(out.state.answer.structured_response), good());
    let tools = captured.lock().unwrap();
    assert_eq!(tools[0].name, "report");
    assert_eq!(tools[0].description, "Report the weather.");
    assert_eq!(tools[0].parameters["required"], json!(["city", "celsius"]));
}

/// The agent's graph as LangChain draws it with a response format: the
/// model may go back to itself (a retry), the tools node may end the loop
/// (the value came with other calls), and without tools a tool strategy
/// loops on the model.
#[test]
fn agents_with_a_response_format_are_drawn_as_langchain_draws_them() {
    let expected = recorded("structured_output");
    let drawings = expected["drawings"].as_object().unwrap();
    assert_eq!(drawings.len(), 4);
    for (case, langchain) in drawings {
        let builder = create_agent(ScriptedModel::new([]));
        let builder = match case.as_str() {
            "tool_strategy" | "provider_strategy" => builder.tool(forecast()),
            _ => builder,
        };
        let builder = if case.starts_with("tool") {
            builder.response_format(ToolStrategy::<Weather>::new())
        } else {
            builder.response_format(ProviderStrategy::<Weather>::new())
        };
        let drawn: String = builder.compile().unwrap().to_mermaid();
        assert_eq!(drawn, langchain.as_str().unwrap(), "{case}:\n{drawn}");
    }
}

/// A retry next to another tool call goes back to the model once the
/// tool has run. (We differ: LangChain ends the loop there without a
/// value, as it takes its retry message for an answer.)
#[tokio::test]
async fn a_retry_beside_another_call_goes_back_to_the_model() {
    let replies = vec![
        calls(&[
            ("get_forecast", json!({"city": "Paris"}), "c1"),
            ("Weather", bad(), "c2"),
        ]),
        calls(&[("Weather", good(), "c3")]),
    ];
    let (model, agent) = weather_agent(replies, ToolStrategy::new());
    let out = agent.run(input::<Chat>("Weather?")).await.unwrap();
    assert_eq!(model.calls(), 2);
    let texts: Vec<String> = out.state.messages().iter().map(Message::text).collect();
    assert!(texts[2].starts_with("Error: Failed to parse structured output"));
    assert_eq!(texts[3], "sunny in Paris, 21.5 C");
    assert_eq!(json!(out.state.answer.structured_response), good());
}

/// The structured tool may not share a name with another tool.
#[test]
fn a_tool_named_like_the_structured_tool_is_refused() {
    let agent = create_agent(ScriptedModel::new([]))
        .tool(forecast())
        .response_format(ToolStrategy::<Weather>::new().name("get_forecast"))
        .compile();
    let Err(error) = agent else {
        panic!("two tools named get_forecast compiled")
    };
    assert!(matches!(error, AgentError::DuplicateTool { ref name } if name == "get_forecast"));
}

/// The state's JSON Schema (`#[state(json_schema)]`) has the value; the
/// input's leaves it out.
#[test]
fn the_input_schema_leaves_the_value_out() {
    use agent_state::json_schema::schema_of;
    let state = schema_of::<Chat>();
    assert!(state["properties"].get("structured_response").is_some());
    let input = schema_of::<ChatInput>();
    assert!(input["properties"].get("messages").is_some());
    assert!(input["properties"].get("structured_response").is_none());
}

/// A streamed model call is offered the structured tool too, and its
/// answer ends the loop the same way.
#[tokio::test]
async fn a_streamed_call_gets_the_structured_tool() {
    let model = Arc::new(ScriptedModel::new([calls(&[("Weather", good(), "c1")])]).recording());
    let chunks = Arc::new(Mutex::new(0));
    let count = Arc::clone(&chunks);
    let agent = create_agent(Arc::clone(&model))
        .response_format(ToolStrategy::<Weather>::new())
        .on_token(move |_| *count.lock().unwrap() += 1)
        .compile()
        .unwrap();
    let out = agent.run(input::<Chat>("Weather?")).await.unwrap();
    assert!(*chunks.lock().unwrap() > 0);
    assert_eq!(model.seen()[0].tools, ["Weather"]);
    assert_eq!(json!(out.state.answer.structured_response), good());
}
