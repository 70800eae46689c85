//! The tests' MCP server (tests/mcp/server.py on the official Python SDK,
//! from the venv tests/mcp/setup.sh makes), an agent state with the seed's
//! per-tool tokens, and a scripted model that records what it is offered.

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};

use agent_state::agent::mcp::{HttpServer, McpServer, StdioServer};
use agent_state::agent::{ChatModel, FnModel, ModelRequest, ToolDefinition};
use agent_state::base::MessagesState;
use agent_state::serde_json::{Map, Value};
use agent_state::{ai, AgentState, Message, ToolCall};

/// The agent's state: the conversation, and a portal's `mcpUcanContext`
/// (the UCAN invocation authorizing each MCP tool, by tool name).
#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct Chat {
    #[state(flatten)]
    pub base: MessagesState,
    /// Tool name → the invocation token that authorizes calling it.
    pub mcp_ucan_context: HashMap<String, String>,
}

/// The Python of the venv with the `mcp` SDK: `AGENT_STATE_MCP_PYTHON`, or
/// the venv tests/mcp/setup.sh makes under `target/`, made by running the
/// script (once, from PyPI, pinned) when it is missing: the tests always
/// run against the real server, and fail naming the venv when it cannot
/// be made.
pub fn python() -> PathBuf {
    if let Some(path) = std::env::var_os("AGENT_STATE_MCP_PYTHON") {
        let path = PathBuf::from(path);
        assert!(
            path.exists(),
            "AGENT_STATE_MCP_PYTHON is {}: no such file",
            path.display()
        );
        return path;
    }
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target"));
    let path = target.join("mcp-venv/bin/python");
    static SETUP: Mutex<()> = Mutex::new(());
    let _one_at_a_time = SETUP.lock().unwrap_or_else(|e| e.into_inner());
    if !path.exists() {
        let script = format!("{}/tests/mcp/setup.sh", env!("CARGO_MANIFEST_DIR"));
        eprintln!("making the MCP test venv: {script}");
        let status = Command::new("bash").arg(&script).status();
        assert!(
            matches!(status, Ok(s) if s.success()) && path.exists(),
            "no MCP test venv at {} and {script} could not make it ({status:?})",
            path.display()
        );
    }
    path
}

fn script() -> String {
    format!("{}/tests/mcp/server.py", env!("CARGO_MANIFEST_DIR"))
}

/// The server spawned over stdio.
pub fn stdio_server(python: &Path) -> StdioServer {
    McpServer::stdio(python.display().to_string())
        .arg(script())
        .arg("stdio")
        .env("AGENT_STATE_LABEL", "over stdio")
}

/// The server serving streamable HTTP on an ephemeral port, stopped when
/// dropped.
pub struct HttpProcess {
    child: Child,
    /// Its endpoint.
    pub url: String,
}

impl HttpProcess {
    /// Starts it, `auth_header` the header its `whoami` tool reports.
    pub fn start(python: &Path, auth_header: &str) -> Self {
        let mut child = Command::new(python)
            .args([&script(), "http", "--auth-header", auth_header])
            .env("AGENT_STATE_LABEL", "over HTTP")
            .stdout(Stdio::piped())
            .spawn()
            .expect("the MCP test server starts");
        let stdout = child.stdout.take().expect("its stdout is piped");
        let mut line = String::new();
        BufReader::new(stdout)
            .read_line(&mut line)
            .expect("the server prints its address");
        let url = line
            .trim()
            .strip_prefix("listening on ")
            .unwrap_or_else(|| panic!("the server said {line:?}, not its address"))
            .to_owned();
        Self { child, url }
    }

    /// A connection to it.
    pub fn server(&self) -> HttpServer {
        McpServer::http(self.url.clone())
    }
}

impl Drop for HttpProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A call of `tool` with `args`.
pub fn call(tool: &str, args: Value, id: &str) -> Message {
    let args: Map<String, Value> = args.as_object().cloned().unwrap_or_default();
    ai("").with_tool_call(ToolCall::new(tool, args, id))
}

/// What the model was offered, call by call.
pub type Offered = Arc<Mutex<Vec<Vec<ToolDefinition>>>>;

/// A model that answers with `replies` in order, recording the tools each
/// request offers.
pub fn model(replies: Vec<Message>) -> (impl ChatModel<Chat> + 'static, Offered) {
    let offered: Offered = Arc::default();
    let seen = Arc::clone(&offered);
    let replies = Mutex::new(replies.into_iter());
    let model = FnModel(move |request: &ModelRequest<Chat>| {
        seen.lock().unwrap().push(request.tools().to_vec());
        Ok(replies.lock().unwrap().next().unwrap_or_else(|| ai("done")))
    });
    (model, offered)
}
