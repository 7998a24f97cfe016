//! Prompt cancellation: the holder of a run's lease learns that the run's cancellation was
//! asked for at once, not at its next renewal (a third of the lease: 10 s by default, with
//! the run's steps going on meanwhile). One connection per [`Database`](super::Database)
//! `LISTEN`s on `toolhost_cancel` (migration 0005: the run's id, when `cancel_requested`
//! becomes true) from the first lease it keeps; each kept lease's renewer registers its run
//! and renews early when woken, and the renewal reports the cancellation as it always did.
//! A lost connection is reconnected; what was notified meanwhile is still seen at the next
//! regular renewal.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};

use tokio::sync::Notify;

use super::Shared;
use super::bridge::Bridge;
use super::listen::{RECONNECT, listen_once};

/// The channel the `runs_cancel_requested` trigger (migration 0005) notifies.
const CHANNEL: &str = "toolhost_cancel";

/// The renewers waiting for their run's cancellation, by run id.
#[derive(Default)]
pub(crate) struct Cancels {
    runs: Mutex<HashMap<String, Vec<Weak<Notify>>>>,
    listening: Mutex<Option<tokio::task::AbortHandle>>,
}

impl Drop for Cancels {
    fn drop(&mut self) {
        let listening = self.listening.get_mut().unwrap_or_else(|p| p.into_inner());
        if let Some(task) = listening.take() {
            task.abort();
        }
    }
}

/// A renewer's registration: woken when its run's cancellation is asked for; unregistered
/// when dropped (with the renewer's task).
pub(crate) struct Watch {
    run: String,
    notify: Arc<Notify>,
    cancels: Weak<Cancels>,
}

impl Watch {
    pub async fn asked(&self) {
        self.notify.notified().await;
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        if let Some(cancels) = self.cancels.upgrade() {
            let mut runs = cancels.runs.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(list) = runs.get_mut(&self.run) {
                list.retain(|w| !std::ptr::eq(w.as_ptr(), Arc::as_ptr(&self.notify)));
                if list.is_empty() {
                    runs.remove(&self.run);
                }
            }
        }
    }
}

impl Cancels {
    /// Registers `run`, and starts listening if nobody has yet.
    pub fn watch(self: &Arc<Cancels>, db: &Shared, bridge: &Bridge, run: &str) -> Watch {
        let notify = Arc::new(Notify::new());
        {
            let mut runs = self.runs.lock().unwrap_or_else(|p| p.into_inner());
            runs.entry(run.to_string())
                .or_default()
                .push(Arc::downgrade(&notify));
        }
        let mut listening = self.listening.lock().unwrap_or_else(|p| p.into_inner());
        if listening.is_none() {
            *listening = Some(bridge.spawn(listen(db.clone(), Arc::downgrade(self))));
        }
        Watch {
            run: run.to_string(),
            notify,
            cancels: Arc::downgrade(self),
        }
    }

    /// Wakes the renewers of `run`. A permit is kept for one that is renewing right now.
    fn wake(&self, run: &str) {
        let runs = self.runs.lock().unwrap_or_else(|p| p.into_inner());
        for n in runs
            .get(run)
            .into_iter()
            .flatten()
            .filter_map(Weak::upgrade)
        {
            n.notify_one();
        }
    }
}

/// Listens until the [`Cancels`] is gone, reconnecting after a lost connection.
async fn listen(db: Shared, cancels: Weak<Cancels>) {
    loop {
        let sink = |run: String| match cancels.upgrade() {
            Some(c) => {
                c.wake(&run);
                true
            }
            None => false,
        };
        match listen_once(&db, CHANNEL, sink, &mut None).await {
            Ok(()) => return,
            Err(e) => {
                tracing::warn!(error = %e, "the connection for cancellations was lost; reconnecting (until then they are seen at lease renewals)");
                tokio::time::sleep(RECONNECT).await;
            }
        }
    }
}
