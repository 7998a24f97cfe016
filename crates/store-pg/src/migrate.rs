//! Versioned migrations, applied when a [`Database`](super::Database) connects: each
//! embedded SQL file runs in one transaction together with its row in
//! `schema_migrations`, so a migration is either wholly applied and recorded or not at
//! all. Starters that race (several replicas starting at once) serialise on a
//! transaction-scoped advisory lock and skip what another already applied; a starter that
//! dies mid-migration loses its lock with its session and its transaction rolls back.

use deadpool_postgres::Pool;

use super::PgError;
use super::url::{db_reason, pool_reason};

/// `(version, name, SQL)`, in order. Versions only grow; an applied file never changes.
const MIGRATIONS: &[(i32, &str, &str)] = &[
    (
        1,
        "runs_and_journal",
        include_str!("../migrations/0001_runs_and_journal.sql"),
    ),
    (
        2,
        "run_queue",
        include_str!("../migrations/0002_run_queue.sql"),
    ),
    (
        3,
        "served_runs",
        include_str!("../migrations/0003_served_runs.sql"),
    ),
    (
        4,
        "step_calls",
        include_str!("../migrations/0004_step_calls.sql"),
    ),
    (
        5,
        "cancel_notify",
        include_str!("../migrations/0005_cancel_notify.sql"),
    ),
    (
        6,
        "rejected_status",
        include_str!("../migrations/0006_rejected_status.sql"),
    ),
    (
        7,
        "cancelled_by",
        include_str!("../migrations/0007_cancelled_by.sql"),
    ),
    (
        8,
        "mcp_tasks",
        include_str!("../migrations/0008_mcp_tasks.sql"),
    ),
    (
        9,
        "plan_checks",
        include_str!("../migrations/0009_plan_checks.sql"),
    ),
    (
        10,
        "mcp_task_input",
        include_str!("../migrations/0010_mcp_task_input.sql"),
    ),
    (
        11,
        "mcp_program_runs",
        include_str!("../migrations/0011_mcp_program_runs.sql"),
    ),
];

/// The advisory lock key all starters take: "toolhost" in ASCII.
const LOCK_KEY: i64 = 0x746f_6f6c_686f_7374;

const BOOTSTRAP: &str = "CREATE TABLE IF NOT EXISTS schema_migrations (
    version    integer     PRIMARY KEY,
    name       text        NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now()
)";

pub(crate) async fn apply(pool: &Pool, url: &str) -> Result<(), PgError> {
    let mut client = pool.get().await.map_err(|e| PgError::Unreachable {
        url: url.to_string(),
        reason: pool_reason(&e),
    })?;
    for &(version, name, sql) in MIGRATIONS {
        let failed = |e: tokio_postgres::Error| PgError::Migrate {
            url: url.to_string(),
            version,
            reason: db_reason(&e),
        };
        let tx = client.transaction().await.map_err(failed)?;
        // `CREATE TABLE IF NOT EXISTS` is not safe against a concurrent create: the lock
        // comes first.
        tx.execute("SELECT pg_advisory_xact_lock($1)", &[&LOCK_KEY])
            .await
            .map_err(failed)?;
        tx.batch_execute(BOOTSTRAP).await.map_err(failed)?;
        let done = tx
            .query_opt(
                "SELECT 1 FROM schema_migrations WHERE version = $1",
                &[&version],
            )
            .await
            .map_err(failed)?;
        if done.is_some() {
            tx.commit().await.map_err(failed)?;
            continue;
        }
        tx.batch_execute(sql).await.map_err(failed)?;
        tx.execute(
            "INSERT INTO schema_migrations (version, name) VALUES ($1, $2)",
            &[&version, &name],
        )
        .await
        .map_err(failed)?;
        tx.commit().await.map_err(failed)?;
        tracing::info!(version, name, "database migrated");
    }
    Ok(())
}
