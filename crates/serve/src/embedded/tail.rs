//! Following a journal file as it grows: the records after a sequence number, then each
//! one appended, until the run is over and the file read to its end.

use std::collections::VecDeque;
use std::io::{Read, Seek, SeekFrom};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use toolhost_journal::Record;

use super::run::Run;
use crate::registry::RecordStream;

/// How long a follower sleeps when the journal has nothing new.
const POLL: Duration = Duration::from_millis(40);

struct Tail {
    path: PathBuf,
    /// Bytes consumed: whole lines only.
    offset: u64,
    after: u64,
    ready: VecDeque<Record>,
    run: Arc<Run>,
    done: bool,
}

impl Tail {
    /// Reads the whole lines appended since the last read.
    fn read(&mut self) {
        let Ok(mut f) = toolhost_runtime::owned::open_regular(&self.path) else {
            return;
        };
        let mut bytes = Vec::new();
        if f.seek(SeekFrom::Start(self.offset)).is_err() || f.read_to_end(&mut bytes).is_err() {
            return;
        }
        // A line being written is left for the next read.
        let Some(end) = bytes.iter().rposition(|b| *b == b'\n') else {
            return;
        };
        self.offset += end as u64 + 1;
        for line in bytes[..end].split(|b| *b == b'\n') {
            match serde_json::from_slice::<Record>(line) {
                Ok(r) if r.seq > self.after => {
                    self.after = r.seq;
                    self.ready.push_back(r);
                }
                Ok(_) => {}
                // A line that is no record ends what a reader can trust.
                Err(_) => {
                    self.done = true;
                    return;
                }
            }
        }
    }
}

/// The records of `run`'s journal after `after`, as they are appended.
pub(crate) fn follow(run: Arc<Run>, after: u64) -> RecordStream {
    let tail = Tail {
        path: run.path.clone(),
        offset: 0,
        after,
        ready: VecDeque::new(),
        run,
        done: false,
    };
    Box::pin(futures_util::stream::unfold(tail, |mut t| async move {
        loop {
            if let Some(r) = t.ready.pop_front() {
                return Some((r, t));
            }
            if t.done {
                return None;
            }
            // Looked at before reading: a run over by then has appended everything.
            let over = t.run.state().is_final();
            t.read();
            if t.ready.is_empty() {
                if over {
                    return None;
                }
                tokio::time::sleep(POLL).await;
            }
        }
    }))
}
