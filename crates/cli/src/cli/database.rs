//! `--database URL` (or `TOOLHOST_DATABASE_URL`): run journals in PostgreSQL instead of the
//! state directory. `journal verify`, `journal show` and `report` read a run's records
//! from there; `run` journals into it under a lease it renews while the run goes on and
//! releases at the end (see `toolhost_store_pg`).

use std::time::Duration;

use super::{Failure, exit};
use toolhost_journal::{Journal, Redactor, RunStart, Verified, report};
use toolhost_store_pg::{Database, Lease, PgError, PgStore, Renewer, RunState};

/// How long a run's lease lasts without renewal; renewed every third of it.
const LEASE: Duration = Duration::from_secs(30);

/// Where the journals are: `--database URL`, else `TOOLHOST_DATABASE_URL`.
#[derive(Debug, clap::Args)]
pub(crate) struct DatabaseArg {
    /// Journals in the PostgreSQL database at URL (postgres://USER@HOST:PORT/DATABASE)
    /// instead of the state directory [env: TOOLHOST_DATABASE_URL]
    #[arg(long, value_name = "URL")]
    database: Option<String>,
}

impl DatabaseArg {
    /// The database URL given, if any.
    pub(crate) fn url(&self) -> Option<String> {
        self.database.clone().or_else(|| {
            std::env::var("TOOLHOST_DATABASE_URL")
                .ok()
                .filter(|u| !u.is_empty())
        })
    }
}

/// A database error as the CLI reports it: a bad URL or an unknown run is a usage error
/// (exit 2), anything else (unreachable, a failed query, a refused write) a journal one.
fn failure(e: PgError) -> Failure {
    let code = match e {
        PgError::BadUrl { .. } | PgError::NoSuchRun { .. } => exit::USAGE,
        _ => exit::JOURNAL,
    };
    Failure::new(code, e.to_string())
}

pub(crate) fn connect(url: &str) -> Result<Database, Failure> {
    Database::connect(url).map_err(failure)
}

/// Run `run`'s journal from the database at `url`, verified (with `head`, its last
/// record must hash to it).
pub(crate) fn verified(url: &str, run: &str, head: Option<&str>) -> Result<Verified, Failure> {
    connect(url)?.verify(run, head).map_err(failure)
}

/// Run `run`'s report from the database at `url`.
pub(crate) fn report(url: &str, run: &str) -> Result<report::Report, Failure> {
    let db = connect(url)?;
    let bytes = db.journal(run).map_err(failure)?;
    Ok(report::load_bytes(run, db.location(run).into(), &bytes))
}

/// A run journaled in the database: its lease, kept renewed until [`Claim::release`].
pub(crate) struct Claim {
    db: Database,
    lease: Lease,
    renewer: Renewer,
}

impl Claim {
    /// Stops renewing and gives the lease up, leaving the run `stopped` (carried on, if
    /// at all, by a person's decision); a lease already lost is a warning.
    pub(crate) fn release(self, err: &mut dyn std::io::Write) {
        drop(self.renewer);
        if let Err(e) = self.db.release(&self.lease, RunState::Stopped) {
            let _ = writeln!(err, "warning: {e}");
        }
    }
}

/// Creates the journal of a new `toolhost run` in the database at `url`: the run is
/// created under a lease held by this process, and its `run_started` written.
pub(crate) fn open(
    url: &str,
    start: &RunStart,
    redactor: Redactor,
) -> Result<(Journal, Claim), Failure> {
    let db = connect(url)?;
    let id = toolhost_journal::new_run_id();
    let owner = format!(
        "toolhost run, pid {} on {}",
        std::process::id(),
        toolhost_journal::lock::hostname()
    );
    let lease = db.create_run(&id, &owner, LEASE).map_err(failure)?;
    let renewer = db.keep(&lease);
    let store = PgStore::new(&db, lease.clone());
    let journal = match Journal::create_in(Box::new(store), &id, start, redactor) {
        Ok(j) => j,
        Err(e) => {
            // Nothing to carry on: no one is to claim the run.
            drop(renewer);
            let _ = db.release(&lease, RunState::Stopped);
            return Err(Failure::new(exit::JOURNAL, e.to_string()));
        }
    };
    Ok((journal, Claim { db, lease, renewer }))
}
