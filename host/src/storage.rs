//! Where the domains keep their state, chosen by `[storage] backend`: `embedded` (the data
//! dir: redb, tantivy, usearch — one machine, the default) or `postgres` (one PostgreSQL ≥ 16
//! with pgvector, shared by any number of nodes). Each domain has its own store trait with an
//! implementation per backend; this module only opens the database.
//!
//! `server::stores` picks each domain's implementation; agents are placed across the nodes
//! by `runtime::Cluster` (docs/postgres.md).

use std::{sync::Weak, time::Duration};

use anyhow::Context;
use serde::Deserialize;
use sqlx::PgPool;
use sqlx::migrate::Migrator;
use sqlx::postgres::{PgConnectOptions, PgListener, PgPoolOptions};

use crate::secret::Secret;

/// The `[storage]` section.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct StorageConfig {
    pub backend: Backend,
    /// `postgres://user:password@host:port/database` (env `WASMIND_DATABASE_URL`); needed by
    /// the postgres backend.
    pub database_url: Option<Secret>,
    /// Most connections this process holds open.
    pub pool_size: u32,
}

impl Default for StorageConfig {
    fn default() -> Self {
        Self {
            backend: Backend::Embedded,
            database_url: None,
            pool_size: 16,
        }
    }
}

/// Which backend the domains' stores use.
#[derive(Debug, Clone, Copy, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Backend {
    /// The data dir (redb, tantivy, usearch): one machine.
    #[default]
    Embedded,
    /// PostgreSQL with pgvector, shared by every node.
    Postgres,
}

/// The schema, embedded in the binary.
static MIGRATOR: Migrator = sqlx::migrate!("./migrations");

/// How long a connection attempt may wait for the server (and a pooled connection for a
/// free slot) before the caller gets an error.
const CONNECT_PATIENCE: Duration = Duration::from_secs(10);

/// How long the server lets a session sit idle inside a transaction before ending it.
/// Every transaction here runs its statements back to back, so only a node stopped in the
/// middle of one (paused, cut off) idles there — holding row locks that would stall every
/// other node (a reaper waiting for an account's usage row could not fail that very node's
/// agents).
const IDLE_IN_TRANSACTION: &str = "5s";

/// A domain count, id, instant or limit as PostgreSQL's `bigint`: they stay far below
/// `i64::MAX` (epoch ms, sequence numbers, page sizes), and one that did not would mean
/// "no bound", so it saturates rather than fails.
pub fn bigint<N: TryInto<i64>>(n: N) -> i64 {
    n.try_into().unwrap_or(i64::MAX)
}

/// A stored `bigint` read back as the domain's unsigned value (never negative: every one
/// was written from an unsigned value through [`bigint`]).
pub fn unsigned(v: i64) -> u64 {
    u64::try_from(v).unwrap_or_default()
}

/// A node's pool on `url`, its schema up to date: unit tests' on a real PostgreSQL.
#[cfg(test)]
pub async fn test_pool(url: &str) -> PgPool {
    let config = StorageConfig {
        backend: Backend::Postgres,
        database_url: Some(url.into()),
        pool_size: 2,
    };
    connect(&config).await.unwrap()
}

/// Connects to the configured database and brings its schema up to date. The migrations
/// run under PostgreSQL's advisory lock (sqlx takes it), so nodes starting together apply
/// each migration once and the others wait for it.
pub async fn connect(config: &StorageConfig) -> anyhow::Result<PgPool> {
    let url = config
        .database_url
        .as_ref()
        .context("[storage] backend = \"postgres\" needs database_url (or WASMIND_DATABASE_URL)")?;
    let where_ = || format!("connecting to PostgreSQL at {}", redacted(url.expose()));
    let options = (url.expose().parse::<PgConnectOptions>())
        .with_context(where_)?
        .options([("idle_in_transaction_session_timeout", IDLE_IN_TRANSACTION)]);
    let pool = PgPoolOptions::new()
        .max_connections(config.pool_size.max(1))
        .acquire_timeout(CONNECT_PATIENCE)
        .connect_with(options)
        .await
        .with_context(where_)?;
    ensure_vector(&pool).await?;
    MIGRATOR
        .run(&pool)
        .await
        .context("applying the database schema")?;
    Ok(pool)
}

/// Makes pgvector, which the memory tables need, available in the database: created when
/// missing (that takes a superuser: pgvector is not a trusted extension), under an advisory
/// lock, since nodes creating it at once would collide; refused when older than 0.8 (the
/// filtered HNSW scan needs `hnsw.iterative_scan`).
async fn ensure_vector(pool: &PgPool) -> anyhow::Result<()> {
    let mut tx = pool.begin().await?;
    sqlx::query("SELECT pg_advisory_xact_lock(hashtext('wasmind.vector_extension'))")
        .execute(&mut *tx)
        .await?;
    sqlx::query("CREATE EXTENSION IF NOT EXISTS vector")
        .execute(&mut *tx)
        .await
        .context(
            "the database lacks the pgvector extension (≥ 0.8) and this role may not create \
             it: run `CREATE EXTENSION vector` in it as a superuser, or connect as one",
        )?;
    let version: String =
        sqlx::query_scalar("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
            .fetch_one(&mut *tx)
            .await?;
    tx.commit().await?;
    anyhow::ensure!(
        at_least_0_8(&version),
        "the database's pgvector is {version}; wasmind needs 0.8 or later \
         (`ALTER EXTENSION vector UPDATE` once the server has it)"
    );
    Ok(())
}

/// Whether a pgvector version (`0.8.5`) is 0.8 or later.
fn at_least_0_8(version: &str) -> bool {
    let mut parts = version.split('.').map(|p| p.parse::<u32>().unwrap_or(0));
    let major_minor = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
    major_minor >= (0, 8)
}

/// Listens on `channel` for as long as `target` lives, handing each notice's payload to
/// `deliver`. The listener reconnects by itself; what is announced while it is away is
/// missed, so each caller has its own way to catch up (a re-read, a heartbeat).
pub async fn forward_notices<T: Send + Sync + 'static>(
    pool: &PgPool,
    channel: &'static str,
    target: Weak<T>,
    deliver: fn(&T, &str),
) -> sqlx::Result<()> {
    let mut listener = PgListener::connect_with(pool).await?;
    listener.listen(channel).await?;
    tokio::spawn(async move {
        loop {
            let notice = listener.recv().await;
            let Some(target) = target.upgrade() else {
                return;
            };
            match notice {
                Ok(notice) => deliver(&target, notice.payload()),
                Err(e) => {
                    tracing::warn!(channel, error = %e, "notices: the listener lost the database; retrying");
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
            }
        }
    });
    Ok(())
}

/// `url` with any password replaced, for messages.
fn redacted(url: &str) -> String {
    let Ok(mut parsed) = url::Url::parse(url) else {
        return "<a database URL that does not parse, not shown>".to_owned();
    };
    if parsed.password().is_some() {
        let _ = parsed.set_password(Some(HIDDEN));
    }
    let secret = |name: &str| {
        SECRET_PARAMETERS
            .iter()
            .any(|s| s.eq_ignore_ascii_case(name))
    };
    if parsed.query_pairs().any(|(name, _)| secret(&name)) {
        let pairs: Vec<(String, String)> = parsed
            .query_pairs()
            .map(|(name, value)| match secret(&name) {
                true => (name.into_owned(), HIDDEN.to_owned()),
                false => (name.into_owned(), value.into_owned()),
            })
            .collect();
        parsed.query_pairs_mut().clear().extend_pairs(pairs);
    }
    parsed.to_string()
}

/// What a redacted secret reads as.
const HIDDEN: &str = "***";
/// The connection parameters whose values are secrets (libpq's names, as sqlx reads them).
const SECRET_PARAMETERS: [&str; 2] = ["password", "sslpassword"];

/// A store's failure, by the library that failed: what the domains' typed errors carry as
/// their storage variant (records, components, accounts), so a caller can tell a database
/// refusal from unreadable data without parsing text. Never shown to API clients (a 500).
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The data dir's database (redb) failed.
    #[error("redb: {0}")]
    Redb(#[from] redb::Error),
    /// PostgreSQL failed, or refused a statement.
    #[error("database: {0}")]
    Database(#[from] sqlx::Error),
    /// A stored value does not read back as what was written (JSON, a number out of range,
    /// a name), or a row another one points to is gone.
    #[error("stored data unreadable: {0}")]
    Corrupt(String),
    /// A file of the store could not be read or written.
    #[error("file: {0}")]
    Io(#[from] std::io::Error),
    /// The blocking task doing the store's work did not finish (it panicked, or the
    /// runtime is shutting down).
    #[error("storage task did not finish: {0}")]
    Aborted(#[from] tokio::task::JoinError),
}

impl From<serde_json::Error> for StoreError {
    fn from(e: serde_json::Error) -> Self {
        StoreError::Corrupt(e.to_string())
    }
}

/// Implements `From` each storage library error for a domain's error type: with a
/// constructor and a list, as `$make(error.to_string())`; with the type alone, every
/// library error a store meets, through [`StoreError`] (the domain's error has
/// `From<StoreError>`). Either way the conversion is written once.
macro_rules! storage_errors_into {
    (@through $target:ty; $($t:ty),*) => {$(
        impl From<$t> for $target {
            fn from(e: $t) -> Self {
                <$target>::from($crate::storage::StoreError::from(e))
            }
        }
    )*};
    ($target:ty, $make:path; $($t:ty),* $(,)?) => {$(
        impl From<$t> for $target {
            fn from(e: $t) -> Self {
                $make(e.to_string())
            }
        }
    )*};
    ($target:ty) => {
        $crate::storage::storage_errors_into!(@through $target;
            redb::DatabaseError,
            redb::TransactionError,
            redb::TableError,
            redb::StorageError,
            redb::CommitError,
            redb::SetDurabilityError,
            serde_json::Error,
            sqlx::Error,
            std::io::Error,
            tokio::task::JoinError
        );
    };
}
pub(crate) use storage_errors_into;

/// The redb errors a store's code meets, each a [`StoreError::Redb`].
macro_rules! redb_into_store_error {
    ($($t:ty),*) => {$(
        impl From<$t> for StoreError {
            fn from(e: $t) -> Self {
                StoreError::Redb(e.into())
            }
        }
    )*};
}
redb_into_store_error!(
    redb::DatabaseError,
    redb::TransactionError,
    redb::TableError,
    redb::StorageError,
    redb::CommitError,
    redb::SetDurabilityError
);

#[cfg(test)]
mod tests;
