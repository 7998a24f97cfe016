//! [`Backend`]: what the server needs of a registry beyond the API's calls: start-up,
//! readiness, the counts `/metrics` shows, and the drain at shutdown. [`Embedded`] is
//! one; the CLI's PostgreSQL backend (replicas sharing a database) is another.
//!
//! [`Embedded`]: crate::Embedded

use std::time::Duration;

use toolhost_runtime::CallLoad;

use crate::registry::{Registry, RunState};

/// A registry that the server starts, watches and drains.
pub trait Backend: Registry {
    /// Start-up work after which the backend is ready (loading and compiling the tools).
    /// Blocking.
    fn warm(&self) -> Result<(), String>;
    fn is_ready(&self) -> bool;
    /// The state of every run, for `/metrics`.
    fn states(&self) -> Vec<RunState>;
    /// Runs taken over after another replica's lease expired (0 without leases).
    fn lease_takeovers(&self) -> u64 {
        0
    }
    /// How much of this replica's call budget its tool calls hold now.
    fn calls(&self) -> Option<CallLoad> {
        None
    }
    /// Stops taking runs; in-flight runs get `grace` to finish, then are cancelled (or
    /// handed back to other replicas). Blocking.
    fn shut_down(&self, grace: Duration);
}
