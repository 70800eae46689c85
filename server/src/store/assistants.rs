//! Assistants and their versions: the graphs' own (one per graph, its
//! metadata `{"created_by": "system"}`) and those clients create, each
//! change a new version kept beside the assistant.
//!
//! A database made before assistants could be created has
//! `server_assistants` with its first three columns only: the others are
//! added with defaults that describe the graphs' assistants it held.

use serde_json::{json, Map, Value};

use super::{Arg, Store, StoreError, TextRow};

/// The columns `server_assistants` gained with created assistants, with
/// defaults that fit the rows stored before (the graphs' own).
pub(crate) const ADDED_COLUMNS: [(&str, &str); 7] = [
    ("config", "TEXT NOT NULL DEFAULT '{}'"),
    ("context", "TEXT NOT NULL DEFAULT '{}'"),
    (
        "metadata",
        "TEXT NOT NULL DEFAULT '{\"created_by\": \"system\"}'",
    ),
    ("name", "TEXT"),
    ("description", "TEXT"),
    ("version", "BIGINT NOT NULL DEFAULT 1"),
    ("updated_at", "TEXT"),
];

/// The versions table (one row per version of each assistant).
pub(crate) const VERSIONS_TABLE: &str = "CREATE TABLE IF NOT EXISTS server_assistant_versions (
    assistant_id TEXT NOT NULL, version BIGINT NOT NULL, graph_id TEXT NOT NULL,
    config TEXT NOT NULL, context TEXT NOT NULL, metadata TEXT NOT NULL,
    name TEXT NOT NULL, description TEXT, created_at TEXT NOT NULL,
    PRIMARY KEY (assistant_id, version))";

/// PostgreSQL's statements adding the columns a database may lack.
#[cfg(feature = "postgres")]
pub(crate) fn pg_migrations() -> Vec<String> {
    ADDED_COLUMNS
        .iter()
        .map(|(name, decl)| {
            format!("ALTER TABLE server_assistants ADD COLUMN IF NOT EXISTS {name} {decl}")
        })
        .chain([VERSIONS_TABLE.to_owned()])
        .collect()
}

/// An assistant, or one of its versions (`updated_at` then unset), as
/// the API shows it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct AssistantRow {
    pub assistant_id: String,
    pub graph_id: String,
    pub config: Value,
    pub context: Value,
    pub metadata: Map<String, Value>,
    pub name: String,
    pub description: Option<String>,
    pub version: i64,
    pub created_at: String,
    pub updated_at: String,
}

impl AssistantRow {
    /// The assistant as the API shows it.
    pub(crate) fn to_json(&self) -> Value {
        json!({
            "assistant_id": self.assistant_id,
            "graph_id": self.graph_id,
            "config": self.config,
            "context": self.context,
            "metadata": self.metadata,
            "name": self.name,
            "created_at": self.created_at,
            "updated_at": self.updated_at,
            "version": self.version,
            "description": self.description,
        })
    }

    /// The row as one of its versions (`POST /assistants/{id}/versions`):
    /// no `updated_at`, its `created_at` when the version was made.
    pub(crate) fn version_json(&self) -> Value {
        json!({
            "assistant_id": self.assistant_id,
            "version": self.version,
            "graph_id": self.graph_id,
            "config": self.config,
            "context": self.context,
            "metadata": self.metadata,
            "created_at": self.created_at,
            "name": self.name,
            "description": self.description,
        })
    }

    /// The assistant of graph `graph_id`, as the server makes it.
    pub(crate) fn system(id: &str, graph_id: &str, at: &str) -> Self {
        let mut metadata = Map::new();
        metadata.insert("created_by".into(), json!("system"));
        AssistantRow {
            assistant_id: id.to_owned(),
            graph_id: graph_id.to_owned(),
            config: json!({}),
            context: json!({}),
            metadata,
            name: graph_id.to_owned(),
            description: None,
            version: 1,
            created_at: at.to_owned(),
            updated_at: at.to_owned(),
        }
    }

    /// Its columns after the id, in `COLUMNS` order.
    fn args(&self) -> Vec<Arg> {
        vec![
            self.graph_id.as_str().into(),
            self.config.to_string().into(),
            self.context.to_string().into(),
            Value::Object(self.metadata.clone()).to_string().into(),
            self.name.as_str().into(),
            self.description.clone().into(),
            self.version.into(),
            self.created_at.as_str().into(),
            self.updated_at.as_str().into(),
        ]
    }
}

const COLUMNS: &str = "assistant_id, graph_id, config, context, metadata, name, description, \
    CAST(version AS TEXT), created_at, COALESCE(updated_at, created_at)";
const VERSION_COLUMNS: &str = "assistant_id, graph_id, config, context, metadata, name, \
    description, CAST(version AS TEXT), created_at, created_at";

/// A row read back; a JSON column that does not parse reads as `{}`.
fn read(row: TextRow) -> AssistantRow {
    let mut it = row.into_iter().map(Option::unwrap_or_default);
    let mut text = || it.next().unwrap_or_default();
    let json = |t: String| serde_json::from_str(&t).unwrap_or_else(|_| json!({}));
    let (assistant_id, graph_id) = (text(), text());
    let (config, context) = (json(text()), json(text()));
    let metadata = match json(text()) {
        Value::Object(map) => map,
        _ => Map::new(),
    };
    let name = text();
    let description = Some(text()).filter(|d| !d.is_empty());
    let version = text().parse().unwrap_or(1);
    let (created_at, updated_at) = (text(), text());
    AssistantRow {
        name: if name.is_empty() {
            graph_id.clone()
        } else {
            name
        },
        assistant_id,
        graph_id,
        config,
        context,
        metadata,
        description,
        version,
        created_at,
        updated_at,
    }
}

impl Store {
    /// Stores graph `graph_id`'s assistant unless it is stored (a patched
    /// one keeps its changes, a deleted one comes back), and its first
    /// version.
    pub(crate) async fn register_assistant(&self, row: &AssistantRow) -> Result<(), StoreError> {
        if self.insert_assistant(row).await? {
            return Ok(());
        }
        // Stored by a version of the server that kept no versions: its
        // current one is recorded.
        if let Some(stored) = self.assistant(&row.assistant_id).await? {
            self.insert_version(&stored).await?;
        }
        Ok(())
    }

    /// Stores a new assistant and its first version; `false` when the id
    /// is taken.
    pub(crate) async fn insert_assistant(&self, row: &AssistantRow) -> Result<bool, StoreError> {
        let mut args = vec![row.assistant_id.as_str().into()];
        args.extend(row.args());
        let sql = "INSERT INTO server_assistants (assistant_id, graph_id, config, context,
            metadata, name, description, version, created_at, updated_at)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) ON CONFLICT DO NOTHING";
        if self.db.execute(sql, args).await? == 0 {
            return Ok(false);
        }
        self.insert_version(row).await?;
        Ok(true)
    }

    /// Stores `row` as a version; `false` when its number is taken (a
    /// concurrent change made it first).
    async fn insert_version(&self, row: &AssistantRow) -> Result<bool, StoreError> {
        let mut args = vec![row.assistant_id.as_str().into()];
        let mut rest = row.args();
        rest.truncate(8);
        args.extend(rest);
        let sql = "INSERT INTO server_assistant_versions (assistant_id, graph_id, config,
            context, metadata, name, description, version, created_at)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT DO NOTHING";
        Ok(self.db.execute(sql, args).await? == 1)
    }

    /// The assistant, if stored.
    pub(crate) async fn assistant(&self, id: &str) -> Result<Option<AssistantRow>, StoreError> {
        let sql = format!("SELECT {COLUMNS} FROM server_assistants WHERE assistant_id = $1");
        let rows = self.db.query(&sql, vec![id.into()]).await?;
        Ok(rows.into_iter().next().map(read))
    }

    /// Every assistant, newest first (searches filter them).
    pub(crate) async fn assistants(&self) -> Result<Vec<AssistantRow>, StoreError> {
        let sql = format!("SELECT {COLUMNS} FROM server_assistants ORDER BY created_at DESC");
        let rows = self.db.query(&sql, Vec::new()).await?;
        Ok(rows.into_iter().map(read).collect())
    }

    /// Stores `next` as the assistant's new version and makes it the
    /// assistant, if it still is at version `from`; `false` when another
    /// change came first (the caller reads it again and retries).
    pub(crate) async fn save_assistant(
        &self,
        next: &AssistantRow,
        from: i64,
    ) -> Result<bool, StoreError> {
        if !self.insert_version(next).await? {
            return Ok(false);
        }
        self.point_assistant(next, from).await
    }

    /// Makes `row` (one of its stored versions) the assistant, if it is at
    /// version `from`.
    pub(crate) async fn point_assistant(
        &self,
        row: &AssistantRow,
        from: i64,
    ) -> Result<bool, StoreError> {
        let mut args = vec![row.assistant_id.as_str().into()];
        let mut rest = row.args();
        rest.truncate(7);
        args.extend(rest);
        args.extend([row.updated_at.as_str().into(), from.into()]);
        let sql = "UPDATE server_assistants SET graph_id = $2, config = $3, context = $4,
            metadata = $5, name = $6, description = $7, version = $8, updated_at = $9
            WHERE assistant_id = $1 AND version = $10";
        Ok(self.db.execute(sql, args).await? == 1)
    }

    /// The assistant's versions, newest first.
    pub(crate) async fn assistant_versions(
        &self,
        id: &str,
    ) -> Result<Vec<AssistantRow>, StoreError> {
        let sql = format!(
            "SELECT {VERSION_COLUMNS} FROM server_assistant_versions
             WHERE assistant_id = $1 ORDER BY version DESC"
        );
        let rows = self.db.query(&sql, vec![id.into()]).await?;
        Ok(rows.into_iter().map(read).collect())
    }

    /// The `(thread_id, run_id)` of the assistant's runs that have not
    /// ended.
    pub(crate) async fn unfinished_runs_of(
        &self,
        assistant_id: &str,
    ) -> Result<Vec<(String, String)>, StoreError> {
        let sql = "SELECT thread_id, run_id FROM server_runs
            WHERE assistant_id = $1 AND status IN ('pending', 'running')";
        let rows = self.db.query(sql, vec![assistant_id.into()]).await?;
        let pair = |row: TextRow| {
            let mut it = row.into_iter().map(Option::unwrap_or_default);
            (it.next().unwrap_or_default(), it.next().unwrap_or_default())
        };
        Ok(rows.into_iter().map(pair).collect())
    }

    /// Deletes the assistant and its versions; `false` when there was
    /// none.
    pub(crate) async fn delete_assistant(&self, id: &str) -> Result<bool, StoreError> {
        let deleted = self
            .db
            .execute(
                "DELETE FROM server_assistants WHERE assistant_id = $1",
                vec![id.into()],
            )
            .await?;
        self.db
            .execute(
                "DELETE FROM server_assistant_versions WHERE assistant_id = $1",
                vec![id.into()],
            )
            .await?;
        Ok(deleted == 1)
    }
}
