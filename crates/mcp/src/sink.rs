//! Where each call is recorded. The server tells a [`CallSink`] before a call runs and
//! after it ends; the CLI's sink is the hash-chained run journal, so `toolhost journal
//! verify` and `show` work on MCP sessions. A sink that cannot record fails closed: the
//! call is refused (or its result withheld) with a JSON-RPC internal error, and the server
//! takes no further call.

use std::sync::Arc;

use serde_json::Value;
use toolhost_runtime::CallOutcome;

/// A call about to run.
#[derive(Debug, Clone, Copy)]
pub struct CallStart<'a> {
    /// Numbers calls from 1 in the order they start, per server.
    pub seq: u64,
    /// The MCP tool name (`section.operation`).
    pub name: &'a str,
    /// The policy section.
    pub tool: &'a str,
    pub operation: &'a str,
    pub args: &'a Value,
    /// Whether the call can have an effect outside its sandbox (its section grants a
    /// write or the network): a sink makes its record durable before such a call runs.
    pub effects: bool,
}

/// How a call ended.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub enum CallEnd<'a> {
    /// It ran to a result or an error, with its report (fuel, capability decisions).
    Finished(&'a CallOutcome),
    /// The client cancelled it (or went away) and the sandbox was torn down.
    Cancelled,
    /// The server stopped it for its questions, or before it ran: `kind` is `denied` (the
    /// client's user did not approve a `sensitive` call, which never ran),
    /// `input_required` (a 2026-07-28 call waits for the client's answers and runs again
    /// with them), `missing_capability` (the client cannot answer what the tool asked) or
    /// `invalid_answer` (an answer did not match what was asked).
    Stopped { kind: &'a str, message: &'a str },
}

/// Records calls. Implementations must be cheap: they sit on the per-call path.
pub trait CallSink: Send + Sync + 'static {
    /// A client introduced itself: its name and version, and the protocol revision.
    fn client(&self, client: &str, protocol_version: &str) {
        let _ = (client, protocol_version);
    }

    /// A sink of its own for a session that has just begun with `initialize` (an HTTP
    /// session: its calls, its client); `Ok(None)` records the session's calls here. An
    /// error fails closed: the server takes no further call.
    fn session(&self) -> Result<Option<Arc<dyn CallSink>>, String> {
        Ok(None)
    }

    /// Records `call` before it runs: durably when it has [`effects`](CallStart::effects)
    /// (the record that it was attempted). May block (an fsync): the server calls it where
    /// blocking is allowed. An error refuses the call.
    fn started(&self, call: &CallStart<'_>) -> Result<(), String>;

    /// Records how `call` ended. An error withholds the result.
    fn finished(&self, call: &CallStart<'_>, end: CallEnd<'_>) -> Result<(), String>;
}

/// Records nothing (for embedders with their own audit, and the benchmark's bare figure).
#[derive(Debug, Clone, Copy, Default)]
pub struct NoSink;

impl CallSink for NoSink {
    fn started(&self, _: &CallStart<'_>) -> Result<(), String> {
        Ok(())
    }

    fn finished(&self, _: &CallStart<'_>, _: CallEnd<'_>) -> Result<(), String> {
        Ok(())
    }
}
