//! The MCP server's calls in a hash-chained run journal: one journal per `toolhost mcp`
//! process, each call written (and synced) before it runs and again when it ends, with the
//! sandbox's capability decisions, so `toolhost journal verify` and `show` work on it.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use toolhost_journal::Journal;
use toolhost_journal::session::{CallEnd as Ended, CallRecord};
use toolhost_mcp::{CallEnd, CallSink, CallStart};

/// A [`CallSink`] writing to a session journal.
pub(crate) struct JournalSink {
    journal: Journal,
    began: Instant,
    /// When each running call started (µs since `began`).
    running: Mutex<HashMap<u64, u64>>,
    calls: AtomicU64,
}

impl JournalSink {
    pub(crate) fn new(journal: Journal) -> JournalSink {
        JournalSink {
            journal,
            began: Instant::now(),
            running: Mutex::new(HashMap::new()),
            calls: AtomicU64::new(0),
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

impl CallSink for JournalSink {
    fn client(&self, client: &str, protocol_version: &str) {
        self.journal.session_client(client, protocol_version);
    }

    fn started(&self, call: &CallStart<'_>) -> Result<(), String> {
        let at = self.now_us();
        self.calls.fetch_add(1, Ordering::Relaxed);
        self.running
            .lock()
            .expect("running calls lock")
            .insert(call.seq, at);
        self.journal
            .call_started(&call_id(call.seq), call.tool, call.operation, call.args);
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
