//! A client of the thread protocol that notes every exchange as the
//! recording script (`reference/record.py`) does: a command's status and
//! body, a stream's status, content type and SSE frames (`event`, `id`,
//! JSON `data`) and heartbeat comments.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use reqwest::Client;
use serde_json::{json, Value};

/// One scenario's exchanges on one thread.
pub struct Proto {
    pub c: Client,
    pub base: String,
    pub thread: String,
    pub steps: Vec<Value>,
}

/// A stream being read: its frames so far.
pub struct Reader {
    step: Value,
    frames: Arc<Mutex<Vec<Value>>>,
    heartbeats: Arc<Mutex<Vec<String>>>,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl Proto {
    pub fn new(base: &str) -> Self {
        Proto {
            c: Client::new(),
            base: base.to_owned(),
            thread: uuid::Uuid::new_v4().to_string(),
            steps: Vec::new(),
        }
    }

    /// Sends a command (JSON, or `raw` text as it is); its answer.
    pub async fn command(&mut self, body: Value) -> Value {
        self.send(&body.to_string(), body.clone()).await
    }

    pub async fn command_raw(&mut self, raw: &str) -> Value {
        self.send(raw, json!(raw)).await
    }

    async fn send(&mut self, text: &str, shown: Value) -> Value {
        let path = format!("/threads/{}/commands", self.thread);
        let r = self
            .c
            .post(format!("{}{path}", self.base))
            .body(text.to_owned());
        let r = r
            .header("content-type", "application/json")
            .send()
            .await
            .unwrap();
        let status = r.status().as_u16();
        let body: Value = r.json().await.unwrap();
        let step = json!({"kind": "command", "path": path, "request": shown, "status": status, "body": body});
        self.steps.push(step);
        body
    }

    /// Opens a stream with `body` (or `raw` text, or extra `headers`).
    pub async fn stream(&self, body: Value) -> Reader {
        self.open(&body.to_string(), body.clone(), &[]).await
    }

    pub async fn stream_raw(&self, raw: &str) -> Reader {
        self.open(raw, json!(raw), &[]).await
    }

    pub async fn stream_headers(&self, body: Value, headers: &[(&str, &str)]) -> Reader {
        self.open(&body.to_string(), body.clone(), headers).await
    }

    async fn open(&self, text: &str, shown: Value, headers: &[(&str, &str)]) -> Reader {
        let path = format!("/threads/{}/stream/events", self.thread);
        let mut r = self
            .c
            .post(format!("{}{path}", self.base))
            .body(text.to_owned());
        for (k, v) in headers {
            r = r.header(*k, *v);
        }
        let r = r
            .header("content-type", "application/json")
            .send()
            .await
            .unwrap();
        let status = r.status().as_u16();
        let mut step = json!({"kind": "stream", "path": path, "request": shown, "status": status});
        if !headers.is_empty() {
            let sent = headers.iter().map(|(k, v)| (k.to_string(), json!(v)));
            step["headers"] = Value::Object(sent.collect());
        }
        let (frames, heartbeats) = (Arc::default(), Arc::default());
        if r.status() != 200 {
            step["body"] = r.json().await.unwrap();
            return Reader {
                step,
                frames,
                heartbeats,
                task: None,
            };
        }
        let kind = r.headers()["content-type"].to_str().unwrap().to_owned();
        step["content_type"] = json!(kind);
        let task = tokio::spawn(read(r, Arc::clone(&frames), Arc::clone(&heartbeats)));
        Reader {
            step,
            frames,
            heartbeats,
            task: Some(task),
        }
    }

    /// Closes a stream after `linger` and notes what it sent.
    pub async fn finish(&mut self, reader: Reader, linger: Duration) {
        tokio::time::sleep(linger).await;
        let mut step = reader.step;
        if let Some(task) = reader.task {
            task.abort();
            step["frames"] = json!(*reader.frames.lock().unwrap());
            let mut beats = reader.heartbeats.lock().unwrap().clone();
            beats.sort();
            beats.dedup();
            step["heartbeats"] = json!(beats);
        }
        self.steps.push(step);
    }
}

impl Reader {
    /// The frames so far.
    pub fn frames(&self) -> Vec<Value> {
        self.frames.lock().unwrap().clone()
    }

    /// Waits until `count` root terminal lifecycle events came (or 15 s).
    pub async fn wait_terminal(&self, count: usize) {
        self.wait(|f| f.iter().filter(|f| root_terminal(f)).count() >= count)
            .await;
    }

    /// Waits until `done` holds of the frames (or 15 s).
    pub async fn wait(&self, done: impl Fn(&[Value]) -> bool) {
        let until = Instant::now() + Duration::from_secs(15);
        while !done(&self.frames()) && Instant::now() < until {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

/// Whether a frame is the root namespace's end (`completed`, `failed`,
/// `interrupted`).
pub fn root_terminal(frame: &Value) -> bool {
    let d = &frame["data"];
    d["method"] == "lifecycle"
        && d["params"]["namespace"] == json!([])
        && ["completed", "failed", "interrupted"]
            .contains(&d["params"]["data"]["event"].as_str().unwrap_or(""))
}

async fn read(
    mut r: reqwest::Response,
    frames: Arc<Mutex<Vec<Value>>>,
    beats: Arc<Mutex<Vec<String>>>,
) {
    let mut text = String::new();
    while let Ok(Some(chunk)) = r.chunk().await {
        text.push_str(&String::from_utf8_lossy(&chunk));
        while let Some(end) = text.find("\r\n\r\n") {
            let block: String = text.drain(..end + 4).collect();
            let mut frame = json!({});
            for line in block.split("\r\n").filter(|l| !l.is_empty()) {
                if line.starts_with(':') {
                    beats.lock().unwrap().push(line.to_owned());
                } else if let Some((key, value)) = line.split_once(": ") {
                    frame[key] = json!(value);
                }
            }
            if let Some(data) = frame.get("data").and_then(Value::as_str) {
                let data: Value = serde_json::from_str(data).unwrap();
                let (event, id) = (frame["event"].clone(), frame["id"].clone());
                frames
                    .lock()
                    .unwrap()
                    .push(json!({"event": event, "id": id, "data": data}));
            }
        }
    }
}
