//! Runs served over an API by replicas that share the database (migration 0003): a
//! worker parks its run for a person's answer ([`Database::park`]) and waits for it
//! ([`Database::answer`]); any replica records the answer ([`Database::decide`]), or the
//! decision on the unfinished steps of a run `waiting_for_decision`
//! ([`Database::decide_unfinished`], which makes the run claimable again), or cancels
//! ([`Database::cancel`]). Every change notifies `toolhost_changes`
//! ([`Database::listen_changes`]).

use super::lease::Lease;
use super::queue::{INFO_COLUMNS, RunInfo, Status};
use super::{Database, PgError};

/// What [`Database::cancel`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Cancelled {
    /// Nobody was carrying the run on (queued, or waiting for a decision): it is stopped,
    /// `cancelled`, now.
    Stopped,
    /// Its holder was asked to stop it (it sees the request at its next renewal, or
    /// while it waits for a decision).
    Requested,
    /// It had stopped already, with this status.
    Over(Status),
}

/// What a holder waiting for an answer learns ([`Database::answer`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Answer {
    /// The decision (JSON text), taken: the run is `running` again.
    Decided(String),
    /// A cancellation was asked for, by whom when they said (JSON text, as given to
    /// [`Database::cancel`]).
    Cancelled(Option<String>),
    Waiting,
}

impl Database {
    /// Parks `lease`'s run for a person's answer to `pending` (JSON text): the run is
    /// `waiting_for_approval` with `pending` on show; an older decision is dropped.
    pub fn park(&self, lease: &Lease, pending: &str) -> Result<(), PgError> {
        let (db, l, p) = (self.db.clone(), lease.clone(), pending.to_string());
        self.block(async move {
            let c = db.client().await?;
            let n = c
                .execute(
                    "UPDATE runs SET status = 'waiting_for_approval', pending = $4::text::jsonb,
                         decision = NULL
                     WHERE id = $1 AND epoch = $2 AND lease_owner = $3 AND lease_expires > now()",
                    &[&l.run, &l.epoch, &l.owner, &p],
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

    /// The answer to what `lease`'s run is parked for, taken if there is one (the run is
    /// `running` again); a cancellation asked for is told first.
    pub fn answer(&self, lease: &Lease) -> Result<Answer, PgError> {
        let (db, l) = (self.db.clone(), lease.clone());
        self.block(async move {
            let c = db.client().await?;
            let row = c
                .query_opt(
                    "SELECT cancel_requested, decision::text, cancelled_by::text FROM runs
                     WHERE id = $1 AND epoch = $2 AND lease_owner = $3",
                    &[&l.run, &l.epoch, &l.owner],
                )
                .await
                .map_err(|e| db.query_err(&e))?;
            let Some(row) = row else {
                return Err(db.fenced(&c, &l).await.into());
            };
            let (cancel, decision): (bool, Option<String>) = (row.get(0), row.get(1));
            if cancel {
                return Ok(Answer::Cancelled(row.get(2)));
            }
            let Some(decision) = decision else {
                return Ok(Answer::Waiting);
            };
            let n = c
                .execute(
                    "UPDATE runs SET status = 'running', pending = NULL, decision = NULL
                     WHERE id = $1 AND epoch = $2 AND lease_owner = $3",
                    &[&l.run, &l.epoch, &l.owner],
                )
                .await
                .map_err(|e| db.query_err(&e))?;
            if n == 1 {
                Ok(Answer::Decided(decision))
            } else {
                Err(db.fenced(&c, &l).await.into())
            }
        })
    }

    /// Records `decision` (JSON text) as the answer to run `run`'s `pending` (JSON text, as
    /// read from its [`RunInfo`]); `false` when the run no longer waits for that answer
    /// (answered meanwhile, cancelled, moved on).
    pub fn decide(&self, run: &str, pending: &str, decision: &str) -> Result<bool, PgError> {
        let (db, r, p, d) = (
            self.db.clone(),
            run.to_string(),
            pending.to_string(),
            decision.to_string(),
        );
        self.block(async move {
            let c = db.client().await?;
            let n = c
                .execute(
                    "UPDATE runs SET decision = $3::text::jsonb
                     WHERE id = $1 AND status = 'waiting_for_approval' AND decision IS NULL
                       AND NOT cancel_requested AND pending = $2::text::jsonb",
                    &[&r, &p, &d],
                )
                .await
                .map_err(|e| db.query_err(&e))?;
            Ok(n == 1)
        })
    }

    /// Records `decision` (JSON text: the steps to `rerun` and to `abandon`) on the
    /// unfinished steps of run `run`, stopped `waiting_for_decision`, and makes it
    /// claimable: the next worker carries it on with that decision. `false` when the run
    /// is not waiting for one.
    pub fn decide_unfinished(&self, run: &str, decision: &str) -> Result<bool, PgError> {
        let (db, r, d) = (self.db.clone(), run.to_string(), decision.to_string());
        self.block(async move {
            let c = db.client().await?;
            let n = c
                .execute(
                    "UPDATE runs SET state = 'active', status = 'running', stop_reason = NULL,
                         decision = $2::text::jsonb, updated_at = now()
                     WHERE id = $1 AND state = 'stopped' AND status = 'waiting_for_decision'
                       AND lease_owner IS NULL",
                    &[&r, &d],
                )
                .await
                .map_err(|e| db.query_err(&e))?;
            Ok(n == 1)
        })
    }

    /// Cancels run `run` on behalf of `by` (JSON text: who and how, for the run's stop):
    /// stopped at once when nobody carries it on, else its holder is asked to stop it.
    pub fn cancel(&self, run: &str, by: &str) -> Result<Cancelled, PgError> {
        let (db, run, by) = (self.db.clone(), run.to_string(), by.to_string());
        self.block(async move {
            let c = db.client().await?;
            let n = c
                .execute(
                    "UPDATE runs SET state = 'stopped', status = 'cancelled',
                         stop_reason = 'cancelled', cancel_requested = true, pending = NULL,
                         decision = NULL, cancelled_by = $2::text::jsonb, updated_at = now()
                     WHERE id = $1 AND lease_owner IS NULL
                       AND ((state = 'active' AND status = 'queued')
                            OR (state = 'stopped' AND status = 'waiting_for_decision'))",
                    &[&run, &by],
                )
                .await
                .map_err(|e| db.query_err(&e))?;
            if n == 1 {
                return Ok(Cancelled::Stopped);
            }
            let n = c
                .execute(
                    "UPDATE runs SET cancel_requested = true,
                         cancelled_by = coalesce(cancelled_by, $2::text::jsonb)
                     WHERE id = $1 AND state = 'active'",
                    &[&run, &by],
                )
                .await
                .map_err(|e| db.query_err(&e))?;
            if n == 1 {
                return Ok(Cancelled::Requested);
            }
            let row = c
                .query_opt("SELECT status FROM runs WHERE id = $1", &[&run])
                .await
                .map_err(|e| db.query_err(&e))?;
            match row {
                Some(row) => {
                    let status: String = row.get(0);
                    let status = status.parse().map_err(|reason| PgError::Query {
                        url: db.url().to_string(),
                        reason,
                    })?;
                    Ok(Cancelled::Over(status))
                }
                None => Err(PgError::NoSuchRun {
                    run,
                    url: db.url().to_string(),
                }),
            }
        })
    }

    /// Every run, by id (ids sort by creation time).
    pub fn runs(&self) -> Result<Vec<RunInfo>, PgError> {
        let db = self.db.clone();
        self.block(async move {
            let c = db.client().await?;
            let rows = c
                .query(&format!("SELECT {INFO_COLUMNS} FROM runs ORDER BY id"), &[])
                .await
                .map_err(|e| db.query_err(&e))?;
            rows.iter().map(|r| RunInfo::of_row(r, db.url())).collect()
        })
    }

    /// How many runs have each status, and how many times a lease was taken over in all.
    pub fn census(&self) -> Result<(Vec<(Status, u64)>, u64), PgError> {
        let db = self.db.clone();
        self.block(async move {
            let c = db.client().await?;
            let rows = c
                .query(
                    "SELECT status, count(*), sum(takeovers)::bigint FROM runs GROUP BY status",
                    &[],
                )
                .await
                .map_err(|e| db.query_err(&e))?;
            let mut counts = Vec::new();
            let mut takeovers = 0;
            for row in rows {
                let status: String = row.get(0);
                let n: i64 = row.get(1);
                let t: Option<i64> = row.get(2);
                takeovers += t.unwrap_or(0) as u64;
                if let Ok(s) = status.parse() {
                    counts.push((s, n as u64));
                }
            }
            Ok((counts, takeovers))
        })
    }

    /// The journal lines of run `run` with `seq` above `after`, in order, each with its
    /// `seq`.
    pub fn lines_after(&self, run: &str, after: u64) -> Result<Vec<(u64, Vec<u8>)>, PgError> {
        let (db, run) = (self.db.clone(), run.to_string());
        let after = i64::try_from(after).unwrap_or(i64::MAX);
        self.block(async move {
            let c = db.client().await?;
            let rows = c
                .query(
                    "SELECT seq, line FROM journal_records WHERE run_id = $1 AND seq > $2
                     ORDER BY seq",
                    &[&run, &after],
                )
                .await
                .map_err(|e| db.query_err(&e))?;
            Ok(rows
                .iter()
                .map(|r| (r.get::<_, i64>(0) as u64, r.get::<_, &[u8]>(1).to_vec()))
                .collect())
        })
    }
}
