//! The MCP server's calls in hash-chained run journals: one per stdio server, and over HTTP
//! one per session (opened at its `initialize`, ended when the session closes) beside the
//! server's own for stateless requests; each call written (and synced) before it runs and
//! again when it ends, with the sandbox's capability decisions, so `toolhost journal
//! verify` and `show` work on it.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use toolhost_journal::Journal;
use toolhost_journal::session::{CallEnd as Ended, CallRecord};
use toolhost_mcp::{CallEnd, CallSink, CallStart};

use super::load::JournalOpener;

/// A [`CallSink`] writing to a session journal.
pub(crate) struct JournalSink {
    journal: Journal,
    began: Instant,
    /// When each running call started (µs since `began`).
    running: Mutex<HashMap<u64, u64>>,
    calls: AtomicU64,
    /// Opens each new session's own journal (HTTP); `None`: sessions record here.
    per_session: Option<JournalOpener>,
    /// A session's journal: ended when the session is dropped.
    ends_on_drop: bool,
}

impl JournalSink {
    pub(crate) fn new(journal: Journal, per_session: Option<JournalOpener>) -> JournalSink {
        JournalSink {
            journal,
            began: Instant::now(),
            running: Mutex::new(HashMap::new()),
            calls: AtomicU64::new(0),
            per_session,
            ends_on_drop: false,
        }
    }

    /// Writes the session's last record: how many calls it took, and why it ended.
    pub(crate) fn end(&self, reason: &str) {
        self.journal
            .session_ended(self.calls.load(Ordering::Relaxed), reason);
    }

    fn now_us(&self) -> u64 {
        u64::try_from(self.began.elapsed().as_micros()).unwrap_or(u64::MAX)
    }

    fn checked(&self) -> Result<(), String> {
        match self.journal.error() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

fn call_id(seq: u64) -> String {
    format!("call-{seq}")
}

impl Drop for JournalSink {
    fn drop(&mut self) {
        if self.ends_on_drop {
            self.end("the session was closed (by the client, or expired or evicted)");
        }
    }
}

impl CallSink for JournalSink {
    fn client(&self, client: &str, protocol_version: &str) {
        self.journal.session_client(client, protocol_version);
    }

    fn session(&self) -> Result<Option<Arc<dyn CallSink>>, String> {
        let Some(opener) = &self.per_session else {
            return Ok(None);
        };
        let journal = opener.open().map_err(|f| f.message().to_string())?;
        tracing::info!(journal = %journal.path().display(), "a new session's journal");
        let mut sink = JournalSink::new(journal, None);
        sink.ends_on_drop = true;
        Ok(Some(Arc::new(sink)))
    }

    fn started(&self, call: &CallStart<'_>) -> Result<(), String> {
        let at = self.now_us();
        self.calls.fetch_add(1, Ordering::Relaxed);
        self.running
            .lock()
            .expect("running calls lock")
            .insert(call.seq, at);
        self.journal.call_started(
            &call_id(call.seq),
            call.tool,
            call.operation,
            call.args,
            call.effects,
        );
        self.checked()
    }

    fn finished(&self, call: &CallStart<'_>, end: CallEnd<'_>) -> Result<(), String> {
        let finished_us = self.now_us();
        let started_us = self
            .running
            .lock()
            .expect("running calls lock")
            .remove(&call.seq)
            .unwrap_or(finished_us);
        let id = call_id(call.seq);
        let message;
        let (outcome, fuel, events) = match end {
            CallEnd::Finished(outcome) => {
                let ended = match &outcome.result {
                    Ok(v) => Ended::Ok(v),
                    Err(e) => {
                        message = e.to_string();
                        Ended::Failed {
                            kind: e.kind().as_str(),
                            message: &message,
                        }
                    }
                };
                (
                    ended,
                    outcome.report.fuel_consumed,
                    &outcome.report.events[..],
                )
            }
            CallEnd::Cancelled => (
                Ended::Cancelled {
                    message: "the MCP client cancelled the call; its sandbox was torn down",
                },
                0,
                &[][..],
            ),
            CallEnd::Stopped { kind, message } => (Ended::Failed { kind, message }, 0, &[][..]),
            _ => (
                Ended::Failed {
                    kind: "trap",
                    message: "the call ended in a way this journal does not know",
                },
                0,
                &[][..],
            ),
        };
        self.journal.call_finished(&CallRecord {
            id: &id,
            tool: call.tool,
            operation: call.operation,
            args: call.args,
            outcome,
            fuel,
            started_us,
            finished_us,
            events,
        });
        self.checked()
    }
}
