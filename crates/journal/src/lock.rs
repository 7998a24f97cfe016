//! One writer per run on one machine: [`RunLock`], an exclusive advisory lock (`flock`) on
//! `RUN.jsonl.lock` beside the journal, taken by `toolhost run` and `toolhost resume`
//! before anything executes and held for the life of the process. The kernel releases it
//! when the process ends in any way, `kill -9` included, so a crash never leaves a run
//! locked. The file also says who holds it (pid, host, start time, command), for the
//! error a second writer gets.
//!
//! The lock file is never deleted while its journal exists: deleting it would let a
//! process that opened the old file and one that created a new file both "hold" it.

use std::fs::{File, TryLockError};
use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde::{Deserialize, Serialize};

use super::time;

/// Who holds a run's lock, as it wrote it into the lock file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Holder {
    pub pid: u32,
    pub host: String,
    /// When it took the lock (RFC 3339, UTC).
    pub started: String,
    /// `run` or `resume`.
    pub command: String,
}

impl std::fmt::Display for Holder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "`toolhost {}`, pid {} on host `{}`, since {}",
            self.command, self.pid, self.host, self.started
        )
    }
}

/// Why a run's lock was not taken.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    #[error(
        "run `{run}` already has a writer: {holder}; a run has exactly one writer at a time: wait for it to end (or stop it), then try again"
    )]
    Held { run: String, holder: String },
    #[error("cannot lock `{path}`: {reason}")]
    Io { path: String, reason: String },
}

/// The exclusive right to append to one run's journal; released when dropped or when the
/// process ends.
#[derive(Debug)]
pub struct RunLock {
    /// Held open: closing the last descriptor releases the `flock`.
    _file: File,
    path: PathBuf,
}

/// The lock file of the journal at `journal`: its name with `.lock` appended, so it can
/// never be the journal itself.
pub(crate) fn lock_path(journal: &Path) -> PathBuf {
    let mut name = journal.as_os_str().to_owned();
    name.push(".lock");
    PathBuf::from(name)
}

fn io_err(path: &Path, e: &std::io::Error) -> LockError {
    LockError::Io {
        path: path.display().to_string(),
        reason: e.to_string(),
    }
}

impl RunLock {
    /// Takes the lock of the journal at `journal` for `command`, without waiting: when
    /// another process holds it, says who. `create_new` refuses an existing lock file (a
    /// fresh run's id must be new).
    pub fn acquire(journal: &Path, command: &str, create_new: bool) -> Result<RunLock, LockError> {
        let path = lock_path(journal);
        let mut o = std::fs::OpenOptions::new();
        o.read(true).write(true);
        if create_new {
            o.create_new(true);
        } else {
            o.create(true);
        }
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut o, 0o600);
        let mut file = o.open(&path).map_err(|e| io_err(&path, &e))?;
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                return Err(LockError::Held {
                    run: super::run_id(journal),
                    holder: holder_of(&mut file),
                });
            }
            Err(TryLockError::Error(e)) => return Err(io_err(&path, &e)),
        }
        let holder = Holder {
            pid: std::process::id(),
            host: hostname(),
            started: time::format(SystemTime::now()),
            command: command.to_string(),
        };
        // Who holds it is for messages only: the lock is the flock, so a failure to say so
        // (a full disk) leaves it empty rather than failing the run.
        let said = serde_json::to_vec(&holder).expect("holders serialise");
        let told = file
            .set_len(0)
            .and_then(|()| file.rewind())
            .and_then(|()| file.write_all(&said));
        if told.is_err() {
            let _ = file.set_len(0);
        }
        Ok(RunLock { _file: file, path })
    }

    /// The lock file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether a process holds the lock of the journal at `journal` now (creates nothing).
    pub fn is_held(journal: &Path) -> bool {
        match File::open(lock_path(journal)) {
            Ok(f) => matches!(f.try_lock(), Err(TryLockError::WouldBlock)),
            Err(_) => false,
        }
    }

    /// Who writes the journal at `journal` now (`toolhost run`, pid 42 on host `h`, since
    /// …), if a process holds its lock; creates nothing.
    pub fn holder(journal: &Path) -> Option<String> {
        let mut f = File::open(lock_path(journal)).ok()?;
        match f.try_lock() {
            Err(TryLockError::WouldBlock) => Some(holder_of(&mut f)),
            _ => None,
        }
    }
}

/// Who holds the lock `file` is open on, as the holder wrote it. It writes that right
/// after taking the lock: a reader that comes in between (and may still see the previous,
/// dead holder's words) waits a little for it.
fn holder_of(file: &mut File) -> String {
    let here = hostname();
    for _ in 0..50 {
        let mut text = String::new();
        let read = file.rewind().and_then(|()| file.read_to_string(&mut text));
        if read.is_ok()
            && let Ok(h) = serde_json::from_str::<Holder>(&text)
            && (h.host != here || alive(h.pid))
        {
            return h.to_string();
        }
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    "a process that has not said who it is".to_string()
}

/// Whether process `pid` of this host exists.
fn alive(pid: u32) -> bool {
    #[cfg(unix)]
    {
        let Ok(pid) = libc::pid_t::try_from(pid) else {
            return false;
        };
        // SAFETY: kill(2) with signal 0 only checks that the process exists.
        let rc = unsafe { libc::kill(pid, 0) };
        rc == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
    }
    #[cfg(not(unix))]
    {
        let _ = pid;
        true
    }
}

/// This machine's host name (for who holds a run, in messages).
pub fn hostname() -> String {
    #[cfg(unix)]
    {
        let mut buf = [0u8; 256];
        // SAFETY: the buffer is valid for its length; gethostname NUL-terminates within it
        // or truncates, and we read only up to the first NUL.
        let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
        if rc == 0 {
            let end = buf.iter().position(|b| *b == 0).unwrap_or(buf.len());
            return String::from_utf8_lossy(&buf[..end]).into_owned();
        }
    }
    std::env::var("HOSTNAME").unwrap_or_else(|_| "unknown".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_lock_is_refused_naming_the_holder_and_freed_on_drop() {
        let dir = tempfile::tempdir().unwrap();
        let journal = dir.path().join("R1.jsonl");
        let first = RunLock::acquire(&journal, "run", true).unwrap();
        assert_eq!(first.path(), dir.path().join("R1.jsonl.lock"));
        let err = RunLock::acquire(&journal, "resume", false)
            .unwrap_err()
            .to_string();
        let pid = std::process::id();
        assert!(
            err.starts_with(&format!(
                "run `R1` already has a writer: `toolhost run`, pid {pid} on host `"
            )),
            "{err}"
        );
        assert!(
            RunLock::acquire(&journal, "run", true).is_err(),
            "a fresh run's lock must be new"
        );
        assert!(RunLock::is_held(&journal));
        drop(first);
        assert!(!RunLock::is_held(&journal));
        RunLock::acquire(&journal, "resume", false).unwrap();
    }
}
