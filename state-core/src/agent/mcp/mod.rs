//! Tools of MCP servers (the Model Context Protocol): connect to a server
//! spawned over stdio or reached over streamable HTTP, and give the agent
//! its tools, each call a `tools/call` request (feature `mcp`, on the
//! official Rust SDK `rmcp`).
//!
//! * [`McpServer`] says where the server is: [`McpServer::stdio`] (a
//!   command, its arguments and environment) or [`McpServer::http`] (a URL
//!   and headers).
//! * [`McpTools::connect`] runs the handshake and lists the tools; each is
//!   offered to the model with the server's name, description and input
//!   JSON Schema unchanged ([`McpTools::tools`]).
//! * A call's answer is the result's content as LangChain content blocks,
//!   as LangChain's MCP adapters give it (text blocks kept as blocks, so
//!   `message.text()` joins them); a result with `isError` is an error tool
//!   message the model sees, its content as the server wrote it.
//! * A call that cannot be made (the server died, timed out, refused the
//!   request) is answered with an error naming the tool and what went
//!   wrong ([`McpCallError`]); the run goes on.
//! * [`McpTools::with_call_auth`] reads each call's credentials from the
//!   state (a token per tool, say), sent as the call's `Authorization`
//!   header over HTTP and in the call's `_meta` over stdio.
//!
//! ```no_run
//! use agent_state::agent::mcp::{McpServer, McpTools};
//! use agent_state::agent::{create_agent, input, ScriptedModel};
//! use agent_state::base::MessagesState;
//! use agent_state::{ai, AgentState, ToolCall};
//!
//! #[derive(AgentState, Debug, Clone, PartialEq)]
//! struct Chat {
//!     #[state(flatten)]
//!     base: MessagesState,
//! }
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let server = McpServer::http("http://127.0.0.1:8000/mcp").header("x-api-key", "k");
//! let mcp = McpTools::<Chat>::connect(server).await?;
//! let call = ToolCall::new("add", serde_json::json!({"a": 2, "b": 3}).as_object().unwrap().clone(), "c1");
//! let model = ScriptedModel::new([ai("").with_tool_call(call), ai("5")]);
//! let agent = mcp
//!     .tools()
//!     .into_iter()
//!     .fold(create_agent(model), |agent, tool| agent.shared_tool(tool))
//!     .compile()?;
//! let out = agent.run(input::<Chat>("What is 2 + 3?")).await?;
//! # let _ = out;
//! # Ok(())
//! # }
//! ```

mod content;
mod http;
mod server;
mod tools;

use std::fmt;
use std::time::Duration;

pub use server::{HttpServer, McpServer, StdioServer};
pub use tools::McpTools;

/// Why [`McpTools::connect`] or its settings failed.
#[derive(Debug)]
#[non_exhaustive]
pub enum McpError {
    /// Connecting needs a Tokio runtime (rmcp runs its transports on one).
    NoRuntime,
    /// The server's process did not start.
    Spawn {
        /// The command line.
        server: String,
        /// Why.
        source: std::io::Error,
    },
    /// The URL does not parse.
    InvalidUrl {
        /// The URL.
        url: String,
        /// Why.
        reason: String,
    },
    /// A header name or value HTTP does not allow.
    InvalidHeader {
        /// The header's name.
        name: String,
        /// What is wrong.
        reason: String,
    },
    /// The MCP handshake failed (the server is not an MCP server, exited,
    /// refused the connection, ...).
    Initialize {
        /// The server.
        server: String,
        /// rmcp's message.
        message: String,
    },
    /// Listing the tools failed.
    ListTools {
        /// The server.
        server: String,
        /// rmcp's message.
        message: String,
    },
    /// The server did not answer in time.
    Timeout {
        /// The server.
        server: String,
        /// What it was asked.
        during: &'static str,
        /// The deadline.
        after: Duration,
    },
}

impl fmt::Display for McpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NoRuntime => f.write_str(
                "connecting to an MCP server needs a Tokio runtime: call `McpTools::connect` within one",
            ),
            Self::Spawn { server, source } => {
                write!(f, "the MCP server {server} did not start: {source}")
            }
            Self::InvalidUrl { url, reason } => {
                write!(f, "the MCP server URL `{url}` is not a URL: {reason}")
            }
            Self::InvalidHeader { name, reason } => {
                write!(f, "header `{name}` of the MCP server: {reason}")
            }
            Self::Initialize { server, message } => {
                write!(f, "the MCP handshake with {server} failed: {message}")
            }
            Self::ListTools { server, message } => {
                write!(f, "listing the tools of the MCP server {server} failed: {message}")
            }
            Self::Timeout { server, during, after } => {
                write!(f, "the MCP server {server} did not answer within {after:?} ({during})")
            }
        }
    }
}

impl std::error::Error for McpError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Spawn { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// Why an MCP tool call has no result: the error of the
/// [`ToolError::Failed`](crate::agent::ToolError::Failed) the call is
/// answered with (the model sees "Error: tool `name` failed: " and this).
#[derive(Debug)]
#[non_exhaustive]
pub enum McpCallError {
    /// No result within the call's deadline; the server was told to
    /// cancel the request.
    Timeout {
        /// The server.
        server: String,
        /// The deadline.
        after: Duration,
    },
    /// The connection is closed: the server exited or dropped it.
    Closed {
        /// The server.
        server: String,
    },
    /// The request could not be sent (over HTTP: the server is not
    /// listening any more, or the network failed).
    Unreachable {
        /// The server.
        server: String,
        /// Why, with the causes.
        message: String,
    },
    /// The server answered with a JSON-RPC error (unknown tool, arguments
    /// it rejects before running the tool, ...).
    Refused {
        /// The server.
        server: String,
        /// The JSON-RPC error code.
        code: i32,
        /// Its message.
        message: String,
    },
    /// The answer was not a tool result, or the exchange failed otherwise.
    Protocol {
        /// The server.
        server: String,
        /// What went wrong.
        message: String,
    },
    /// The state's token cannot be sent as a header value.
    InvalidToken {
        /// The header.
        header: String,
    },
    /// The call's task was stopped before it finished (its runtime shut
    /// down).
    Aborted,
}

impl McpCallError {
    fn from_service(error: rmcp::ServiceError, server: String) -> Self {
        match error {
            rmcp::ServiceError::McpError(data) => Self::Refused {
                server,
                code: data.code.0,
                message: data.message.into_owned(),
            },
            rmcp::ServiceError::TransportClosed => Self::Closed { server },
            rmcp::ServiceError::TransportSend(error) => Self::Unreachable {
                server,
                message: with_causes(error.error.as_ref()),
            },
            other => Self::Protocol {
                server,
                message: other.to_string(),
            },
        }
    }
}

impl fmt::Display for McpCallError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Timeout { server, after } => {
                write!(f, "the MCP server {server} did not answer within {after:?}")
            }
            Self::Closed { server } => write!(
                f,
                "the connection to the MCP server {server} is closed (the server exited or dropped it)"
            ),
            Self::Unreachable { server, message } => {
                write!(f, "the MCP server {server} could not be reached: {message}")
            }
            Self::Refused { server, code, message } => {
                write!(f, "the MCP server {server} refused the call (error {code}): {message}")
            }
            Self::Protocol { server, message } => {
                write!(f, "the call to the MCP server {server} failed: {message}")
            }
            Self::InvalidToken { header } => write!(
                f,
                "the state's token for this call cannot be sent in header `{header}` (it has characters a header cannot carry)"
            ),
            Self::Aborted => f.write_str("the call was stopped before it finished (its Tokio runtime shut down)"),
        }
    }
}

impl std::error::Error for McpCallError {}

/// An error's message followed by its causes', each after a colon.
fn with_causes(error: &(dyn std::error::Error + 'static)) -> String {
    let mut message = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        message.push_str(": ");
        message.push_str(&cause.to_string());
        source = cause.source();
    }
    message
}
