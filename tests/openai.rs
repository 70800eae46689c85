//! The OpenAI-compatible chat model against a local server this test
//! starts, which speaks the chat-completions protocol: tool calls, SSE
//! chunks, 429s, malformed JSON. No network, no API key.
#![cfg(feature = "openai")]

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use agent_state::agent::openai::OpenAiChat;
use agent_state::agent::{
    create_agent, input, ChatModel, FnTool, ModelError, ModelRequest, ModelSettings,
    ProviderStrategy, StructuredResponse, ToolChoice, ToolRuntime, Usage,
};
use agent_state::base::{HasMessages, MessagesState};
use agent_state::checkpoint::MemoryCheckpointer;
use agent_state::graph::GraphError;
use agent_state::serde::Deserialize;
use agent_state::serde_json::{json, Value};
use agent_state::{AgentState, MessageType, ToolStatus};
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::Router;

#[derive(AgentState, Debug, Clone, PartialEq)]
struct Chat {
    #[state(flatten)]
    base: MessagesState,
}

/// What the server answers, in order.
enum Reply {
    Json(Value),
    Sse(Vec<Value>),
    /// SSE sent live: the first event, then (once `go` is set, or after a
    /// second) the others; `waited` records whether `go` came first.
    Live(Vec<Value>, Arc<AtomicBool>, Arc<AtomicBool>),
    Status(u16, Value),
    Raw(&'static str),
}

#[derive(Default)]
struct Mock {
    replies: Mutex<VecDeque<Reply>>,
    requests: Mutex<Vec<Value>>,
}

async fn completions(State(mock): State<Arc<Mock>>, body: Bytes) -> Response {
    let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    mock.requests.lock().unwrap().push(request);
    let reply = mock.replies.lock().unwrap().pop_front();
    match reply {
        Some(Reply::Json(value)) => axum::Json(value).into_response(),
        Some(Reply::Sse(events)) => {
            let mut text: String = events.iter().map(|e| format!("data: {e}\n\n")).collect();
            text.push_str("data: [DONE]\n\n");
            ([(header::CONTENT_TYPE, "text/event-stream")], text).into_response()
        }
        Some(Reply::Live(events, go, waited)) => live(events, go, waited),
        Some(Reply::Status(code, value)) => {
            let status = StatusCode::from_u16(code).unwrap();
            (status, [(header::RETRY_AFTER, "0")], axum::Json(value)).into_response()
        }
        Some(Reply::Raw(text)) => {
            ([(header::CONTENT_TYPE, "application/json")], text).into_response()
        }
        None => (StatusCode::INTERNAL_SERVER_ERROR, "no reply scripted").into_response(),
    }
}

/// A body fed by a channel, so the server can send events one by one.
struct Chunks(tokio::sync::mpsc::UnboundedReceiver<String>);

impl futures::Stream for Chunks {
    type Item = Result<Bytes, std::convert::Infallible>;

    fn poll_next(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Self::Item>> {
        self.0
            .poll_recv(cx)
            .map(|text| text.map(|t| Ok(Bytes::from(t))))
    }
}

fn live(events: Vec<Value>, go: Arc<AtomicBool>, waited: Arc<AtomicBool>) -> Response {
    let (send, receive) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(async move {
        let mut events = events.into_iter().map(|e| format!("data: {e}\n\n"));
        let _ = send.send(events.next().unwrap_or_default());
        for _ in 0..1000 {
            if go.load(Ordering::SeqCst) {
                waited.store(true, Ordering::SeqCst);
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(1)).await;
        }
        for event in events {
            let _ = send.send(event);
        }
        let _ = send.send("data: [DONE]\n\n".to_owned());
    });
    let body = axum::body::Body::from_stream(Chunks(receive));
    ([(header::CONTENT_TYPE, "text/event-stream")], body).into_response()
}

/// Starts the server on a loopback port; the model talks to it.
async fn serve(replies: Vec<Reply>) -> (OpenAiChat, Arc<Mock>) {
    let mock = Arc::new(Mock {
        replies: Mutex::new(replies.into()),
        requests: Mutex::default(),
    });
    let app = Router::new()
        .route("/v1/chat/completions", post(completions))
        .with_state(Arc::clone(&mock));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    let model = OpenAiChat::new("test-model")
        .with_base_url(url)
        .with_api_key("sk-test");
    (model, mock)
}

fn completion(message: Value, finish: &str) -> Value {
    json!({
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1,
        "model": "test-model",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": 12, "completion_tokens": 5, "total_tokens": 17}
    })
}

fn tool_call(id: &str, name: &str, arguments: &str) -> Value {
    json!({"id": id, "type": "function", "function": {"name": name, "arguments": arguments}})
}

fn chunk(delta: Value, finish: Option<&str>) -> Value {
    json!({
        "id": "chatcmpl-2",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "test-model",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]
    })
}

#[derive(Deserialize, agent_state::schemars::JsonSchema)]
#[serde(crate = "agent_state::serde")]
#[schemars(crate = "agent_state::schemars")]
struct Weather {
    /// The city.
    city: String,
}

fn weather() -> FnTool<Chat> {
    FnTool::sync(
        "get_weather",
        "The weather in a city",
        |a: Weather, _: &ToolRuntime<Chat>| format!("sunny in {}", a.city),
    )
}

#[tokio::test]
async fn tool_calls_go_round_trip() {
    let (model, mock) = serve(vec![
        Reply::Json(completion(
            json!({"role": "assistant", "content": null,
                   "tool_calls": [tool_call("call_1", "get_weather", "{\"city\": \"Paris\"}")]}),
            "tool_calls",
        )),
        Reply::Json(completion(
            json!({"role": "assistant", "content": "It is sunny."}),
            "stop",
        )),
    ])
    .await;
    let agent = create_agent(model)
        .system_prompt("You are terse.")
        .settings(ModelSettings {
            temperature: Some(0.0),
            ..ModelSettings::default()
        })
        .tool(weather())
        .compile()
        .unwrap();
    let out = agent.run(input::<Chat>("Weather in Paris?")).await.unwrap();

    let messages = out.state.messages();
    assert_eq!(messages.len(), 4);
    assert_eq!(messages[1].tool_calls[0].name, "get_weather");
    assert_eq!(messages[1].tool_calls[0].args["city"], "Paris");
    assert_eq!(messages[2].text(), "sunny in Paris");
    assert_eq!(messages[3].text(), "It is sunny.");
    let usage = Usage::of(&messages[3]).unwrap();
    assert_eq!(
        (usage.input_tokens, usage.output_tokens, usage.total_tokens),
        (12, 5, 17)
    );
    assert_eq!(messages[3].response_metadata["finish_reason"], "stop");

    let requests = mock.requests.lock().unwrap();
    let first = &requests[0];
    assert_eq!(first["model"], "test-model");
    assert_eq!(first["temperature"], 0.0);
    assert_eq!(
        first["messages"][0],
        json!({"role": "system", "content": "You are terse."})
    );
    assert_eq!(
        first["messages"][1],
        json!({"role": "user", "content": "Weather in Paris?"})
    );
    let function = &first["tools"][0]["function"];
    assert_eq!(function["name"], "get_weather");
    assert_eq!(
        function["parameters"]["properties"]["city"]["type"],
        "string"
    );
    // The second request carries the call and its answer.
    let second = &requests[1]["messages"];
    assert_eq!(second[2]["tool_calls"][0]["id"], "call_1");
    assert_eq!(
        second[3],
        json!({"role": "tool", "content": "sunny in Paris", "tool_call_id": "call_1"})
    );
}

#[tokio::test]
async fn streamed_chunks_reach_the_sink_and_fold_into_one_message() {
    let (model, mock) = serve(vec![
        Reply::Sse(vec![
            chunk(json!({"role": "assistant", "content": "Let me "}), None),
            chunk(json!({"content": "check."}), None),
            chunk(
                json!({"tool_calls": [{"index": 0, "id": "call_7", "type": "function",
                        "function": {"name": "get_weather", "arguments": "{\"ci"}}]}),
                None,
            ),
            chunk(
                json!({"tool_calls": [{"index": 0, "function": {"arguments": "ty\": \"Oslo\"}"}}]}),
                Some("tool_calls"),
            ),
            json!({"id": "chatcmpl-2", "object": "chat.completion.chunk", "created": 1,
                   "model": "test-model", "choices": [],
                   "usage": {"prompt_tokens": 3, "completion_tokens": 4, "total_tokens": 7}}),
        ]),
        Reply::Sse(vec![chunk(json!({"content": "Cold."}), Some("stop"))]),
    ])
    .await;
    let tokens = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&tokens);
    let agent = create_agent(model)
        .tool(weather())
        .on_token(move |c| sink.lock().unwrap().push((c.text(), c.last)))
        .compile()
        .unwrap();
    let out = agent.run(input::<Chat>("Oslo?")).await.unwrap();

    let tokens = tokens.lock().unwrap();
    let texts: Vec<&str> = tokens
        .iter()
        .map(|t| t.0.as_str())
        .filter(|t| !t.is_empty())
        .collect();
    assert_eq!(texts, ["Let me ", "check.", "Cold."]);
    // Each completion ends with one empty piece marked last, after its
    // finish reason and its usage chunk: the finish is not marked too.
    let calls: Vec<&[(String, bool)]> = tokens.split_inclusive(|t| t.1).collect();
    assert_eq!(calls.len(), 2, "{tokens:?}");
    for call in calls {
        assert_eq!(call.last(), Some(&(String::new(), true)), "{tokens:?}");
    }
    let messages = out.state.messages();
    assert_eq!(messages[1].text(), "Let me check.");
    assert_eq!(messages[1].tool_calls[0].id.as_deref(), Some("call_7"));
    assert_eq!(messages[1].tool_calls[0].args["city"], "Oslo");
    assert_eq!(Usage::of(&messages[1]).unwrap().total_tokens, 7);
    assert_eq!(messages[2].text(), "sunny in Oslo");
    assert_eq!(messages[3].text(), "Cold.");
    let requests = mock.requests.lock().unwrap();
    assert_eq!(requests[0]["stream"], true);
    assert_eq!(requests[0]["stream_options"]["include_usage"], true);
}

#[tokio::test]
async fn tokens_reach_the_sink_while_the_answer_is_still_coming() {
    let (go, waited) = (
        Arc::new(AtomicBool::new(false)),
        Arc::new(AtomicBool::new(false)),
    );
    let (model, _) = serve(vec![Reply::Live(
        vec![
            chunk(json!({"role": "assistant", "content": "Hel"}), None),
            chunk(json!({"content": "lo"}), Some("stop")),
        ],
        Arc::clone(&go),
        Arc::clone(&waited),
    )])
    .await;
    let agent = create_agent(model)
        .on_token(move |c| {
            if c.text() == "Hel" {
                go.store(true, Ordering::SeqCst);
            }
        })
        .compile()
        .unwrap();
    let out = agent.run(input::<Chat>("hi")).await.unwrap();
    assert_eq!(out.state.messages()[1].text(), "Hello");
    assert!(
        waited.load(Ordering::SeqCst),
        "the first token reached the sink before the server sent the rest"
    );
}

fn rate_limited() -> Reply {
    Reply::Status(
        429,
        json!({"error": {"message": "Rate limit reached for requests", "type": "requests",
                         "param": null, "code": "rate_limit_exceeded"}}),
    )
}

#[tokio::test]
async fn a_429_is_retried_then_reported_clearly() {
    let ok = completion(json!({"role": "assistant", "content": "fine"}), "stop");
    let (model, mock) = serve(vec![rate_limited(), Reply::Json(ok)]).await;
    let agent = create_agent(model).compile().unwrap();
    let out = agent.run(input::<Chat>("hi")).await.unwrap();
    assert_eq!(out.state.messages()[1].text(), "fine");
    assert_eq!(mock.requests.lock().unwrap().len(), 2, "one retry");

    // Past the client's retries (three), the run stops with the 429 named.
    let (model, mock) = serve((0..4).map(|_| rate_limited()).collect()).await;
    let agent = create_agent(model).compile().unwrap();
    let err = agent.run(input::<Chat>("hi")).await.unwrap_err();
    let GraphError::Node { node, error, .. } = &err else {
        panic!("expected a node error, got {err}");
    };
    assert_eq!(node, "model");
    let model_error = error.downcast_ref::<ModelError>().unwrap();
    assert!(
        matches!(model_error, ModelError::RateLimited { .. }),
        "{model_error:?}"
    );
    assert!(
        err.to_string()
            .contains("rate limiting (HTTP 429): requests: Rate limit reached"),
        "{err}"
    );
    assert_eq!(mock.requests.lock().unwrap().len(), 4);
}

#[tokio::test]
async fn malformed_json_is_a_clear_error() {
    let (model, _) = serve(vec![Reply::Raw("{\"id\": \"chatcmpl-1\", \"choices\": [")]).await;
    let request = ModelRequest::new(Arc::new(Chat::default()));
    let err = model.invoke(&request).await.unwrap_err();
    let ModelError::InvalidResponse { message } = &err else {
        panic!("expected an invalid response, got {err}");
    };
    assert!(
        message.contains("the body began: {\"id\": \"chatcmpl-1\""),
        "{message}"
    );
    assert!(err
        .to_string()
        .starts_with("the model provider's answer is not a chat completion"));

    // A completion without choices, and an error status with a JSON body.
    let empty = json!({"id": "chatcmpl-9", "object": "chat.completion", "created": 1,
                       "model": "m", "choices": []});
    let bad = json!({"error": {"message": "model `nope` does not exist", "type": "invalid_request_error"}});
    let (model, _) = serve(vec![Reply::Json(empty), Reply::Status(404, bad)]).await;
    let err = model.invoke(&request).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        "the model provider's answer is not a chat completion: completion `chatcmpl-9` has no choices"
    );
    let err = model.invoke(&request).await.unwrap_err();
    assert!(matches!(&err, ModelError::Api { status: 404, .. }), "{err}");
    assert!(err.to_string().contains("model `nope` does not exist"));
}

/// Arguments that are not JSON make an invalid call; as in LangChain, the
/// turn ends there, and the next turn sends the call as the model made it,
/// then LangChain's error answer to it.
#[tokio::test]
async fn arguments_that_are_not_json_are_answered_at_the_next_turn() {
    let (model, mock) = serve(vec![
        Reply::Json(completion(
            json!({"role": "assistant", "content": null,
                   "tool_calls": [tool_call("call_1", "get_weather", "{\"city\": ")]}),
            "tool_calls",
        )),
        Reply::Json(completion(
            json!({"role": "assistant", "content": "Sorry."}),
            "stop",
        )),
    ])
    .await;
    let saver = MemoryCheckpointer::new();
    let agent = create_agent(model).tool(weather()).compile().unwrap();
    let out = agent
        .run(input::<Chat>("Weather?"))
        .on_thread(&saver, "t")
        .await
        .unwrap();
    let messages = out.state.messages();
    assert_eq!(messages.len(), 2);
    assert_eq!(messages[1].invalid_tool_calls.len(), 1);
    assert_eq!(mock.requests.lock().unwrap().len(), 1);

    let out = agent
        .run(input::<Chat>("Well?"))
        .on_thread(&saver, "t")
        .await
        .unwrap();
    let messages = out.state.messages();
    assert_eq!(messages[2].kind, MessageType::Tool);
    assert_eq!(messages[2].status, Some(ToolStatus::Error));
    let requests = mock.requests.lock().unwrap();
    let sent = &requests[1]["messages"];
    assert_eq!(
        sent[1]["tool_calls"][0]["function"]["arguments"],
        "{\"city\": "
    );
    assert_eq!(
        sent[2],
        json!({"role": "tool", "tool_call_id": "call_1", "content":
            "Tool call get_weather with id call_1 could not be executed - arguments were malformed or truncated."})
    );
    assert_eq!(sent[3], json!({"role": "user", "content": "Well?"}));
    assert_eq!(messages[4].text(), "Sorry.");
}

/// What third-party servers send (Ollama, vLLM, llama.cpp, proxies):
/// valid answers without the fields only OpenAI fills. The official
/// clients (and LangChain's ChatOpenAI on them) read each of these; so do
/// we.
#[tokio::test]
async fn minimal_completions_from_third_party_servers_are_read() {
    let (model, _) = serve(vec![
        // Only `choices` and a message: no id, object, created, model,
        // index, finish reason, usage or system fingerprint.
        Reply::Json(json!({"choices": [{"message": {"role": "assistant", "content": "hi"}}]})),
        // `content: null` beside tool calls without `type`.
        Reply::Json(json!({"id": "c-2", "model": "llama3.2", "choices": [{
            "message": {"role": "assistant", "content": null, "tool_calls": [
                {"id": "t1", "function": {"name": "get_weather", "arguments": "{\"city\": \"Rome\"}"}},
                {"id": "t2", "type": "function", "function": {"name": "get_weather"}}]},
            "finish_reason": "tool_calls"}]})),
        // A finish reason of the server's own, usage without its total,
        // a message without its role.
        Reply::Json(json!({"choices": [{"message": {"content": "x"}, "finish_reason": "eos"}],
                           "usage": {"prompt_tokens": 4, "completion_tokens": 2}})),
    ])
    .await;
    let request = ModelRequest::new(Arc::new(Chat::default()));

    let bare = model.invoke(&request).await.unwrap();
    assert_eq!((bare.kind, bare.text()), (MessageType::Ai, "hi".to_owned()));
    assert_eq!(
        (bare.usage_metadata, bare.response_metadata.len()),
        (None, 0)
    );

    let calls = model.invoke(&request).await.unwrap();
    assert_eq!(calls.text(), "");
    assert_eq!(calls.tool_calls.len(), 2, "{calls:?}");
    assert_eq!(calls.tool_calls[0].args["city"], "Rome");
    assert_eq!(calls.tool_calls[0].id.as_deref(), Some("t1"));
    assert!(calls.tool_calls[1].args.is_empty(), "no arguments: none");
    assert_eq!(calls.response_metadata["model_name"], "llama3.2");
    assert_eq!(calls.response_metadata["finish_reason"], "tool_calls");

    let odd = model.invoke(&request).await.unwrap();
    assert_eq!(odd.response_metadata["finish_reason"], "eos");
    let usage = Usage::of(&odd).unwrap();
    assert_eq!(
        (usage.input_tokens, usage.output_tokens, usage.total_tokens),
        (4, 2, 6)
    );
}

/// Stream chunks as minimal servers send them: no id, object, created or
/// model; choices without `index` or `finish_reason`; `delta: null`, a
/// choice without a delta; tool call pieces without `type`, a whole call
/// in one piece without `index`; no usage chunk.
#[tokio::test]
async fn minimal_stream_chunks_are_read() {
    let piece = |choice: Value| json!({"choices": [choice]});
    let (model, _) = serve(vec![
        Reply::Sse(vec![
            piece(json!({"delta": {"role": "assistant", "content": "Let me "}})),
            piece(json!({"delta": null})),
            piece(json!({"delta": {"tool_calls": [{"index": 0, "id": "call_9",
                "function": {"name": "get_weather", "arguments": "{\"city\""}}]}})),
            piece(json!({"delta": {"tool_calls": [{"index": 0,
                "function": {"arguments": ": \"Rome\"}"}}]}})),
            piece(json!({"finish_reason": "tool_calls"})),
        ]),
        Reply::Sse(vec![piece(
            json!({"delta": {"tool_calls": [{"id": "call_10",
            "function": {"name": "get_weather", "arguments": "{\"city\": \"Oslo\"}"}}]}}),
        )]),
        Reply::Sse(vec![piece(json!({"delta": {"content": "Done."}}))]),
    ])
    .await;
    let agent = create_agent(model)
        .tool(weather())
        .on_token(|_| {})
        .compile()
        .unwrap();
    let out = agent.run(input::<Chat>("Rome, then Oslo?")).await.unwrap();
    let said: Vec<String> = out.state.messages().iter().map(|m| m.text()).collect();
    assert_eq!(
        said,
        [
            "Rome, then Oslo?",
            "Let me ",
            "sunny in Rome",
            "",
            "sunny in Oslo",
            "Done."
        ]
    );
    let messages = out.state.messages();
    assert_eq!(messages[1].tool_calls[0].id.as_deref(), Some("call_9"));
    assert_eq!(messages[1].response_metadata["finish_reason"], "tool_calls");
    assert_eq!(messages[3].tool_calls[0].args["city"], "Oslo");
}

/// A completion without choices (missing, `null`, empty) and an error
/// sent with status 200 are named as what they are.
#[tokio::test]
async fn answers_without_choices_or_with_an_error_are_named() {
    let (model, _) = serve(vec![
        Reply::Json(json!({"id": "c-1", "choices": null})),
        Reply::Json(json!({"object": "chat.completion"})),
        Reply::Json(json!({"error": {"message": "the model crashed"}})),
    ])
    .await;
    let request = ModelRequest::new(Arc::new(Chat::default()));
    let mut errors = Vec::new();
    for _ in 0..3 {
        let err = model.invoke(&request).await.unwrap_err();
        assert!(matches!(err, ModelError::InvalidResponse { .. }), "{err}");
        errors.push(err.to_string());
    }
    let prefix = "the model provider's answer is not a chat completion: ";
    assert_eq!(
        errors,
        [
            format!("{prefix}completion `c-1` has no choices"),
            format!("{prefix}the completion has no choices"),
            format!("{prefix}the completion is an error: {{\"message\":\"the model crashed\"}}"),
        ]
    );
}

#[tokio::test]
async fn settings_choose_the_model_and_the_tool_choice() {
    let (model, mock) = serve(vec![Reply::Json(completion(
        json!({"role": "assistant", "content": "ok"}),
        "stop",
    ))])
    .await;
    let settings = ModelSettings {
        model: Some("other-model".into()),
        max_tokens: Some(64),
        tool_choice: Some(ToolChoice::Tool("get_weather".into())),
        ..ModelSettings::default()
    };
    let agent = create_agent(model)
        .settings(settings)
        .tool(weather())
        .compile()
        .unwrap();
    agent.run(input::<Chat>("hi")).await.unwrap();
    let requests = mock.requests.lock().unwrap();
    assert_eq!(requests[0]["model"], "other-model");
    assert_eq!(requests[0]["max_completion_tokens"], 64);
    assert_eq!(
        requests[0]["tool_choice"],
        json!({"type": "function", "function": {"name": "get_weather"}})
    );
}

#[test]
fn configuration_comes_from_the_environment() {
    let vars = |name: &str| match name {
        "OPENAI_BASE_URL" => Some("http://127.0.0.1:1/v1/".to_owned()),
        "OPENAI_MODEL" => Some("llama3.2".to_owned()),
        "OPENAI_API_KEY" => Some("sk-local".to_owned()),
        _ => None,
    };
    let model = OpenAiChat::from_vars(vars);
    assert_eq!(model.model(), "llama3.2");
    assert!(format!("{model:?}").contains("http://127.0.0.1:1/v1\""));
    let model = OpenAiChat::from_vars(|_| None);
    assert_eq!(model.model(), agent_state::agent::openai::DEFAULT_MODEL);
}

/// A forecast, the agent's typed answer.
#[derive(
    agent_state::serde::Serialize,
    Deserialize,
    agent_state::schemars::JsonSchema,
    Debug,
    Clone,
    PartialEq,
)]
#[serde(crate = "agent_state::serde")]
#[schemars(crate = "agent_state::schemars")]
struct Forecast {
    /// The city.
    city: String,
    /// Degrees Celsius.
    celsius: f64,
}

#[derive(AgentState, Debug, Clone, PartialEq)]
struct Reported {
    #[state(flatten)]
    base: MessagesState,
    #[state(flatten)]
    answer: StructuredResponse<Forecast>,
}

/// The provider strategy: the request carries the schema as OpenAI's
/// `response_format`, and the answer's JSON text becomes the value.
#[tokio::test]
async fn the_provider_strategy_sends_the_schema_and_reads_the_json_answer() {
    let (model, mock) = serve(vec![Reply::Json(completion(
        json!({"role": "assistant", "content": "{\"city\": \"Paris\", \"celsius\": 21.5}"}),
        "stop",
    ))])
    .await;
    let agent = create_agent(model)
        .response_format(ProviderStrategy::<Forecast>::new().strict(true))
        .compile()
        .unwrap();
    let out = agent
        .run(input::<Reported>("Weather in Paris?"))
        .await
        .unwrap();
    let forecast = Forecast {
        city: "Paris".into(),
        celsius: 21.5,
    };
    assert_eq!(out.state.answer.structured_response, Some(forecast));
    let requests = mock.requests.lock().unwrap();
    let format = &requests[0]["response_format"];
    assert_eq!(format["type"], "json_schema");
    assert_eq!(format["json_schema"]["name"], "Forecast");
    assert_eq!(format["json_schema"]["strict"], true);
    assert_eq!(
        format["json_schema"]["description"],
        "A forecast, the agent's typed answer."
    );
    let schema = &format["json_schema"]["schema"];
    assert_eq!(schema["required"], json!(["city", "celsius"]));
    assert_eq!(schema["properties"]["celsius"]["type"], "number");
    assert!(requests[0].get("tools").is_none());
}

/// Which models say they answer in a schema by themselves: OpenAI's
/// families that do, by name, unless told otherwise.
#[test]
fn native_structured_output_is_known_by_model_name_or_declared() {
    let supports = |model: OpenAiChat| ChatModel::<Chat>::supports_structured_output(&model);
    assert!(supports(OpenAiChat::new("gpt-4o-mini")));
    assert!(supports(OpenAiChat::new("openai/gpt-4.1")));
    assert!(supports(OpenAiChat::new("gpt-5")));
    assert!(!supports(OpenAiChat::new("gpt-4o1")));
    assert!(!supports(OpenAiChat::new("llama3.2")));
    assert!(supports(
        OpenAiChat::new("llama3.2").with_structured_output(true)
    ));
    assert!(!supports(
        OpenAiChat::new("gpt-4o").with_structured_output(false)
    ));
}
