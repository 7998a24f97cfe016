//! Following one run's journal rows for Server-Sent Events: the rows after a `seq`, then
//! each one appended (woken by the `toolhost_changes` notification, else polling), until
//! the run is over and its rows read to the end.

use std::collections::VecDeque;

use toolhost_journal::Record;
use toolhost_store_pg::{Database, PgError};

use super::state_of;

/// Following one run's journal rows.
pub(super) struct Follow {
    pub(super) db: Database,
    pub(super) run: String,
    pub(super) after: u64,
    pub(super) ready: VecDeque<Record>,
    pub(super) changes: tokio::sync::watch::Receiver<u64>,
    /// How long to wait for a notification before looking anyway (the poll interval).
    pub(super) poll: std::time::Duration,
    pub(super) done: bool,
}

impl Follow {
    pub(super) async fn next(&mut self) -> Option<Record> {
        loop {
            if let Some(r) = self.ready.pop_front() {
                return Some(r);
            }
            if self.done {
                return None;
            }
            self.changes.mark_unchanged();
            let (db, run, after) = (self.db.clone(), self.run.clone(), self.after);
            // Looked at before reading: a run over by then has appended everything.
            let read = tokio::task::spawn_blocking(move || {
                let info = db.run_info(&run)?;
                let lines = db.lines_after(&run, after)?;
                Ok::<_, PgError>((info, lines))
            })
            .await;
            let Ok(Ok((info, lines))) = read else {
                return None;
            };
            for (seq, line) in lines {
                let trimmed = line.strip_suffix(b"\n").unwrap_or(&line);
                match serde_json::from_slice::<Record>(trimmed) {
                    Ok(r) => {
                        self.after = seq;
                        self.ready.push_back(r);
                    }
                    // A line that is no record ends what a reader can trust.
                    Err(_) => {
                        self.done = true;
                        break;
                    }
                }
            }
            if self.ready.is_empty() {
                if state_of(info.status).is_final() {
                    return None;
                }
                let _ = tokio::time::timeout(self.poll, self.changes.changed()).await;
            }
        }
    }
}
