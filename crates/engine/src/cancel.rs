//! [`Cancel`]: a cancellation token for a run (Ctrl-C in `toolhost run`). Cancelling stops
//! new planner calls and steps at once and aborts running steps; the run ends `cancelled`
//! with a record for each step it cut off. [`Cancel::suspend`] stops it the same way for
//! a service that shuts down: the run ends `suspended`, which nobody decided, to be
//! carried on where it stopped.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::Notify;

use crate::budget::StopReason;
use crate::decider::Decider;

/// Cheap to clone; every clone cancels the same run.
#[derive(Debug, Clone, Default)]
pub struct Cancel(Arc<Inner>);

#[derive(Debug, Default)]
struct Inner {
    cancelled: AtomicBool,
    notify: Notify,
    suspended: AtomicBool,
    /// Who cancelled, when they said.
    by: Mutex<Option<Decider>>,
}

impl Cancel {
    pub fn new() -> Cancel {
        Cancel::default()
    }

    /// Cancels the run; idempotent.
    pub fn cancel(&self) {
        self.0.cancelled.store(true, Ordering::SeqCst);
        self.0.notify.notify_waiters();
    }

    /// Cancels the run on behalf of `by` (an API token's name, the terminal's user), who
    /// the stop then names; the first to say who they are is the one named.
    pub fn cancel_by(&self, by: Decider) {
        {
            let mut who = self.0.by.lock().unwrap_or_else(|p| p.into_inner());
            if who.is_none() {
                *who = Some(by);
            }
        }
        self.cancel();
    }

    pub fn is_cancelled(&self) -> bool {
        self.0.cancelled.load(Ordering::SeqCst)
    }

    /// Stops the run because the process running it shuts down: nobody cancelled it,
    /// and it ends `suspended` (see [`StopReason::Suspended`]), not `cancelled`.
    pub fn suspend(&self) {
        self.0.suspended.store(true, Ordering::SeqCst);
        self.cancel();
    }

    /// Whether the run was stopped by [`Cancel::suspend`].
    pub fn is_suspended(&self) -> bool {
        self.0.suspended.load(Ordering::SeqCst)
    }

    /// Why a run stopped by this token stops: `suspended`, or `cancelled` (naming who
    /// cancelled it when they said).
    pub fn stop_reason(&self) -> StopReason {
        if self.is_suspended() {
            return StopReason::Suspended;
        }
        let who = self.0.by.lock().unwrap_or_else(|p| p.into_inner()).clone();
        StopReason::Cancelled {
            by: who.as_ref().and_then(|d| d.by.clone()),
            how: who.map(|d| d.how),
        }
    }

    /// Completes once the run is cancelled.
    pub async fn cancelled(&self) {
        loop {
            let notified = self.0.notify.notified();
            if self.is_cancelled() {
                return;
            }
            notified.await;
        }
    }
}
