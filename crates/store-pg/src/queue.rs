//! The run queue: runs submitted with the spec a worker starts them from, their public
//! [`Status`], and the end of a run as a worker records it.
//!
//! A submitted run is `active` with no lease and no journal: the next
//! [`claim_next`](Database::claim_next) takes it (and the `runs_claimable` trigger wakes
//! the workers that [`listen`](Database::listen)). A claimed run is `running`; a worker
//! that ends it [`finish`](Database::finish)es it (`stopped`, with its status and stop
//! reason), or [`hand_back`](Database::hand_back)s it when it shuts down before the end,
//! for another worker to take over from its journal.

use std::str::FromStr;
use std::time::Duration;

use super::lease::{Lease, millis};
use super::{Database, PgError};

/// Where a run is, as people and API clients are shown it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Status {
    /// Submitted; no worker has started it.
    Queued,
    /// A worker holds it (or will take it over once the holder's lease expires).
    Running,
    /// Held by a worker that waits for a person's answer to its `pending` plan or step
    /// (a run served with approvals).
    WaitingForApproval,
    /// Stopped for a person's decision: a step that is not idempotent started and did
    /// not finish (`toolhost resume --rerun/--abandon`, or a decision over the API).
    WaitingForDecision,
    Completed,
    /// Stopped for any other reason (a budget, an escalation, a broken journal); the
    /// stop reason says which.
    Failed,
    /// A person rejected its plan, a step or a question.
    Rejected,
    Cancelled,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Queued => "queued",
            Status::Running => "running",
            Status::WaitingForApproval => "waiting_for_approval",
            Status::WaitingForDecision => "waiting_for_decision",
            Status::Completed => "completed",
            Status::Failed => "failed",
            Status::Rejected => "rejected",
            Status::Cancelled => "cancelled",
        }
    }
}

impl FromStr for Status {
    type Err = String;

    fn from_str(s: &str) -> Result<Status, String> {
        Ok(match s {
            "queued" => Status::Queued,
            "running" => Status::Running,
            "waiting_for_approval" => Status::WaitingForApproval,
            "waiting_for_decision" => Status::WaitingForDecision,
            "completed" => Status::Completed,
            "failed" => Status::Failed,
            "rejected" => Status::Rejected,
            "cancelled" => Status::Cancelled,
            other => return Err(format!("`{other}` is not a run status")),
        })
    }
}

impl std::fmt::Display for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A run as the queue sees it.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct RunInfo {
    pub run: String,
    pub status: Status,
    pub stop_reason: Option<String>,
    /// The spec it was submitted with (JSON text); `None` for a run started in place.
    pub spec: Option<String>,
    pub cancel_requested: bool,
    /// Claims that took an expired lease over.
    pub takeovers: i32,
    pub epoch: i64,
    /// Journal records written.
    pub records: i64,
    /// What the run waits for a person to decide (JSON text), while
    /// [`Status::WaitingForApproval`].
    pub pending: Option<String>,
    /// A person's decision not yet taken by the run's holder (JSON text).
    pub decision: Option<String>,
}

/// The columns [`RunInfo::of_row`] reads, in its order.
pub(crate) const INFO_COLUMNS: &str =
    "id, status, stop_reason, spec::text, cancel_requested, takeovers, epoch,
    (SELECT count(*) FROM journal_records WHERE run_id = runs.id), pending::text, decision::text";

impl RunInfo {
    pub(crate) fn of_row(row: &tokio_postgres::Row, url: &str) -> Result<RunInfo, PgError> {
        let status: String = row.get(1);
        Ok(RunInfo {
            run: row.get(0),
            status: status.parse().map_err(|reason| PgError::Query {
                url: url.to_string(),
                reason,
            })?,
            stop_reason: row.get(2),
            spec: row.get(3),
            cancel_requested: row.get(4),
            takeovers: row.get(5),
            epoch: row.get(6),
            records: row.get(7),
            pending: row.get(8),
            decision: row.get(9),
        })
    }
}

impl Database {
    /// Enqueues a run to be started from `spec` (a JSON document: what the worker needs
    /// to start it); returns its id. Workers that listen are woken.
    pub fn submit(&self, spec: &str) -> Result<String, PgError> {
        let (db, spec) = (self.db.clone(), spec.to_string());
        let run = toolhost_journal::new_run_id();
        self.block(async move {
            let c = db.client().await?;
            let n = c
                .execute(
                    "INSERT INTO runs (id, state, status, spec) VALUES ($1, 'active', 'queued', $2::text::jsonb)
                     ON CONFLICT (id) DO NOTHING",
                    &[&run, &spec],
                )
                .await
                .map_err(|e| db.query_err(&e))?;
            if n == 1 {
                Ok(run)
            } else {
                Err(PgError::RunExists { run })
            }
        })
    }

    /// Run `run` as the queue sees it.
    pub fn run_info(&self, run: &str) -> Result<RunInfo, PgError> {
        let (db, run) = (self.db.clone(), run.to_string());
        self.block(async move {
            let c = db.client().await?;
            let row = c
                .query_opt(
                    &format!("SELECT {INFO_COLUMNS} FROM runs WHERE id = $1"),
                    &[&run],
                )
                .await
                .map_err(|e| db.query_err(&e))?;
            match row {
                Some(row) => RunInfo::of_row(&row, db.url()),
                None => Err(PgError::NoSuchRun {
                    run,
                    url: db.url().to_string(),
                }),
            }
        })
    }

    /// Ends `lease`'s run: the lease released, the run `stopped` with `status` and
    /// `stop_reason`; refused (as [`Fenced`](crate::Fenced)) when the lease was lost.
    pub fn finish(&self, lease: &Lease, status: Status, stop_reason: &str) -> Result<(), PgError> {
        self.end(lease, "stopped", status, Some(stop_reason.to_string()))
    }

    /// Gives `lease`'s run back unfinished (a worker shutting down): the lease released,
    /// the run `active` for the next claimer, who takes it over from its journal (`running`)
    /// or starts it (`queued`: nothing of it was journaled yet).
    pub fn hand_back(&self, lease: &Lease) -> Result<(), PgError> {
        self.end(lease, "active", Status::Running, None)
    }

    fn end(
        &self,
        lease: &Lease,
        state: &'static str,
        status: Status,
        stop_reason: Option<String>,
    ) -> Result<(), PgError> {
        let (db, l) = (self.db.clone(), lease.clone());
        self.block(async move {
            let c = db.client().await?;
            let n = c
                .execute(
                    "UPDATE runs SET lease_owner = NULL, lease_expires = NULL, state = $4,
                         status = CASE WHEN $4 = 'active' AND NOT EXISTS
                                           (SELECT 1 FROM journal_records WHERE run_id = runs.id)
                                       THEN 'queued' ELSE $5 END,
                         stop_reason = $6, pending = NULL, decision = NULL, updated_at = now()
                     WHERE id = $1 AND epoch = $2 AND lease_owner = $3 AND lease_expires > now()",
                    &[
                        &l.run,
                        &l.epoch,
                        &l.owner,
                        &state,
                        &status.as_str(),
                        &stop_reason,
                    ],
                )
                .await
                .map_err(|e| db.query_err(&e))?;
            if n == 1 {
                Ok(())
            } else {
                Err(db.fenced(&c, &l).await.into())
            }
        })
    }

    /// Takes the lease of run `run` to carry it on by hand (`toolhost resume`), whether
    /// it is `active` or `stopped`, if nobody holds the lease; the run becomes `active`
    /// and `running`, the epoch goes up by one. A run whose unexpired lease someone holds
    /// is refused as [`PgError::NotClaimable`].
    pub fn claim_to_resume(&self, run: &str, owner: &str, ttl: Duration) -> Result<Lease, PgError> {
        let (db, r, o) = (self.db.clone(), run.to_string(), owner.to_string());
        let taken = self.block(async move {
            let c = db.client().await?;
            let row = c
                .query_opt(
                    "UPDATE runs SET lease_owner = $2,
                         lease_expires = now() + $3::float8 * interval '1 millisecond',
                         epoch = epoch + 1, state = 'active', status = 'running',
                         stop_reason = NULL, updated_at = now()
                     WHERE id = $1 AND (lease_owner IS NULL OR lease_expires <= now())
                     RETURNING epoch, lease_expires",
                    &[&r, &o, &millis(ttl)],
                )
                .await
                .map_err(|e| db.query_err(&e))?;
            Ok(row.map(|row| Lease {
                run: r,
                owner: o,
                epoch: row.get(0),
                expires: row.get(1),
                ttl,
            }))
        })?;
        match taken {
            Some(lease) => Ok(lease),
            // Held by someone, or no such run: `claim` says which.
            None => self.claim(run, owner, ttl),
        }
    }

    /// Asks the holder of run `run` to cancel it (the worker checks at each renewal).
    pub fn request_cancel(&self, run: &str) -> Result<(), PgError> {
        let (db, run) = (self.db.clone(), run.to_string());
        self.block(async move {
            let c = db.client().await?;
            let n = c
                .execute(
                    "UPDATE runs SET cancel_requested = true WHERE id = $1",
                    &[&run],
                )
                .await
                .map_err(|e| db.query_err(&e))?;
            if n == 1 {
                Ok(())
            } else {
                Err(PgError::NoSuchRun {
                    run,
                    url: db.url().to_string(),
                })
            }
        })
    }

    /// Deletes (unless `dry_run`) every run, with its journal, last written more than
    /// `age` ago, unless someone holds its lease or it is still to be carried on (an
    /// `active` run: queued, or waiting for a takeover); returns their ids, oldest first.
    pub fn prune(&self, age: Duration, dry_run: bool) -> Result<Vec<String>, PgError> {
        let db = self.db.clone();
        self.block(async move {
            let c = db.client().await?;
            // The last write is the newest record's, else the run's own last change.
            let old = "SELECT id FROM runs
                 WHERE state = 'stopped' AND lease_owner IS NULL
                   AND greatest(updated_at, (SELECT max(written_at) FROM journal_records
                                             WHERE run_id = runs.id))
                       < now() - $1::float8 * interval '1 millisecond'";
            let sql = if dry_run {
                format!("{old} ORDER BY updated_at")
            } else {
                format!(
                    "DELETE FROM runs WHERE id IN ({old}) AND state = 'stopped' AND lease_owner IS NULL
                     RETURNING id"
                )
            };
            let rows = c
                .query(&sql, &[&millis(age)])
                .await
                .map_err(|e| db.query_err(&e))?;
            let mut ids: Vec<String> = rows.iter().map(|r| r.get(0)).collect();
            ids.sort();
            Ok(ids)
        })
    }
}
