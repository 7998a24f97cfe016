//! The database choice: run journals in PostgreSQL (`--database URL`, else
//! `TOOLHOST_DATABASE_URL`) instead of the state directory. `journal verify`, `journal
//! show` and `report` read a run's records from there; `run` journals into it under a
//! lease it renews while the run goes on and releases at the end (see
//! `toolhost_store_pg`); `resume` claims a run's lease before reading its journal.

use std::time::Duration;

use crate::error::{AppError, usage};
use toolhost_engine::{RunReport, StopReason};
use toolhost_journal::{Journal, Redactor, RunStart, Verified, report};
use toolhost_store_pg::{Database, Lease, PgError, PgStore, Renewer, RunInfo, Status};

/// How long a run's lease lasts without renewal; renewed every third of it.
pub const LEASE: Duration = Duration::from_secs(30);

/// Where a new (or carried-on) run is journaled in the database: its URL, how long the
/// lease lasts unrenewed, and the MCP task the run belongs to, if any (a program sent as a
/// task: its run is carried on by the MCP replica that takes the task over, never by a
/// `toolhost worker`).
#[derive(Debug, Clone, Copy)]
pub struct Place<'a> {
    pub url: &'a str,
    pub lease: Duration,
    pub mcp_task: Option<&'a str>,
}

impl<'a> Place<'a> {
    /// A run of the database at `url` under the usual [`LEASE`], of no MCP task.
    pub fn at(url: &'a str) -> Place<'a> {
        Place {
            url,
            lease: LEASE,
            mcp_task: None,
        }
    }

    /// Who holds the lease: this command of this process on this host.
    fn owner(&self, command: &str) -> String {
        owner(if self.mcp_task.is_some() {
            "mcp"
        } else {
            command
        })
    }
}

/// The database a command journals in: `given` (`--database`), else
/// `TOOLHOST_DATABASE_URL` (unless empty); `None`: the state directory.
pub fn url(given: Option<String>) -> Option<String> {
    given.or_else(|| {
        std::env::var("TOOLHOST_DATABASE_URL")
            .ok()
            .filter(|u| !u.is_empty())
    })
}

/// A database error by kind: a bad URL or an unknown run is a usage error, a run another
/// process holds is locked, anything else (unreachable, a failed query, a refused write)
/// a journal one.
pub fn failure(e: PgError) -> AppError {
    match e {
        PgError::BadUrl { .. } | PgError::NoSuchRun { .. } => usage(e.to_string()),
        PgError::NotClaimable { .. } => AppError::Locked(e.to_string()),
        _ => AppError::Journal(e.to_string()),
    }
}

pub fn connect(url: &str) -> Result<Database, AppError> {
    Database::connect(url).map_err(failure)
}

/// Run `run`'s journal from the database at `url`, verified (with `head`, its last
/// record must hash to it).
pub fn verified(url: &str, run: &str, head: Option<&str>) -> Result<Verified, AppError> {
    connect(url)?.verify(run, head).map_err(failure)
}

/// Run `run`'s journal from the database at `url` for `toolhost replay` (`doing`:
/// "replayed"): it must verify whole and hold a record.
pub fn recorded(url: &str, run: &str, doing: &str) -> Result<Verified, AppError> {
    let db = connect(url)?;
    let v = db.verify(run, None).map_err(failure)?;
    let place = db.location(run);
    match &v.problem {
        Some(p) => Err(AppError::Journal(format!(
            "the journal of {place} is broken, so run {run} cannot be {doing}: {p}"
        ))),
        None if v.records.is_empty() => Err(AppError::Journal(format!(
            "{place} holds no record, so run {run} cannot be {doing}"
        ))),
        None => Ok(v),
    }
}

/// Deletes (unless `dry_run`) the stopped runs of the database at `url` last written more
/// than `age` ago; returns their ids.
pub fn prune(url: &str, age: Duration, dry_run: bool) -> Result<Vec<String>, AppError> {
    connect(url)?.prune(age, dry_run).map_err(failure)
}

/// Run `run`'s report from the database at `url`.
pub fn report(url: &str, run: &str) -> Result<report::Report, AppError> {
    let db = connect(url)?;
    let bytes = db.journal(run).map_err(failure)?;
    let rep = report::load_bytes(run, db.location(run).into(), &bytes);
    if rep.verified.stop().is_some() {
        return Ok(rep);
    }
    // No stop yet: the run store says what the run is doing.
    let live = match db.run_info(run).map_err(failure)?.status {
        Status::Queued => "the run is queued in the run store",
        Status::Running => "a replica runs it (status `running`, its lease renewed)",
        Status::WaitingForApproval => {
            "it waits for a person's decision (over the API or in the console)"
        }
        Status::WaitingForDecision => {
            "it waits for a decision on steps cut off mid-call (`toolhost resume --rerun` or `--abandon`)"
        }
        _ => return Ok(rep),
    };
    Ok(rep.waiting(live.to_string()))
}

/// A run journaled in the database: its lease, kept renewed until [`Claim::release`].
pub struct Claim {
    db: Database,
    lease: Lease,
    renewer: Renewer,
}

impl Claim {
    /// Stops renewing and gives the lease up, leaving the run `stopped` with the status
    /// its `report` says (carried on, if at all, by a person's decision; a run that could
    /// not go on at all is `failed`); a lease already lost is a warning.
    pub fn release(self, report: Option<&RunReport>, err: &mut dyn std::io::Write) {
        drop(self.renewer);
        let (status, reason) = match report {
            Some(r) => status_of(r, false),
            None => (Status::Failed, "the run could not go on".to_string()),
        };
        if let Err(e) = self.db.finish(&self.lease, status, &reason) {
            crate::warn(err, &e);
        }
    }
}

/// The queue status of a run that stopped as `report` says, and its stop reason;
/// `waiting` when it stopped for a decision on a step that is not idempotent.
pub fn status_of(report: &RunReport, waiting: bool) -> (Status, String) {
    let status = match &report.stop {
        StopReason::Completed | StopReason::PlannerStopped => Status::Completed,
        StopReason::Cancelled { .. } => Status::Cancelled,
        StopReason::RejectedByHuman { .. } => Status::Rejected,
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
pub struct Resuming {
    db: Database,
    lease: Lease,
    renewer: Renewer,
    before: Box<RunInfo>,
}

impl Resuming {
    /// The journal's store, appending under this claim's lease.
    pub fn store(&self) -> PgStore {
        PgStore::new(&self.db, self.lease.clone())
    }

    pub fn location(&self) -> String {
        self.db.location(&self.lease.run)
    }

    /// Ends the claim with the status `report` says (`waiting`: see [`status_of`]).
    pub fn finish(self, report: &RunReport, waiting: bool, err: &mut dyn std::io::Write) {
        drop(self.renewer);
        let (status, reason) = status_of(report, waiting);
        if let Err(e) = self.db.finish(&self.lease, status, &reason) {
            crate::warn(err, &e);
        }
    }

    /// Ends the claim with nothing carried on: the run is left as it stood (a run that
    /// was to be carried on by whoever claims it next stays so).
    pub fn give_back(self, err: &mut dyn std::io::Write) {
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
            crate::warn(err, &e);
        }
    }
}

/// Claims run `run` of the database at `place` for `toolhost resume` and reads its
/// journal back, verified (with `head`, its last record must hash to it). A broken chain,
/// or a run that another process holds, is refused, and nothing is changed.
pub fn resume(
    place: &Place<'_>,
    run: &str,
    head: Option<&str>,
) -> Result<(Resuming, Verified), AppError> {
    resume_within(place, run, head, Duration::ZERO, &|| false)
}

/// [`resume`], waiting up to `patience` for a lease another process holds to be given up
/// or to lapse (looking every third of `place`'s lease) unless `stopped` says to give up.
pub fn resume_within(
    place: &Place<'_>,
    run: &str,
    head: Option<&str>,
    patience: Duration,
    stopped: &dyn Fn() -> bool,
) -> Result<(Resuming, Verified), AppError> {
    let db = connect(place.url)?;
    let until = std::time::Instant::now() + patience;
    let (before, lease) = loop {
        let before = db.run_info(run).map_err(failure)?;
        match db.claim_to_resume(run, &place.owner("resume"), place.lease) {
            Ok(lease) => break (before, lease),
            Err(PgError::NotClaimable { .. })
                if std::time::Instant::now() < until && !stopped() =>
            {
                std::thread::sleep((place.lease / 3).max(Duration::from_millis(10)));
            }
            Err(e) => return Err(failure(e)),
        }
    };
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
            Some(p) => Err(AppError::Journal(format!(
                "the journal of run {run} in {} is broken, so it cannot be carried on: {p}",
                claim.location()
            ))),
            None if v.records.is_empty() => Err(usage(format!(
                "run {run} in {} has no journal yet (it is queued): a worker starts it",
                claim.location()
            ))),
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

/// Creates the journal of a new run in the database at `place`: the run is created under
/// a lease held by this process (of the MCP task `place` names, if any), and its
/// `run_started` written.
pub fn open(
    place: &Place<'_>,
    start: &RunStart,
    redactor: Redactor,
) -> Result<(Journal, Claim), AppError> {
    let db = connect(place.url)?;
    let id = toolhost_journal::new_run_id();
    let owner = place.owner("run");
    let lease = match place.mcp_task {
        Some(task) => db.create_run_of_task(&id, task, &owner, place.lease),
        None => db.create_run(&id, &owner, place.lease),
    }
    .map_err(failure)?;
    let renewer = db.keep(&lease);
    let store = PgStore::new(&db, lease.clone());
    let journal = match Journal::create_in(Box::new(store), &id, start, redactor) {
        Ok(j) => j,
        Err(e) => {
            // Nothing to carry on: no one is to claim the run.
            drop(renewer);
            let _ = db.finish(&lease, Status::Failed, &e.to_string());
            return Err(AppError::Journal(e.to_string()));
        }
    };
    Ok((journal, Claim { db, lease, renewer }))
}
