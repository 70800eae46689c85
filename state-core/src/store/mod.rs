//! Memory across threads: LangGraph's `Store`, typed.
//!
//! A thread's state ends with the thread; what an agent should remember
//! about a user across conversations goes into a store: JSON objects under
//! a namespace (a path of labels, such as `["users", did]`) and a key, with
//! the times they were created and updated. Items are found by key, by a
//! search under a namespace prefix with a [`Filter`] on their values, and,
//! when the store has an [`IndexConfig`], by similarity to a
//! natural-language query. Items may expire ([`TtlConfig`]).
//!
//! Backends: [`MemoryStore`]; [`SqliteStore`] (feature `sqlite`), by
//! default in the checkpoints' file; [`PostgresStore`] (feature
//! `postgres`), shared by every server, scoring queries with pgvector
//! where the server has it. All three pass one conformance suite
//! (`tests/store.rs`). Nodes reach the store of their run through their
//! context, tools through their runtime, middleware through the node
//! context its hooks get.
//!
//! ```
//! use agent_state::checkpoint::block_on;
//! use agent_state::store::{Filter, MemoryStore, SearchOp, StoreExt};
//! use serde_json::json;
//!
//! block_on(async {
//!     let store = MemoryStore::new();
//!     store.put(["users", "did:1"], "profile", json!({"work": "geology", "level": 3})).await?;
//!
//!     let profile = store.get(["users", "did:1"], "profile").await?.expect("stored");
//!     assert_eq!(profile.value["work"], "geology");
//!
//!     let found = store
//!         .search(SearchOp::new(["users"]).filter(Filter::new().op("level", "$gte", 2)?))
//!         .await?;
//!     assert_eq!(found.len(), 1);
//!
//!     // Nothing is written when an operation is refused.
//!     assert!(store.put(["users", "a.b"], "k", json!({})).await.is_err());
//!     Ok::<(), agent_state::store::StoreError>(())
//! })?;
//! # Ok::<(), agent_state::store::StoreError>(())
//! ```
//!
//! Differences from LangGraph on purpose: expired items are never
//! returned, even before a sweep deletes them (LangGraph's
//! `omit_expired`); searches without a query list the newest update
//! first on every backend; a put's embeddings replace the item's old
//! ones.
//!
//! # Backends
//!
//! | backend | feature | use |
//! | --- | --- | --- |
//! | `MemoryStore` | always | tests, one process |
//! | `SqliteStore::open(path)` / `SqliteStore::sharing(checkpointer)` | `sqlite` | its tables (`store_*`) in the checkpoints' file |
//! | `PostgresStore::connect(url)` | `postgres` | many servers; pgvector where installed, an exact scan otherwise |
//!
//! # Using a store
//!
//! * Nodes reach the run's store with `ctx.store()` (a graph holds one with
//!   `with_store`, a run may bring its own with `Run::store`, subgraphs get
//!   their parent's); an agent's tools with `runtime.store()`, its middleware
//!   through the `ctx` of their hooks or `request.store()`
//!   (`create_agent(model).store(..)`). The repository's
//!   `examples/memory_agent.rs` is a whole memory flow: a middleware loads the
//!   user's profile from `["users", did]` before the agent and writes what it
//!   learned after, and a second thread knows the user.
//! * Search: by a namespace prefix, with a filter on the items' values
//!   (`$eq`, `$ne`, `$gt`, `$gte`, `$lt`, `$lte`), and by similarity to a
//!   query when the store has an index:
//!   `IndexConfig::new(dims, embeddings).fields(["text"])` with any
//!   `Embeddings` (a function, or `OpenAiEmbeddings` of the `openai` feature
//!   for any OpenAI-compatible `/embeddings` endpoint).
//! * A batch is checked whole before anything runs: an empty namespace, a
//!   label with a dot, a value that could not be stored, an unknown filter
//!   operator is an error naming it, and nothing of the batch is written.
//! * The Agent Server (`agent-state-server`) serves it at `/store/items`,
//!   `/store/items/search` and `/store/namespaces` (LangGraph's SDKs'
//!   `client.store`), in the server's database, and gives it to every run.
//! * Checked side by side with LangGraph's `InMemoryStore` and `SqliteStore`
//!   on the same scenarios; the differences on purpose are listed above.

mod embed;
mod error;
mod ext;
mod filter;
mod item;
mod memory;
mod op;
#[cfg(feature = "openai")]
mod openai;
mod prepare;
mod rank;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
mod sql;

#[cfg(feature = "postgres")]
#[cfg_attr(docsrs, doc(cfg(feature = "postgres")))]
pub mod postgres;
#[cfg(feature = "sqlite")]
#[cfg_attr(docsrs, doc(cfg(feature = "sqlite")))]
pub mod sqlite;

#[cfg(feature = "postgres")]
#[cfg_attr(docsrs, doc(cfg(feature = "postgres")))]
pub use postgres::PostgresStore;
#[cfg(feature = "sqlite")]
#[cfg_attr(docsrs, doc(cfg(feature = "sqlite")))]
pub use sqlite::SqliteStore;

pub use embed::{Embeddings, IndexConfig};
pub use error::StoreError;
pub use ext::StoreExt;
pub use filter::Filter;
pub use item::{Item, SearchItem};
pub use memory::MemoryStore;
pub use op::{
    GetOp, IndexFields, ListNamespacesOp, MatchCondition, Op, OpResult, PutOp, SearchOp, Ttl,
};
#[cfg(feature = "openai")]
#[cfg_attr(docsrs, doc(cfg(feature = "openai")))]
pub use openai::{OpenAiEmbeddings, DEFAULT_BATCH_SIZE, DEFAULT_EMBEDDINGS_MODEL};

// What a backend builds on: the checked batch, and the ranking rules.
#[allow(unused_imports)]
pub(crate) use prepare::{expiry, prepare, Prepared, PreparedOp, PreparedPut};
#[allow(unused_imports)]
pub(crate) use rank::{list_namespaces, newest_first, rank, Candidate};

use crate::checkpoint::BoxFuture;

/// A store of items across threads, at the level of batches of
/// operations (LangGraph's `BaseStore.batch`); [`StoreExt`] adds `get`,
/// `put`, `search`, ... and their typed forms on top.
///
/// The contract each backend keeps (the conformance tests in `tests/`
/// check it for the three built in):
///
/// * A batch is checked whole before anything runs: a refused operation
///   (a bad namespace, key, value or filter) fails the batch and nothing
///   of it is written.
/// * Reads in a batch see the store as it was before the batch; its puts
///   are applied together at the end, the last put of one item winning,
///   atomically (all or none).
/// * Results come back in the order of the operations.
pub trait Store: Send + Sync {
    /// Runs `ops`, one result each.
    fn batch<'a>(&'a self, ops: Vec<Op>) -> BoxFuture<'a, Result<Vec<OpResult>, StoreError>>;

    /// Deletes the items whose TTL ran out; returns how many. Reads never
    /// return them, so sweeping only frees space.
    fn sweep_ttl(&self) -> BoxFuture<'_, Result<u64, StoreError>>;
}

/// When items expire, as LangGraph's `TTLConfig`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TtlConfig {
    /// Minutes a put item lives when the put says nothing
    /// ([`Ttl::Configured`]); `None`: for ever.
    pub default_ttl: Option<f64>,
    /// Whether reads (get, search) restart an item's TTL by default.
    pub refresh_on_read: bool,
}

impl Default for TtlConfig {
    fn default() -> Self {
        TtlConfig {
            default_ttl: None,
            refresh_on_read: true,
        }
    }
}
