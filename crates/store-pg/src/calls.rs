//! Executor pools (migration 0004): the calls of tools whose policy names a pool. The
//! run's owner queues a call ([`Database::queue_call`]) and waits for its outcome
//! ([`Database::call_state`], woken by [`Database::listen_call_changes`]); a worker of the
//! pool claims it ([`Database::claim_call`], `FOR UPDATE SKIP LOCKED`) under a lease with
//! a fencing epoch, keeps the lease while the call runs ([`Database::renew_call`]) and
//! writes the outcome ([`Database::complete_call`]). The owner alone journals: the
//! outcome is only handed back.
//!
//! A worker that dies mid-call leaves its lease to expire; the owner then queues the call
//! again if it is idempotent ([`Database::retry_call`]) or gives it up
//! ([`Database::give_up_call`]): a call that may not run twice never does. A call nobody
//! claims by its `claim_by` deadline, or whose run is cancelled, is withdrawn
//! ([`Database::withdraw_call`]); workers skip the calls of runs whose cancellation was
//! asked for.
//!
//! Calls travel as opaque JSON text: this crate knows neither tools nor limits.

use std::time::Duration;

use super::lease::millis;
use super::{Database, PgError};

/// A pool call as the run's owner queues it.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct NewCall {
    pub run: String,
    pub step: String,
    pub revision: u32,
    pub pool: String,
    pub tool: String,
    pub operation: String,
    /// The arguments, limits and component digest (JSON text).
    pub call: String,
    pub idempotent: bool,
    /// How long a worker of the pool has to claim it.
    pub claim_within: Duration,
}

impl NewCall {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        run: &str,
        step: &str,
        revision: u32,
        pool: &str,
        tool: &str,
        operation: &str,
        call: String,
        idempotent: bool,
        claim_within: Duration,
    ) -> NewCall {
        NewCall {
            run: run.into(),
            step: step.into(),
            revision,
            pool: pool.into(),
            tool: tool.into(),
            operation: operation.into(),
            call,
            idempotent,
            claim_within,
        }
    }
}

/// Where a queued call is, as its owner sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum CallState {
    /// No worker took it yet; `overdue` once its `claim_by` deadline passed.
    Queued {
        overdue: bool,
    },
    /// A worker runs it; `expired` once its lease ran out (the worker died or stalled).
    Claimed {
        by: String,
        expired: bool,
    },
    /// The outcome (JSON text).
    Done(String),
    Withdrawn,
    Lost,
}

/// A call a pool worker claimed: what to run, and the lease it runs under.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ClaimedCall {
    pub id: i64,
    pub run: String,
    pub step: String,
    pub pool: String,
    pub tool: String,
    pub operation: String,
    /// JSON text, as queued.
    pub call: String,
    pub attempt: i32,
    pub owner: String,
    pub epoch: i64,
    pub ttl: Duration,
}

impl Database {
    /// Queues `call` for its pool's workers (who are woken); returns its id.
    pub fn queue_call(&self, call: &NewCall) -> Result<i64, PgError> {
        let (db, c) = (self.db.clone(), call.clone());
        self.block(async move {
            let client = db.client().await?;
            let revision = i32::try_from(c.revision).unwrap_or(i32::MAX);
            let row = client
                .query_one(
                    "INSERT INTO step_calls (run_id, step_id, revision, pool, tool, operation,
                         call, idempotent, claim_by)
                     VALUES ($1, $2, $3, $4, $5, $6, $7::text::jsonb, $8,
                         now() + $9::float8 * interval '1 millisecond')
                     RETURNING id",
                    &[
                        &c.run,
                        &c.step,
                        &revision,
                        &c.pool,
                        &c.tool,
                        &c.operation,
                        &c.call,
                        &c.idempotent,
                        &millis(c.claim_within),
                    ],
                )
                .await
                .map_err(|e| db.query_err(&e))?;
            Ok(row.get(0))
        })
    }

    /// Where call `id` is.
    pub fn call_state(&self, id: i64) -> Result<CallState, PgError> {
        let db = self.db.clone();
        self.block(async move {
            let c = db.client().await?;
            let row = c
                .query_one(
                    "SELECT status, claim_by <= now(), claimed_by,
                         coalesce(lease_expires <= now(), false), outcome::text
                     FROM step_calls WHERE id = $1",
                    &[&id],
                )
                .await
                .map_err(|e| db.query_err(&e))?;
            let status: &str = row.get(0);
            Ok(match status {
                "queued" => CallState::Queued {
                    overdue: row.get(1),
                },
                "claimed" => CallState::Claimed {
                    by: row.get(2),
                    expired: row.get(3),
                },
                "done" => CallState::Done(row.get(4)),
                "withdrawn" => CallState::Withdrawn,
                _ => CallState::Lost,
            })
        })
    }

    /// Withdraws call `id` if it is still queued (or, with `claimed`, also while a worker
    /// runs it: that worker stops at its next renewal); `false` when it had moved on.
    pub fn withdraw_call(&self, id: i64, claimed: bool) -> Result<bool, PgError> {
        self.set_call_status(
            id,
            "status = 'withdrawn', claimed_by = NULL, lease_expires = NULL, finished_at = now()",
            if claimed {
                "status IN ('queued', 'claimed')"
            } else {
                "status = 'queued'"
            },
        )
    }

    /// Withdraws call `id` without waiting for the database (from a `Drop`: a cancelled
    /// run's call); a call that already moved on is left as it is.
    pub fn withdraw_call_detached(&self, id: i64) {
        let db = self.db.clone();
        self.bridge.spawn(async move {
            let withdrawn = async {
                db.client()
                    .await?
                    .execute(
                        "UPDATE step_calls SET status = 'withdrawn', claimed_by = NULL,
                             lease_expires = NULL, finished_at = now()
                         WHERE id = $1 AND status IN ('queued', 'claimed')",
                        &[&id],
                    )
                    .await
                    .map_err(|e| db.query_err(&e))
            };
            if let Err(e) = withdrawn.await {
                tracing::warn!(call = id, error = %e, "could not withdraw a pool call");
            }
        });
    }

    /// Queues call `id` again for another attempt, with `claim_within` for a worker to
    /// take it, if its worker's lease expired and it is idempotent; `false` otherwise.
    pub fn retry_call(&self, id: i64, claim_within: Duration) -> Result<bool, PgError> {
        let set = format!(
            "status = 'queued', claimed_by = NULL, lease_expires = NULL, attempt = attempt + 1,
             claim_by = now() + {} * interval '1 millisecond'",
            millis(claim_within)
        );
        self.set_call_status(
            id,
            &set,
            "status = 'claimed' AND lease_expires <= now() AND idempotent",
        )
    }

    /// Gives call `id` up as `lost` if its worker's lease expired: its effects may have
    /// happened, and it may not run twice. `false` when it had moved on.
    pub fn give_up_call(&self, id: i64) -> Result<bool, PgError> {
        self.set_call_status(
            id,
            "status = 'lost', lease_expires = NULL, finished_at = now()",
            "status = 'claimed' AND lease_expires <= now()",
        )
    }

    fn set_call_status(&self, id: i64, set: &str, when: &str) -> Result<bool, PgError> {
        let db = self.db.clone();
        let sql = format!("UPDATE step_calls SET {set} WHERE id = $1 AND {when}");
        self.block(async move {
            let n = db
                .client()
                .await?
                .execute(&sql, &[&id])
                .await
                .map_err(|e| db.query_err(&e))?;
            Ok(n == 1)
        })
    }

    /// Takes the oldest queued call of one of `pools` whose claim deadline has not passed
    /// and whose run is not being cancelled, for `owner` under a lease of `ttl`, skipping
    /// calls another worker is taking at this moment; `None` when there is none.
    pub fn claim_call(
        &self,
        pools: &[String],
        owner: &str,
        ttl: Duration,
    ) -> Result<Option<ClaimedCall>, PgError> {
        let (db, pools, owner) = (self.db.clone(), pools.to_vec(), owner.to_string());
        self.block(async move {
            let c = db.client().await?;
            let row = c
                .query_opt(
                    "UPDATE step_calls SET status = 'claimed', claimed_by = $2,
                         lease_expires = now() + $3::float8 * interval '1 millisecond',
                         epoch = step_calls.epoch + 1
                     FROM (SELECT s.id FROM step_calls s
                           WHERE s.pool = ANY($1) AND s.status = 'queued' AND s.claim_by > now()
                             AND NOT EXISTS (SELECT 1 FROM runs r
                                             WHERE r.id = s.run_id AND r.cancel_requested)
                           ORDER BY s.id LIMIT 1
                           FOR UPDATE OF s SKIP LOCKED) AS free
                     WHERE step_calls.id = free.id
                     RETURNING step_calls.id, run_id, step_id, pool, tool, operation,
                         call::text, attempt, epoch",
                    &[&pools, &owner, &millis(ttl)],
                )
                .await
                .map_err(|e| db.query_err(&e))?;
            Ok(row.map(|row| ClaimedCall {
                id: row.get(0),
                run: row.get(1),
                step: row.get(2),
                pool: row.get(3),
                tool: row.get(4),
                operation: row.get(5),
                call: row.get(6),
                attempt: row.get(7),
                owner,
                epoch: row.get(8),
                ttl,
            }))
        })
    }

    /// Extends the lease of `call` by its `ttl`; `false` when the call is no longer the
    /// claimer's to run (withdrawn: its run was cancelled; or given up, queued again).
    pub fn renew_call(&self, call: &ClaimedCall) -> Result<bool, PgError> {
        let (db, c) = (self.db.clone(), call.clone());
        self.block(async move {
            let n = db
                .client()
                .await?
                .execute(
                    "UPDATE step_calls
                     SET lease_expires = now() + $4::float8 * interval '1 millisecond'
                     WHERE id = $1 AND claimed_by = $2 AND epoch = $3 AND status = 'claimed'",
                    &[&c.id, &c.owner, &c.epoch, &millis(c.ttl)],
                )
                .await
                .map_err(|e| db.query_err(&e))?;
            Ok(n == 1)
        })
    }

    /// Writes the `outcome` (JSON text) of `call`, if it is still the claimer's (an expired
    /// lease the owner has not acted on still counts: the call ran once); `false` when
    /// it was withdrawn, given up or queued again meanwhile.
    pub fn complete_call(&self, call: &ClaimedCall, outcome: &str) -> Result<bool, PgError> {
        let (db, c, o) = (self.db.clone(), call.clone(), outcome.to_string());
        self.block(async move {
            let n = db
                .client()
                .await?
                .execute(
                    "UPDATE step_calls SET status = 'done', outcome = $4::text::jsonb,
                         lease_expires = NULL, finished_at = now()
                     WHERE id = $1 AND claimed_by = $2 AND epoch = $3 AND status = 'claimed'",
                    &[&c.id, &c.owner, &c.epoch, &o],
                )
                .await
                .map_err(|e| db.query_err(&e))?;
            Ok(n == 1)
        })
    }
}
