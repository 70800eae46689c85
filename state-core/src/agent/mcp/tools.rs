//! [`McpTools`]: a connected server's tools as the agent's [`Tool`]s, each
//! call a `tools/call` request with the model's arguments, its own
//! credentials and a deadline.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use futures::future::FutureExt;
use reqwest::header::{HeaderName, HeaderValue, AUTHORIZATION};
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, ClientRequest, MetaObject, RequestMetaObject,
    ServerResult,
};
use rmcp::service::PeerRequestOptions;
use serde_json::{Map, Value};

use super::content::answer_of;
use super::http::CallHeader;
use super::server::{connect, header, Connection, McpServer};
use super::{McpCallError, McpError};
use crate::agent::model::ToolDefinition;
use crate::agent::tool::{Tool, ToolError, ToolFuture, ToolOutput, ToolRuntime};
use crate::state::AgentState;

/// The deadline of a call, and of connecting, unless set otherwise.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// How much longer than a call's deadline the whole exchange may take
/// before it is given up without rmcp's answer.
const SEND_GRACE: Duration = Duration::from_millis(250);

type AuthFn<S> = dyn Fn(&S, &str) -> Option<String> + Send + Sync;

/// The tools of one MCP server, connected: what the server listed, offered
/// to the model as they are (name, description, input JSON Schema
/// unchanged), each call sent to the server as `tools/call`.
///
/// The connection lives as long as this value or any tool taken from it;
/// a spawned server is ended when the last of them is dropped. Calls run
/// on the Tokio runtime that connected, so an agent driven by any executor
/// (even [`block_on`](crate::checkpoint::block_on)) can use them while that
/// runtime runs.
///
/// ```no_run
/// use std::collections::HashMap;
/// use agent_state::agent::mcp::{McpServer, McpTools};
/// use agent_state::agent::{create_agent, input, ScriptedModel};
/// use agent_state::base::MessagesState;
/// use agent_state::{ai, AgentState};
///
/// #[derive(AgentState, Debug, Clone, PartialEq)]
/// struct Chat {
///     #[state(flatten)]
///     base: MessagesState,
///     /// Tool name → the token that authorizes calling it.
///     mcp_tokens: HashMap<String, String>,
/// }
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let server = McpServer::stdio("python3").args(["server.py", "stdio"]);
/// let mcp = McpTools::<Chat>::connect(server)
///     .await?
///     .with_call_auth(|state: &Chat, tool: &str| state.mcp_tokens.get(tool).cloned());
/// let mut agent = create_agent(ScriptedModel::new([ai("Nothing to call.")]));
/// for tool in mcp.tools() {
///     agent = agent.shared_tool(tool);
/// }
/// let out = agent.compile()?.run(input::<Chat>("hi")).await?;
/// # let _ = out;
/// # Ok(())
/// # }
/// ```
pub struct McpTools<S> {
    shared: Shared<S>,
    listed: Vec<ToolDefinition>,
}

/// What every tool of one server shares.
struct Shared<S> {
    connection: Arc<Connection>,
    auth: Option<Arc<AuthFn<S>>>,
    auth_header: HeaderName,
    bearer: bool,
    timeout: Duration,
}

impl<S> Clone for Shared<S> {
    fn clone(&self) -> Self {
        Self {
            connection: Arc::clone(&self.connection),
            auth: self.auth.clone(),
            auth_header: self.auth_header.clone(),
            bearer: self.bearer,
            timeout: self.timeout,
        }
    }
}

impl<S> fmt::Debug for McpTools<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpTools")
            .field("server", &self.shared.connection.server)
            .field("tools", &self.names())
            .field("call_auth", &self.shared.auth.is_some())
            .field("timeout", &self.shared.timeout)
            .finish()
    }
}

impl<S> McpTools<S> {
    /// Connects to `server` (spawning it, for stdio), runs the MCP
    /// handshake and lists its tools, within 30 seconds. Must be called
    /// within a Tokio runtime.
    pub async fn connect(server: impl Into<McpServer>) -> Result<Self, McpError> {
        Self::connect_within(server, DEFAULT_TIMEOUT).await
    }

    /// [`connect`](Self::connect), within `timeout` for the handshake and
    /// again for the listing; also each call's deadline (change it with
    /// [`timeout`](Self::timeout)).
    pub async fn connect_within(
        server: impl Into<McpServer>,
        timeout: Duration,
    ) -> Result<Self, McpError> {
        let connection = connect(&server.into(), timeout).await?;
        let listed = list_tools(&connection, timeout).await?;
        let shared = Shared {
            connection: Arc::new(connection),
            auth: None,
            auth_header: AUTHORIZATION,
            bearer: true,
            timeout,
        };
        Ok(Self { shared, listed })
    }

    /// The names of the server's tools, in the order it listed them.
    pub fn names(&self) -> Vec<&str> {
        self.listed.iter().map(|tool| tool.name.as_str()).collect()
    }

    /// The server as error messages name it (its command line or URL).
    pub fn server(&self) -> &str {
        &self.shared.connection.server
    }

    /// Each call's credentials, read from the state when the call is made:
    /// `auth(state, tool_name)` returns the token for that call, or `None`
    /// for none. Over streamable HTTP the token goes in the request's
    /// `Authorization: Bearer <token>` header (or the header named with
    /// [`auth_header`](Self::auth_header)); over stdio, which has no
    /// headers, in the request's `_meta` under the same name in lower case
    /// (`"authorization": "Bearer <token>"`).
    #[must_use]
    pub fn with_call_auth(
        self,
        auth: impl Fn(&S, &str) -> Option<String> + Send + Sync + 'static,
    ) -> Self {
        self.configure(|shared| shared.auth = Some(Arc::new(auth)))
    }

    /// Sends each call's token as the bare value of header `name` (and
    /// `_meta` key `name` in lower case, over stdio) instead of
    /// `Authorization: Bearer <token>`. Fails on a name HTTP does not
    /// allow.
    pub fn auth_header(self, name: &str) -> Result<Self, McpError> {
        let (name, _) = header(name, "")?;
        Ok(self.configure(|shared| {
            shared.auth_header = name;
            shared.bearer = false;
        }))
    }

    /// The deadline of each call: past it the call is answered with an
    /// error naming the tool, and the server is told to cancel it.
    #[must_use]
    pub fn timeout(self, timeout: Duration) -> Self {
        self.configure(|shared| shared.timeout = timeout)
    }

    /// Changes the settings; tools taken before keep the old ones.
    fn configure(mut self, change: impl FnOnce(&mut Shared<S>)) -> Self {
        change(&mut self.shared);
        self
    }
}

impl<S> McpTools<S>
where
    S: AgentState + Send + Sync + 'static,
    S::Update: Send,
{
    /// The server's tools, each a [`Tool`] to give the agent
    /// ([`AgentBuilder::shared_tool`](crate::agent::AgentBuilder::shared_tool)),
    /// with the settings made so far.
    pub fn tools(&self) -> Vec<Arc<dyn Tool<S>>> {
        let shared = Arc::new(self.shared.clone());
        self.listed
            .iter()
            .map(|definition| {
                Arc::new(McpTool {
                    definition: definition.clone(),
                    shared: Arc::clone(&shared),
                }) as Arc<dyn Tool<S>>
            })
            .collect()
    }
}

/// Every page of the server's tool list, as tool definitions.
async fn list_tools(
    connection: &Connection,
    timeout: Duration,
) -> Result<Vec<ToolDefinition>, McpError> {
    let listing = connection.service.peer().list_all_tools();
    let tools = tokio::time::timeout(timeout, listing)
        .await
        .map_err(|_| McpError::Timeout {
            server: connection.server.clone(),
            during: "listing its tools",
            after: timeout,
        })?
        .map_err(|error| McpError::ListTools {
            server: connection.server.clone(),
            message: error.to_string(),
        })?;
    Ok(tools
        .into_iter()
        .map(|tool| ToolDefinition {
            name: tool.name.into_owned(),
            description: tool.description.map(|d| d.into_owned()).unwrap_or_default(),
            parameters: Value::Object((*tool.input_schema).clone()),
        })
        .collect())
}

/// One tool of a server.
struct McpTool<S> {
    definition: ToolDefinition,
    shared: Arc<Shared<S>>,
}

impl<S> Tool<S> for McpTool<S>
where
    S: AgentState + Send + Sync + 'static,
    S::Update: Send,
{
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    fn call(&self, args: Map<String, Value>, runtime: ToolRuntime<S>) -> ToolFuture<'_, S> {
        let tool = self.definition.name.clone();
        let failed = move |error: McpCallError| ToolError::Failed {
            tool: tool.clone(),
            error: Box::new(error),
        };
        let request = match self.request(args, runtime.state()) {
            Ok(request) => request,
            Err(error) => return futures::future::ready(Err(failed(error))).boxed(),
        };
        let connection = &self.shared.connection;
        let task = connection.runtime.spawn(send(
            connection.service.peer().clone(),
            request,
            self.shared.timeout,
            connection.server.clone(),
        ));
        let abort = AbortOnDrop(task.abort_handle());
        let server = connection.server.clone();
        async move {
            let result = task.await.unwrap_or_else(|error| {
                Err(if error.is_panic() {
                    McpCallError::Protocol {
                        server,
                        message: "the call panicked in rmcp".to_owned(),
                    }
                } else {
                    McpCallError::Aborted
                })
            });
            drop(abort);
            result.map(ToolOutput::message).map_err(failed)
        }
        .boxed()
    }
}

impl<S> McpTool<S> {
    /// The `tools/call` request, with the call's credentials when the
    /// state has some for this tool.
    fn request(&self, args: Map<String, Value>, state: &S) -> Result<ClientRequest, McpCallError> {
        let shared = &self.shared;
        let mut params =
            CallToolRequestParams::new(self.definition.name.clone()).with_arguments(args);
        let token = shared
            .auth
            .as_ref()
            .and_then(|auth| auth(state, &self.definition.name));
        let Some(token) = token else {
            return Ok(ClientRequest::CallToolRequest(CallToolRequest::new(params)));
        };
        let value = if shared.bearer {
            format!("Bearer {token}")
        } else {
            token
        };
        if shared.connection.over_http {
            let value = HeaderValue::from_str(&value).map_err(|_| McpCallError::InvalidToken {
                header: shared.auth_header.to_string(),
            })?;
            let mut request = CallToolRequest::new(params);
            request.extensions.insert(CallHeader {
                name: shared.auth_header.clone(),
                value,
            });
            return Ok(ClientRequest::CallToolRequest(request));
        }
        let mut meta = Map::new();
        meta.insert(shared.auth_header.to_string(), Value::String(value));
        params.meta = Some(RequestMetaObject(MetaObject(meta)));
        Ok(ClientRequest::CallToolRequest(CallToolRequest::new(params)))
    }
}

/// Sends a call and waits for its result, at most `timeout`.
async fn send(
    peer: rmcp::Peer<rmcp::RoleClient>,
    request: ClientRequest,
    timeout: Duration,
    server: String,
) -> Result<crate::message::Message, McpCallError> {
    let options = PeerRequestOptions::with_timeout(timeout);
    let exchange = async {
        peer.send_request_with_option(request, options)
            .await?
            .await_response()
            .await
    };
    let timed_out = || McpCallError::Timeout {
        server: server.clone(),
        after: timeout,
    };
    // rmcp's own deadline answers first and tells the server to cancel;
    // this one, a little later, bounds the whole exchange (a stuck send
    // too).
    let response = tokio::time::timeout(timeout.saturating_add(SEND_GRACE), exchange)
        .await
        .map_err(|_| timed_out())?;
    match response {
        Ok(ServerResult::CallToolResult(result)) => {
            let json = serde_json::to_value(&result).map_err(|error| McpCallError::Protocol {
                server: server.clone(),
                message: error.to_string(),
            })?;
            Ok(answer_of(&json))
        }
        Ok(_) => Err(McpCallError::Protocol {
            server,
            message: "it answered `tools/call` with another kind of result".to_owned(),
        }),
        Err(rmcp::ServiceError::Timeout { .. }) => Err(timed_out()),
        Err(error) => Err(McpCallError::from_service(error, server)),
    }
}

/// Aborts the call's task when the agent stops waiting for it (the run was
/// cancelled), so it does not run on to its deadline.
struct AbortOnDrop(tokio::task::AbortHandle);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}
