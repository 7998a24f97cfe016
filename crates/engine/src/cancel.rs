//! [`Cancel`]: a cancellation token for a run (Ctrl-C in `toolhost run`). Cancelling stops
//! new planner calls and steps at once and aborts running steps; the run ends `cancelled`
//! with a record for each step it cut off. [`Cancel::suspend`] stops it the same way for
//! a service that shuts down: the run ends `suspended`, which nobody decided, to be
//! carried on where it stopped.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use tokio::sync::Notify;

use crate::budget::StopReason;

/// Cheap to clone; every clone cancels the same run.
#[derive(Debug, Clone, Default)]
pub struct Cancel(Arc<(AtomicBool, Notify, AtomicBool)>);

impl Cancel {
    pub fn new() -> Cancel {
        Cancel::default()
    }

    /// Cancels the run; idempotent.
    pub fn cancel(&self) {
        self.0.0.store(true, Ordering::SeqCst);
        self.0.1.notify_waiters();
    }

    pub fn is_cancelled(&self) -> bool {
        self.0.0.load(Ordering::SeqCst)
    }

    /// Stops the run because the process running it shuts down: nobody cancelled it,
    /// and it ends `suspended` (see [`StopReason::Suspended`]), not `cancelled`.
    pub fn suspend(&self) {
        self.0.2.store(true, Ordering::SeqCst);
        self.cancel();
    }

    /// Whether the run was stopped by [`Cancel::suspend`].
    pub fn is_suspended(&self) -> bool {
        self.0.2.load(Ordering::SeqCst)
    }

    /// Why a run stopped by this token stops: `suspended` or `cancelled`.
    pub fn stop_reason(&self) -> StopReason {
        if self.is_suspended() {
            StopReason::Suspended
        } else {
            StopReason::Cancelled
        }
    }

    /// Completes once the run is cancelled.
    pub async fn cancelled(&self) {
        loop {
            let notified = self.0.1.notified();
            if self.is_cancelled() {
                return;
            }
            notified.await;
        }
    }
}
