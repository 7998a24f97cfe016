//! Whether a run's model server can be reached at all, checked before the run opens its
//! journal: a server that refuses the connection (nothing listens at the `base_url`'s
//! port) or a host name that does not resolve is a configuration error, said at once with
//! the URL, not three retries and an `escalated` run later. A server that is slow to answer
//! is left to the planner's timeouts and retries.

use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

use crate::error::{AppError, usage};
use crate::task::{PlannerSpec, Task};

/// How long the check waits for a connection before leaving the server to the planner.
const CONNECT: Duration = Duration::from_secs(1);

/// Refuses `task` when a model server its planner names with a `base_url` refuses
/// connections or its host does not resolve. A planner that uses a provider's default URL
/// is not checked (a public API, reached through the network's own ways).
pub fn check(task: &Task) -> Result<(), AppError> {
    let configs = match &task.planner {
        PlannerSpec::Llm(config) => vec![config],
        PlannerSpec::Ensemble { fast, strong, .. } => vec![fast, strong],
        _ => Vec::new(),
    };
    for config in configs {
        if let Some(url) = &config.base_url {
            refused(url).map_or(Ok(()), |why| {
                Err(usage(format!(
                    "the model server at `{url}` cannot be reached: {why}; start it, or fix `base_url` (`--base-url`, TOOLHOST_BASE_URL)"
                )))
            })?;
        }
    }
    Ok(())
}

/// Why `url`'s server cannot be reached at all, or `None` when it may be.
fn refused(url: &str) -> Option<String> {
    let parsed = reqwest::Url::parse(url).ok()?;
    let host = parsed
        .host_str()?
        .trim_start_matches('[')
        .trim_end_matches(']');
    let port = parsed.port_or_known_default()?;
    let addrs: Vec<_> = match (host, port).to_socket_addrs() {
        Ok(addrs) => addrs.collect(),
        Err(e) => return Some(format!("its host `{host}` does not resolve ({e})")),
    };
    let mut last = None;
    for addr in &addrs {
        match TcpStream::connect_timeout(addr, CONNECT) {
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => last = Some(e),
            // Connected, timed out, unreachable for now: the planner's retries decide.
            _ => return None,
        }
    }
    last.map(|e| format!("nothing accepts connections at {host}:{port} ({e})"))
}
