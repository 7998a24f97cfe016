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
//!
//! The queue and its writer thread are `tracing-appender`'s non-blocking writer, lossy
//! (`try_send`: a full queue drops the line, never waits) and bounded at `QUEUE` lines.
//! Three things are added around it, because it bounds lines but not bytes, and because
//! its `WorkerGuard` waits and may print to stdout when dropped:
//! - [`LineWriter`] cuts a line at `MAX_LINE` bytes before it is queued;
//! - the guard is never dropped (it lives in a `static`): its drop waits up to 1.1 s for a
//!   writer stuck on stderr, and with the queue full prints a line of its own to stdout,
//!   in the middle of what a `--json` reader parses;
//! - [`finish`] waits for the queue to drain with a deadline of its own: the writer
//!   counts the lines it wrote, and the queue is drained once the lines written and
//!   dropped add up to those queued.

use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use tracing_appender::non_blocking::{NonBlocking, NonBlockingBuilder, WorkerGuard};
use tracing_subscriber::fmt::MakeWriter;

/// Lines waiting for the writer thread at most; more are dropped and counted.
const QUEUE: usize = 1024;
/// The longest line written; the rest is replaced by a note of how much was cut.
pub const MAX_LINE: usize = 16 << 10;

/// The process's stderr log (see the module doc).
struct StderrLog {
    queue: NonBlocking,
    /// Kept, never dropped (see the module doc).
    _guard: WorkerGuard,
    /// Lines handed to the queue (dropped ones included).
    queued: AtomicU64,
    /// Lines the writer thread has written to stderr (or failed to).
    written: Arc<AtomicU64>,
}

/// The process-wide stderr log, once a line was logged.
static LOG: OnceLock<StderrLog> = OnceLock::new();

/// The process-wide stderr log; its writer thread starts on first use.
fn stderr_log() -> &'static StderrLog {
    LOG.get_or_init(|| {
        let written = Arc::new(AtomicU64::new(0));
        let (queue, guard) = NonBlockingBuilder::default()
            .lossy(true)
            .buffered_lines_limit(QUEUE)
            .thread_name("toolhost-log")
            .finish(Stderr {
                written: written.clone(),
            });
        StderrLog {
            queue,
            _guard: guard,
            queued: AtomicU64::new(0),
            written,
        }
    })
}

/// What the writer thread writes to: stderr, one line per call, counted.
struct Stderr {
    written: Arc<AtomicU64>,
}

impl Write for Stderr {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        std::io::stderr().write(buf)
    }

    /// The writer thread writes each queued line with one call.
    fn write_all(&mut self, line: &[u8]) -> std::io::Result<()> {
        let r = std::io::stderr().lock().write_all(line);
        self.written.fetch_add(1, Ordering::Release);
        r
    }

    fn flush(&mut self) -> std::io::Result<()> {
        std::io::stderr().flush()
    }
}

impl StderrLog {
    fn push(&self, line: &[u8]) {
        self.queued.fetch_add(1, Ordering::Release);
        // Lossy: a full queue drops the line and counts it, and never waits.
        let _ = self.queue.clone().write(line);
    }

    /// Lines dropped so far because the queue was full.
    fn dropped(&self) -> u64 {
        self.queue.error_counter().dropped_lines() as u64
    }

    /// Whether every line queued so far was written or dropped.
    fn drained(&self) -> bool {
        let queued = self.queued.load(Ordering::Acquire);
        self.written.load(Ordering::Acquire) + self.dropped() >= queued
    }
}

/// Whether stderr is a terminal: colours only then.
pub fn stderr_is_terminal() -> bool {
    use std::io::IsTerminal;
    std::io::stderr().is_terminal()
}

/// Queues one line of text for stderr (a newline is added), cut at [`MAX_LINE`]; never
/// waits for stderr.
pub fn line(text: &str) {
    let mut line = text.as_bytes()[..text.len().min(MAX_LINE - 1)].to_vec();
    line.push(b'\n');
    stderr_log().push(&line);
}

/// Waits at most `timeout` for the lines queued so far to be written, then says on stderr
/// how many were dropped, if any. Call it once, before the process exits. A process that
/// logged nothing has no writer thread, and none is started here.
pub fn finish(timeout: Duration) {
    let Some(log) = LOG.get() else {
        return;
    };
    let deadline = Instant::now() + timeout;
    while !log.drained() {
        if Instant::now() >= deadline {
            return;
        }
        std::thread::sleep(Duration::from_millis(2));
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

/// One log line being formatted; queued whole when dropped, cut at [`MAX_LINE`].
pub struct LineWriter {
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
        stderr_log().push(&line);
    }
}

/// The [`MakeWriter`] of the stderr log, for `tracing_subscriber::fmt().with_writer(…)`.
#[derive(Debug, Clone, Copy, Default)]
pub struct StderrWriter;

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

    /// A writer that never returns: stderr stuck behind a pipe nobody reads.
    struct Stuck;

    impl Write for Stuck {
        fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
            std::thread::park();
            Ok(0)
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn logging_never_blocks_when_the_queue_is_full() {
        // The queue as `stderr_log` builds it, its writer stuck: every push past the
        // queue's size is dropped at once and counted, instead of waiting.
        let (queue, guard) = NonBlockingBuilder::default()
            .lossy(true)
            .buffered_lines_limit(2)
            .finish(Stuck);
        let log = StderrLog {
            queue,
            _guard: guard,
            queued: AtomicU64::new(0),
            written: Arc::new(AtomicU64::new(0)),
        };
        let start = Instant::now();
        for _ in 0..10_000 {
            log.push(b"line\n");
        }
        // The writer thread took one line and is stuck writing it; two wait.
        assert!(log.dropped() >= 10_000 - 3, "{}", log.dropped());
        assert!(!log.drained());
        assert!(start.elapsed() < Duration::from_secs(1));
        // Dropping the guard would wait for the stuck writer, then print to stdout.
        std::mem::forget(log);
    }
}
