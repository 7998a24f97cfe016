//! Audit events: every capability decision a call's sandbox makes, kept with the call's
//! outcome (for the run journal) and emitted through `tracing` (target `toolhost::audit`).
//!
//! Events never carry secret values: an environment grant is recorded by name only, and a
//! file event names the guest path, not the data.

use std::sync::{Arc, Mutex};

use serde::Serialize;

/// Whether the sandbox let an action through.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    Allowed,
    Denied,
}

/// One capability decision.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum AuditEvent {
    /// A filesystem action on a path: `open-read`, `open-write`, `create`, `rename`,
    /// `unlink`, `remove-dir`, `create-dir`, `set-times`, `set-size`, `write`, `symlink`,
    /// `link`, `read-dir`, `stat`, `readlink`. An allowed action that failed for another
    /// reason (e.g. `no-entry`) carries that error code as its `reason`.
    File {
        action: String,
        /// The guest path (as the guest named it, joined to its directory's guest path).
        path: String,
        decision: Decision,
        /// Why it was refused (the WASI error code, or the grant rule); for an allowed
        /// action that failed anyway, its error code.
        #[serde(skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// An outgoing `wasi:http` request.
    Http {
        method: String,
        url: String,
        /// The address the host resolved and connected to (or refused).
        #[serde(skip_serializing_if = "Option::is_none")]
        resolved: Option<String>,
        decision: Decision,
        #[serde(skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// A `wasi:sockets` use of an address: `tcp-connect`, `tcp-bind`, `udp-bind`, ….
    Socket {
        action: String,
        address: String,
        decision: Decision,
    },
    /// A `wasi:sockets/ip-name-lookup` of a name.
    NameLookup { name: String, decision: Decision },
    /// The guest read its environment; `names` lists the granted variables it saw
    /// (values are never recorded).
    EnvRead { names: Vec<String> },
    /// An operation the policy does not allow, or a call refused before it started.
    Call {
        operation: String,
        decision: Decision,
        reason: String,
    },
    /// A limit ended the call: `fuel`, `timeout`, `memory`, `output`, or capped output:
    /// `stdout`, `stderr`, `log` (the call went on; the excess was dropped).
    Limit { limit: String, detail: String },
    /// The guest trapped: `panic`, `stack_overflow`, `trap`, `instantiate`. The host
    /// contained it; nothing outside the call's instance was affected.
    Trap { kind: String, detail: String },
}

impl AuditEvent {
    /// Whether this event records a refusal, a tripped limit or a contained trap.
    pub fn is_denial(&self) -> bool {
        match self {
            AuditEvent::File { decision, .. }
            | AuditEvent::Http { decision, .. }
            | AuditEvent::Socket { decision, .. }
            | AuditEvent::NameLookup { decision, .. }
            | AuditEvent::Call { decision, .. } => *decision == Decision::Denied,
            AuditEvent::EnvRead { .. } => false,
            AuditEvent::Limit { .. } | AuditEvent::Trap { .. } => true,
        }
    }
}

/// The events of one call; cheap to clone, shared by the hooks that record them.
#[derive(Debug, Clone, Default)]
pub struct AuditLog {
    events: Arc<Mutex<Vec<AuditEvent>>>,
}

/// At most this many events are kept per call, so a tool probing in a loop cannot grow
/// host memory; the excess is counted in the last kept event's place.
pub const MAX_EVENTS_PER_CALL: usize = 1024;

impl AuditLog {
    /// Records `event` and emits it through `tracing`.
    pub fn record(&self, event: AuditEvent) {
        if event.is_denial() {
            tracing::info!(target: "toolhost::audit", ?event, "denied");
        } else {
            tracing::debug!(target: "toolhost::audit", ?event, "allowed");
        }
        let mut events = self.events.lock().unwrap_or_else(|p| p.into_inner());
        if events.len() < MAX_EVENTS_PER_CALL {
            events.push(event);
        }
    }

    /// Takes the recorded events, leaving the log empty.
    pub fn take(&self) -> Vec<AuditEvent> {
        std::mem::take(&mut *self.events.lock().unwrap_or_else(|p| p.into_inner()))
    }
}
