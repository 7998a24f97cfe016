//! The journal of an MCP session (`toolhost mcp`): one hash-chained journal per server
//! session, in the records a run uses, so `journal verify`, `journal show`, `report` and
//! `journal prune` read it as they read a run.
//!
//! - `run_started` with `"mode": "mcp"`, the transport, and the policy and tool digests
//!   (no task, plan or budgets: the client decides what to call);
//! - `client_connected` for each client that introduced itself (name, version, protocol
//!   revision);
//! - per call, `step_started` (written and synced before the call runs: the journal is the
//!   record that it was attempted) and `step_finished` in the shape of the engine's
//!   [`StepRecord`](toolhost_engine::StepRecord): a status of `succeeded` or `failed`, the
//!   output or the error's kind and message (a cancelled call fails with kind
//!   `cancelled`), fuel, timings and the sandbox's capability decisions;
//! - `stopped` with reason `session_ended`, the last record: nothing is appended after it.
//!
//! Arguments, outputs, errors and events are redacted as a run's are. There is no plan,
//! so [`resume`](crate::resume) and [`replay`](crate::replay) refuse a session's journal
//! ([`refuse_session`](crate::refuse_session)).

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::{Value, json};

use super::writer::{FileDigest, Journal, file_json, tools_json};
use super::{JournalError, Kind, Redactor};
use toolhost_engine::StepStatus;
use toolhost_runtime::AuditEvent;

/// The `mode` of a session's `run_started` record.
pub const MODE: &str = super::SESSION_MODE;

/// The `reason` of a session's `stopped` record.
pub const ENDED: &str = super::SESSION_ENDED;

/// What the first record of an MCP session's journal says.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionStart {
    /// `stdio` or `http`.
    pub transport: String,
    pub policy: FileDigest,
    /// Policy section name → component file and digest.
    pub tools: BTreeMap<String, FileDigest>,
}

/// One finished MCP tool call.
#[derive(Debug, Clone, Copy)]
pub struct CallRecord<'a> {
    /// `call-1`, `call-2`, …: the server numbers them.
    pub id: &'a str,
    /// The policy section name, e.g. `calc`.
    pub tool: &'a str,
    pub operation: &'a str,
    pub args: &'a Value,
    pub outcome: CallEnd<'a>,
    pub fuel: u64,
    /// Microseconds since the session started.
    pub started_us: u64,
    pub finished_us: u64,
    /// The sandbox's capability decisions during the call.
    pub events: &'a [AuditEvent],
}

/// How an MCP tool call ended.
#[derive(Debug, Clone, Copy)]
pub enum CallEnd<'a> {
    Ok(&'a Value),
    /// `kind` as a `CallError` kind (`tool_error`, `denied`, `fuel_exhausted`, …).
    Failed {
        kind: &'a str,
        message: &'a str,
    },
    /// The client cancelled it (or went away) while it ran.
    Cancelled {
        message: &'a str,
    },
}

impl CallRecord<'_> {
    /// The `step_finished` data, unredacted, as the engine's `StepRecord` serialises.
    fn data(&self) -> Value {
        let (status, output, error) = match self.outcome {
            CallEnd::Ok(v) => (StepStatus::Succeeded, Some(v), None),
            CallEnd::Failed { kind, message } => (StepStatus::Failed, None, Some((kind, message))),
            CallEnd::Cancelled { message } => {
                (StepStatus::Failed, None, Some(("cancelled", message)))
            }
        };
        let mut data = json!({
            "id": self.id,
            "tool": self.tool,
            "operation": self.operation,
            "args": self.args,
            "status": status,
        });
        if let Some(v) = output {
            data["output"] = v.clone();
        }
        if let Some((kind, message)) = error {
            data["error"] = json!({"kind": kind, "message": message});
        }
        data["fuel"] = self.fuel.into();
        data["started_us"] = self.started_us.into();
        data["finished_us"] = self.finished_us.into();
        if !self.events.is_empty() {
            data["events"] = json!(self.events);
        }
        data
    }
}

impl Journal {
    /// Creates the journal of an MCP session under `state_dir`, locked for this process
    /// (a second writer is told `mcp` holds it), and writes (and syncs) its `run_started`
    /// record, as [`Journal::create`] does for a run.
    pub fn create_session(
        state_dir: &Path,
        start: &SessionStart,
        redactor: Redactor,
    ) -> Result<Journal, JournalError> {
        let transport = redactor.text(&start.transport).into_owned();
        let fields = json!({
            "goal": format!("MCP session over {transport}"),
            "mode": MODE,
            "transport": transport,
            "policy": file_json(&redactor, &start.policy),
            "tools": tools_json(&redactor, &start.tools),
        });
        Journal::begin(state_dir, MODE, fields, redactor)
    }

    /// Records (not synced) that an MCP client introduced itself (`initialize`, or
    /// `server/discover`): `client` is its name and version, as it gave them.
    pub fn session_client(&self, client: &str, protocol_version: &str) {
        let data = json!({"client": client, "protocol_version": protocol_version});
        self.append(Kind::ClientConnected, &data, false);
    }

    /// Records that call `id` is about to run. With `durable` (a call that can have an
    /// effect outside its sandbox: a write grant or network) the record is made durable
    /// before returning (an fsync: from async code, call it where blocking is allowed); a
    /// call without effects is synced with the next durable record, since losing its start
    /// loses nothing a resume or an audit would act on.
    pub fn call_started(&self, id: &str, tool: &str, operation: &str, args: &Value, durable: bool) {
        let data = json!({"id": id, "tool": tool, "operation": operation, "args": args});
        self.append(Kind::StepStarted, &data, durable);
    }

    /// Records how a call ended. Not synced on its own: the next call's start or the
    /// session's end makes it durable, and a lost one leaves the call shown unfinished.
    pub fn call_finished(&self, call: &CallRecord<'_>) {
        self.finished(call.data(), None);
    }

    /// Records (synced) that the session ended after `calls` calls, and why (`reason`:
    /// the client closed stdin, the server was told to stop, …). The last record: the
    /// chain check refuses anything after it.
    pub fn session_ended(&self, calls: u64, reason: &str) {
        let data = json!({"reason": ENDED, "detail": reason, "spent": {"calls": calls}});
        self.append(Kind::Stopped, &data, true);
    }
}

#[cfg(test)]
mod tests;
