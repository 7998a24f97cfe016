//! The `tracing` log's way to stderr: lines are handed to one writer thread through a
//! bounded queue and never written by the thread that logged them.
//!
//! Why: a log line is emitted from wherever an event happens — a tokio worker running a
//! tool call, the OTLP exporter's thread, the sandbox's audit. Writing it there means that
//! whatever holds stderr (a lock taken elsewhere in the process, a pipe nobody reads, a
//! terminal stopped with Ctrl-S) holds the engine, and a deadline that should fire does
//! not. So logging only ever queues: when the queue is full the line is dropped and
//! counted, and [`finish`] reports the count. Each line is cut at `MAX_LINE` bytes, so the
//! queue holds at most `QUEUE × MAX_LINE` bytes whatever a guest logs.

use std::io::Write;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError, sync_channel};
use std::time::{Duration, Instant};

use tracing_subscriber::fmt::MakeWriter;

/// Lines waiting for the writer thread at most; more are dropped and counted.
const QUEUE: usize = 1024;
/// The longest line written; the rest is replaced by a note of how much was cut.
pub(crate) const MAX_LINE: usize = 16 << 10;

/// The process's stderr log (see the module doc). Obtain it with [`stderr_log`].
#[derive(Debug)]
pub(crate) struct StderrLog {
    queue: Option<SyncSender<Msg>>,
    dropped: AtomicU64,
}

#[derive(Debug)]
enum Msg {
    Line(Vec<u8>),
    Flush(SyncSender<()>),
}

/// The process-wide stderr log; its writer thread starts on first use. If the thread
/// cannot be started, lines are dropped and counted rather than written inline.
pub(crate) fn stderr_log() -> &'static StderrLog {
    static LOG: OnceLock<StderrLog> = OnceLock::new();
    LOG.get_or_init(|| {
        let (tx, rx) = sync_channel(QUEUE);
        let started = std::thread::Builder::new()
            .name("toolhost-log".into())
            .spawn(move || write_lines(rx));
        StderrLog {
            queue: started.is_ok().then_some(tx),
            dropped: AtomicU64::new(0),
        }
    })
}

/// Whether stderr is a terminal: colours only then.
pub(crate) fn stderr_is_terminal() -> bool {
    use std::io::IsTerminal;
    std::io::stderr().is_terminal()
}

fn write_lines(rx: Receiver<Msg>) {
    let stderr = std::io::stderr();
    for msg in rx {
        match msg {
            Msg::Line(line) => {
                let _ = stderr.lock().write_all(&line);
            }
            Msg::Flush(done) => {
                let _ = done.send(());
            }
        }
    }
}

impl StderrLog {
    fn push(&self, line: Vec<u8>) {
        let sent = match &self.queue {
            Some(q) => q.try_send(Msg::Line(line)),
            None => Err(TrySendError::Disconnected(Msg::Line(line))),
        };
        if sent.is_err() {
            self.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Queues one line of text for stderr (a newline is added), cut at [`MAX_LINE`].
    pub(crate) fn line(&self, text: &str) {
        let mut line = text.as_bytes()[..text.len().min(MAX_LINE - 1)].to_vec();
        line.push(b'\n');
        self.push(line);
    }

    /// Lines dropped so far because the queue was full.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }
}

/// Waits at most `timeout` for the lines queued so far to be written, then says on stderr
/// how many were dropped, if any. Call it once, before the process exits.
pub fn finish(timeout: Duration) {
    let log = stderr_log();
    let deadline = Instant::now() + timeout;
    let Some(queue) = &log.queue else { return };
    let (done_tx, done_rx) = sync_channel(1);
    let mut msg = Msg::Flush(done_tx);
    // The queue may be full behind a stuck stderr: retry until the deadline, never block.
    loop {
        match queue.try_send(msg) {
            Ok(()) => break,
            Err(TrySendError::Full(back)) if Instant::now() < deadline => {
                msg = back;
                std::thread::sleep(Duration::from_millis(2));
            }
            Err(_) => return,
        }
    }
    let left = deadline.saturating_duration_since(Instant::now());
    if done_rx.recv_timeout(left).is_err() {
        return;
    }
    let dropped = log.dropped();
    if dropped > 0 {
        // The writer thread is idle and stderr just took a line: write directly.
        let _ = writeln!(
            std::io::stderr(),
            "toolhost: {dropped} log line(s) dropped: stderr did not keep up"
        );
    }
}

/// One log line being formatted; queued whole when dropped.
pub(crate) struct LineWriter {
    buf: Vec<u8>,
    cut: usize,
}

impl Write for LineWriter {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        let room = MAX_LINE.saturating_sub(self.buf.len());
        let take = room.min(bytes.len());
        self.buf.extend_from_slice(&bytes[..take]);
        self.cut += bytes.len() - take;
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Drop for LineWriter {
    fn drop(&mut self) {
        if self.buf.is_empty() {
            return;
        }
        let mut line = std::mem::take(&mut self.buf);
        if self.cut > 0 {
            if line.last() == Some(&b'\n') {
                line.pop();
            }
            line.extend_from_slice(format!(" …[{} more bytes cut]\n", self.cut).as_bytes());
        }
        stderr_log().push(line);
    }
}

/// The [`MakeWriter`] of the stderr log, for `tracing_subscriber::fmt().with_writer(…)`.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct StderrWriter;

impl<'a> MakeWriter<'a> for StderrWriter {
    type Writer = LineWriter;

    fn make_writer(&'a self) -> LineWriter {
        LineWriter {
            buf: Vec::new(),
            cut: 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_line_is_cut_with_its_length() {
        let mut w = LineWriter {
            buf: Vec::new(),
            cut: 0,
        };
        let long = vec![b'x'; MAX_LINE + 100];
        w.write_all(&long).unwrap();
        assert_eq!(w.buf.len(), MAX_LINE);
        assert_eq!(w.cut, 100);
        std::mem::forget(w);
    }

    #[test]
    fn logging_never_blocks_when_the_queue_is_full() {
        // A log whose writer never drains: every push past the queue's size is dropped at
        // once and counted, instead of waiting.
        let (tx, _rx) = sync_channel(2);
        let log = StderrLog {
            queue: Some(tx),
            dropped: AtomicU64::new(0),
        };
        let start = Instant::now();
        for _ in 0..10_000 {
            log.push(b"line\n".to_vec());
        }
        assert_eq!(log.dropped(), 10_000 - 2);
        assert!(start.elapsed() < Duration::from_secs(1));
    }
}
