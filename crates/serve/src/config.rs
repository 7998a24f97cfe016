//! `serve.toml`: where the server listens, what it runs, who may call it.
//!
//! ```toml
//! listen = "127.0.0.1:8080"
//! tasks_dir = "tasks"            # runs by name: tasks/NAME.toml
//! tools_dir = "tools"            # tool names in tasks: tools/NAME.wasm
//! policy = "policy.toml"         # the policy of inline tasks
//! state_dir = "state"            # journals: state/runs/RUN.jsonl
//! # evals_dir = "evals"          # the console's Evaluations: `toolhost eval --json` results
//! max_concurrent_runs = 2
//! shutdown_grace_ms = 30000
//! # database = "postgres://toolhost@db/toolhost"   # replicas sharing one database
//! # lease_ms = 30000             # with a database: a dead replica's runs move on after this
//! # poll_ms = 2000               # with a database: waits unnotified this long, then look
//! max_connections = 512          # connections held at once; more wait in the backlog
//! header_timeout_ms = 10000      # to send a request head (idle keep-alive ones closed after it)
//! body_timeout_ms = 30000        # to send a request body, from its head
//! max_followers = 256            # SSE followers in all (503 past it)
//! max_followers_per_token = 32   # SSE followers of one token (429 past it)
//! max_queued_runs = 32           # more submissions are refused: 503 with Retry-After
//! # allowed_hosts = ["toolhost.example.com"]   # names clients use in `Host` (IPs and
//! #                                             # localhost need none)
//!
//! [calls]                        # the host-wide budget of tool calls, all runs together
//! max_running = 64               # calls at once
//! max_memory_mib = 4096          # the sum of the running calls' memory caps
//! max_queued = 256               # calls waiting for room; more are refused `overloaded`
//! max_queued_bytes = 67108864    # argument bytes the waiting calls may hold
//!
//! [run_limits]                   # the most an inline task (or an override) may ask for
//! max_parallel = 4
//! [run_limits.budgets]           # each of a task's [budgets] at most this
//! max_steps = 20
//! max_wall_ms = 60000
//!
//! [[tokens]]
//! name = "ci"
//! sha256 = "…"                   # hex SHA-256 of the token, never the token itself
//! roles = ["submit"]
//! ```
//!
//! Relative paths are relative to the file.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use std::time::Duration;

use serde::Deserialize;
use toolhost_listen::ConnLimits;

use toolhost_runtime::CallBudget;

use crate::auth::TokenSpec;
use crate::limits::RunLimits;

/// The default address: loopback, so a server started without a thought is not reachable
/// from elsewhere.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:8080";

/// The configuration of `toolhost serve`. [`ServeConfig::default`] is the closed one:
///
/// - listens on `127.0.0.1:8080` (loopback only);
/// - no task directory (no runs by name), no tools directory, no policy (no inline tasks);
/// - no state directory (the caller supplies one: the journals must go somewhere);
/// - one run at a time;
/// - 30 s for in-flight runs to finish at shutdown before they are cancelled (handed back
///   to the other replicas, with a database);
/// - no database: runs are journaled in the state directory and executed by this process
///   only (with one, every replica sharing it claims runs from its queue, under 30 s
///   leases, looking for work every 2 s when no notification comes);
/// - at most 512 connections at once (more wait in the listen backlog); 10 s for a
///   request head, from connecting or from the previous response (so idle keep-alive
///   connections are closed after 10 s); 30 s for a request body;
/// - at most 256 SSE followers in all, 32 per token (refused with 503 and 429, with
///   `Retry-After`);
/// - no tokens, which is allowed on loopback only;
/// - no `Host` names besides IP addresses and `localhost` (a request naming any other
///   host, as a DNS-rebinding page does, is refused, as is any request from a page served
///   elsewhere);
/// - at most 32 runs queued (beyond them a submission is refused with 503 and
///   `Retry-After`, before anything is written for it);
/// - `[calls]`: the host-wide call budget's defaults ([`CallBudget`]): 64 calls at once,
///   4,096 MiB of memory caps, 256 calls and 64 MiB of arguments waiting;
/// - `[run_limits]`: an inline task may ask for no more than `toolhost run`'s defaults
///   ([`RunLimits`]).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct ServeConfig {
    #[serde(default = "default_listen")]
    pub listen: SocketAddr,
    pub tasks_dir: Option<PathBuf>,
    pub tools_dir: Option<PathBuf>,
    pub policy: Option<PathBuf>,
    pub state_dir: Option<PathBuf>,
    /// Suite results (`toolhost eval --json DIR/NAME.json`, a baseline beside each as
    /// `NAME.baseline.json`) the console's Evaluations page shows.
    pub evals_dir: Option<PathBuf>,
    #[serde(default = "one")]
    pub max_concurrent_runs: usize,
    #[serde(default = "default_grace")]
    pub shutdown_grace_ms: u64,
    /// A PostgreSQL URL: runs queued and journaled there, shared by every replica that
    /// names it.
    pub database: Option<String>,
    #[serde(default = "default_lease")]
    pub lease_ms: u64,
    #[serde(default = "default_poll")]
    pub poll_ms: u64,
    #[serde(default = "default_max_connections")]
    pub max_connections: usize,
    #[serde(default = "default_header_timeout")]
    pub header_timeout_ms: u64,
    #[serde(default = "default_body_timeout")]
    pub body_timeout_ms: u64,
    #[serde(default = "default_max_followers")]
    pub max_followers: usize,
    #[serde(default = "default_max_followers_per_token")]
    pub max_followers_per_token: usize,
    #[serde(default)]
    pub tokens: Vec<TokenSpec>,
    /// Names besides IP addresses and `localhost` that requests may give in `Host`:
    /// `NAME` (any port) or `NAME:PORT`.
    #[serde(default)]
    pub allowed_hosts: Vec<String>,
    /// Runs waiting for a free slot (each holds its journal open); beyond it, 503.
    #[serde(default = "default_queued_runs")]
    pub max_queued_runs: usize,
    /// The host-wide budget every tool call of every run draws from.
    #[serde(default)]
    pub calls: CallBudget,
    /// The most an inline task may ask for.
    #[serde(default)]
    pub run_limits: RunLimits,
}

fn default_max_connections() -> usize {
    ConnLimits::DEFAULT_MAX_CONNECTIONS
}

fn default_header_timeout() -> u64 {
    ConnLimits::DEFAULT_HEADER_TIMEOUT.as_millis() as u64
}

fn default_body_timeout() -> u64 {
    ConnLimits::DEFAULT_BODY_TIMEOUT.as_millis() as u64
}

fn default_max_followers() -> usize {
    256
}

fn default_max_followers_per_token() -> usize {
    32
}

/// Runs queued by default: each holds an open journal, so a flood of submissions cannot
/// run the server out of descriptors.
pub const DEFAULT_MAX_QUEUED_RUNS: usize = 32;

fn default_queued_runs() -> usize {
    DEFAULT_MAX_QUEUED_RUNS
}

fn default_lease() -> u64 {
    30_000
}

fn default_poll() -> u64 {
    2_000
}

fn default_listen() -> SocketAddr {
    DEFAULT_LISTEN.parse().expect("a valid address")
}

fn one() -> usize {
    1
}

fn default_grace() -> u64 {
    30_000
}

impl Default for ServeConfig {
    fn default() -> ServeConfig {
        ServeConfig {
            listen: default_listen(),
            tasks_dir: None,
            tools_dir: None,
            policy: None,
            state_dir: None,
            evals_dir: None,
            max_concurrent_runs: 1,
            shutdown_grace_ms: default_grace(),
            database: None,
            lease_ms: default_lease(),
            poll_ms: default_poll(),
            max_connections: default_max_connections(),
            header_timeout_ms: default_header_timeout(),
            body_timeout_ms: default_body_timeout(),
            max_followers: default_max_followers(),
            max_followers_per_token: default_max_followers_per_token(),
            tokens: Vec::new(),
            allowed_hosts: Vec::new(),
            max_queued_runs: DEFAULT_MAX_QUEUED_RUNS,
            calls: CallBudget::default(),
            run_limits: RunLimits::default(),
        }
    }
}

/// Why a configuration cannot be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    #[error("cannot read `{path}`: {reason}")]
    Read { path: String, reason: String },
    #[error("`{path}`: {reason}")]
    Parse { path: String, reason: String },
    #[error(
        "refusing to listen on `{addr}` without tokens: anyone who can reach it could run tasks; add [[tokens]] to the configuration or listen on a loopback address"
    )]
    OpenBind { addr: SocketAddr },
    #[error("max_concurrent_runs 0 would run nothing: give at least 1")]
    NoRuns,
    #[error("{key} 0 would admit nothing: give at least 1")]
    Zero { key: &'static str },
    #[error("{key} {value} is too short: give at least {min}")]
    TooShort {
        key: &'static str,
        value: u64,
        min: u64,
    },
    #[error("token `{name}`: {reason}")]
    Token { name: String, reason: String },
    #[error(
        "allowed_hosts: `{0}` is not a host name: give NAME or NAME:PORT (no scheme, path or wildcard)"
    )]
    BadHost(String),
    #[error("two tokens are named `{0}`: names identify submitters, so each must be unique")]
    DuplicateToken(String),
}

impl ServeConfig {
    /// Reads `path`; relative paths in it become relative to its directory.
    pub fn load(path: &Path) -> Result<ServeConfig, ConfigError> {
        let shown = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| ConfigError::Read {
            path: shown.clone(),
            reason: e.to_string(),
        })?;
        let mut config: ServeConfig = toml::from_str(&text).map_err(|e| ConfigError::Parse {
            path: shown,
            reason: e.to_string().trim_end().to_string(),
        })?;
        let base = path.parent().unwrap_or(Path::new("."));
        for p in [
            &mut config.tasks_dir,
            &mut config.tools_dir,
            &mut config.policy,
            &mut config.state_dir,
            &mut config.evals_dir,
        ]
        .into_iter()
        .flatten()
        {
            *p = base.join(&*p);
        }
        Ok(config)
    }

    /// Checks what parsing cannot: a bind open to others needs tokens, and the tokens are
    /// well formed and uniquely named.
    pub fn check(&self) -> Result<(), ConfigError> {
        if self.max_concurrent_runs == 0 {
            return Err(ConfigError::NoRuns);
        }
        for (key, zero) in [
            ("calls.max_running", self.calls.max_running == 0),
            ("calls.max_memory_mib", self.calls.max_memory_mib == 0),
            ("run_limits.max_parallel", self.run_limits.max_parallel == 0),
        ] {
            if zero {
                return Err(ConfigError::Zero { key });
            }
        }
        for (key, value, min) in [
            ("lease_ms", self.lease_ms, 100),
            ("poll_ms", self.poll_ms, 10),
            ("header_timeout_ms", self.header_timeout_ms, min_timeout()),
            ("body_timeout_ms", self.body_timeout_ms, min_timeout()),
        ] {
            if value < min {
                return Err(ConfigError::TooShort { key, value, min });
            }
        }
        for (key, value) in [
            ("max_connections", self.max_connections),
            ("max_followers", self.max_followers),
            ("max_followers_per_token", self.max_followers_per_token),
        ] {
            if value == 0 {
                return Err(ConfigError::Zero { key });
            }
        }
        let mut names = std::collections::BTreeSet::new();
        for t in &self.tokens {
            t.check().map_err(|reason| ConfigError::Token {
                name: t.name.clone(),
                reason,
            })?;
            if !names.insert(t.name.as_str()) {
                return Err(ConfigError::DuplicateToken(t.name.clone()));
            }
        }
        for h in &self.allowed_hosts {
            let name = h.rsplit_once(':').map_or(h.as_str(), |(n, _)| n);
            let fine = !name.is_empty()
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '.')
                && h.rsplit_once(':')
                    .is_none_or(|(_, p)| p.parse::<u16>().is_ok());
            if !fine {
                return Err(ConfigError::BadHost(h.escape_debug().to_string()));
            }
        }
        if self.tokens.is_empty() && !self.listen.ip().is_loopback() {
            return Err(ConfigError::OpenBind { addr: self.listen });
        }
        Ok(())
    }
}

impl ServeConfig {
    /// The connection cap and timeouts.
    pub fn connections(&self) -> ConnLimits {
        ConnLimits::default()
            .max_connections(self.max_connections)
            .header_timeout(Duration::from_millis(self.header_timeout_ms))
            .body_timeout(Duration::from_millis(self.body_timeout_ms))
    }
}

fn min_timeout() -> u64 {
    ConnLimits::MIN_TIMEOUT.as_millis() as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_keys_and_open_binds_are_refused() {
        let e = toml::from_str::<ServeConfig>("listen = \"127.0.0.1:1\"\nlisten_all = true\n")
            .unwrap_err();
        assert!(e.to_string().contains("listen_all"), "{e}");
        let c: ServeConfig = toml::from_str("listen = \"0.0.0.0:8080\"").unwrap();
        assert!(matches!(c.check(), Err(ConfigError::OpenBind { .. })));
        let c: ServeConfig = toml::from_str("listen = \"[::1]:0\"").unwrap();
        c.check().unwrap();
        assert_eq!(
            ServeConfig::default().listen.to_string(),
            DEFAULT_LISTEN,
            "the default listens on loopback"
        );
    }

    #[test]
    fn doors_are_bounded_by_default_and_zero_or_tiny_bounds_are_refused() {
        let c: ServeConfig = toml::from_str("").unwrap();
        assert_eq!(c.connections(), ConnLimits::default());
        assert_eq!((c.max_followers, c.max_followers_per_token), (256, 32));
        let c: ServeConfig = toml::from_str("max_followers = 0").unwrap();
        assert_eq!(
            c.check().unwrap_err().to_string(),
            "max_followers 0 would admit nothing: give at least 1"
        );
        let c: ServeConfig = toml::from_str("header_timeout_ms = 5").unwrap();
        assert_eq!(
            c.check().unwrap_err().to_string(),
            "header_timeout_ms 5 is too short: give at least 100"
        );
    }
}
