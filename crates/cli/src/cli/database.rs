//! `--database URL` (or `TOOLHOST_DATABASE_URL`): run journals in PostgreSQL instead of the
//! state directory. `journal verify`, `journal show` and `report` read a run's records
//! from there; `run` journals into it under a lease it renews while the run goes on and
//! releases at the end (see `toolhost_store_pg`).

use std::time::Duration;

use super::{Failure, exit};
use toolhost_engine::{RunReport, StopReason};
use toolhost_journal::{Journal, Redactor, RunStart, Verified, report};
use toolhost_store_pg::{Database, Lease, PgError, PgStore, Renewer, RunInfo, Status};

/// How long a run's lease lasts without renewal; renewed every third of it.
pub(crate) const LEASE: Duration = Duration::from_secs(30);

/// Where the journals are: `--database URL`, else `TOOLHOST_DATABASE_URL`.
#[derive(Debug, clap::Args)]
pub(crate) struct DatabaseArg {
    /// Journals in the PostgreSQL database at URL (postgres://USER@HOST:PORT/DATABASE)
    /// instead of the state directory [env: TOOLHOST_DATABASE_URL]
    #[arg(long, value_name = "URL")]
    database: Option<String>,
}

impl DatabaseArg {
    /// The `--database` flag's value, if given (not the environment's).
    pub(crate) fn given(&self) -> Option<String> {
        self.database.clone()
    }

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
pub(crate) fn failure(e: PgError) -> Failure {
    let code = match e {
        PgError::BadUrl { .. } | PgError::NoSuchRun { .. } => exit::USAGE,
        PgError::NotClaimable { .. } => exit::LOCKED,
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

/// Run `run`'s journal from the database at `url` for `toolhost replay` (`doing`:
/// "replayed"): it must verify whole and hold a record.
pub(crate) fn recorded(url: &str, run: &str, doing: &str) -> Result<Verified, Failure> {
    let db = connect(url)?;
    let v = db.verify(run, None).map_err(failure)?;
    let place = db.location(run);
    match &v.problem {
        Some(p) => Err(Failure::new(
            exit::JOURNAL,
            format!("the journal of {place} is broken, so run {run} cannot be {doing}: {p}"),
        )),
        None if v.records.is_empty() => Err(Failure::new(
            exit::JOURNAL,
            format!("{place} holds no record, so run {run} cannot be {doing}"),
        )),
        None => Ok(v),
    }
}

/// Deletes (unless `dry_run`) the stopped runs of the database at `url` last written more
/// than `age` ago; returns their ids.
pub(crate) fn prune(url: &str, age: Duration, dry_run: bool) -> Result<Vec<String>, Failure> {
    connect(url)?.prune(age, dry_run).map_err(failure)
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
    /// Stops renewing and gives the lease up, leaving the run `stopped` with the status
    /// its `report` says (carried on, if at all, by a person's decision; a run that could
    /// not go on at all is `failed`); a lease already lost is a warning.
    pub(crate) fn release(self, report: Option<&RunReport>, err: &mut dyn std::io::Write) {
        drop(self.renewer);
        let (status, reason) = match report {
            Some(r) => status_of(r, false),
            None => (Status::Failed, "the run could not go on".to_string()),
        };
        if let Err(e) = self.db.finish(&self.lease, status, &reason) {
            let _ = super::say!(err, "warning: {e}");
        }
    }
}

/// The queue status of a run that stopped as `report` says, and its stop reason;
/// `waiting` when it stopped for a decision on a step that is not idempotent.
pub(crate) fn status_of(report: &RunReport, waiting: bool) -> (Status, String) {
    let status = match &report.stop {
        StopReason::Completed | StopReason::PlannerStopped => Status::Completed,
        StopReason::Cancelled => Status::Cancelled,
        StopReason::Escalated { .. } if waiting => Status::WaitingForDecision,
        _ => Status::Failed,
    };
    (status, report.stop.to_string())
}

fn owner(command: &str) -> String {
    format!(
        "toolhost {command}, pid {} on {}",
        std::process::id(),
        toolhost_journal::lock::hostname()
    )
}

/// A run of the database carried on by `toolhost resume`: the lease claimed for it, kept
/// renewed, and how the run stood before (restored when nothing is carried on).
pub(crate) struct Resuming {
    db: Database,
    lease: Lease,
    renewer: Renewer,
    before: Box<RunInfo>,
}

impl Resuming {
    /// The journal's store, appending under this claim's lease.
    pub(crate) fn store(&self) -> PgStore {
        PgStore::new(&self.db, self.lease.clone())
    }

    pub(crate) fn location(&self) -> String {
        self.db.location(&self.lease.run)
    }

    /// Ends the claim with the status `report` says (`waiting`: see [`status_of`]).
    pub(crate) fn finish(self, report: &RunReport, waiting: bool, err: &mut dyn std::io::Write) {
        drop(self.renewer);
        let (status, reason) = status_of(report, waiting);
        if let Err(e) = self.db.finish(&self.lease, status, &reason) {
            let _ = super::say!(err, "warning: {e}");
        }
    }

    /// Ends the claim with nothing carried on: the run is left as it stood (a run that
    /// was to be carried on by whoever claims it next stays so).
    pub(crate) fn give_back(self, err: &mut dyn std::io::Write) {
        drop(self.renewer);
        let r = match self.before.status {
            Status::Queued | Status::Running => self.db.hand_back(&self.lease),
            status => self.db.finish(
                &self.lease,
                status,
                self.before.stop_reason.as_deref().unwrap_or(""),
            ),
        };
        if let Err(e) = r {
            let _ = super::say!(err, "warning: {e}");
        }
    }
}

/// Claims run `run` of the database at `url` for `toolhost resume` and reads its journal
/// back, verified (with `head`, its last record must hash to it). A broken chain, or a
/// run that another process holds, is refused, and nothing is changed.
pub(crate) fn resume(
    url: &str,
    run: &str,
    head: Option<&str>,
) -> Result<(Resuming, Verified), Failure> {
    let db = connect(url)?;
    let before = db.run_info(run).map_err(failure)?;
    let lease = db
        .claim_to_resume(run, &owner("resume"), LEASE)
        .map_err(failure)?;
    let renewer = db.keep(&lease);
    let claim = Resuming {
        db,
        lease,
        renewer,
        before: Box::new(before),
    };
    let checked = claim
        .db
        .verify(run, head)
        .map_err(failure)
        .and_then(|v| match &v.problem {
            Some(p) => Err(Failure::new(
                exit::JOURNAL,
                format!(
                    "the journal of run {run} in {} is broken, so it cannot be carried on: {p}",
                    claim.location()
                ),
            )),
            None if v.records.is_empty() => Err(Failure::new(
                exit::USAGE,
                format!(
                    "run {run} in {} has no journal yet (it is queued): a worker starts it",
                    claim.location()
                ),
            )),
            None => Ok(v),
        });
    match checked {
        Ok(v) => Ok((claim, v)),
        Err(f) => {
            claim.give_back(&mut std::io::sink());
            Err(f)
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
    let lease = db.create_run(&id, &owner("run"), LEASE).map_err(failure)?;
    let renewer = db.keep(&lease);
    let store = PgStore::new(&db, lease.clone());
    let journal = match Journal::create_in(Box::new(store), &id, start, redactor) {
        Ok(j) => j,
        Err(e) => {
            // Nothing to carry on: no one is to claim the run.
            drop(renewer);
            let _ = db.finish(&lease, Status::Failed, &e.to_string());
            return Err(Failure::new(exit::JOURNAL, e.to_string()));
        }
    };
    Ok((journal, Claim { db, lease, renewer }))
}
