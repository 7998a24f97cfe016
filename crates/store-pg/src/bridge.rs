//! The database's own runtime: one worker thread that drives the pool's connections and
//! every query. Blocking callers hand it a future and wait on a channel, which works from
//! plain threads and from inside any tokio runtime (a current-thread one included: the
//! future never needs the caller's thread to make progress).

use std::sync::mpsc;

use tokio::runtime::Runtime;

pub(crate) struct Bridge {
    /// `None` only while dropping.
    rt: Option<Runtime>,
}

impl Bridge {
    pub fn new() -> std::io::Result<Bridge> {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("toolhost-pg")
            .enable_all()
            .build()?;
        Ok(Bridge { rt: Some(rt) })
    }

    fn rt(&self) -> &Runtime {
        self.rt.as_ref().expect("the runtime lives until drop")
    }

    /// Runs `f` on the database thread and waits for its output; `None` when the runtime
    /// is shutting down.
    pub fn block<T, F>(&self, f: F) -> Option<T>
    where
        T: Send + 'static,
        F: Future<Output = T> + Send + 'static,
    {
        let (tx, rx) = mpsc::sync_channel(1);
        self.rt().spawn(async move {
            let _ = tx.send(f.await);
        });
        rx.recv().ok()
    }

    /// Starts `f` on the database thread without waiting for it.
    pub fn spawn<F>(&self, f: F) -> tokio::task::AbortHandle
    where
        F: Future<Output = ()> + Send + 'static,
    {
        self.rt().spawn(f).abort_handle()
    }
}

impl Drop for Bridge {
    fn drop(&mut self) {
        // Dropping a runtime waits for its tasks, which panics inside another runtime's
        // async context (where a `Database` may well be dropped): let it go instead.
        if let Some(rt) = self.rt.take() {
            rt.shutdown_background();
        }
    }
}
