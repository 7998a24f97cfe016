//! Captured, capped stdout/stderr for one call.
//!
//! Unlike wasmtime-wasi's `MemoryOutputPipe`, which traps the guest once full, a
//! [`CappedPipe`] keeps the first `capacity` bytes and counts the rest as dropped: a chatty
//! tool still returns its result, and a flooding tool cannot grow host memory. Every byte
//! written, kept or not, is charged a unit of fuel (the copy is the work).

use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use bytes::Bytes;
use tokio::io::AsyncWrite;
use wasmtime_wasi::cli::{IsTerminal, StdoutStream};
use wasmtime_wasi::p2::{OutputStream, Pollable, StreamResult};

/// How much a guest may hand over in one write; the rest of a larger buffer waits.
const WRITE_BUDGET: usize = 64 * 1024;

#[derive(Debug, Default)]
struct Captured {
    kept: Vec<u8>,
    dropped: u64,
}

/// A stdout/stderr sink that keeps at most `capacity` bytes.
#[derive(Debug, Clone)]
pub(crate) struct CappedPipe {
    capacity: usize,
    inner: Arc<Mutex<Captured>>,
    /// Fuel owed for the bytes written, collected by the call's meter.
    owed: Arc<AtomicU64>,
}

impl CappedPipe {
    /// A pipe keeping `capacity` bytes that owes fuel for every byte written to `owed`.
    pub fn new(capacity: usize, owed: Arc<AtomicU64>) -> CappedPipe {
        CappedPipe {
            capacity,
            inner: Arc::default(),
            owed,
        }
    }

    fn push(&self, bytes: &[u8]) {
        self.owed.fetch_add(bytes.len() as u64, Ordering::Relaxed);
        let mut c = self.inner.lock().expect("pipe lock");
        let room = self.capacity.saturating_sub(c.kept.len());
        let keep = room.min(bytes.len());
        c.kept.extend_from_slice(&bytes[..keep]);
        c.dropped += (bytes.len() - keep) as u64;
    }

    /// The captured text (lossy UTF-8) and the number of bytes dropped beyond the cap.
    pub fn take(&self) -> (String, u64) {
        let mut c = self.inner.lock().expect("pipe lock");
        let kept = std::mem::take(&mut c.kept);
        (String::from_utf8_lossy(&kept).into_owned(), c.dropped)
    }
}

impl IsTerminal for CappedPipe {
    fn is_terminal(&self) -> bool {
        false
    }
}

impl StdoutStream for CappedPipe {
    fn async_stream(&self) -> Box<dyn AsyncWrite + Send + Sync> {
        Box::new(self.clone())
    }

    fn p2_stream(&self) -> Box<dyn OutputStream> {
        Box::new(self.clone())
    }
}

#[wasmtime_wasi::async_trait]
impl OutputStream for CappedPipe {
    fn write(&mut self, bytes: Bytes) -> StreamResult<()> {
        self.push(&bytes);
        Ok(())
    }

    fn flush(&mut self) -> StreamResult<()> {
        Ok(())
    }

    fn check_write(&mut self) -> StreamResult<usize> {
        Ok(WRITE_BUDGET)
    }
}

#[wasmtime_wasi::async_trait]
impl Pollable for CappedPipe {
    async fn ready(&mut self) {}
}

impl AsyncWrite for CappedPipe {
    fn poll_write(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        self.push(buf);
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_up_to_capacity_and_counts_the_rest() {
        let owed = Arc::new(AtomicU64::new(0));
        let p = CappedPipe::new(5, owed.clone());
        p.push(b"abc");
        p.push(b"defgh");
        assert_eq!(p.take(), ("abcde".to_string(), 3));
        assert_eq!(
            owed.load(Ordering::Relaxed),
            8,
            "every byte written owes fuel"
        );
    }
}
