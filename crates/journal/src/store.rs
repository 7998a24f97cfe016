//! Where a journal's lines go: the [`Store`] trait, and `FileStore`, the local file
//! appended to under a [`RunLock`].
//!
//! The trait is what makes "one writer per run" a property of the store rather than of
//! the caller: a store is opened only by a writer that holds the run's claim, and every
//! append is made under it. Two kinds fit behind it:
//! - a local file (this module): the claim is an `flock` the kernel drops when the
//!   process dies, so nothing else can append while the holder lives;
//! - a shared database, for writers on several machines: the claim is a lease with a
//!   fencing token, each [`Store::append`] carries the token and the record's `seq`, and
//!   the database refuses an append whose token is no longer current or whose `seq` is
//!   taken, so a writer that lost its lease (paused, partitioned) cannot add a record even
//!   if it does not yet know it lost it. [`Store::syncer`] is its commit.

use std::fmt;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::lock::RunLock;

/// A job that makes every append made before it was created durable; run off the async
/// workers (it may wait for the disk).
pub type Syncer = Box<dyn FnOnce() -> std::io::Result<()> + Send>;

/// The append-only storage of one run's records, written by the one holder of the run.
pub trait Store: Send + fmt::Debug {
    /// Appends record `seq`'s line (with its newline). On an error nothing of the line may
    /// count as written: the store takes back a partial append where it can.
    fn append(&mut self, seq: u64, line: &[u8]) -> std::io::Result<()>;

    /// A job that makes what was appended so far durable.
    fn syncer(&self) -> Syncer;

    /// Where the records are, for messages.
    fn location(&self) -> String;
}

/// A journal file, appended to by the holder of its [`RunLock`].
pub(crate) struct FileStore {
    file: Arc<File>,
    path: PathBuf,
    /// Bytes of whole records: where a failed append is cut back to.
    len: u64,
    _lock: RunLock,
}

impl fmt::Debug for FileStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FileStore")
            .field("path", &self.path)
            .field("len", &self.len)
            .finish_non_exhaustive()
    }
}

impl FileStore {
    /// Appends to `file` (opened for append, `len` bytes long) at `path`, under `lock`.
    pub fn new(file: File, path: &Path, len: u64, lock: RunLock) -> FileStore {
        FileStore {
            file: Arc::new(file),
            path: path.to_path_buf(),
            len,
            _lock: lock,
        }
    }
}

impl Store for FileStore {
    fn append(&mut self, seq: u64, line: &[u8]) -> std::io::Result<()> {
        let written = match super::crash::write_fault(seq) {
            // The test hook of a full disk: part of the line lands, then ENOSPC.
            Some(e) => (&*self.file).write_all(&line[..line.len() / 2]).and(Err(e)),
            None => (&*self.file).write_all(line),
        };
        match written {
            Ok(()) => {
                self.len += line.len() as u64;
                Ok(())
            }
            Err(e) => {
                // A partial line would read as a torn write: cut it off, so the journal
                // ends at its last whole record (if the disk lets us; a torn line is what
                // remains otherwise, and a resume cuts it).
                let _ = self.file.set_len(self.len);
                Err(e)
            }
        }
    }

    fn syncer(&self) -> Syncer {
        let file = self.file.clone();
        Box::new(move || file.sync_data())
    }

    fn location(&self) -> String {
        self.path.display().to_string()
    }
}
