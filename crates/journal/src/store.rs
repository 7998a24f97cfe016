//! Where a journal's lines go: the [`Store`] trait, and `FileStore`, the local file
//! appended to under a [`RunLock`].
//!
//! A file's appends are `pwrite`s into space preallocated a segment at a time (`fallocate`,
//! then written with zeros, so the blocks are allocated and initialised once): an
//! `fdatasync` then flushes the records alone, not the file's size or its block map
//! too. The file's tail is zeros until its store closes and cuts it off; a reader takes
//! a journal's content to end at the first NUL byte ([`written`](crate::written)), which
//! no record holds (JSON escapes it). Syncs are shared between callers (`group`).
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
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::lock::RunLock;

mod group;

use self::group::Group;

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

    /// How many syncs were made (shared ones counted once), where the store counts them.
    fn syncs(&self) -> Option<u64> {
        None
    }
}

/// The first segment preallocated; each next one is twice the last, up to
/// [`MAX_SEGMENT`].
const FIRST_SEGMENT: u64 = 64 << 10;

/// The largest segment preallocated at once.
const MAX_SEGMENT: u64 = 1 << 20;

/// A journal file, appended to by the holder of its [`RunLock`].
pub(crate) struct FileStore {
    file: Arc<File>,
    path: PathBuf,
    /// Bytes of whole records: where the next one goes, and where a failed append is cut
    /// back to.
    len: u64,
    /// The file's size: the records, then preallocated zeros.
    allocated: u64,
    /// The size of the next segment preallocated.
    segment: u64,
    group: Arc<Group>,
    _lock: RunLock,
}

impl fmt::Debug for FileStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FileStore")
            .field("path", &self.path)
            .field("len", &self.len)
            .field("allocated", &self.allocated)
            .finish_non_exhaustive()
    }
}

impl FileStore {
    /// Appends to `file` (opened for writing, its records `len` bytes long and nothing
    /// after them) at `path`, under `lock`.
    pub fn new(file: File, path: &Path, len: u64, lock: RunLock) -> FileStore {
        FileStore {
            file: Arc::new(file),
            path: path.to_path_buf(),
            len,
            allocated: len,
            segment: FIRST_SEGMENT,
            group: Arc::new(Group::default()),
            _lock: lock,
        }
    }

    /// Makes the file at least `end` bytes long, a segment at a time.
    fn make_room(&mut self, end: u64) -> std::io::Result<()> {
        if end <= self.allocated {
            return Ok(());
        }
        let grow = self.segment.max(end - self.allocated);
        preallocate(&self.file, self.allocated, grow)?;
        self.allocated += grow;
        self.segment = (self.segment * 2).min(MAX_SEGMENT);
        Ok(())
    }
}

/// Allocates `bytes` of `file` from `at` and writes them with zeros: a record written there
/// later changes neither the file's size nor, on ext4 and XFS, its extents (`fallocate`
/// alone leaves extents marked unwritten, and their conversion is metadata the record's
/// `fdatasync` would have to commit).
fn preallocate(file: &File, at: u64, bytes: u64) -> std::io::Result<()> {
    reserve(file, at, bytes)?;
    static ZEROS: [u8; 64 << 10] = [0; 64 << 10];
    let mut done = 0;
    while done < bytes {
        let n = (bytes - done).min(ZEROS.len() as u64);
        file.write_all_at(&ZEROS[..n as usize], at + done)?;
        done += n;
    }
    Ok(())
}

/// Reserves the blocks (`fallocate`): a full disk shows here, at a segment's start, rather
/// than in the middle of a record. Where the file system cannot, the zeros written next
/// allocate them.
#[cfg(target_os = "linux")]
fn reserve(file: &File, at: u64, bytes: u64) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    let (Ok(at), Ok(len)) = (i64::try_from(at), i64::try_from(bytes)) else {
        return Err(std::io::Error::other("journal too large"));
    };
    // SAFETY: a plain system call on a descriptor this store owns; no memory is passed.
    let rc = unsafe { libc::fallocate(file.as_raw_fd(), 0, at, len) };
    if rc == 0 {
        return Ok(());
    }
    let e = std::io::Error::last_os_error();
    match e.raw_os_error() {
        Some(libc::EOPNOTSUPP) => Ok(()),
        _ => Err(e),
    }
}

#[cfg(not(target_os = "linux"))]
fn reserve(_file: &File, _at: u64, _bytes: u64) -> std::io::Result<()> {
    Ok(())
}

impl Store for FileStore {
    fn append(&mut self, seq: u64, line: &[u8]) -> std::io::Result<()> {
        let end = self.len + line.len() as u64;
        let written = self.make_room(end).and_then(|()| {
            match super::crash::write_fault(seq) {
                // The test hook of a full disk: part of the line lands, then ENOSPC.
                Some(e) => self
                    .file
                    .write_all_at(&line[..line.len() / 2], self.len)
                    .and(Err(e)),
                None => self.file.write_all_at(line, self.len),
            }
        });
        match written {
            Ok(()) => {
                self.len = end;
                self.group.appended();
                Ok(())
            }
            Err(e) => {
                // A partial line would read as a torn write: cut it off, with the
                // preallocated tail, so the journal ends at its last whole record (if the
                // disk lets us; a torn line is what remains otherwise, and a resume cuts it).
                let _ = self.file.set_len(self.len);
                self.allocated = self.len;
                Err(e)
            }
        }
    }

    fn syncer(&self) -> Syncer {
        let (file, group) = (self.file.clone(), self.group.clone());
        let target = group.written();
        Box::new(move || group.sync(target, || file.sync_data()))
    }

    fn location(&self) -> String {
        self.path.display().to_string()
    }

    fn syncs(&self) -> Option<u64> {
        Some(self.group.syncs())
    }
}

impl Drop for FileStore {
    /// Cuts the preallocated zeros off a journal that is closed: what remains is its
    /// records, as a reader would take them anyway. Not synced: a crash before the cut
    /// reaches the disk leaves zeros, which readers stop at.
    fn drop(&mut self) {
        if self.allocated > self.len {
            let _ = self.file.set_len(self.len);
        }
    }
}
