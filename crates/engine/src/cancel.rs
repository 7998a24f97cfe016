//! [`Cancel`]: a cancellation token for a run (Ctrl-C in `toolhost run`). Cancelling stops
//! new planner calls and steps at once and aborts running steps; the run ends `cancelled`
//! with a record for each step it cut off.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use tokio::sync::Notify;

/// Cheap to clone; every clone cancels the same run.
#[derive(Debug, Clone, Default)]
pub struct Cancel(Arc<(AtomicBool, Notify)>);

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
