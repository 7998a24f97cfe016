//! [`Listener`]: a connection of its own that `LISTEN`s on the channel the
//! `runs_claimable` trigger notifies (a run submitted, released or handed back), so idle
//! workers wake when there is work instead of polling fast. Notifications arrive through
//! the connection's message stream ([`Connection::poll_message`]); a lost connection is
//! reconnected, and whoever waits is woken meanwhile (it may have missed a notification).
//!
//! [`Connection::poll_message`]: tokio_postgres::Connection::poll_message

use std::sync::mpsc;
use std::time::Duration;

use tokio_postgres::{AsyncMessage, NoTls};

use super::{Database, PgError, Shared};

/// The channel the `runs_claimable` trigger (migration 0002) notifies.
const CHANNEL: &str = "toolhost_runs";

/// The channel of a run's changes (migration 0003): a journal append, a decision, a
/// cancellation, a new status.
const CHANGES: &str = "toolhost_changes";

/// The channel of queued pool calls (migration 0004).
const CALLS: &str = "toolhost_calls";

/// The channel of pool calls that ended, were taken or were given up (migration 0004).
const CALLS_ENDED: &str = "toolhost_call_ended";

/// How long a lost listening connection waits before connecting again.
pub(crate) const RECONNECT: Duration = Duration::from_millis(500);

/// Wakes its owner when a run may have become claimable. Stops listening when dropped.
#[derive(Debug)]
pub struct Listener {
    rx: mpsc::Receiver<()>,
    task: tokio::task::AbortHandle,
}

impl Drop for Listener {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Listener {
    /// Waits until a notification arrives or `timeout` passes (the poll fallback: a lease
    /// that expires frees its run without a notification); `true` when notified. Drains
    /// the notifications that queued up meanwhile: one claim loop serves them all.
    pub fn wait(&self, timeout: Duration) -> bool {
        let woken = self.rx.recv_timeout(timeout).is_ok();
        while self.rx.try_recv().is_ok() {}
        woken
    }
}

impl Database {
    /// Starts listening for claimable runs on a connection of its own; returns once the
    /// `LISTEN` is in place, so a run submitted after this returns wakes the listener.
    pub fn listen(&self) -> Result<Listener, PgError> {
        self.listen_on(CHANNEL)
    }

    /// Starts listening for changes of runs (any run's: a journal append, a decision, a
    /// cancellation), for those who follow a run or wait for a decision on it.
    pub fn listen_changes(&self) -> Result<Listener, PgError> {
        self.listen_on(CHANGES)
    }

    /// Starts listening for pool calls being queued, for the workers of executor pools.
    pub fn listen_calls(&self) -> Result<Listener, PgError> {
        self.listen_on(CALLS)
    }

    /// Starts listening for pool calls changing state (taken, done, given up), for the
    /// owners of runs waiting for their outcomes.
    pub fn listen_call_changes(&self) -> Result<Listener, PgError> {
        self.listen_on(CALLS_ENDED)
    }

    fn listen_on(&self, channel: &'static str) -> Result<Listener, PgError> {
        let (tx, rx) = mpsc::channel();
        let (ready_tx, ready_rx) = mpsc::sync_channel(1);
        let db = self.db.clone();
        let task = self.bridge.spawn(async move {
            let mut ready = Some(ready_tx);
            loop {
                match listen_once(&db, channel, |_| tx.send(()).is_ok(), &mut ready).await {
                    Ok(()) => return, // the listener was dropped
                    Err(e) => {
                        if let Some(r) = ready.take() {
                            let _ = r.send(Err(e));
                            return;
                        }
                        tracing::warn!(error = %e, "the listening connection was lost; reconnecting");
                        // Whatever was notified meanwhile is missed: look now.
                        if tx.send(()).is_err() {
                            return;
                        }
                        tokio::time::sleep(RECONNECT).await;
                    }
                }
            }
        });
        match ready_rx.recv() {
            Ok(Ok(())) => Ok(Listener { rx, task }),
            Ok(Err(e)) => {
                task.abort();
                Err(e)
            }
            Err(_) => Err(PgError::Stopped),
        }
    }
}

/// One listening connection, until it fails (`Err`) or nobody receives (`Ok`): each
/// notification's payload goes to `sink`, which says whether anyone still receives.
pub(crate) async fn listen_once(
    db: &Shared,
    channel: &str,
    sink: impl Fn(String) -> bool,
    ready: &mut Option<mpsc::SyncSender<Result<(), PgError>>>,
) -> Result<(), PgError> {
    let unreachable = |e: tokio_postgres::Error| PgError::Unreachable {
        url: db.url().to_string(),
        reason: super::url::db_reason(&e),
    };
    let (client, mut conn) = db.config.connect(NoTls).await.map_err(unreachable)?;
    let (note_tx, mut note_rx) = tokio::sync::mpsc::unbounded_channel();
    // The connection does its I/O only while polled: this task polls it, and hands the
    // notifications on.
    let driver = tokio::spawn(async move {
        loop {
            match std::future::poll_fn(|cx| conn.poll_message(cx)).await {
                Some(Ok(AsyncMessage::Notification(n))) => {
                    if note_tx.send(n.payload().to_string()).is_err() {
                        return None;
                    }
                }
                Some(Ok(_)) => {}
                Some(Err(e)) => return Some(e),
                None => return None,
            }
        }
    });
    let listening = client
        .batch_execute(&format!("LISTEN {channel}"))
        .await
        .map_err(|e| db.query_err(&e));
    if let Err(e) = listening {
        driver.abort();
        return Err(e);
    }
    if let Some(r) = ready.take() {
        let _ = r.send(Ok(()));
    }
    while let Some(payload) = note_rx.recv().await {
        if !sink(payload) {
            driver.abort();
            return Ok(());
        }
    }
    // The connection ended.
    let why = match driver.await {
        Ok(Some(e)) => super::url::db_reason(&e),
        _ => "the connection closed".to_string(),
    };
    drop(client);
    Err(PgError::Unreachable {
        url: db.url().to_string(),
        reason: why,
    })
}
