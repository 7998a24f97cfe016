//! The write budget of one call: bytes written to files in all (`Limits::max_written_bytes`)
//! and the largest size a write may give a file (`Limits::max_file_bytes`).
//!
//! Every way a guest writes file data goes through the gate: `descriptor.write` and
//! `set-size` are checked directly; the streams from `write-via-stream` and
//! `append-via-stream` are wrapped in a [`Metered`] stream that checks each write (`splice`
//! and `write-zeroes` write through it too). Going over a cap traps with
//! [`WriteLimitExceeded`]: the call ends, the file keeps what was written before.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use bytes::Bytes;
use wasmtime_wasi::p2::{OutputStream, Pollable, StreamError, StreamResult};

/// A write went over the call's write budget; raised as a trap.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub(crate) struct WriteLimitExceeded(pub String);

/// What the call has written so far, against its caps.
#[derive(Debug)]
pub(crate) struct WriteBudget {
    max_written: u64,
    max_file: u64,
    written: AtomicU64,
}

impl WriteBudget {
    pub(crate) fn new(max_written: u64, max_file: u64) -> Arc<WriteBudget> {
        Arc::new(WriteBudget {
            max_written,
            max_file,
            written: AtomicU64::new(0),
        })
    }

    /// Bytes written to files so far.
    pub(crate) fn written(&self) -> u64 {
        self.written.load(Ordering::Relaxed)
    }

    /// Charges `len` bytes written at `offset` (`None`: appended, where only the total
    /// counts) to file `path`.
    pub(crate) fn charge(
        &self,
        path: &str,
        offset: Option<u64>,
        len: u64,
    ) -> Result<(), WriteLimitExceeded> {
        if let Some(offset) = offset {
            self.size(path, offset.saturating_add(len))?;
        }
        let before = self.written.fetch_add(len, Ordering::Relaxed);
        let total = before.saturating_add(len);
        if total > self.max_written {
            // Not charged: the write does not happen.
            self.written.fetch_sub(len, Ordering::Relaxed);
            return Err(WriteLimitExceeded(format!(
                "writing {len} more bytes to `{path}` would make {total} bytes written by \
                 the call, over the limit of {} bytes (`max_written_bytes`)",
                self.max_written
            )));
        }
        Ok(())
    }

    /// Checks that file `path` may reach `size` bytes.
    pub(crate) fn size(&self, path: &str, size: u64) -> Result<(), WriteLimitExceeded> {
        if size > self.max_file {
            return Err(WriteLimitExceeded(format!(
                "`{path}` would reach {size} bytes, over the limit of {} bytes per file \
                 (`max_file_bytes`)",
                self.max_file
            )));
        }
        Ok(())
    }
}

/// A file's output stream whose every write is charged to the call's budget first.
pub(crate) struct Metered {
    inner: Box<dyn OutputStream>,
    budget: Arc<WriteBudget>,
    path: Arc<str>,
    /// Where the next write lands; `None` for an append stream.
    position: Option<u64>,
}

impl Metered {
    pub(crate) fn new(
        inner: Box<dyn OutputStream>,
        budget: Arc<WriteBudget>,
        path: impl Into<Arc<str>>,
        position: Option<u64>,
    ) -> Metered {
        Metered {
            inner,
            budget,
            path: path.into(),
            position,
        }
    }
}

#[wasmtime_wasi::async_trait]
impl OutputStream for Metered {
    fn write(&mut self, bytes: Bytes) -> StreamResult<()> {
        let len = bytes.len() as u64;
        self.budget
            .charge(&self.path, self.position, len)
            .map_err(|e| StreamError::Trap(wasmtime::Error::new(e)))?;
        self.inner.write(bytes)?;
        if let Some(p) = &mut self.position {
            *p = p.saturating_add(len);
        }
        Ok(())
    }

    fn flush(&mut self) -> StreamResult<()> {
        self.inner.flush()
    }

    fn check_write(&mut self) -> StreamResult<usize> {
        self.inner.check_write()
    }

    async fn cancel(&mut self) {
        self.inner.cancel().await
    }
}

#[wasmtime_wasi::async_trait]
impl Pollable for Metered {
    async fn ready(&mut self) {
        self.inner.ready().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn totals_and_file_sizes_are_capped() {
        let b = WriteBudget::new(100, 60);
        assert!(b.charge("/d/a", Some(0), 50).is_ok());
        assert!(b.charge("/d/b", None, 40).is_ok());
        let e = b.charge("/d/c", Some(0), 20).unwrap_err();
        assert!(
            e.0.contains("110 bytes written") && e.0.contains("100 bytes"),
            "{e}"
        );
        assert_eq!(b.written(), 90, "a refused write is not charged");
        let e = b.charge("/d/a", Some(50), 11).unwrap_err();
        assert!(e.0.contains("`/d/a` would reach 61 bytes"), "{e}");
        let e = b.size("/d/sparse", 1 << 40).unwrap_err();
        assert!(e.0.contains("1099511627776 bytes"), "{e}");
    }
}
