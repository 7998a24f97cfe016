//! Runs and their leases. A lease is held by one owner until it expires; the owner renews
//! it while it works ([`Renewer`]) and releases it at the end. Every takeover (a claim,
//! by id or the next claimable run) increments the run's `epoch`: the fencing token the
//! new owner's appends carry, and the old owner's no longer match.
//!
//! Claims are single `UPDATE`s whose `WHERE` requires the lease free (never held, released
//! or expired): two claimers of one run serialise on its row, and the second finds the
//! lease held once the first commits, so exactly one wins.

use std::time::{Duration, SystemTime};

use tokio_postgres::Row;

use super::{Database, PgError, Shared};

/// An append, renewal or release refused because the writer's lease is no longer held.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "run `{run}` is fenced off for this writer (lease epoch {epoch}): {why}; nothing was written"
)]
pub struct Fenced {
    pub run: String,
    /// The epoch the writer's lease had.
    pub epoch: i64,
    pub why: String,
}

/// What a run waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum RunState {
    /// To be carried on: by its lease's holder, or by whoever claims it next once the
    /// lease is released or expires.
    Active,
    /// Ended (or handed to a person): claimed by nobody.
    Stopped,
}

impl RunState {
    pub fn as_str(self) -> &'static str {
        match self {
            RunState::Active => "active",
            RunState::Stopped => "stopped",
        }
    }
}

/// The right to write one run, until `expires` (unless renewed): the run, who holds it,
/// and the fencing epoch its appends carry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lease {
    pub run: String,
    pub owner: String,
    pub epoch: i64,
    pub expires: SystemTime,
    /// How long each renewal extends it.
    pub ttl: Duration,
}

pub(crate) fn millis(ttl: Duration) -> f64 {
    ttl.as_secs_f64() * 1000.0
}

impl Database {
    /// Creates run `run`, `active`, leased to `owner` for `ttl` at epoch 1.
    pub fn create_run(&self, run: &str, owner: &str, ttl: Duration) -> Result<Lease, PgError> {
        let (db, run, owner) = (self.db.clone(), run.to_string(), owner.to_string());
        self.block(async move {
            let c = db.client().await?;
            let row = c
                .query_opt(
                    "INSERT INTO runs (id, state, lease_owner, lease_expires, epoch)
                     VALUES ($1, 'active', $2, now() + $3::float8 * interval '1 millisecond', 1)
                     ON CONFLICT (id) DO NOTHING
                     RETURNING epoch, lease_expires",
                    &[&run, &owner, &millis(ttl)],
                )
                .await
                .map_err(|e| db.query_err(&e))?;
            match row {
                Some(row) => Ok(lease(run, owner, ttl, &row)),
                None => Err(PgError::RunExists { run }),
            }
        })
    }

    /// Takes the lease of run `run` for `owner` when it is free (never held, released or
    /// expired) and the run is `active`; the epoch goes up by one.
    pub fn claim(&self, run: &str, owner: &str, ttl: Duration) -> Result<Lease, PgError> {
        let (db, run, owner) = (self.db.clone(), run.to_string(), owner.to_string());
        self.block(async move {
            let c = db.client().await?;
            let row = c
                .query_opt(
                    "UPDATE runs SET lease_owner = $2,
                         lease_expires = now() + $3::float8 * interval '1 millisecond',
                         epoch = epoch + 1, updated_at = now()
                     WHERE id = $1 AND state = 'active'
                       AND (lease_owner IS NULL OR lease_expires <= now())
                     RETURNING epoch, lease_expires",
                    &[&run, &owner, &millis(ttl)],
                )
                .await
                .map_err(|e| db.query_err(&e))?;
            if let Some(row) = row {
                return Ok(lease(run, owner, ttl, &row));
            }
            let why = c
                .query_opt(
                    "SELECT state, lease_owner, to_char(lease_expires AT TIME ZONE 'UTC',
                         'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"')
                     FROM runs WHERE id = $1",
                    &[&run],
                )
                .await
                .map_err(|e| db.query_err(&e))?;
            let Some(why) = why else {
                return Err(PgError::NoSuchRun {
                    run,
                    url: db.url().to_string(),
                });
            };
            let (state, holder, until): (String, Option<String>, Option<String>) =
                (why.get(0), why.get(1), why.get(2));
            let why = match holder {
                Some(h) if state == "active" => format!(
                    "its lease is held by `{h}` until {}",
                    until.unwrap_or_default()
                ),
                _ => format!("it is {state}"),
            };
            Err(PgError::NotClaimable { run, why })
        })
    }

    /// Takes the lease of the `active` run whose lease is free and that changed least
    /// recently, skipping runs another claimer is taking at this moment (`FOR UPDATE SKIP
    /// LOCKED`); `None` when there is none. Runs queued for a named executor pool are left
    /// to that pool's workers, and the runs of MCP tasks to the MCP replicas. The run's status becomes `running`; taking an expired
    /// (unreleased) lease over counts in its `takeovers`.
    pub fn claim_next(&self, owner: &str, ttl: Duration) -> Result<Option<Lease>, PgError> {
        let (db, owner) = (self.db.clone(), owner.to_string());
        self.block(async move {
            let c = db.client().await?;
            let row = c
                .query_opt(
                    "UPDATE runs SET lease_owner = $1,
                         lease_expires = now() + $2::float8 * interval '1 millisecond',
                         epoch = runs.epoch + 1, updated_at = now(), status = 'running',
                         takeovers = runs.takeovers + (runs.lease_owner IS NOT NULL)::int
                     FROM (SELECT id FROM runs
                           WHERE state = 'active' AND pool IS NULL AND mcp_task IS NULL
                             AND (lease_owner IS NULL OR lease_expires <= now())
                           ORDER BY updated_at LIMIT 1
                           FOR UPDATE SKIP LOCKED) AS free
                     WHERE runs.id = free.id
                     RETURNING runs.id, runs.epoch, runs.lease_expires",
                    &[&owner, &millis(ttl)],
                )
                .await
                .map_err(|e| db.query_err(&e))?;
            Ok(row.map(|row| Lease {
                run: row.get(0),
                owner,
                epoch: row.get(1),
                expires: row.get(2),
                ttl,
            }))
        })
    }

    /// Extends `lease` by its `ttl` from now, if it is still held (same epoch and owner,
    /// not expired); returns the new expiry.
    pub fn renew(&self, lease: &Lease) -> Result<SystemTime, PgError> {
        let (db, l) = (self.db.clone(), lease.clone());
        self.block(async move { db.renew_now(&l).await.map(|(expires, _)| expires) })
    }

    /// Gives `lease` up, leaving the run in `state`; refused when the lease was lost.
    pub fn release(&self, lease: &Lease, state: RunState) -> Result<(), PgError> {
        let (db, l) = (self.db.clone(), lease.clone());
        self.block(async move {
            let c = db.client().await?;
            let n = c
                .execute(
                    "UPDATE runs SET lease_owner = NULL, lease_expires = NULL, state = $4,
                         updated_at = now()
                     WHERE id = $1 AND epoch = $2 AND lease_owner = $3 AND lease_expires > now()",
                    &[&l.run, &l.epoch, &l.owner, &state.as_str()],
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

    /// Renews `lease` every third of its `ttl` in the background until the [`Renewer`] is
    /// dropped; after a failed renewal (the lease was lost) it stops, and the writer's
    /// appends are refused.
    pub fn keep(&self, lease: &Lease) -> Renewer {
        self.keep_watching(lease, |_| {})
    }

    /// [`keep`](Database::keep)s `lease` renewed and tells `on` what the renewals learn:
    /// that the run's cancellation was asked for (at each renewal while it is, and at
    /// once when it is asked: the `cancels` module), or that the lease was lost (once;
    /// renewing stops there). A worker stops working on the run at once when told either.
    pub fn keep_watching(
        &self,
        lease: &Lease,
        on: impl Fn(LeaseEvent) + Send + 'static,
    ) -> Renewer {
        let (db, l) = (self.db.clone(), lease.clone());
        let every = (l.ttl / 3).max(Duration::from_millis(10));
        let asked = self.cancels.watch(&self.db, &self.bridge, &l.run);
        let task = self.bridge.spawn(async move {
            loop {
                // A cancellation asked for renews at once, which reports it.
                tokio::select! {
                    () = tokio::time::sleep(every) => {}
                    () = asked.asked() => {}
                }
                match db.renew_now(&l).await {
                    Ok((_, None)) => {}
                    Ok((_, Some(by))) => on(LeaseEvent::CancelRequested { by }),
                    Err(e) => {
                        tracing::error!(run = %l.run, error = %e, "lease lost; the run's appends will be refused");
                        on(LeaseEvent::Lost(e));
                        return;
                    }
                }
            }
        });
        Renewer { task }
    }
}

impl Shared {
    /// Renews `l`; returns the new expiry and whether cancelling the run was asked for.
    /// Renews `l`: its new expiry, and whether (and by whom, JSON text) its run's
    /// cancellation was asked for.
    pub(crate) async fn renew_now(
        &self,
        l: &Lease,
    ) -> Result<(SystemTime, Option<Option<String>>), PgError> {
        let c = self.client().await?;
        let row = c
            .query_opt(
                "UPDATE runs SET lease_expires = now() + $4::float8 * interval '1 millisecond'
                 WHERE id = $1 AND epoch = $2 AND lease_owner = $3 AND lease_expires > now()
                 RETURNING lease_expires, cancel_requested, cancelled_by::text",
                &[&l.run, &l.epoch, &l.owner, &millis(l.ttl)],
            )
            .await
            .map_err(|e| self.query_err(&e))?;
        match row {
            Some(row) => {
                let asked: bool = row.get(1);
                Ok((row.get(0), asked.then(|| row.get(2))))
            }
            None => Err(self.fenced(&c, l).await.into()),
        }
    }

    /// Why `l` no longer holds its run, as the run's row says now.
    pub(crate) async fn fenced(&self, c: &tokio_postgres::Client, l: &Lease) -> Fenced {
        let row = c
            .query_opt(
                "SELECT epoch, lease_owner, lease_expires <= now(), state FROM runs WHERE id = $1",
                &[&l.run],
            )
            .await;
        let why = match row {
            Ok(Some(row)) => {
                let (epoch, owner, expired, state): (i64, Option<String>, Option<bool>, String) =
                    (row.get(0), row.get(1), row.get(2), row.get(3));
                if epoch != l.epoch {
                    let by = owner.map_or("another writer".to_string(), |o| format!("`{o}`"));
                    format!("the run was taken over by {by} at epoch {epoch}")
                } else if owner.is_none() {
                    format!("the lease was released; the run is {state}")
                } else if expired == Some(true) {
                    "the lease expired".to_string()
                } else {
                    "the lease is held by another owner".to_string()
                }
            }
            Ok(None) => "the run no longer exists".to_string(),
            Err(e) => format!(
                "the lease could not be checked: {}",
                super::url::db_reason(&e)
            ),
        };
        Fenced {
            run: l.run.clone(),
            epoch: l.epoch,
            why,
        }
    }
}

pub(crate) fn lease(run: String, owner: String, ttl: Duration, row: &Row) -> Lease {
    Lease {
        run,
        owner,
        epoch: row.get(0),
        expires: row.get(1),
        ttl,
    }
}

/// What a [`Renewer`] learns from a renewal.
#[derive(Debug)]
#[non_exhaustive]
pub enum LeaseEvent {
    /// Someone asked for the run to be cancelled: who and how (JSON text, as given to
    /// [`Database::cancel`](crate::Database::cancel)), when they said.
    CancelRequested { by: Option<String> },
    /// The lease is no longer held (taken over, expired, released); nothing more of the
    /// holder's is written.
    Lost(PgError),
}

/// Keeps a lease renewed while it lives (see [`Database::keep`]).
#[derive(Debug)]
pub struct Renewer {
    task: tokio::task::AbortHandle,
}

impl Drop for Renewer {
    fn drop(&mut self) {
        self.task.abort();
    }
}
