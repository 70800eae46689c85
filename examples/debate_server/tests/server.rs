//! The debate server as users run it: the server binary started as a
//! process, driven by a real HTTP client, its server-sent events parsed;
//! killed (SIGKILL) mid-debate and started again; two servers over one
//! PostgreSQL (a throwaway server, `tests/support/pg.rs`).

#[allow(dead_code)]
#[path = "../../../tests/support/pg.rs"]
mod pg;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, ChildStdout, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use agent_state::checkpoint::MemoryCheckpointer;
use agent_state::graph::Input;
use agent_state::serde_json::{json, Value};
use debate_server::debate::{build_graph, DebateState, ScriptedModel};

/// A server process, killed when dropped.
struct Server {
    child: Child,
    base: String,
    // Kept open: the server's stdout stays writable.
    _stdout: BufReader<ChildStdout>,
}

impl Server {
    /// Starts the binary on a free port with `store` (`--db path` or
    /// `--pg url`), waiting for its "listening on" line.
    fn start(store: &[&str], token_delay_ms: u64) -> Server {
        let delay = token_delay_ms.to_string();
        let mut child = Command::new(env!("CARGO_BIN_EXE_debate_server"))
            .args(["--addr", "127.0.0.1:0", "--log", "warn"])
            .args(["--token-delay-ms", &delay])
            .args(store)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .spawn()
            .expect("the server starts");
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        stdout.read_line(&mut line).unwrap();
        let base = match line.trim().strip_prefix("listening on ") {
            Some(base) => base.to_owned(),
            None => {
                let _ = child.kill();
                panic!("the server did not start: {line:?}, {:?}", child.wait());
            }
        };
        Server {
            child,
            base,
            _stdout: stdout,
        }
    }

    /// SIGKILL: no shutdown, no flush, as a crash.
    fn kill(mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A directory of its own under the system's temp dir, removed when
/// dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("debate-server-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }

    fn db(&self) -> String {
        self.0.join("debates.db").to_str().unwrap().to_owned()
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A server-sent event stream being read: `event:` and `data:` lines, a
/// blank line closing each event; comments (keep-alives) skipped.
struct Events {
    response: reqwest::Response,
    buffer: Vec<u8>,
}

impl Events {
    /// The next event (its name and its data as JSON), or `None` once the
    /// stream ends (or breaks: the server died).
    async fn next(&mut self) -> Option<(String, Value)> {
        loop {
            if let Some(cut) = self.buffer.windows(2).position(|w| w == b"\n\n") {
                let block: Vec<u8> = self.buffer.drain(..cut + 2).collect();
                let block = String::from_utf8(block).expect("events are UTF-8");
                let (mut name, mut data) = ("message".to_owned(), String::new());
                for line in block.lines() {
                    if let Some(value) = line.strip_prefix("event:") {
                        name = value.trim().to_owned();
                    } else if let Some(value) = line.strip_prefix("data:") {
                        data.push_str(value.trim_start());
                    }
                }
                if data.is_empty() {
                    continue;
                }
                let data = agent_state::serde_json::from_str(&data)
                    .unwrap_or_else(|e| panic!("event {name}: {e}: {data}"));
                return Some((name, data));
            }
            match self.response.chunk().await {
                Ok(Some(bytes)) => self.buffer.extend_from_slice(&bytes),
                Ok(None) | Err(_) => return None,
            }
        }
    }

    /// Every event up to the end of the stream.
    async fn rest(mut self) -> Vec<(String, Value)> {
        let mut all = Vec::new();
        while let Some(event) = self.next().await {
            all.push(event);
        }
        all
    }
}

/// `POST /api/debate`: the event stream, or the refusal's status and body.
async fn post(server: &Server, body: Value) -> Result<Events, (u16, Value)> {
    let response = reqwest::Client::new()
        .post(server.url("/api/debate"))
        .header("content-type", "application/json")
        .body(body.to_string())
        .send()
        .await
        .expect("the server answers");
    let status = response.status().as_u16();
    if status != 200 {
        let text = response.text().await.unwrap();
        let body = agent_state::serde_json::from_str(&text).unwrap_or(Value::String(text));
        return Err((status, body));
    }
    let kind = response.headers()["content-type"]
        .to_str()
        .unwrap()
        .to_owned();
    assert_eq!(kind, "text/event-stream");
    Ok(Events {
        response,
        buffer: Vec::new(),
    })
}

/// `GET url`: status and JSON body.
async fn get(url: &str) -> (u16, Value) {
    let response = reqwest::get(url).await.expect("the server answers");
    let status = response.status().as_u16();
    let text = response.text().await.unwrap();
    (status, agent_state::serde_json::from_str(&text).unwrap())
}

/// The transcript of a debate on `topic` run to its end in memory, as
/// (speaker, text) pairs.
async fn expected(topic: &str, rounds: u32) -> Vec<(String, String)> {
    let graph = build_graph(Arc::new(ScriptedModel::default())).unwrap();
    let saver = MemoryCheckpointer::new();
    let input = Input::State(DebateState::new(topic, rounds));
    let out = graph.run(input).on_thread(&saver, "t").await.unwrap();
    assert!(out.next.is_empty());
    transcript(&out.state.to_json())
}

use agent_state::AgentState;

/// A state's messages as (speaker, text) pairs.
fn transcript(values: &Value) -> Vec<(String, String)> {
    values["messages"]
        .as_array()
        .expect("a state has messages")
        .iter()
        .map(|m| {
            let who = m["name"].as_str().unwrap_or("?").to_owned();
            (who, m["content"].as_str().unwrap().to_owned())
        })
        .collect()
}

/// The text streamed in pieces per message id, in `messages` events (the
/// whole messages a node returns without streaming them, the
/// moderator's, are left to [`returned`]).
fn streamed(events: &[(String, Value)]) -> BTreeMap<String, (String, String)> {
    let mut by_id: BTreeMap<String, (String, String)> = BTreeMap::new();
    for (_, data) in events.iter().filter(|(name, _)| name == "messages") {
        let (chunk, meta) = (&data[0], &data[1]);
        if chunk["type"] == "ai" {
            continue;
        }
        assert_eq!(chunk["type"], "AIMessageChunk");
        let id = chunk["id"].as_str().expect("a piece has its message's id");
        let node = meta["langgraph_node"].as_str().unwrap().to_owned();
        let entry = by_id
            .entry(id.to_owned())
            .or_insert((node.clone(), String::new()));
        assert_eq!(entry.0, node, "the pieces of {id} come from one node");
        entry.1.push_str(chunk["content"].as_str().unwrap());
    }
    by_id
}

/// The whole messages of `messages` events, (node, text): what a node
/// returned without streaming it, streamed once as LangGraph does.
fn returned(events: &[(String, Value)]) -> Vec<(String, String)> {
    events
        .iter()
        .filter(|(name, data)| name == "messages" && data[0]["type"] == "ai")
        .map(|(_, data)| {
            let node = data[1]["langgraph_node"].as_str().unwrap().to_owned();
            (node, data[0]["content"].as_str().unwrap().to_owned())
        })
        .collect()
}

fn names(events: &[(String, Value)]) -> Vec<&str> {
    events.iter().map(|(name, _)| name.as_str()).collect()
}

/// The steps of the `checkpoints` events.
fn checkpoint_steps(events: &[(String, Value)]) -> Vec<i64> {
    events
        .iter()
        .filter(|(name, _)| name == "checkpoints")
        .map(|(_, data)| data["step"].as_i64().unwrap())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_debate_streams_live_and_ends_as_stored() {
    let dir = TempDir::new("live");
    let server = Server::start(&["--db", &dir.db()], 1);
    let body = json!({"threadId": "live", "topic": "Cats or dogs?", "maxRounds": 2});
    let events = post(&server, body).await.unwrap().rest().await;

    let (first, data) = &events[0];
    assert_eq!(
        (first.as_str(), data),
        (
            "metadata",
            &json!({"threadId": "live", "status": "started"})
        )
    );
    assert_eq!(events[1].0, "values");
    assert_eq!(transcript(&events[1].1).len(), 1, "the input: the topic");
    let (last, end) = events.last().unwrap();
    assert_eq!(last, "end", "{:?}", names(&events));
    assert_eq!(end["next"], json!([]));

    let (status, stored) = get(&server.url("/api/debate/live")).await;
    assert_eq!(status, 200);
    let values = events.iter().rev().find(|(n, _)| n == "values").unwrap();
    assert_eq!(
        values.1, stored["values"],
        "the last values event is the stored state"
    );
    assert_eq!(
        transcript(&stored["values"]),
        expected("Cats or dogs?", 2).await
    );
    assert_eq!(stored["values"]["status"], "completed");

    // Each debater's tokens add up to the message the state keeps, under
    // its id and node.
    let by_id = streamed(&events);
    assert_eq!(by_id.len(), 4, "two debaters, two rounds");
    for message in stored["values"]["messages"].as_array().unwrap() {
        let id = message["id"].as_str().unwrap();
        if let Some((node, text)) = by_id.get(id) {
            assert_eq!(
                (Some(node.as_str()), text.as_str()),
                (
                    message["name"].as_str(),
                    message["content"].as_str().unwrap()
                )
            );
        }
    }

    // The moderator returns its message without streaming it: it comes
    // whole, once per round (langgraph 1.2.22 streams a node's returned
    // messages not already streamed); the debaters' do not come again.
    let closing = returned(&events);
    assert_eq!(closing.len(), 2, "{closing:?}");
    let said = transcript(&stored["values"]);
    for (node, text) in &closing {
        assert_eq!(node, "moderator");
        assert!(
            said.contains(&("moderator".to_owned(), text.clone())),
            "{text}"
        );
    }

    // A step's tokens come before its update; the updates in graph order.
    let updates: Vec<String> = events
        .iter()
        .filter(|(n, _)| n == "updates")
        .flat_map(|(_, d)| d.as_object().unwrap().keys().cloned().collect::<Vec<_>>())
        .filter(|node| node != "__start__")
        .collect();
    assert_eq!(
        updates,
        [
            "optimist",
            "skeptic",
            "moderator",
            "optimist",
            "skeptic",
            "moderator"
        ]
    );
    let first_update = events.iter().position(|(n, _)| n == "updates").unwrap();
    let first_token = events.iter().position(|(n, _)| n == "messages").unwrap();
    assert!(first_token < first_update);

    // The moderator's progress, in custom mode.
    let custom: Vec<&Value> = events
        .iter()
        .filter(|(n, _)| n == "custom")
        .map(|(_, d)| d)
        .collect();
    assert_eq!(
        custom,
        [
            &json!({"round": 1, "maxRounds": 2, "done": false}),
            &json!({"round": 2, "maxRounds": 2, "done": true})
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_requests_are_refused_naming_the_field() {
    let dir = TempDir::new("refused");
    let server = Server::start(&["--db", &dir.db()], 0);
    let refused = |body: Value| {
        let server = &server;
        async move {
            match post(server, body).await {
                Ok(_) => panic!("accepted"),
                Err((status, body)) => (status, body["error"].as_str().unwrap().to_owned()),
            }
        }
    };
    let (status, error) =
        refused(json!({"threadId": "a", "topic": "x", "streamMode": ["values", "bogus"]})).await;
    assert_eq!(status, 400);
    assert!(
        error.contains("`streamMode`") && error.contains("`bogus`"),
        "{error}"
    );
    let (status, error) = refused(json!({"threadId": "a"})).await;
    assert_eq!(status, 400);
    assert!(error.contains("`topic` is required"), "{error}");
    let (status, error) = refused(json!({"threadId": "a", "topic": "x", "maxRounds": 0})).await;
    assert_eq!(status, 400);
    assert!(error.contains("`maxRounds` 0"), "{error}");
    let (status, error) = refused(json!({"threadId": "a b", "topic": "x"})).await;
    assert_eq!(status, 400);
    assert!(error.contains("`threadId`"), "{error}");
    let (status, error) = refused(json!({"threadId": "a", "topic": "x", "colour": 1})).await;
    assert_eq!(status, 400);
    assert!(error.contains("colour"), "{error}");
    let (status, error) =
        refused(json!({"threadId": "a", "topic": "x", "maxRounds": "three"})).await;
    assert_eq!(status, 400);
    assert!(error.contains("maxRounds"), "{error}");

    let (status, body) = get(&server.url("/api/debate/nobody")).await;
    assert_eq!(
        (status, body["error"].as_str().unwrap()),
        (404, "no debate on thread `nobody`")
    );

    // Nothing was stored by the refusals; a finished debate is read, not run
    // again; another topic on it is a conflict.
    assert_eq!(get(&server.url("/api/debate/a")).await.0, 404);
    let done = post(
        &server,
        json!({"threadId": "a", "topic": "x", "maxRounds": 1}),
    )
    .await
    .unwrap()
    .rest()
    .await;
    assert_eq!(done.last().unwrap().0, "end");
    let again = post(&server, json!({"threadId": "a"}))
        .await
        .unwrap()
        .rest()
        .await;
    assert_eq!(names(&again), ["metadata", "values", "end"]);
    assert_eq!(again[0].1["status"], "finished");
    assert_eq!(
        again[1].1,
        get(&server.url("/api/debate/a")).await.1["values"]
    );
    let (status, error) = refused(json!({"threadId": "a", "topic": "y"})).await;
    assert_eq!(status, 409);
    assert!(error.contains("`topic`"), "{error}");

    let drawing = reqwest::get(server.url("/api/graph"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        drawing.contains("\tmoderator -.-> optimist;\n"),
        "{drawing}"
    );
    let page = reqwest::get(server.url("/"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(page.contains("/api/debate"));
}

/// Reads `events` until the debater of step `step` has streamed three
/// tokens: the middle of a node.
async fn read_into_step(events: &mut Events, step: i64) -> Vec<(String, Value)> {
    let mut seen = Vec::new();
    let mut tokens = 0;
    while let Some(event) = events.next().await {
        if event.0 == "messages" && event.1[1]["langgraph_step"] == step {
            tokens += 1;
        }
        seen.push(event);
        if tokens == 3 {
            return seen;
        }
    }
    panic!("the stream ended early: {:?}", names(&seen));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_server_resumes_the_thread_with_nothing_lost_or_doubled() {
    let dir = TempDir::new("killed");
    let modes = json!(["values", "updates", "messages", "checkpoints"]);
    let server = Server::start(&["--db", &dir.db()], 20);
    let body =
        json!({"threadId": "t", "topic": "Tea or coffee?", "maxRounds": 3, "streamMode": modes});
    let mut events = post(&server, body).await.unwrap();
    // Into the skeptic of round 2 (step 5; the input's steps -1 and 0 and
    // the nodes' 1 to 4 are stored).
    let before = read_into_step(&mut events, 5).await;
    let cut_id = before
        .iter()
        .rev()
        .find(|(n, _)| n == "messages")
        .unwrap()
        .1[0]["id"]
        .clone();
    server.kill();
    assert!(
        events.next().await.is_none(),
        "the stream breaks with the server"
    );

    let server = Server::start(&["--db", &dir.db()], 0);
    let (_, head) = get(&server.url("/api/debate/t")).await;
    let stored_step = head["step"].as_i64().unwrap();
    let seen_steps = checkpoint_steps(&before);
    assert!(
        seen_steps.iter().all(|&s| s <= stored_step),
        "{seen_steps:?} after {stored_step}"
    );
    assert_eq!(
        head["next"],
        json!(["skeptic"]),
        "the step cut short is the one to run"
    );

    let after = post(&server, json!({"threadId": "t", "streamMode": modes}))
        .await
        .unwrap()
        .rest()
        .await;
    assert_eq!(after[0].1["status"], "resumed");
    assert_eq!(
        (after[1].0.as_str(), &after[1].1),
        ("values", &head["values"])
    );
    assert_eq!(after.last().unwrap().0, "end");
    // The resumed run streams the head it resumes from (as LangGraph's
    // `checkpoints` mode does), then stores the steps after it, each once.
    let steps = checkpoint_steps(&after);
    let want: Vec<i64> = (stored_step..stored_step + steps.len() as i64).collect();
    assert_eq!(steps, want);
    // The message cut short streams again from its first token, whole.
    let by_id = streamed(&after);
    let (node, text) = &by_id[cut_id.as_str().unwrap()];
    assert_eq!(node, "skeptic");

    let (_, done) = get(&server.url("/api/debate/t")).await;
    let messages = transcript(&done["values"]);
    assert_eq!(messages, expected("Tea or coffee?", 3).await);
    assert!(messages.iter().any(|(_, t)| t == text));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_leaves_stops_the_run_and_comes_back_to_it() {
    let dir = TempDir::new("left");
    let server = Server::start(&["--db", &dir.db()], 5);
    let body = json!({"threadId": "t", "topic": "Sea or mountains?", "maxRounds": 2});
    let mut events = post(&server, body).await.unwrap();
    read_into_step(&mut events, 4).await;
    drop(events);
    // The run stops with its client: the head stays where it was.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let (_, head) = get(&server.url("/api/debate/t")).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let (_, later) = get(&server.url("/api/debate/t")).await;
    assert_eq!(head["checkpointId"], later["checkpointId"]);
    assert_ne!(head["next"], json!([]));

    let rest = post(&server, json!({"threadId": "t"}))
        .await
        .unwrap()
        .rest()
        .await;
    assert_eq!(rest.last().unwrap().0, "end");
    let (_, done) = get(&server.url("/api/debate/t")).await;
    assert_eq!(
        transcript(&done["values"]),
        expected("Sea or mountains?", 2).await
    );
}

/// Posts until the thread's lease is free (PostgreSQL notices a dead
/// server's session at once, but give it a moment).
async fn post_when_free(server: &Server, body: Value) -> Events {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match post(server, body.clone()).await {
            Ok(events) => return events,
            Err((409, _)) if Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(other) => panic!("refused: {other:?}"),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_servers_share_a_thread_on_postgresql() {
    let url = pg::url();
    let a = Server::start(&["--pg", url], 20);
    let b = Server::start(&["--pg", url], 20);
    let body = json!({"threadId": "shared", "topic": "Books or films?", "maxRounds": 3});
    let mut on_a = post(&a, body.clone()).await.unwrap();
    read_into_step(&mut on_a, 4).await;

    // B sees what A stores, and will not run the thread while A does.
    let (status, head) = get(&b.url("/api/debate/shared")).await;
    assert_eq!(status, 200);
    assert!(transcript(&head["values"]).len() >= 2);
    let (status, error) = post(&b, body.clone()).await.err().expect("refused");
    assert_eq!(status, 409);
    assert!(error["error"]
        .as_str()
        .unwrap()
        .contains("running in another request"));

    // A dies mid-node; B takes the thread over where A stored it.
    a.kill();
    let after = post_when_free(&b, json!({"threadId": "shared"}))
        .await
        .rest()
        .await;
    assert_eq!(after[0].1["status"], "resumed");
    assert_eq!(after.last().unwrap().0, "end", "{:?}", names(&after));

    // A server started afresh reads the finished thread.
    let c = Server::start(&["--pg", url], 0);
    let (_, done) = get(&c.url("/api/debate/shared")).await;
    assert_eq!(
        transcript(&done["values"]),
        expected("Books or films?", 3).await
    );
    assert_eq!(done["next"], json!([]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn racing_requests_on_two_servers_run_a_thread_once() {
    let url = pg::url();
    let servers = [
        Server::start(&["--pg", url], 2),
        Server::start(&["--pg", url], 2),
    ];
    let body = json!({"threadId": "race", "topic": "Tabs or spaces?", "maxRounds": 1});
    let requests = (0..6).map(|i| post(&servers[i % 2], body.clone()));
    let answers = agent_state::futures::future::join_all(requests).await;
    let mut started = 0;
    for answer in answers {
        match answer {
            Ok(events) => {
                let events = events.rest().await;
                let status = events[0].1["status"].as_str().unwrap().to_owned();
                assert!(status == "started" || status == "finished", "{status}");
                started += usize::from(status == "started");
                assert_eq!(events.last().unwrap().0, "end");
            }
            Err((status, error)) => assert_eq!(status, 409, "{error}"),
        }
    }
    assert_eq!(started, 1);
    let (_, done) = get(&servers[1].url("/api/debate/race")).await;
    assert_eq!(
        transcript(&done["values"]),
        expected("Tabs or spaces?", 1).await
    );
}
