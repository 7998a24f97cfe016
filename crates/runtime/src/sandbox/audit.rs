//! Audit events: every capability decision a call's sandbox makes, kept with the call's
//! outcome (for the run journal) and emitted through `tracing` (target `toolhost::audit`).
//!
//! Events never carry secret values: an environment grant is recorded by name only, and a
//! file event names the guest path, not the data.
//!
//! The log cannot be flooded away (`AuditLog`): every decision that changes or refuses
//! something is kept, repeated allowed reads collapse into counts, every value is cut to a
//! bounded length, and a call whose audit budget is spent is ended rather than let go on
//! unaudited.

mod bound;
pub(crate) use self::bound::cut_to;
mod log;

use serde::{Deserialize, Serialize};

pub(crate) use self::log::{AuditLog, AuditSpent};

/// Whether the sandbox let an action through.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    Allowed,
    Denied,
}

/// One capability decision. Deserializable too: a call run by an executor pool's worker
/// comes back with its decisions, which join the run's journal as a local call's would.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
#[non_exhaustive]
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
    /// A limit ended the call: `fuel`, `timeout`, `memory`, `output`, `arguments`,
    /// `written` (bytes written or file size), `audit` (the audit budget); or capped
    /// output: `stdio`, `log` (the call went on; the excess was dropped).
    Limit { limit: String, detail: String },
    /// The guest trapped: `panic`, `stack_overflow`, `trap`, `instantiate`. The host
    /// contained it; nothing outside the call's instance was affected.
    Trap { kind: String, detail: String },
    /// Allowed reads (`open-read`, `stat`, `read-dir`, `readlink`) beyond the first
    /// `MAX_ROUTINE_EVENTS` of a call, counted per action instead of kept one by one.
    /// Decisions that change or refuse something never collapse.
    Repeated { action: String, count: u64 },
    /// The bytes the call wrote to files in all (recorded at its end, if any).
    Written { bytes: u64 },
}

impl AuditEvent {
    /// Whether this event records an action the policy refused: a file, HTTP, socket or
    /// name-lookup request outside the grants, or an operation it does not allow. Such
    /// refusals are security events: what a tool (or the planner that chose its
    /// arguments) tried to do and may not.
    pub fn is_refusal(&self) -> bool {
        match self {
            AuditEvent::File { decision, .. }
            | AuditEvent::Http { decision, .. }
            | AuditEvent::Socket { decision, .. }
            | AuditEvent::NameLookup { decision, .. }
            | AuditEvent::Call { decision, .. } => *decision == Decision::Denied,
            _ => false,
        }
    }

    /// Whether this event records a refusal, a tripped limit or a contained trap.
    pub fn is_denial(&self) -> bool {
        match self {
            AuditEvent::File { decision, .. }
            | AuditEvent::Http { decision, .. }
            | AuditEvent::Socket { decision, .. }
            | AuditEvent::NameLookup { decision, .. }
            | AuditEvent::Call { decision, .. } => *decision == Decision::Denied,
            AuditEvent::EnvRead { .. }
            | AuditEvent::Repeated { .. }
            | AuditEvent::Written { .. } => false,
            AuditEvent::Limit { .. } | AuditEvent::Trap { .. } => true,
        }
    }
}
