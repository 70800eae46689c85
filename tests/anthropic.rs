//! The Anthropic Messages model against a local server this test starts,
//! which speaks the Messages protocol: content blocks, tool use and tool
//! results, SSE events, error bodies, `retry-after`. No network, no API
//! key.
#![cfg(feature = "anthropic")]

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_state::agent::anthropic::{AnthropicChat, DEFAULT_MAX_TOKENS, DEFAULT_MODEL};
use agent_state::agent::{
    create_agent, input, ChatModel, FnTool, ModelError, ModelRequest, ModelSettings, ToolChoice,
    ToolRuntime, Usage,
};
use agent_state::base::{HasMessages, MessagesState};
use agent_state::graph::{GraphError, StreamEvent, StreamMode};
use agent_state::serde::Deserialize;
use agent_state::serde_json::{json, Value};
use agent_state::{AgentState, MessageType, ToolStatus};
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::Router;
use futures::StreamExt;

#[derive(AgentState, Debug, Clone, PartialEq)]
struct Chat {
    #[state(flatten)]
    base: MessagesState,
}

/// What the server answers, in order.
enum Reply {
    Json(Value),
    /// SSE events, each sent as `event: <its type>` and `data: <it>`.
    Sse(Vec<Value>),
    /// A status with a body and extra headers.
    Status(u16, &'static str, Vec<(&'static str, &'static str)>),
    Raw(&'static str),
    /// SSE sent live: the events up to the first text delta, then (once
    /// the flag is set, or after a second) the rest; the second flag
    /// records whether the first came first.
    Live(Vec<Value>, Arc<AtomicBool>, Arc<AtomicBool>),
}

/// A request as the server saw it: the headers that matter and the body.
struct Seen {
    api_key: Option<String>,
    version: Option<String>,
    body: Value,
}

#[derive(Default)]
struct Mock {
    replies: Mutex<VecDeque<Reply>>,
    requests: Mutex<Vec<Seen>>,
}

impl Mock {
    fn bodies(&self) -> Vec<Value> {
        let requests = self.requests.lock().unwrap();
        requests.iter().map(|seen| seen.body.clone()).collect()
    }
}

async fn messages(State(mock): State<Arc<Mock>>, headers: HeaderMap, body: Bytes) -> Response {
    let header = |name: &str| {
        let value = headers.get(name)?;
        value.to_str().ok().map(str::to_owned)
    };
    mock.requests.lock().unwrap().push(Seen {
        api_key: header("x-api-key"),
        version: header("anthropic-version"),
        body: serde_json::from_slice(&body).unwrap_or(Value::Null),
    });
    let reply = mock.replies.lock().unwrap().pop_front();
    match reply {
        Some(Reply::Json(value)) => axum::Json(value).into_response(),
        Some(Reply::Sse(events)) => {
            let text: String = events.iter().map(sse).collect();
            ([(header::CONTENT_TYPE, "text/event-stream")], text).into_response()
        }
        Some(Reply::Live(events, go, waited)) => live(events, go, waited),
        Some(Reply::Status(code, body, extra)) => {
            let mut response = (StatusCode::from_u16(code).unwrap(), body).into_response();
            for (name, value) in extra {
                response.headers_mut().insert(name, value.parse().unwrap());
            }
            response
        }
        Some(Reply::Raw(text)) => {
            ([(header::CONTENT_TYPE, "application/json")], text).into_response()
        }
        None => (StatusCode::IM_A_TEAPOT, "no reply scripted").into_response(),
    }
}

/// An event as the server writes it.
fn sse(event: &Value) -> String {
    format!(
        "event: {}\ndata: {event}\n\n",
        event["type"].as_str().unwrap()
    )
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
        let first = events
            .iter()
            .position(|e| e["type"] == "content_block_delta");
        let (before, after) = events.split_at(first.map_or(events.len(), |at| at + 1));
        for event in before {
            let _ = send.send(sse(event));
        }
        for _ in 0..1000 {
            if go.load(Ordering::SeqCst) {
                waited.store(true, Ordering::SeqCst);
                break;
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        for event in after {
            let _ = send.send(sse(event));
        }
    });
    let body = axum::body::Body::from_stream(Chunks(receive));
    ([(header::CONTENT_TYPE, "text/event-stream")], body).into_response()
}

/// Starts the server on a loopback port; the model talks to it.
async fn serve(replies: Vec<Reply>) -> (AnthropicChat, Arc<Mock>) {
    let mock = Arc::new(Mock {
        replies: Mutex::new(replies.into()),
        requests: Mutex::default(),
    });
    let app = Router::new()
        .route("/v1/messages", post(messages))
        .with_state(Arc::clone(&mock));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    let model = AnthropicChat::new("claude-test")
        .with_base_url(url)
        .with_api_key("sk-ant-test");
    (model, mock)
}

/// A message of `content` blocks.
fn message(content: Value, stop: &str) -> Value {
    json!({
        "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-test",
        "content": content, "stop_reason": stop, "stop_sequence": null,
        "usage": {"input_tokens": 10, "output_tokens": 5,
                  "cache_read_input_tokens": 4, "cache_creation_input_tokens": 2}
    })
}

fn text(text: &str) -> Value {
    json!({"type": "text", "text": text})
}

fn tool_use(id: &str, name: &str, input: Value) -> Value {
    json!({"type": "tool_use", "id": id, "name": name, "input": input})
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
        Reply::Json(message(
            json!([
                text("Let me check."),
                tool_use("toolu_1", "get_weather", json!({"city": "Paris"}))
            ]),
            "tool_use",
        )),
        Reply::Json(message(json!([text("It is sunny.")]), "end_turn")),
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
    assert_eq!(messages[1].text(), "Let me check.");
    assert_eq!(messages[1].tool_calls[0].id.as_deref(), Some("toolu_1"));
    assert_eq!(messages[1].tool_calls[0].args["city"], "Paris");
    assert_eq!(messages[2].text(), "sunny in Paris");
    assert_eq!(messages[3].text(), "It is sunny.");
    // LangChain's ChatAnthropic counts cached input tokens in.
    assert_eq!(
        messages[3].usage_metadata,
        Some(
            json!({"input_tokens": 16, "output_tokens": 5, "total_tokens": 21,
                    "input_token_details": {"cache_read": 4, "cache_creation": 2}})
        )
    );
    let meta = &messages[3].response_metadata;
    assert_eq!(meta["stop_reason"], "end_turn");
    assert_eq!(meta["model_name"], "claude-test");
    assert_eq!(meta["model_provider"], "anthropic");

    let requests = mock.requests.lock().unwrap();
    assert_eq!(requests[0].api_key.as_deref(), Some("sk-ant-test"));
    assert_eq!(requests[0].version.as_deref(), Some("2023-06-01"));
    let first = &requests[0].body;
    assert_eq!(first["model"], "claude-test");
    assert_eq!(first["max_tokens"], DEFAULT_MAX_TOKENS);
    assert_eq!(first["temperature"], 0.0);
    assert_eq!(first["system"], "You are terse.");
    assert_eq!(
        first["messages"],
        json!([{"role": "user", "content": "Weather in Paris?"}])
    );
    let tool = &first["tools"][0];
    assert_eq!(
        (&tool["name"], &tool["description"]),
        (&json!("get_weather"), &json!("The weather in a city"))
    );
    assert_eq!(tool["input_schema"]["properties"]["city"]["type"], "string");
    assert!(first.get("stream").is_none() && first.get("tool_choice").is_none());
    // The second request carries the call and its result.
    let second = &requests[1].body["messages"];
    assert_eq!(
        second[1],
        json!({"role": "assistant", "content": [text("Let me check."),
               tool_use("toolu_1", "get_weather", json!({"city": "Paris"}))]})
    );
    assert_eq!(
        second[2],
        json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1",
               "content": "sunny in Paris", "is_error": false}]})
    );
}

/// Parallel calls' results go back as one user turn, a failed call's
/// marked `is_error`, as Anthropic requires and LangChain sends them.
#[tokio::test]
async fn parallel_tool_results_make_one_user_turn() {
    let (model, mock) = serve(vec![
        Reply::Json(message(
            json!([
                tool_use("toolu_a", "get_weather", json!({"city": "Oslo"})),
                tool_use("toolu_b", "no_such_tool", json!({}))
            ]),
            "tool_use",
        )),
        Reply::Json(message(json!([text("Cold.")]), "end_turn")),
    ])
    .await;
    let agent = create_agent(model).tool(weather()).compile().unwrap();
    let out = agent.run(input::<Chat>("Oslo?")).await.unwrap();
    let messages = out.state.messages();
    assert_eq!(messages[3].status, Some(ToolStatus::Error));

    let bodies = mock.bodies();
    let sent = bodies[1]["messages"].as_array().unwrap();
    assert_eq!(sent.len(), 3, "{sent:?}");
    assert_eq!(sent[1]["content"].as_array().unwrap().len(), 2);
    let results = sent[2]["content"].as_array().unwrap();
    assert_eq!(results.len(), 2);
    assert_eq!(results[0]["content"], "sunny in Oslo");
    assert_eq!(
        (&results[1]["tool_use_id"], &results[1]["is_error"]),
        (&json!("toolu_b"), &json!(true))
    );
    assert_eq!(results[1]["content"], messages[3].text());
}

/// The SSE events of one streamed message with text and a tool call.
fn streamed_call() -> Vec<Value> {
    vec![
        json!({"type": "message_start", "message": {"id": "msg_s", "type": "message",
               "role": "assistant", "model": "claude-test", "content": [],
               "stop_reason": null, "usage": {"input_tokens": 20, "output_tokens": 1}}}),
        json!({"type": "ping"}),
        json!({"type": "content_block_start", "index": 0, "content_block": text("")}),
        json!({"type": "content_block_delta", "index": 0,
               "delta": {"type": "text_delta", "text": "Let me "}}),
        json!({"type": "content_block_delta", "index": 0,
               "delta": {"type": "text_delta", "text": "check."}}),
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "content_block_start", "index": 1,
               "content_block": tool_use("toolu_7", "get_weather", json!({}))}),
        json!({"type": "content_block_delta", "index": 1,
               "delta": {"type": "input_json_delta", "partial_json": "{\"ci"}}),
        json!({"type": "content_block_delta", "index": 1,
               "delta": {"type": "input_json_delta", "partial_json": "ty\": \"Oslo\"}"}}),
        json!({"type": "content_block_stop", "index": 1}),
        json!({"type": "message_delta", "delta": {"stop_reason": "tool_use", "stop_sequence": null},
               "usage": {"output_tokens": 9}}),
        json!({"type": "message_stop"}),
    ]
}

fn streamed_text(words: &[&str]) -> Vec<Value> {
    let mut events = vec![
        json!({"type": "message_start", "message": {"id": "msg_t", "model": "claude-test",
               "usage": {"input_tokens": 30, "output_tokens": 1}}}),
        json!({"type": "content_block_start", "index": 0, "content_block": text("")}),
    ];
    events.extend(words.iter().map(|word| {
        json!({"type": "content_block_delta", "index": 0,
               "delta": {"type": "text_delta", "text": word}})
    }));
    events.extend([
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"},
               "usage": {"input_tokens": 30, "output_tokens": 2}}),
        json!({"type": "message_stop"}),
    ]);
    events
}

#[tokio::test]
async fn streamed_events_reach_the_sink_and_fold_into_one_message() {
    let (model, mock) = serve(vec![
        Reply::Sse(streamed_call()),
        Reply::Sse(streamed_text(&["Co", "ld."])),
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
    assert_eq!(texts, ["Let me ", "check.", "Co", "ld."]);
    let calls: Vec<&[(String, bool)]> = tokens.split_inclusive(|t| t.1).collect();
    assert_eq!(calls.len(), 2, "each message closed once: {tokens:?}");

    let messages = out.state.messages();
    assert_eq!(messages[1].text(), "Let me check.");
    assert_eq!(messages[1].tool_calls[0].id.as_deref(), Some("toolu_7"));
    assert_eq!(messages[1].tool_calls[0].args["city"], "Oslo");
    // `message_delta` left the input tokens out: `message_start`'s count.
    let usage = Usage::of(&messages[1]).unwrap();
    assert_eq!((usage.input_tokens, usage.output_tokens), (20, 9));
    let meta = &messages[1].response_metadata;
    assert_eq!(
        (&meta["id"], &meta["stop_reason"]),
        (&json!("msg_s"), &json!("tool_use"))
    );
    assert_eq!(meta["model_name"], "claude-test");
    assert_eq!(messages[2].text(), "sunny in Oslo");
    assert_eq!(messages[3].text(), "Cold.");
    assert_eq!(Usage::of(&messages[3]).unwrap().total_tokens, 32);
    let bodies = mock.bodies();
    assert_eq!(bodies[0]["stream"], true);
    assert_eq!(
        bodies[1]["messages"][2]["content"][0]["tool_use_id"],
        "toolu_7"
    );
}

/// The `messages` stream mode carries the model's pieces as they come:
/// the text, the tool call's pieces with its content block's index.
#[tokio::test]
async fn the_messages_stream_mode_carries_the_pieces() {
    let (model, _) = serve(vec![
        Reply::Sse(streamed_call()),
        Reply::Sse(streamed_text(&["Done."])),
    ])
    .await;
    let agent = create_agent(model).tool(weather()).compile().unwrap();
    let events: Vec<_> = agent
        .run(input::<Chat>("Oslo?"))
        .stream([StreamMode::Messages])
        .collect()
        .await;
    let pieces: Vec<_> = events
        .iter()
        .filter_map(|e| match e.as_ref().unwrap() {
            StreamEvent::Message(m) if m.node == "model" => Some(m.chunk.clone()),
            _ => None,
        })
        .collect();
    let texts: Vec<String> = pieces
        .iter()
        .map(|c| c.text())
        .filter(|t| !t.is_empty())
        .collect();
    assert_eq!(texts, ["Let me ", "check.", "Done."]);
    let args: Vec<(Option<usize>, Option<&str>, &str)> = pieces
        .iter()
        .flat_map(|c| &c.tool_call_chunks)
        .map(|t| (t.index, t.id.as_deref(), t.args.as_str()))
        .collect();
    assert_eq!(
        args,
        [
            (Some(1), Some("toolu_7"), ""),
            (Some(1), None, "{\"ci"),
            (Some(1), None, "ty\": \"Oslo\"}")
        ]
    );
    let usage: Vec<&Value> = pieces
        .iter()
        .filter_map(|c| c.usage_metadata.as_ref())
        .collect();
    assert_eq!(
        usage.len(),
        2,
        "usage comes once a message, with `message_delta`"
    );
    let Some(Ok(StreamEvent::End(out))) = events.last() else {
        panic!("the stream ends with the run's output")
    };
    assert_eq!(out.state.messages()[3].text(), "Done.");
}

#[tokio::test]
async fn tokens_reach_the_sink_while_the_answer_is_still_coming() {
    let (go, waited) = (
        Arc::new(AtomicBool::new(false)),
        Arc::new(AtomicBool::new(false)),
    );
    let events = streamed_text(&["Hel", "lo"]);
    let (model, _) = serve(vec![Reply::Live(
        events,
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

/// What goes wrong inside a stream is a clear error: a tool input that
/// does not parse, an `error` event, a stream cut before `message_stop`.
#[tokio::test]
async fn broken_streams_are_clear_errors() {
    let mut bad_input = streamed_call();
    bad_input[8] = json!({"type": "content_block_delta", "index": 1,
                          "delta": {"type": "input_json_delta", "partial_json": "ty\": Oslo"}});
    let mut overloaded = streamed_text(&["Hel"]);
    overloaded.truncate(3);
    overloaded.push(json!({"type": "error",
        "error": {"type": "overloaded_error", "message": "Overloaded"}}));
    let mut cut = streamed_text(&["Hel"]);
    cut.truncate(3);
    let (model, _) = serve(vec![
        Reply::Sse(bad_input),
        Reply::Sse(overloaded),
        Reply::Sse(cut),
    ])
    .await;
    let request = ModelRequest::new(Arc::new(Chat::default()));
    let mut errors = Vec::new();
    for _ in 0..3 {
        let results: Vec<_> = model.stream(&request).collect().await;
        let last = results.into_iter().last().unwrap();
        errors.push(last.unwrap_err());
    }
    let ModelError::InvalidResponse { message } = &errors[0] else {
        panic!("expected an invalid response, got {:?}", errors[0]);
    };
    assert!(
        message
            .starts_with("the streamed input of tool call `toolu_7` (get_weather) does not parse"),
        "{message}"
    );
    assert!(message.ends_with("it was: {\"city\": Oslo"), "{message}");
    assert!(
        matches!(&errors[1], ModelError::Api { status: 529, message } if message == "overloaded_error: Overloaded"),
        "{:?}",
        errors[1]
    );
    assert!(
        matches!(&errors[2], ModelError::Transport(_)),
        "{:?}",
        errors[2]
    );
    assert!(errors[2]
        .to_string()
        .contains("ended before `message_stop`"));
}

const OVERLOADED: &str =
    r#"{"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}"#;
const RATE_LIMITED: &str = r#"{"type": "error", "error": {"type": "rate_limit_error", "message": "Number of request tokens has exceeded your per-minute rate limit"}}"#;

fn status(code: u16, body: &'static str) -> Reply {
    Reply::Status(code, body, vec![("retry-after", "0")])
}

/// 429, 529 and 500 are retried (waiting the server's `retry-after`);
/// past the retries, or for a status not worth retrying, the call fails
/// with the server's message.
#[tokio::test]
async fn error_statuses_are_retried_then_reported_with_the_servers_message() {
    let ok = Reply::Json(message(json!([text("fine")]), "end_turn"));
    let (model, mock) = serve(vec![status(429, RATE_LIMITED), status(529, OVERLOADED), ok]).await;
    let agent = create_agent(model).compile().unwrap();
    let out = agent.run(input::<Chat>("hi")).await.unwrap();
    assert_eq!(out.state.messages()[1].text(), "fine");
    assert_eq!(mock.requests.lock().unwrap().len(), 3, "two retries");

    let (model, mock) = serve((0..3).map(|_| status(529, OVERLOADED)).collect()).await;
    let agent = create_agent(model).compile().unwrap();
    let err = agent.run(input::<Chat>("hi")).await.unwrap_err();
    let GraphError::Node { node, error, .. } = &err else {
        panic!("expected a node error, got {err}");
    };
    assert_eq!(node, "model");
    let error = error.downcast_ref::<ModelError>().unwrap();
    assert!(
        matches!(error, ModelError::Api { status: 529, .. }),
        "{error:?}"
    );
    assert!(
        err.to_string()
            .contains("answered HTTP 529: overloaded_error: Overloaded"),
        "{err}"
    );
    assert_eq!(mock.requests.lock().unwrap().len(), 3);
}

#[tokio::test]
async fn each_error_status_maps_to_its_kind() {
    let unauthorized = r#"{"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"}}"#;
    let (model, mock) = serve(vec![
        Reply::Status(401, unauthorized, vec![]),
        Reply::Status(429, RATE_LIMITED, vec![("retry-after", "7")]),
        Reply::Status(500, "upstream exploded", vec![]),
        Reply::Raw("{\"id\": \"msg_1\", \"content\": ["),
        Reply::Json(json!({"id": "msg_2", "type": "message"})),
    ])
    .await;
    let model = model.with_max_retries(0);
    let request = ModelRequest::new(Arc::new(Chat::default()));
    let mut errors = Vec::new();
    for _ in 0..5 {
        errors.push(model.invoke(&request).await.unwrap_err());
    }
    assert_eq!(mock.requests.lock().unwrap().len(), 5, "no retries");
    assert!(
        matches!(&errors[0], ModelError::Api { status: 401, message }
        if message == "authentication_error: invalid x-api-key"),
        "{:?}",
        errors[0]
    );
    let ModelError::RateLimited {
        message,
        retry_after,
    } = &errors[1]
    else {
        panic!("expected rate limiting, got {:?}", errors[1]);
    };
    assert_eq!(*retry_after, Some(Duration::from_secs(7)));
    assert!(message.starts_with("rate_limit_error: Number of request tokens"));
    assert!(errors[1].to_string().ends_with("; retry after 7 s"));
    assert!(
        matches!(&errors[2], ModelError::Api { status: 500, message }
        if message == "upstream exploded"),
        "{:?}",
        errors[2]
    );
    let ModelError::InvalidResponse { message } = &errors[3] else {
        panic!("expected an invalid response, got {:?}", errors[3]);
    };
    assert!(
        message.contains("the body began: {\"id\": \"msg_1\""),
        "{message}"
    );
    assert_eq!(
        errors[4].to_string(),
        "the model provider's answer is not a chat completion: message `msg_2` has no content"
    );
}

/// A stream the server refuses (an error status before any event) is
/// retried like a call, then fails with its status; a server nobody
/// answers at is a transport error.
#[tokio::test]
async fn a_refused_stream_and_an_unreachable_server_are_errors() {
    let unauthorized = r#"{"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"}}"#;
    let (model, mock) = serve(vec![
        status(529, OVERLOADED),
        Reply::Sse(streamed_text(&["ok"])),
        Reply::Status(401, unauthorized, vec![]),
    ])
    .await;
    let request = ModelRequest::new(Arc::new(Chat::default()));
    let pieces: Vec<_> = model.stream(&request).collect().await;
    let text: String = pieces.iter().map(|p| p.as_ref().unwrap().text()).collect();
    assert_eq!(text, "ok");
    let pieces: Vec<_> = model.stream(&request).collect().await;
    assert_eq!(pieces.len(), 1);
    assert!(
        matches!(&pieces[0], Err(ModelError::Api { status: 401, message })
            if message == "authentication_error: invalid x-api-key"),
        "{pieces:?}"
    );
    assert_eq!(
        mock.requests.lock().unwrap().len(),
        3,
        "the 529 was retried"
    );

    let nowhere = AnthropicChat::new("claude-test")
        .with_base_url("http://127.0.0.1:1")
        .with_max_retries(0);
    let err = nowhere.invoke(&request).await.unwrap_err();
    assert!(matches!(err, ModelError::Transport(_)), "{err:?}");
    assert!(err
        .to_string()
        .starts_with("the model provider could not be reached"));
}

/// A server that stops sending mid-answer fails the call once the
/// timeout passes without a byte.
#[tokio::test]
async fn a_stalled_stream_times_out() {
    let never = Arc::new(AtomicBool::new(false));
    let (model, _) = serve(vec![Reply::Live(
        streamed_text(&["Hel", "lo"]),
        never,
        Arc::new(AtomicBool::new(false)),
    )])
    .await;
    let model = model.with_timeout(Duration::from_millis(100));
    let request = ModelRequest::new(Arc::new(Chat::default()));
    let pieces: Vec<_> = model.stream(&request).collect().await;
    let texts: Vec<String> = pieces
        .iter()
        .filter_map(|p| p.as_ref().ok())
        .map(|c| c.text())
        .collect();
    assert_eq!(texts, ["", "Hel"], "message_start, then the first delta");
    let Some(Err(err)) = pieces.last() else {
        panic!("expected the stream to fail: {pieces:?}");
    };
    assert!(matches!(err, ModelError::Transport(_)), "{err:?}");
}

/// The tool choice in Anthropic's words; the settings' model and
/// `max_tokens` over the model's.
#[tokio::test]
async fn settings_choose_the_model_max_tokens_and_tool_choice() {
    let choices = [
        (ToolChoice::Auto, json!({"type": "auto"})),
        (ToolChoice::None, json!({"type": "none"})),
        (ToolChoice::Required, json!({"type": "any"})),
        (
            ToolChoice::Tool("get_weather".into()),
            json!({"type": "tool", "name": "get_weather"}),
        ),
    ];
    let replies = choices
        .iter()
        .map(|_| Reply::Json(message(json!([text("ok")]), "end_turn")))
        .collect();
    let (model, mock) = serve(replies).await;
    for (choice, _) in &choices {
        let settings = ModelSettings {
            model: Some("claude-other".into()),
            max_tokens: Some(64),
            temperature: Some(0.7),
            tool_choice: Some(choice.clone()),
            ..ModelSettings::default()
        };
        let agent = create_agent(model.clone())
            .settings(settings)
            .tool(weather())
            .compile()
            .unwrap();
        agent.run(input::<Chat>("hi")).await.unwrap();
    }
    let bodies = mock.bodies();
    for (body, (_, expected)) in bodies.iter().zip(&choices) {
        assert_eq!(body["model"], "claude-other");
        assert_eq!(body["max_tokens"], 64);
        assert_eq!(
            body["temperature"], 0.7,
            "the decimal set, not its f64 widening"
        );
        assert_eq!(&body["tool_choice"], expected);
        assert!(body.get("system").is_none());
    }
}

/// A conversation with an invalid call (arguments that are not JSON) is
/// sent with the call as a `tool_use` of empty input, then its error
/// answer, so the result has its call.
#[tokio::test]
async fn invalid_calls_are_sent_back_with_their_error_answers() {
    let mut broken = agent_state::ai("");
    broken
        .invalid_tool_calls
        .push(agent_state::message::invalid_tool_call(
            "get_weather",
            "{\"city\": ",
            Some("call.1".into()),
            "not JSON",
        ));
    let state = Chat {
        base: MessagesState {
            messages: vec![
                agent_state::human("Weather?"),
                broken,
                agent_state::tool("could not be executed", "call.1"),
            ]
            .into(),
        },
    };
    let (model, mock) = serve(vec![Reply::Json(message(
        json!([text("Sorry.")]),
        "end_turn",
    ))])
    .await;
    let answer = model
        .invoke(&ModelRequest::new(Arc::new(state)))
        .await
        .unwrap();
    assert_eq!(answer.kind, MessageType::Ai);
    let bodies = mock.bodies();
    let sent = &bodies[0]["messages"];
    let id = sent[1]["content"][0]["id"].as_str().unwrap();
    assert!(
        id.starts_with("toolu_"),
        "`call.1` is not an id Anthropic takes: {id}"
    );
    assert_eq!(sent[1]["content"][0]["input"], json!({}));
    assert_eq!(sent[2]["content"][0]["tool_use_id"], id);
}

#[test]
fn configuration_comes_from_the_environment() {
    let vars = |name: &str| match name {
        "ANTHROPIC_BASE_URL" => Some("http://127.0.0.1:1/".to_owned()),
        "ANTHROPIC_MODEL" => Some("claude-haiku-4-5".to_owned()),
        "ANTHROPIC_API_KEY" => Some("sk-ant-local".to_owned()),
        _ => None,
    };
    let model = AnthropicChat::from_vars(vars);
    assert_eq!(model.model(), "claude-haiku-4-5");
    assert_eq!(model.base_url(), "http://127.0.0.1:1");
    let model = AnthropicChat::from_vars(|name| (name == "ANTHROPIC_MODEL").then(|| " ".into()));
    assert_eq!(model.model(), DEFAULT_MODEL);
    assert_eq!(model.base_url(), "https://api.anthropic.com");
}

/// LangChain's recording (`tests/reference/models/chat_anthropic.py`):
/// the replies it was served, the requests it sent, its final messages
/// and streamed pieces.
fn recorded() -> Value {
    serde_json::from_str(include_str!("expected/models/chat_anthropic.json")).unwrap()
}

/// A tool's input schema as both sides agree on it: the properties'
/// types and the required ones (schemars adds titles and descriptions).
fn schema_essentials(mut body: Value) -> Value {
    for tool in body["tools"].as_array_mut().into_iter().flatten() {
        let schema = &tool["input_schema"];
        let properties: agent_state::serde_json::Map<String, Value> = schema["properties"]
            .as_object()
            .unwrap()
            .iter()
            .map(|(name, p)| (name.clone(), json!({"type": p["type"]})))
            .collect();
        let required = schema["required"].clone();
        tool["input_schema"] =
            json!({"type": "object", "properties": properties, "required": required});
    }
    body
}

/// What the recording keeps of a message.
fn projected(message: &agent_state::Message) -> Value {
    match message.kind {
        MessageType::Ai => {
            let calls: Vec<Value> = message
                .tool_calls
                .iter()
                .map(|c| json!({"id": c.id, "name": c.name, "args": c.args}))
                .collect();
            let meta = &message.response_metadata;
            json!({"type": "ai", "content": message.text(), "tool_calls": calls,
                   "usage_metadata": message.usage_metadata,
                   "response_metadata": {"model_name": meta["model_name"],
                       "model_provider": meta["model_provider"], "stop_reason": meta["stop_reason"]}})
        }
        MessageType::Tool => json!({"type": "tool", "content": message.text(),
            "tool_call_id": message.tool_call_id,
            "status": if message.status == Some(ToolStatus::Error) { "error" } else { "success" }}),
        _ => json!({"type": "human", "content": message.text()}),
    }
}

/// What the recording keeps of a streamed piece.
fn projected_chunk(chunk: &agent_state::MessageChunk) -> Value {
    let calls: Vec<Value> = chunk
        .tool_call_chunks
        .iter()
        .map(|t| json!({"index": t.index, "id": t.id, "name": t.name, "args": t.args}))
        .collect();
    let meta = &chunk.response_metadata;
    json!({"text": chunk.text(), "tool_call_chunks": calls, "usage_metadata": chunk.usage_metadata,
           "stop_reason": meta.get("stop_reason"), "model_name": meta.get("model_name")})
}

/// The empty piece our agent closes a streamed message with.
fn closing(chunk: &agent_state::MessageChunk) -> bool {
    chunk.last
        && chunk.text().is_empty()
        && chunk.tool_call_chunks.is_empty()
        && chunk.usage_metadata.is_none()
        && chunk.response_metadata.is_empty()
}

/// Side by side with LangChain's `ChatAnthropic` (langchain-anthropic
/// 1.7.7 under `create_agent`), served the same replies: the same
/// request bodies, messages and streamed pieces. One difference is
/// deliberate and left out: our agent closes each streamed message with
/// an empty piece of its own (where LangChain marks the `message_delta`
/// piece last).
#[tokio::test]
async fn requests_messages_and_chunks_match_langchains_chat_anthropic() {
    let recorded = recorded();
    let replies =
        recorded["replies"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| match r["kind"].as_str() {
                Some("json") => Reply::Json(r["payload"].clone()),
                _ => Reply::Sse(r["payload"].as_array().unwrap().clone()),
            });
    let (model, mock) = serve(replies.collect()).await;
    let agent = create_agent(model)
        .system_prompt("You are terse.")
        .tool(weather())
        .compile()
        .unwrap();
    let out = agent.run(input::<Chat>("Weather in Paris?")).await.unwrap();
    let messages: Vec<Value> = out.state.messages().iter().map(projected).collect();
    assert_eq!(Value::from(messages), recorded["messages"]);

    let events: Vec<_> = agent
        .run(input::<Chat>("Weather in Paris?"))
        .stream([StreamMode::Messages])
        .collect()
        .await;
    let chunks: Vec<Value> = events
        .iter()
        .filter_map(|e| match e.as_ref().unwrap() {
            StreamEvent::Message(m) if m.node == "model" => Some(&m.chunk),
            _ => None,
        })
        .filter(|c| !closing(c))
        .map(projected_chunk)
        .collect();
    assert_eq!(Value::from(chunks), recorded["chunks"]);
    let requests: Vec<Value> = mock.bodies().into_iter().map(schema_essentials).collect();
    assert_eq!(Value::from(requests), recorded["requests"]);
}

/// A native response format (`ProviderStrategy`) is refused before
/// anything is sent, naming it: the Messages body has no place for it, and
/// a dropped schema would fail later as an answer that is not the type.
#[test]
fn a_native_response_format_is_refused_naming_it() {
    let settings = ModelSettings {
        response_format: Some(agent_state::agent::ResponseSchema {
            name: "Weather".to_owned(),
            description: None,
            schema: json!({"type": "object"}),
            strict: None,
        }),
        ..ModelSettings::default()
    };
    let request = ModelRequest::new(Arc::new(Chat::default())).with_settings(settings);
    let model = AnthropicChat::new("claude-test").with_base_url("http://127.0.0.1:9");
    let error = agent_state::checkpoint::block_on(ChatModel::<Chat>::invoke(&model, &request))
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("`Weather`") && error.contains("ToolStrategy"),
        "{error}"
    );
    let mut chunks = ChatModel::<Chat>::stream(&model, &request);
    let first = agent_state::checkpoint::block_on(chunks.next()).expect("one item");
    assert!(first.unwrap_err().to_string().contains("`Weather`"));
}
