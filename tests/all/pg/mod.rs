//! The run journal in PostgreSQL (`toolhost-store-pg`), against a real server started by
//! `toolhost_tests::postgres` (one database per test): migrations under concurrent
//! starters, leases and fencing, `seq` conflicts, and the CLI's `--database` (the real
//! binary as a subprocess). `TOOLHOST_SKIP_POSTGRES=1` skips them.

mod cancel;
mod cli;
mod cost;
mod decisions;
mod edits;
mod failover;
mod lease;
mod migrate;
mod notified;
mod partition;
mod pool_serve;
mod pool_trust;
mod pools;
mod queue;
mod replay;
pub(crate) mod serve;
mod shutdown;
mod throughput;

use std::time::Duration;

use toolhost_store_pg::{Database, Lease, PgError, PgStore};
use toolhost_tests::postgres::{TestDb, database};

/// A fresh database, connected and migrated; `None` when PostgreSQL tests are skipped.
fn connected(test: &str) -> Option<(TestDb, Database)> {
    let t = database(test)?;
    let db = Database::connect(&t.url).unwrap_or_else(|e| panic!("{e}"));
    Some((t, db))
}

/// A journal line as the journal writes one (the content does not matter to the store).
fn line(seq: u64) -> Vec<u8> {
    format!("{{\"seq\":{seq}}}\n").into_bytes()
}

/// What an append through the journal's `Store` interface refused, as the store's typed
/// error.
fn store_error(e: &std::io::Error) -> &PgError {
    e.get_ref()
        .and_then(|e| e.downcast_ref::<PgError>())
        .unwrap_or_else(|| panic!("not a database error: {e}"))
}

fn store(db: &Database, lease: &Lease) -> PgStore {
    PgStore::new(db, lease.clone())
}

const LONG: Duration = Duration::from_secs(60);

/// A `run_started` for journals the tests write straight through a store (no task file).
fn run_start() -> toolhost_journal::RunStart {
    let digest = toolhost_journal::writer::FileDigest {
        path: "p".into(),
        sha256: "0".repeat(64),
        signer: None,
    };
    toolhost_journal::RunStart {
        goal: "g".into(),
        mode: toolhost_engine::Mode::PlanThenExecute,
        task: None,
        policy: digest.clone(),
        tools: std::collections::BTreeMap::from([("calc".to_string(), digest)]),
        budgets: toolhost_engine::Budgets::default(),
        max_parallel: 1,
        replay_of: None,
        interpreter: None,
    }
}

/// Polls `done` until it holds; fails naming `what` after `limit`.
fn wait_for(what: &str, limit: Duration, mut done: impl FnMut() -> bool) {
    let start = std::time::Instant::now();
    while !done() {
        assert!(
            start.elapsed() < limit,
            "{what} did not happen in {limit:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}
