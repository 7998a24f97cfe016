//! toolhost-store-pg: run journals in PostgreSQL, for writers on several machines. A run
//! is written only by the holder of its lease; every takeover of the lease bumps the run's
//! fencing `epoch`, and every journal append is checked against it in the database, so a
//! writer that lost its lease (paused, partitioned, its lease expired) cannot add a record
//! even before it knows it lost it. Records are the file journal's lines, byte for byte,
//! so the hash chain, `verify()`, `show`, the report and resume's checkpoint read them
//! unchanged.
//!
//! # Layout
//!
//! Data flows: [`Database::connect`] (URL → pool → migrations) → a run created in place
//! ([`Database::create_run`]) or queued ([`Database::submit`]) → a [`Lease`] on it
//! ([`Database::claim`], [`Database::claim_next`], kept by a [`Renewer`]) → [`PgStore`], the journal's [`Store`](toolhost_journal::store::Store), one
//! fenced `INSERT` per record → [`Database::journal`], the lines read back for the
//! journal's readers.
//!
//! - `url`: `--database` values checked (a `postgres://` URL) and shown without their
//!   password.
//! - `bridge`: the dedicated runtime the blocking API runs on, so it can be called from
//!   synchronous code and from inside another tokio runtime (of any flavour) alike.
//! - `migrate`: the versioned migrations (`migrations/*.sql`, embedded), each applied in
//!   one transaction under an advisory lock, recorded in `schema_migrations`.
//! - [`lease`]: runs and their leases: create, claim (by id, or the next claimable one
//!   with `FOR UPDATE SKIP LOCKED`), renew, release; [`Renewer`] renews in the background;
//!   [`Fenced`], what a writer that lost its lease is told.
//! - [`store`]: [`PgStore`], appends checked against the lease (epoch, owner, expiry) and
//!   the free `seq`.
//! - [`queue`]: the run queue (migration 0002): [`Database::submit`] a run's spec,
//!   its public [`Status`], [`Database::finish`] / [`Database::hand_back`] by the worker
//!   that held it, [`Database::claim_to_resume`] for `toolhost resume`.
//! - `listen`: [`Listener`], `LISTEN` on the channel the `runs_claimable` trigger
//!   notifies (or the pool calls' channels), read from the connection's message stream,
//!   so idle workers wake for work.
//! - `read`: a run's lines, in `seq` order, as the bytes of a journal file.
//! - [`served`]: runs served over an API by replicas sharing the database (migration
//!   0003): parked for a person's answer and answered from any replica, decisions on
//!   unfinished steps, cancellation, the list of runs and their counts by status;
//!   `toolhost_changes` notifications for those who follow a run.
//! - `cancels`: a cancellation asked for (migration 0005's `toolhost_cancel`) wakes the
//!   [`Renewer`] of the run's holder at once, which renews early and so learns it.
//! - [`calls`]: executor pools (migration 0004): calls of pooled tools queued by the
//!   run's owner, claimed by a worker of the pool under a lease with a fencing epoch, the
//!   outcome written back for the owner to journal; queued again or given up when the
//!   worker dies (by whether the call is idempotent), withdrawn when nobody takes it or
//!   the run is cancelled.
//! - [`tasks`]: MCP tasks shared by replicas (migration 0008): opened under a per-owner
//!   bound, run under a lease by one replica, read and cancelled by any, taken over when
//!   their holder stops renewing, forgotten a ttl after they end.
//! - [`task_input`]: MCP tasks that wait for input (migration 0010): the requests shown by
//!   any replica, answered through any, collected by the holder once all are in.
//!   Migration 0011 ties a program's run to its task ([`Database::create_run_of_task`],
//!   [`Database::run_of_task`]) and keeps the calling client's capabilities with it.
//! - `checks`: draft edits of a plan under review (migration 0009), asked about by any
//!   replica and checked by the run's holder while it waits for the decision.
//!
//! Every method blocks the calling thread for its round trips (as the file journal's
//! writes do) and runs on the database's own threads, never on the caller's runtime.

mod bridge;
pub mod calls;
mod cancels;
mod checks;
pub mod lease;
mod listen;
mod migrate;
pub mod queue;
mod read;
pub mod served;
pub mod store;
pub mod task_input;
mod task_runs;
pub mod tasks;
mod url;

use std::sync::Arc;
use std::time::Duration;

use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod};
use tokio_postgres::NoTls;

use self::bridge::Bridge;
pub use self::calls::{CallState, ClaimedCall, NewCall};
pub use self::lease::{Fenced, Lease, LeaseEvent, Renewer, RunState};
pub use self::listen::Listener;
pub use self::queue::{RunInfo, Status};
pub use self::read::RunEnds;
pub use self::served::{Answer, Cancelled};
pub use self::store::PgStore;
pub use self::task_input::TaskInput;
pub use self::tasks::{NewTask, TakenTask, TaskCancels, TaskEnd, TaskRow};
pub use self::url::shown as shown_url;

/// How long a connection attempt may take before the database counts as unreachable.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// Connections in the pool.
const POOL_SIZE: usize = 4;

/// Why the database refused or failed an operation.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PgError {
    /// A `--database` value that is not a PostgreSQL URL.
    #[error(
        "`{url}` is not a PostgreSQL URL: {reason} (expected postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE)"
    )]
    BadUrl { url: String, reason: String },
    #[error("cannot reach the database at `{url}`: {reason}")]
    Unreachable { url: String, reason: String },
    #[error("cannot migrate the database at `{url}` to schema version {version}: {reason}")]
    Migrate {
        url: String,
        version: i32,
        reason: String,
    },
    #[error("database `{url}`: {reason}")]
    Query { url: String, reason: String },
    #[error("no run `{run}` in the database at `{url}`")]
    NoSuchRun { run: String, url: String },
    #[error("run `{run}` already exists in the database")]
    RunExists { run: String },
    /// Another holder of the task started its run first.
    #[error("MCP task `{task}` has a run already (another replica started it)")]
    TaskHasRun { task: String },
    /// The lease is someone else's (not expired), or the run is stopped.
    #[error("run `{run}` is not claimable: {why}")]
    NotClaimable { run: String, why: String },
    /// A renew or release by a writer whose lease was taken over or expired.
    #[error(transparent)]
    Fenced(#[from] Fenced),
    #[error("run `{run}`: record {seq} is already written")]
    SeqTaken { run: String, seq: u64 },
    #[error("the database's worker thread has stopped")]
    Stopped,
}

/// A PostgreSQL database holding runs and their journals: a connection pool and the
/// thread it runs on. Cheap to clone.
#[derive(Clone)]
pub struct Database {
    db: Shared,
    /// The renewers to wake when their run's cancellation is asked for.
    cancels: Arc<cancels::Cancels>,
    // After the pool: its connections' tasks run on it.
    bridge: Arc<Bridge>,
}

/// What the queries need: the pool and the URL for messages. The futures run on the
/// bridge hold this, never the bridge itself, so the runtime is not kept alive by its
/// own tasks.
#[derive(Clone)]
pub(crate) struct Shared {
    pool: Pool,
    /// The URL without its password, for messages.
    shown: Arc<str>,
    /// The connection settings, for connections outside the pool (a [`Listener`]'s).
    config: Arc<tokio_postgres::Config>,
}

impl std::fmt::Debug for Database {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Database")
            .field("url", &self.db.shown)
            .finish_non_exhaustive()
    }
}

impl Database {
    /// Connects to the database at `url` (`postgres://…`), checks that it answers, and
    /// applies the migrations it lacks (concurrent starters apply each exactly once).
    ///
    /// Every connection runs with `synchronous_commit = on`, whatever the server's
    /// default: an append returns only once its record is durable (see [`PgStore`]).
    pub fn connect(url: &str) -> Result<Database, PgError> {
        let mut config = url::parse(url)?;
        let shown = url::shown(url);
        let options = config.get_options().unwrap_or("").to_string();
        config.options(format!("{options} -c synchronous_commit=on").trim());
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(CONNECT_TIMEOUT);
        }
        let bridge = Bridge::new().map_err(|e| PgError::Query {
            url: shown.clone(),
            reason: format!("cannot start the database thread: {e}"),
        })?;
        let manager = Manager::from_config(
            config.clone(),
            NoTls,
            ManagerConfig {
                recycling_method: RecyclingMethod::Fast,
            },
        );
        let pool = Pool::builder(manager)
            .max_size(POOL_SIZE)
            .runtime(deadpool_postgres::Runtime::Tokio1)
            .create_timeout(Some(CONNECT_TIMEOUT * 2))
            .wait_timeout(Some(CONNECT_TIMEOUT * 6))
            .build()
            .map_err(|e| PgError::Query {
                url: shown.clone(),
                reason: e.to_string(),
            })?;
        let db = Database {
            db: Shared {
                pool,
                shown: shown.into(),
                config: Arc::new(config),
            },
            cancels: Arc::default(),
            bridge: Arc::new(bridge),
        };
        let shared = db.db.clone();
        db.block(async move { migrate::apply(&shared.pool, &shared.shown).await })?;
        Ok(db)
    }

    /// The URL without its password.
    pub fn url(&self) -> &str {
        &self.db.shown
    }

    /// The schema versions applied, in order.
    pub fn schema_versions(&self) -> Result<Vec<i32>, PgError> {
        let db = self.db.clone();
        self.block(async move {
            let c = db.client().await?;
            let rows = c
                .query(
                    "SELECT version FROM schema_migrations ORDER BY version",
                    &[],
                )
                .await
                .map_err(|e| db.query_err(&e))?;
            Ok(rows.iter().map(|r| r.get(0)).collect())
        })
    }

    /// Runs `f` on the database's threads and waits for it.
    fn block<T, F>(&self, f: F) -> Result<T, PgError>
    where
        T: Send + 'static,
        F: Future<Output = Result<T, PgError>> + Send + 'static,
    {
        self.bridge.block(f).unwrap_or(Err(PgError::Stopped))
    }
}

impl Shared {
    pub(crate) fn url(&self) -> &str {
        &self.shown
    }

    /// A pooled connection.
    async fn client(&self) -> Result<deadpool_postgres::Object, PgError> {
        self.pool.get().await.map_err(|e| PgError::Unreachable {
            url: self.shown.to_string(),
            reason: url::pool_reason(&e),
        })
    }

    fn query_err(&self, e: &tokio_postgres::Error) -> PgError {
        PgError::Query {
            url: self.shown.to_string(),
            reason: url::db_reason(e),
        }
    }
}
