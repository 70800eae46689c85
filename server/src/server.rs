//! The builder: graphs by name, the database, and serving.

use std::collections::BTreeMap;
use std::fmt;
use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use agent_state::checkpoint::CheckpointError;
use agent_state::graph::{Graph, GraphState};
use agent_state::json_schema::{schema_of, schemars::JsonSchema, StateJsonSchema};
use agent_state::store::Store;
use agent_state::Output;
use axum::extract::DefaultBodyLimit;
use axum::middleware::from_fn_with_state;
use axum::routing::get;
use axum::{Json, Router};
use serde_json::{json, Value};
use tokio::net::{TcpListener, ToSocketAddrs};

use crate::app::{App, Assistant};
use crate::auth::per_user::PerUser;
use crate::open::Database;
use crate::served::{Erased, ServedGraph};
use crate::{access, assistants, body, cors, ids, items, listen, remote, runs, threads};

/// A server of graphs: register them by name, pick the database (a
/// SQLite file, or PostgreSQL with the `postgres` feature), then [`serve`](Self::serve) (or [`bind`](Self::bind) first to learn the
/// address, as tests do with port 0).
pub struct Server {
    graphs: Vec<Registered>,
    database: Database,
    read_timeout: Duration,
    custom: Router,
    /// The Store a user gave (with an index, say); else the database's
    /// (`store_` tables beside the checkpoints).
    items: Option<Arc<dyn Store>>,
    /// How requests share connections on PostgreSQL.
    #[cfg(feature = "postgres")]
    pool: crate::open::PoolSettings,
    /// The authenticate and authorize hooks (none: the API is open).
    auth: crate::auth::Auth,
    /// With [`database_per_user`](Self::database_per_user): the directory
    /// of the users' files.
    per_user: Option<PathBuf>,
    /// Threads' TTLs and kept checkpoints.
    retention: crate::retention::Retention,
    /// The run queue's settings on PostgreSQL.
    #[cfg(feature = "postgres")]
    fleet: crate::worker::FleetSettings,
    /// How long a finished run's stored events stay joinable.
    #[cfg(feature = "postgres")]
    stream_ttl: Duration,
}

/// A graph as registered: its name, the graph, its JSON Schemas if given.
#[derive(Clone)]
struct Registered {
    name: String,
    graph: Arc<dyn ServedGraph>,
    schemas: Option<Value>,
}

impl Default for Server {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for Server {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = self.graphs.iter().map(|g| g.name.as_str()).collect();
        f.debug_struct("Server")
            .field("graphs", &names)
            .field("database", &self.database)
            .finish()
    }
}

/// Why the server could not start or stopped.
#[derive(Debug)]
#[non_exhaustive]
pub enum ServerError {
    /// Two graphs were registered under one name.
    DuplicateGraph(String),
    /// The database could not be opened as a checkpointer.
    Checkpoint(CheckpointError),
    /// The server's tables in the database could not be set up.
    Store(Box<dyn std::error::Error + Send + Sync>),
    /// Binding the address or serving failed.
    Io(std::io::Error),
    /// The auth hooks cannot serve as given (say which).
    Auth(&'static str),
}

impl fmt::Display for ServerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ServerError::DuplicateGraph(name) => {
                write!(f, "two graphs are registered under the name `{name}`")
            }
            ServerError::Checkpoint(e) => write!(f, "cannot open the checkpoints: {e}"),
            ServerError::Store(e) => write!(f, "cannot set up the server's tables: {e}"),
            ServerError::Io(e) => write!(f, "cannot serve: {e}"),
            ServerError::Auth(why) => write!(f, "cannot serve with these auth hooks: {why}"),
        }
    }
}

impl std::error::Error for ServerError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ServerError::DuplicateGraph(_) | ServerError::Auth(_) => None,
            ServerError::Checkpoint(e) => Some(e),
            ServerError::Store(e) => Some(&**e),
            ServerError::Io(e) => Some(e),
        }
    }
}

impl Server {
    /// No graph yet; the database is `agent-state.db` in the working
    /// directory.
    pub fn new() -> Self {
        Server {
            graphs: Vec::new(),
            database: Database::Sqlite(PathBuf::from("agent-state.db")),
            read_timeout: Duration::from_secs(30),
            custom: Router::new(),
            items: None,
            #[cfg(feature = "postgres")]
            pool: crate::open::PoolSettings::default(),
            auth: crate::auth::Auth::default(),
            per_user: None,
            retention: crate::retention::Retention::default(),
            #[cfg(feature = "postgres")]
            fleet: crate::worker::FleetSettings::default(),
            #[cfg(feature = "postgres")]
            stream_ttl: Duration::from_secs(120),
        }
    }

    /// The Store served at `/store` and given to every run, in place of
    /// the database's own: one with an index for semantic search, say.
    ///
    /// ```
    /// use agent_state::store::{IndexConfig, MemoryStore};
    /// use agent_state_server::Server;
    ///
    /// let embed = |texts: &[String]| -> Vec<Vec<f32>> {
    ///     texts.iter().map(|t| vec![t.len() as f32, 1.0]).collect()
    /// };
    /// let server = Server::new().store(MemoryStore::new().with_index(IndexConfig::new(2, embed)));
    /// ```
    #[must_use]
    pub fn store(mut self, store: impl Store + 'static) -> Self {
        self.items = Some(Arc::new(store));
        self
    }

    /// The SQLite file that holds checkpoints, threads, runs and
    /// assistants (created with its directory if missing).
    #[must_use]
    pub fn database(mut self, path: impl Into<PathBuf>) -> Self {
        self.database = Database::Sqlite(path.into());
        self
    }

    /// Keeps checkpoints, threads, runs and assistants in the PostgreSQL
    /// database at `url` (libpq-style `host=.. user=.. dbname=..` or a
    /// `postgresql://` URL) instead of a file, so several servers can
    /// serve the same threads: a thread runs one run at a time across
    /// all of them, and a run started on one is read, listed and joined
    /// on any. Requests share a pool of at most 16 connections (see
    /// [`pool_size`](Self::pool_size)); each server holds one more for
    /// its threads' locks, and the checkpointer one.
    #[cfg(feature = "postgres")]
    #[cfg_attr(docsrs, doc(cfg(feature = "postgres")))]
    #[must_use]
    pub fn postgres(mut self, url: impl Into<String>) -> Self {
        self.database = Database::Postgres(url.into());
        self
    }

    /// The most connections requests share on PostgreSQL (16 by
    /// default); a request that finds them all taken waits (see
    /// [`pool_wait`](Self::pool_wait)). No effect on SQLite (one
    /// connection).
    #[cfg(feature = "postgres")]
    #[cfg_attr(docsrs, doc(cfg(feature = "postgres")))]
    #[must_use]
    pub fn pool_size(mut self, connections: usize) -> Self {
        self.pool.size = connections.max(1);
        self
    }

    /// How long a request waits on PostgreSQL for a connection when all
    /// [`pool_size`](Self::pool_size) are taken (30 s by default), before
    /// it is answered 503 `{"detail": "The database is busy: .."}`.
    #[cfg(feature = "postgres")]
    #[cfg_attr(docsrs, doc(cfg(feature = "postgres")))]
    #[must_use]
    pub fn pool_wait(mut self, wait: Duration) -> Self {
        self.pool.wait = wait;
        self
    }

    /// The most background runs this server takes from the queue and runs
    /// at once, on PostgreSQL (by default its [`pool_size`](Self::pool_size)),
    /// so one server does not take the whole queue while others have room.
    /// Runs its own clients stream or wait for are not counted.
    ///
    /// ```no_run
    /// use std::time::Duration;
    /// use agent_state_server::Server;
    ///
    /// # async fn serve() -> Result<(), Box<dyn std::error::Error>> {
    /// // One of several servers on one database: at most 8 background runs
    /// // here, a run whose server died taken over within 5 s, and 60 s for
    /// // the runs in progress to finish at SIGTERM before they are handed
    /// // over to the other servers.
    /// Server::new()
    ///     .postgres("host=db user=agent dbname=agent")
    ///     .max_runs(8)
    ///     .lease(Duration::from_secs(5))
    ///     .shutdown_grace(Duration::from_secs(60))
    ///     .serve("0.0.0.0:2024")
    ///     .await?;
    /// # Ok(())
    /// # }
    /// ```
    #[cfg(feature = "postgres")]
    #[cfg_attr(docsrs, doc(cfg(feature = "postgres")))]
    #[must_use]
    pub fn max_runs(mut self, runs: usize) -> Self {
        self.fleet.max_runs = Some(runs.max(1));
        self
    }

    /// How long a run's lease lasts on PostgreSQL (10 s by default): the
    /// server running it renews it every fifth of that, and a run whose
    /// lease expired (its server was killed, or lost the database) is
    /// taken over by another server, which resumes it from its last
    /// stored step with its `attempt` one more. Shorter: a faster
    /// failover, more writes.
    #[cfg(feature = "postgres")]
    #[cfg_attr(docsrs, doc(cfg(feature = "postgres")))]
    #[must_use]
    pub fn lease(mut self, lease: Duration) -> Self {
        self.fleet.lease = lease.max(Duration::from_millis(100));
        self
    }

    /// How long a stopping server (Ctrl-C, SIGTERM, or the future given
    /// to [`Listening::serve_until`]) lets its runs finish, on PostgreSQL
    /// (30 s by default): it takes no new run from the queue, and the runs
    /// still running at the deadline are handed over to another server,
    /// which resumes them from their last stored step.
    #[cfg(feature = "postgres")]
    #[cfg_attr(docsrs, doc(cfg(feature = "postgres")))]
    #[must_use]
    pub fn shutdown_grace(mut self, grace: Duration) -> Self {
        self.fleet.grace = grace;
        self
    }

    /// How long a finished run's events stay in PostgreSQL for clients
    /// that join its stream late or reconnect with `Last-Event-ID` (120 s
    /// by default, as long as the official server keeps a resumable
    /// stream, its `RESUMABLE_STREAM_TTL_SECONDS`); they go at once with
    /// their run or thread. On SQLite a run's events live as long as the
    /// run.
    ///
    /// ```no_run
    /// use std::time::Duration;
    /// use agent_state_server::Server;
    ///
    /// let server = Server::new()
    ///     .postgres("host=localhost user=postgres dbname=agents")
    ///     .stream_ttl(Duration::from_secs(600));
    /// ```
    #[cfg(feature = "postgres")]
    #[cfg_attr(docsrs, doc(cfg(feature = "postgres")))]
    #[must_use]
    pub fn stream_ttl(mut self, ttl: Duration) -> Self {
        self.stream_ttl = ttl;
        self
    }

    /// How long a client may take to send a request's headers, then its
    /// body (30 s each by default): a client that takes longer, or leaves
    /// a connection idle that long, is disconnected (headers) or answered
    /// 408 (body).
    #[must_use]
    pub fn read_timeout(mut self, timeout: Duration) -> Self {
        self.read_timeout = timeout;
        self
    }

    /// Keeps only each thread's `n` newest checkpoints: after every run,
    /// the older ones are deleted (the oldest kept gets a snapshot of its
    /// whole state, so it and every newer one still load) with the pending
    /// writes no resume needs any more, so a long-lived thread's storage
    /// stays bounded. By default every checkpoint is kept, as LangGraph
    /// keeps them; the history (`/threads/{id}/history`, time travel)
    /// then reaches `n` checkpoints back. Either way the pending writes of
    /// steps that landed are collected after each run; a paused run's are
    /// kept, so it resumes.
    ///
    /// ```
    /// use std::num::NonZeroUsize;
    /// use std::time::Duration;
    /// use agent_state_server::{Server, ThreadTtl, TtlStrategy};
    ///
    /// let server = Server::new()
    ///     .keep_checkpoints(NonZeroUsize::new(20).unwrap())
    ///     .thread_ttl(ThreadTtl { strategy: TtlStrategy::Delete, minutes: 30.0 * 24.0 * 60.0 })
    ///     .ttl_sweep_interval(Duration::from_secs(60 * 60));
    /// ```
    #[must_use]
    pub fn keep_checkpoints(mut self, n: std::num::NonZeroUsize) -> Self {
        self.retention.keep = Some(n);
        self
    }

    /// Gives every thread created without a `ttl` this one (LangGraph's
    /// `checkpointer.ttl.default_ttl` and `strategy`): counted from its
    /// creation, started again when each run on it ends, applied by the
    /// sweep (see [`ttl_sweep_interval`](Self::ttl_sweep_interval)). By
    /// default threads have none, unless a client gives one.
    #[must_use]
    pub fn thread_ttl(mut self, ttl: crate::ThreadTtl) -> Self {
        self.retention.default_ttl = Some(ttl);
        self
    }

    /// How often the threads whose TTL passed are swept (every 5 minutes
    /// by default; LangGraph's `sweep_interval_minutes`). A thread
    /// outlives its TTL by up to this much.
    #[must_use]
    pub fn ttl_sweep_interval(mut self, every: Duration) -> Self {
        self.retention.sweep_every = every.max(Duration::from_millis(10));
        self
    }

    /// Serves `routes` beside the API (a page, a health check of your
    /// own), as LangGraph's `http.app` mounts a custom app: they share the
    /// listener, its timeouts, body limit, CORS and request log. Called
    /// again, the routes are added to those given before; a path the API
    /// serves too panics when the routes are made, as axum's `merge` does.
    #[must_use]
    pub fn routes(mut self, routes: Router) -> Self {
        self.custom = self.custom.merge(routes);
        self
    }

    /// Authenticates every request of the API (`/ok`, `/info` and
    /// [`routes`](Self::routes) stay open) with `hook`: it is given the
    /// request's method, URI and headers and answers who the caller is, or
    /// a [`Refusal`](crate::auth::Refusal) the client gets as its status
    /// and `{"detail": ..}` (LangGraph's `@auth.authenticate`). Per-user
    /// rules come from [`authorize`](Self::authorize).
    ///
    /// Threads each user sees alone, in about fifteen lines:
    ///
    /// ```no_run
    /// use agent_state_server::auth::{Credentials, Identity, On, Refusal, Resource, Verdict};
    /// use agent_state_server::Server;
    /// use serde_json::json;
    ///
    /// # async fn serve() -> Result<(), Box<dyn std::error::Error>> {
    /// Server::new()
    ///     .authenticate(|req: Credentials| async move {
    ///         match req.bearer() {
    ///             Some("token-alice") => Ok(Identity::new("alice")),
    ///             Some("token-bob") => Ok(Identity::new("bob")),
    ///             _ => Err(Refusal::unauthorized("Invalid token")),
    ///         }
    ///     })
    ///     // Each thread gets `{"owner": <caller>}` in its metadata when it
    ///     // is created; another caller's threads answer 404 and are left
    ///     // out of searches.
    ///     .authorize(On::resource(Resource::Threads), |ctx, _value| {
    ///         Ok(Verdict::Filter(json!({"owner": ctx.user.identity})))
    ///     })
    ///     .serve("127.0.0.1:2024")
    ///     .await?;
    /// # Ok(())
    /// # }
    /// ```
    #[must_use]
    pub fn authenticate<F, Fut>(mut self, hook: F) -> Self
    where
        F: Fn(crate::auth::Credentials) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<crate::auth::Identity, crate::auth::Refusal>> + Send + 'static,
    {
        self.auth.set_authenticate(hook);
        self
    }

    /// Decides the requests `on` picks with `hook` (LangGraph's
    /// `@auth.on...`): it is given the caller, the resource and action,
    /// and the request's value (its body with the path's ids, in
    /// LangGraph's shapes), which it may change (a Store namespace
    /// prefixed with the caller's id, say), and answers a
    /// [`Verdict`](crate::auth::Verdict): allow, deny (403), or a filter
    /// on metadata the server applies (see [`crate::auth`]). The most
    /// specific hook decides; a request no hook picks is allowed. Needs
    /// [`authenticate`](Self::authenticate): without it the server does
    /// not start ([`ServerError::Auth`]).
    #[must_use]
    pub fn authorize<F>(mut self, on: crate::auth::On, hook: F) -> Self
    where
        F: Fn(
                &crate::auth::AuthContext<'_>,
                &mut Value,
            ) -> Result<crate::auth::Verdict, crate::auth::Refusal>
            + Send
            + Sync
            + 'static,
    {
        self.auth.add_authorize(on, hook);
        self
    }

    /// Keeps each user's threads, runs, checkpoints and Store items in a
    /// SQLite file of their own under `dir` (created if missing), named
    /// after the identity the [`authenticate`](Self::authenticate) hook
    /// answers (every byte but ASCII letters, digits, `-` and `_` written
    /// `%XX`: `did:plc:abc` is `did%3Aplc%3Aabc.db`), as a LangGraph app's
    /// `checkpointerForUser(userDid)` does. A user's file is opened at
    /// their first request and served by a server made like this one (its
    /// graphs, hooks and timeouts; a [`store`](Self::store) given is
    /// shared); the [`database`](Self::database) holds nothing then. One
    /// user cannot reach another's threads even without a filter. Needs
    /// the authenticate hook ([`ServerError::Auth`] otherwise).
    #[must_use]
    pub fn database_per_user(mut self, dir: impl Into<PathBuf>) -> Self {
        self.per_user = Some(dir.into());
        self
    }

    /// Serves `graph` as the assistant of graph id `name`. Its
    /// `/schemas` are `null`; see
    /// [`graph_with_schemas`](Self::graph_with_schemas).
    #[must_use]
    pub fn graph<S: GraphState>(
        mut self,
        name: impl Into<String>,
        graph: impl Into<Arc<Graph<S>>>,
    ) -> Self {
        self.graphs.push(Registered {
            name: name.into(),
            graph: Arc::new(Erased(graph.into())),
            schemas: None,
        });
        self
    }

    /// Serves `graph` as [`graph`](Self::graph) does, and answers
    /// `/assistants/{id}/schemas` with the JSON Schemas of its state's
    /// input, output and whole state (a state with
    /// `#[state(json_schema)]`), which LangGraph Studio builds its input
    /// form from.
    #[must_use]
    pub fn graph_with_schemas<S>(
        mut self,
        name: impl Into<String>,
        graph: impl Into<Arc<Graph<S>>>,
    ) -> Self
    where
        S: GraphState + StateJsonSchema + JsonSchema,
        S::Input: JsonSchema,
    {
        let schemas = json!({
            "input_schema": schema_of::<S::Input>(),
            "output_schema": schema_of::<Output<'static, S>>(),
            "state_schema": schema_of::<S>(),
        });
        self = self.graph(name, graph);
        if let Some(last) = self.graphs.last_mut() {
            last.schemas = Some(schemas);
        }
        self
    }

    /// Opens the database and makes the routes, to serve them another way
    /// (under a prefix of a larger app, say). On SQLite, runs left
    /// unfinished by a server that died are marked `error`; on
    /// PostgreSQL, this server takes runs from the queue and takes over
    /// those of servers that died (a server served this way does not
    /// hand its runs over when it stops: their leases expire).
    pub async fn router(self) -> Result<Router, ServerError> {
        Ok(self.open().await?.0)
    }

    async fn open(mut self) -> Result<(Router, Arc<App>), ServerError> {
        #[cfg(feature = "postgres")]
        let pool = self.pool;
        #[cfg(not(feature = "postgres"))]
        let pool = crate::open::PoolSettings::default();
        if let Some(why) = self.auth.problem() {
            return Err(ServerError::Auth(why));
        }
        let per_user = self.per_user_servers()?;
        let (store, saver, leases, items) = self.database.open(&ids::new_id(), pool).await?;
        let mut assistants = BTreeMap::new();
        for Registered {
            name,
            graph,
            schemas,
        } in self.graphs
        {
            let id = ids::assistant_id(&name);
            let own = crate::store::AssistantRow::system(&id, &name, &ids::now());
            store
                .register_assistant(&own)
                .await
                .map_err(|e| ServerError::Store(e.into()))?;
            let assistant = Assistant {
                id,
                graph_id: name.clone(),
                graph,
                schemas,
                config: own.config,
                context: own.context,
                metadata: own.metadata,
            };
            if assistants.insert(name.clone(), assistant).is_some() {
                return Err(ServerError::DuplicateGraph(name));
            }
        }
        let items = self.items.unwrap_or(items);
        let mut app = App::new(assistants, store, saver, leases, items);
        app.read_timeout = self.read_timeout;
        app.retention = self.retention;
        #[cfg(feature = "postgres")]
        if app.leases.session().is_some() {
            let max_runs = self.fleet.max_runs.unwrap_or(pool.size);
            app.fleet = Some(crate::worker::Fleet::new(self.fleet, max_runs));
        }
        #[cfg(feature = "postgres")]
        if let (Database::Postgres(url), Some(pool)) = (&self.database, app.store.pool()) {
            let (pool, ttl) = (pool.clone(), self.stream_ttl);
            let stored = crate::log::postgres::StoredEvents::open(url, pool, ttl).await;
            app.events.stored = Some(stored.map_err(|e| ServerError::Store(e.into()))?);
        }
        let app = Arc::new(app);
        crate::retention::spawn_sweeper(&app);
        remote::recover(&app)
            .await
            .map_err(|e| ServerError::Store(e.into()))?;
        let guard = Arc::new(crate::auth::Guard {
            auth: self.auth,
            app: Arc::clone(&app),
            per_user,
        });
        Ok((routes(Arc::clone(&app), self.custom, guard), app))
    }

    /// The users' servers of [`database_per_user`](Self::database_per_user),
    /// each made like this one on its own file.
    fn per_user_servers(&mut self) -> Result<Option<Arc<PerUser>>, ServerError> {
        let Some(dir) = self.per_user.take() else {
            return Ok(None);
        };
        if !self.auth.identifies() {
            return Err(ServerError::Auth(
                "database_per_user needs an authenticate hook (Server::authenticate)",
            ));
        }
        let (graphs, auth, items) = (self.graphs.clone(), self.auth.clone(), self.items.clone());
        let (read_timeout, retention) = (self.read_timeout, self.retention);
        let template = move |path: PathBuf| {
            let mut user = Server::new().database(path).read_timeout(read_timeout);
            (user.graphs, user.auth, user.items) = (graphs.clone(), auth.clone(), items.clone());
            user.retention = retention;
            user
        };
        Ok(Some(Arc::new(PerUser::new(dir, Box::new(template)))))
    }

    /// Opens the database and binds `addr`; serve with
    /// [`Listening::serve`]. Port 0 binds a free port:
    /// [`Listening::local_addr`] says which.
    pub async fn bind(self, addr: impl ToSocketAddrs) -> Result<Listening, ServerError> {
        let read_timeout = self.read_timeout;
        let (router, app) = self.open().await?;
        let listener = TcpListener::bind(addr).await.map_err(ServerError::Io)?;
        Ok(Listening {
            listener,
            router,
            read_timeout,
            app: Drain(app),
        })
    }

    /// Binds `addr` and serves until Ctrl-C or SIGTERM.
    pub async fn serve(self, addr: impl ToSocketAddrs) -> Result<(), ServerError> {
        self.bind(addr).await?.serve().await
    }
}

fn routes(app: Arc<App>, custom: Router, guard: Arc<crate::auth::Guard>) -> Router {
    Router::new()
        .route("/ok", get(|| async { Json(json!({"ok": true})) }))
        .route("/info", get(info))
        .merge(assistants::routes())
        .merge(crate::agui::routes())
        .merge(threads::routes())
        .merge(runs::routes())
        .merge(items::routes())
        .merge(crate::threadproto::routes())
        .route_layer(from_fn_with_state(app.clone(), crate::shape::check))
        .route_layer(from_fn_with_state(guard, crate::auth::guard))
        .with_state(app)
        .merge(custom)
        .fallback(cors::not_found)
        .method_not_allowed_fallback(cors::method_not_allowed)
        .layer(DefaultBodyLimit::max(body::BODY_LIMIT))
        .layer(axum::middleware::from_fn(cors::cors))
        .layer(axum::middleware::from_fn(access::log))
}

async fn info() -> Json<Value> {
    Json(json!({
        "version": env!("CARGO_PKG_VERSION"),
        "flags": {"assistants": true, "crons": false, "langsmith": false},
        "host": {"kind": "self-hosted", "project_id": null, "revision_id": null},
    }))
}

/// A server bound to its address, not serving yet.
#[derive(Debug)]
pub struct Listening {
    listener: TcpListener,
    router: Router,
    read_timeout: Duration,
    app: Drain,
}

/// The server's shared state, drained when it stops (see
/// [`crate::worker::drain`]).
struct Drain(Arc<App>);

impl fmt::Debug for Drain {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("App")
    }
}

/// Ctrl-C, or SIGTERM on Unix (what a process manager sends to stop a
/// server).
async fn stop_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        if let Ok(mut term) = signal(SignalKind::terminate()) {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
            return;
        }
    }
    let _ = tokio::signal::ctrl_c().await;
}

impl Listening {
    /// The address it listens on (the port the system chose for port 0).
    pub fn local_addr(&self) -> SocketAddr {
        // A bound listener always has an address.
        self.listener
            .local_addr()
            .unwrap_or_else(|_| SocketAddr::from(([0, 0, 0, 0], 0)))
    }

    /// Serves until Ctrl-C or SIGTERM (see
    /// [`serve_until`](Self::serve_until)).
    pub async fn serve(self) -> Result<(), ServerError> {
        self.serve_until(stop_signal()).await
    }

    /// Serves until `shutdown` completes, then stops: on PostgreSQL it
    /// takes no more runs from the queue, lets its runs finish within
    /// `Server::shutdown_grace` and hands the rest over to the other
    /// servers; then the requests in progress finish.
    pub async fn serve_until(
        self,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> Result<(), ServerError> {
        tracing::info!(addr = %self.local_addr(), "serving");
        let app = self.app.0;
        let drain = async move {
            // Threads' join streams would stay open for their clients.
            app.run_starts.stop();
            #[cfg(feature = "postgres")]
            crate::worker::drain(&app).await;
            drop(app);
        };
        listen::serve(
            self.listener,
            self.router,
            self.read_timeout,
            shutdown,
            drain,
        )
        .await
        .map_err(ServerError::Io)
    }
}
