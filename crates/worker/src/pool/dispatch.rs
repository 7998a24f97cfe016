//! The run owner's side of executor pools: [`PgDispatch`], the engine's
//! [`Dispatch`] for a run held by a worker slot. A pooled call is queued in the database,
//! a worker of its pool runs it, and the outcome comes back here to become the step's
//! record; the owner stays the one writer of the run's journal.
//!
//! Waiting: woken by the `toolhost_call_ended` notification ([`Outcomes`]), with a poll
//! as the fallback (an expired lease sends none). A call that no worker takes within the
//! call's timeout plus the lease is withdrawn and fails `pool_unavailable`, naming the
//! pool; a call whose worker's lease expires is queued again if it is idempotent, and
//! otherwise given up (`pool_worker_lost`: it may have had its effects, so it does not run
//! twice). Dropping the wait (the run was cancelled) withdraws the call.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;
use toolhost_engine::{Dispatch, PoolCall, PoolFuture, PoolOutcome};
use toolhost_store_pg::{CallState, Database, NewCall};

use super::wire::{WireCall, WireLimits, WireOutcome};
use crate::Shared;

/// Wakes the owners waiting for pool calls: one `LISTEN` connection per process, its
/// notifications counted in a watch channel that every waiting call subscribes to.
pub(crate) struct Outcomes {
    tx: watch::Sender<u64>,
}

impl Outcomes {
    /// Starts listening; without a listening connection the waits only poll.
    pub(crate) fn start(db: &Database) -> Arc<Outcomes> {
        let (tx, _) = watch::channel(0);
        let outcomes = Arc::new(Outcomes { tx });
        match db.listen_call_changes() {
            Ok(listener) => {
                let weak = Arc::downgrade(&outcomes);
                let spawned = std::thread::Builder::new()
                    .name("toolhost-pool-outcomes".into())
                    .spawn(move || {
                        loop {
                            let woken = listener.wait(Duration::from_secs(1));
                            let Some(o) = weak.upgrade() else { return };
                            if woken {
                                o.tx.send_modify(|n| *n = n.wrapping_add(1));
                            }
                        }
                    });
                if let Err(e) = spawned {
                    tracing::warn!(error = %e, "cannot listen for pool calls' outcomes; polling");
                }
            }
            Err(e) => {
                tracing::warn!(error = %e, "cannot listen for pool calls' outcomes; polling")
            }
        }
        outcomes
    }
}

/// The [`Dispatch`] of one run held by this process.
pub(crate) struct PgDispatch {
    pub db: Database,
    pub run: String,
    /// Time a worker of the pool has to take a call, beyond the call's own timeout: the
    /// lease's length, the time after which a dead worker's calls are given up as well.
    pub slack: Duration,
    /// How long a wait goes without a notification before looking at the call again (the
    /// worker's poll interval): a call nobody took in time, or whose worker's lease
    /// expired, is noticed by looking, since neither sends a notification.
    pub poll: Duration,
    /// Where the worker keeps its [`Outcomes`], started with its first pooled call (a
    /// worker whose runs have no pooled tools opens no listening connection for them).
    pub shared: Arc<Shared>,
}

impl Dispatch for PgDispatch {
    fn call(&self, call: PoolCall) -> PoolFuture {
        let waiter = Waiter {
            db: self.db.clone(),
            run: self.run.clone(),
            claim_within: call.limits.timeout + self.slack,
            poll: self.poll,
            changes: self
                .shared
                .outcomes
                .get_or_init(|| Outcomes::start(&self.db))
                .tx
                .subscribe(),
        };
        Box::pin(waiter.wait(call))
    }
}

struct Waiter {
    db: Database,
    run: String,
    claim_within: Duration,
    poll: Duration,
    changes: watch::Receiver<u64>,
}

/// Runs a blocking database call off the async workers.
async fn off<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, toolhost_store_pg::PgError> + Send + 'static,
) -> Result<T, String> {
    match tokio::task::spawn_blocking(f).await {
        Ok(r) => r.map_err(|e| e.to_string()),
        Err(e) => Err(format!("the database call did not finish: {e}")),
    }
}

/// Withdraws a queued or running call when the wait for it is dropped (a cancelled run).
struct Withdraw {
    db: Database,
    id: i64,
    armed: bool,
}

impl Drop for Withdraw {
    fn drop(&mut self) {
        if self.armed {
            self.db.withdraw_call_detached(self.id);
        }
    }
}

impl Waiter {
    async fn wait(mut self, call: PoolCall) -> PoolOutcome {
        let wire = WireCall {
            digest: call.digest.clone(),
            args: call.args.clone(),
            limits: WireLimits::from(&call.limits),
        };
        let text = match serde_json::to_string(&wire) {
            Ok(t) => t,
            Err(e) => return unavailable(format!("the call cannot be encoded: {e}")),
        };
        let new = NewCall::new(
            &self.run,
            call.step.as_str(),
            call.revision,
            call.pool.as_str(),
            call.tool.as_str(),
            call.operation.as_str(),
            text,
            call.idempotent,
            self.claim_within,
        );
        let db = self.db.clone();
        let id = match off(move || db.queue_call(&new)).await {
            Ok(id) => id,
            Err(e) => {
                return unavailable(format!(
                    "the call could not be queued for pool `{}`: {e}",
                    call.pool
                ));
            }
        };
        let mut guard = Withdraw {
            db: self.db.clone(),
            id,
            armed: true,
        };
        loop {
            self.changes.borrow_and_update();
            if let Some(outcome) = self.look(id, &call).await {
                guard.armed = false;
                return outcome;
            }
            tokio::select! {
                _ = self.changes.changed() => {}
                () = tokio::time::sleep(self.poll) => {}
            }
        }
    }

    /// The outcome, once there is one; acts on a call nobody took in time or whose
    /// worker's lease expired.
    async fn look(&self, id: i64, call: &PoolCall) -> Option<PoolOutcome> {
        let db = self.db.clone();
        let state = match off(move || db.call_state(id)).await {
            Ok(s) => s,
            Err(e) => {
                // A database hiccup: the next look may succeed; the lease bounds the wait.
                tracing::warn!(call = id, error = %e, "cannot read a pool call's state");
                return None;
            }
        };
        let (pool, step) = (&call.pool, &call.step);
        let db = self.db.clone();
        match state {
            CallState::Done(text) => Some(match serde_json::from_str::<WireOutcome>(&text) {
                Ok(w) => w.into(),
                Err(e) => unavailable(format!(
                    "the outcome from pool `{pool}` cannot be read: {e}"
                )),
            }),
            CallState::Queued { overdue: true } => {
                let withdrawn = off(move || db.withdraw_call(id, false)).await;
                withdrawn.unwrap_or(false).then(|| {
                    unavailable(format!(
                        "no worker of executor pool `{pool}` took the call of step `{step}` within {} ms: is a `toolhost worker --pool {pool}` running?",
                        self.claim_within.as_millis()
                    ))
                })
            }
            CallState::Claimed { by, expired: true } if call.idempotent => {
                let within = self.claim_within;
                if off(move || db.retry_call(id, within))
                    .await
                    .unwrap_or(false)
                {
                    tracing::warn!(call = id, %pool, %step, worker = %by, "a pool worker stopped answering; the idempotent call is queued again");
                }
                None
            }
            CallState::Claimed { by, expired: true } => {
                let given_up = off(move || db.give_up_call(id)).await.unwrap_or(false);
                given_up.then(|| lost(pool.as_str(), step.as_str(), &by))
            }
            CallState::Lost => Some(lost(pool.as_str(), step.as_str(), "its worker")),
            CallState::Withdrawn => Some(PoolOutcome::failed(
                "cancelled",
                format!("the call of step `{step}` on pool `{pool}` was withdrawn"),
            )),
            _ => None,
        }
    }
}

fn unavailable(message: String) -> PoolOutcome {
    PoolOutcome::failed("pool_unavailable", message)
}

fn lost(pool: &str, step: &str, worker: &str) -> PoolOutcome {
    PoolOutcome::failed(
        "pool_worker_lost",
        format!(
            "`{worker}` of executor pool `{pool}` stopped answering while it ran step `{step}`, which is not idempotent: the call may have had its effects, so it is not run again"
        ),
    )
}
