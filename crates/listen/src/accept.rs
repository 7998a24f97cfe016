//! Accepting one connection. A failure that belongs to one client (it reset or aborted
//! before it was accepted) is skipped at once; any other (`EMFILE`, `ENFILE`, `ENOBUFS`,
//! `ENOMEM`: the host is out of something, and accepting again at once fails again) backs
//! off exponentially, so the loop never spins. Failures are logged at most once per
//! [`LOG_EVERY`], with how many there were, so a flood cannot flood the log.

use std::io::ErrorKind;
use std::time::{Duration, Instant};

use tokio::net::{TcpListener, TcpStream};

const FIRST_BACKOFF: Duration = Duration::from_millis(5);
const MAX_BACKOFF: Duration = Duration::from_secs(1);
/// The most often an accept failure is logged.
const LOG_EVERY: Duration = Duration::from_secs(10);

pub(crate) struct Acceptor {
    listener: TcpListener,
    backoff: Duration,
    /// Failures not yet reported.
    failures: u64,
    reported: Option<Instant>,
}

impl Acceptor {
    pub(crate) fn new(listener: TcpListener) -> Acceptor {
        Acceptor {
            listener,
            backoff: Duration::ZERO,
            failures: 0,
            reported: None,
        }
    }

    /// The next connection (cancel-safe: dropped mid-back-off, nothing is lost).
    pub(crate) async fn accept(&mut self) -> TcpStream {
        loop {
            match self.listener.accept().await {
                Ok((tcp, _)) => {
                    if self.failures > 0 && self.may_report() {
                        tracing::warn!(
                            failures = self.failures,
                            "accepting connections again after {} failures",
                            self.failures
                        );
                        self.failures = 0;
                    }
                    self.backoff = Duration::ZERO;
                    return tcp;
                }
                Err(e) => {
                    self.failures += 1;
                    let clients = matches!(
                        e.kind(),
                        ErrorKind::ConnectionAborted
                            | ErrorKind::ConnectionReset
                            | ErrorKind::ConnectionRefused
                            | ErrorKind::Interrupted
                            | ErrorKind::WouldBlock
                    );
                    if !clients {
                        self.backoff = (self.backoff * 2).clamp(FIRST_BACKOFF, MAX_BACKOFF);
                    }
                    if self.may_report() {
                        tracing::warn!(
                            error = %e,
                            failures = self.failures,
                            backoff_ms = self.backoff.as_millis() as u64,
                            "cannot accept connections: {e} ({} failures since the last report; retrying after {} ms at most)",
                            self.failures,
                            self.backoff.as_millis()
                        );
                        self.failures = 0;
                    }
                    if !clients {
                        tokio::time::sleep(self.backoff).await;
                    }
                }
            }
        }
    }

    /// Whether a report may be logged now (and notes that one is).
    fn may_report(&mut self) -> bool {
        let now = Instant::now();
        if self.reported.is_some_and(|t| now - t < LOG_EVERY) {
            return false;
        }
        self.reported = Some(now);
        true
    }
}
