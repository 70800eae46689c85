//! The debate server as users run it: the binary started as a process on
//! a free port, driven over HTTP as a LangGraph client drives it, its
//! server-sent events parsed.

#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, ChildStdout, Command, Stdio};

use serde_json::{json, Value};

/// A server process, killed when dropped.
pub struct Server {
    child: Child,
    base: String,
    // Kept open: the server's stdout stays writable.
    _stdout: BufReader<ChildStdout>,
}

impl Server {
    /// Starts the binary on a free port with the database `db`, waiting
    /// for its "listening on" line.
    pub fn start(db: &str, token_delay_ms: u64) -> Server {
        let delay = token_delay_ms.to_string();
        let mut child = Command::new(env!("CARGO_BIN_EXE_debate_server"))
            .args(["--addr", "127.0.0.1:0", "--log", "warn", "--db", db])
            .args(["--token-delay-ms", &delay])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .spawn()
            .expect("the server starts");
        let mut stdout = BufReader::new(child.stdout.take().expect("piped"));
        let mut line = String::new();
        stdout.read_line(&mut line).expect("a line");
        let Some(base) = line.trim().strip_prefix("listening on ") else {
            let _ = child.kill();
            panic!("the server did not start: {line:?}, {:?}", child.wait());
        };
        Server {
            base: base.to_owned(),
            child,
            _stdout: stdout,
        }
    }

    /// SIGKILL: no shutdown, no flush, as a crash.
    pub fn kill(mut self) {
        self.child.kill().expect("kill");
        self.child.wait().expect("wait");
    }

    /// The URL of `path` on this server.
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// `POST /threads`: a new thread's id.
    pub async fn thread(&self) -> String {
        let (status, thread) = self.post("/threads", json!({})).await;
        assert_eq!(status, 200, "{thread}");
        thread["thread_id"].as_str().expect("an id").to_owned()
    }

    /// `POST path` with a JSON body: the status and the JSON answer.
    pub async fn post(&self, path: &str, body: Value) -> (u16, Value) {
        let response = reqwest::Client::new()
            .post(self.url(path))
            .header("content-type", "application/json")
            .body(body.to_string())
            .send()
            .await
            .expect("the server answers");
        let status = response.status().as_u16();
        (status, json_of(&response.text().await.expect("a body")))
    }

    /// `GET path`: the status and the JSON answer.
    pub async fn get(&self, path: &str) -> (u16, Value) {
        let response = reqwest::get(self.url(path)).await.expect("answers");
        let status = response.status().as_u16();
        (status, json_of(&response.text().await.expect("a body")))
    }

    /// `POST /threads/{thread}/runs/stream`: the event stream, or the
    /// refusal's status and body.
    pub async fn stream(&self, thread: &str, body: Value) -> Result<Events, (u16, Value)> {
        let response = reqwest::Client::new()
            .post(self.url(&format!("/threads/{thread}/runs/stream")))
            .header("content-type", "application/json")
            .body(body.to_string())
            .send()
            .await
            .expect("the server answers");
        let status = response.status().as_u16();
        if status != 200 {
            return Err((status, json_of(&response.text().await.expect("a body"))));
        }
        let kind = &response.headers()["content-type"];
        assert!(kind.to_str().unwrap().starts_with("text/event-stream"));
        Ok(Events {
            response,
            buffer: Vec::new(),
        })
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn json_of(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.to_owned()))
}

/// A directory of its own under the system's temp dir, removed when
/// dropped.
pub struct TempDir(PathBuf);

impl TempDir {
    pub fn new(name: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("debate-server-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("a temp dir");
        TempDir(dir)
    }

    pub fn db(&self) -> String {
        self.0
            .join("debates.db")
            .to_str()
            .expect("UTF-8")
            .to_owned()
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A server-sent event stream being read: `event:` and `data:` lines
/// ended by CRLF (as the official server writes them), a blank line
/// closing each event; comments (heartbeats) skipped.
pub struct Events {
    response: reqwest::Response,
    buffer: Vec<u8>,
}

impl Events {
    /// The next event (its name and its data as JSON), or `None` once the
    /// stream ends (or breaks: the server died).
    pub async fn next(&mut self) -> Option<(String, Value)> {
        loop {
            if let Some(cut) = self.buffer.windows(4).position(|w| w == b"\r\n\r\n") {
                let block: Vec<u8> = self.buffer.drain(..cut + 4).collect();
                let block = String::from_utf8(block).expect("events are UTF-8");
                if let Some(event) = parse(&block) {
                    return Some(event);
                }
                continue;
            }
            match self.response.chunk().await {
                Ok(Some(bytes)) => self.buffer.extend_from_slice(&bytes),
                Ok(None) | Err(_) => return None,
            }
        }
    }

    /// Every event up to the end of the stream.
    pub async fn rest(mut self) -> Vec<(String, Value)> {
        let mut all = Vec::new();
        while let Some(event) = self.next().await {
            all.push(event);
        }
        all
    }
}

fn parse(block: &str) -> Option<(String, Value)> {
    let (mut name, mut data) = ("message".to_owned(), String::new());
    for line in block.lines() {
        if let Some(value) = line.strip_prefix("event:") {
            name = value.trim().to_owned();
        } else if let Some(value) = line.strip_prefix("data:") {
            data.push_str(value.trim_start());
        }
    }
    if data.is_empty() {
        return None;
    }
    let data = serde_json::from_str(&data).unwrap_or_else(|e| panic!("event {name}: {e}: {data}"));
    Some((name, data))
}

/// The events' names, for messages.
pub fn names(events: &[(String, Value)]) -> Vec<&str> {
    events.iter().map(|(name, _)| name.as_str()).collect()
}

/// The data of the events named `name`.
pub fn of<'a>(events: &'a [(String, Value)], name: &str) -> Vec<&'a Value> {
    events
        .iter()
        .filter(|(n, _)| n == name)
        .map(|(_, data)| data)
        .collect()
}
