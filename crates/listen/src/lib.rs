//! toolhost-listen: the host's HTTP doors, bounded before anyone authenticates.
//!
//! `toolhost serve` and `toolhost mcp --http` accept connections from anyone who can reach
//! their socket; a token is checked only once a whole request head has arrived. Everything
//! a connection can make the server hold before that is bounded here, once for both:
//!
//! - a cap on connections held at once: past it the server stops accepting, and new
//!   connections wait in the kernel's backlog until one closes;
//! - a header timeout: a request head (of a new connection, or the next one on a kept-alive
//!   connection) must arrive whole within it, so half-sent requests (slowloris) and idle
//!   keep-alive connections are closed;
//! - a body timeout: a request body must arrive whole within it of its head;
//! - at the descriptor limit (`EMFILE`, `ENFILE`) or out of memory, accepting backs off
//!   exponentially instead of spinning, and the failures are logged once per interval with
//!   their count instead of once each.
//!
//! # Layout
//!
//! Data flows: [`serve`] (the accept loop: a permit per connection, `accept`'s back-off)
//! → one task per connection (hyper HTTP/1 with the header timeout; shutdown on `stop`)
//! → the service, each request's body wrapped in [`Deadline`].
//!
//! - [`ConnLimits`]: the bounds and their closed defaults.
//! - `accept`: accepting one connection, backing off and counting failures.
//! - `body`: [`Deadline`], a request body that fails when it is not whole in time.
//! - `conn`: [`serve`], the accept loop and the connections.

mod accept;
mod body;
mod conn;

use std::time::Duration;

pub use self::body::{Deadline, DeadlineError};
pub use self::conn::serve;

/// How many connections a server holds and how long a client may take to send a request.
/// [`ConnLimits::default`] is the closed one:
///
/// - at most 512 connections at once (fewer than the usual 1,024-descriptor limit, so
///   the server keeps descriptors for its own files); more wait in the backlog;
/// - 10 s for a request head, from the connection's start or its previous response (so a
///   kept-alive connection idle for 10 s is closed too);
/// - 30 s for a request body, from its head.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct ConnLimits {
    pub max_connections: usize,
    pub header_timeout: Duration,
    pub body_timeout: Duration,
}

impl ConnLimits {
    pub const DEFAULT_MAX_CONNECTIONS: usize = 512;
    pub const DEFAULT_HEADER_TIMEOUT: Duration = Duration::from_secs(10);
    pub const DEFAULT_BODY_TIMEOUT: Duration = Duration::from_secs(30);
    /// The shortest timeout accepted: less would close connections of ordinary clients.
    pub const MIN_TIMEOUT: Duration = Duration::from_millis(100);

    pub fn max_connections(mut self, n: usize) -> ConnLimits {
        self.max_connections = n;
        self
    }

    pub fn header_timeout(mut self, d: Duration) -> ConnLimits {
        self.header_timeout = d;
        self
    }

    pub fn body_timeout(mut self, d: Duration) -> ConnLimits {
        self.body_timeout = d;
        self
    }

    /// Why these limits cannot serve, if they cannot.
    pub fn check(&self) -> Result<(), LimitError> {
        if self.max_connections == 0 {
            return Err(LimitError::NoConnections);
        }
        for (what, d) in [
            ("header timeout", self.header_timeout),
            ("body timeout", self.body_timeout),
        ] {
            if d < Self::MIN_TIMEOUT {
                return Err(LimitError::TooShort {
                    what,
                    ms: d.as_millis(),
                    min: Self::MIN_TIMEOUT.as_millis(),
                });
            }
        }
        Ok(())
    }
}

impl Default for ConnLimits {
    fn default() -> ConnLimits {
        ConnLimits {
            max_connections: Self::DEFAULT_MAX_CONNECTIONS,
            header_timeout: Self::DEFAULT_HEADER_TIMEOUT,
            body_timeout: Self::DEFAULT_BODY_TIMEOUT,
        }
    }
}

/// Why [`ConnLimits`] cannot serve.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum LimitError {
    #[error("a cap of 0 connections would serve nobody: give at least 1")]
    NoConnections,
    #[error("a {what} of {ms} ms is too short: give at least {min} ms")]
    TooShort {
        what: &'static str,
        ms: u128,
        min: u128,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_bounded_and_zero_is_refused() {
        let d = ConnLimits::default();
        d.check().unwrap();
        assert_eq!(d.max_connections, 512);
        assert_eq!(d.max_connections(0).check(), Err(LimitError::NoConnections));
        let e = d.header_timeout(Duration::ZERO).check().unwrap_err();
        assert_eq!(
            e.to_string(),
            "a header timeout of 0 ms is too short: give at least 100 ms"
        );
    }
}
