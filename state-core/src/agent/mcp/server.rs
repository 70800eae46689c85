//! Where an MCP server is ([`McpServer`]: a command to spawn, or a
//! streamable HTTP endpoint) and the live connection to it.

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use reqwest::header::{HeaderName, HeaderValue};
use rmcp::service::RunningService;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{RoleClient, ServiceExt};

use super::http::CallAuthClient;
use super::McpError;

/// An MCP server to connect to: a program spoken to over its stdin and
/// stdout ([`McpServer::stdio`]), or a streamable HTTP endpoint
/// ([`McpServer::http`]), the two transports of the MCP specification.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub enum McpServer {
    /// A child process, spawned when connecting and ended when the
    /// connection is dropped; its stderr is this process's stderr (the
    /// server's logs, as LangChain's MCP adapters leave them).
    Stdio(StdioServer),
    /// A server reached over streamable HTTP.
    Http(HttpServer),
}

impl McpServer {
    /// A server run as `command` (found on `PATH` unless a path), spoken
    /// to over its stdio; add arguments and environment on the result.
    pub fn stdio(command: impl Into<String>) -> StdioServer {
        StdioServer {
            command: command.into(),
            args: Vec::new(),
            env: Vec::new(),
            current_dir: None,
        }
    }

    /// A server at a streamable HTTP endpoint (`http://host:port/mcp`); add
    /// headers sent with every request on the result.
    pub fn http(url: impl Into<String>) -> HttpServer {
        HttpServer {
            url: url.into(),
            headers: Vec::new(),
        }
    }
}

/// A server spawned as a child process (see [`McpServer::stdio`]).
#[derive(Clone, Debug)]
pub struct StdioServer {
    command: String,
    args: Vec<String>,
    env: Vec<(String, String)>,
    current_dir: Option<PathBuf>,
}

impl StdioServer {
    /// Adds an argument.
    #[must_use]
    pub fn arg(mut self, arg: impl Into<String>) -> Self {
        self.args.push(arg.into());
        self
    }

    /// Adds arguments.
    #[must_use]
    pub fn args<I: IntoIterator<Item = A>, A: Into<String>>(mut self, args: I) -> Self {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    /// Sets an environment variable of the process (on top of this
    /// process's environment, which it inherits).
    #[must_use]
    pub fn env(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.env.push((name.into(), value.into()));
        self
    }

    /// The directory the process starts in.
    #[must_use]
    pub fn current_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.current_dir = Some(dir.into());
        self
    }
}

/// A server reached over streamable HTTP (see [`McpServer::http`]).
#[derive(Clone, Debug)]
pub struct HttpServer {
    url: String,
    headers: Vec<(String, String)>,
}

impl HttpServer {
    /// A header sent with every request (an API key, a static
    /// `Authorization`); a call's own auth header
    /// ([`McpTools::with_call_auth`](super::McpTools::with_call_auth))
    /// replaces one of the same name for that call.
    #[must_use]
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }
}

impl From<StdioServer> for McpServer {
    fn from(server: StdioServer) -> Self {
        Self::Stdio(server)
    }
}

impl From<HttpServer> for McpServer {
    fn from(server: HttpServer) -> Self {
        Self::Http(server)
    }
}

impl fmt::Display for McpServer {
    /// The server as error messages name it: the command line, or the URL.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Stdio(server) => {
                write!(f, "`{}", server.command)?;
                for arg in &server.args {
                    write!(f, " {arg}")?;
                }
                f.write_str("`")
            }
            Self::Http(server) => write!(f, "{}", server.url),
        }
    }
}

/// A live connection: rmcp's client service, and the Tokio runtime it was
/// made on (calls run there, whatever executor drives the agent).
pub(crate) struct Connection {
    pub(crate) service: RunningService<RoleClient, ()>,
    pub(crate) runtime: tokio::runtime::Handle,
    pub(crate) server: String,
    pub(crate) over_http: bool,
}

/// Spawns or reaches `server` and runs MCP's initialize handshake, within
/// `timeout`.
pub(crate) async fn connect(server: &McpServer, timeout: Duration) -> Result<Connection, McpError> {
    let runtime = tokio::runtime::Handle::try_current().map_err(|_| McpError::NoRuntime)?;
    let name = server.to_string();
    let handshake = async {
        match server {
            McpServer::Stdio(stdio) => {
                let transport = TokioChildProcess::new(command_of(stdio)).map_err(|source| {
                    McpError::Spawn {
                        server: name.clone(),
                        source,
                    }
                })?;
                ().serve(transport).await
            }
            McpServer::Http(http) => {
                let transport = http_transport(http)?;
                ().serve(transport).await
            }
        }
        .map_err(|error| McpError::Initialize {
            server: name.clone(),
            message: error.to_string(),
        })
    };
    let service = tokio::time::timeout(timeout, handshake)
        .await
        .map_err(|_| McpError::Timeout {
            server: name.clone(),
            during: "the initialize handshake",
            after: timeout,
        })??;
    Ok(Connection {
        service,
        runtime,
        over_http: matches!(server, McpServer::Http(_)),
        server: name,
    })
}

fn command_of(server: &StdioServer) -> tokio::process::Command {
    let mut command = tokio::process::Command::new(&server.command);
    command.args(&server.args);
    command.envs(server.env.iter().map(|(k, v)| (k, v)));
    if let Some(dir) = &server.current_dir {
        command.current_dir(dir);
    }
    command
}

fn http_transport(
    server: &HttpServer,
) -> Result<StreamableHttpClientTransport<CallAuthClient>, McpError> {
    reqwest::Url::parse(&server.url).map_err(|error| McpError::InvalidUrl {
        url: server.url.clone(),
        reason: error.to_string(),
    })?;
    let mut headers = std::collections::HashMap::new();
    for (name, value) in &server.headers {
        let (name, value) = header(name, value)?;
        headers.insert(name, value);
    }
    let config =
        StreamableHttpClientTransportConfig::with_uri(server.url.as_str()).custom_headers(headers);
    Ok(StreamableHttpClientTransport::with_client(
        CallAuthClient::default(),
        config,
    ))
}

/// A header checked for what HTTP allows in its name and value.
pub(crate) fn header(name: &str, value: &str) -> Result<(HeaderName, HeaderValue), McpError> {
    let invalid = |reason: String| McpError::InvalidHeader {
        name: name.to_owned(),
        reason,
    };
    let header_name = HeaderName::from_bytes(name.as_bytes())
        .map_err(|_| invalid("not a valid header name".to_owned()))?;
    let header_value = HeaderValue::from_str(value)
        .map_err(|_| invalid("its value has characters a header cannot carry".to_owned()))?;
    Ok((header_name, header_value))
}
