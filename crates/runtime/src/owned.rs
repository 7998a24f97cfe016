//! Files and directories only the operator can write: where the host keeps what it trusts
//! later (compiled machine code in the cache; journals, inline tasks and plan memory in the
//! state directory).
//!
//! - [`private_dir`]: a directory the host keeps state in must be a directory (not a
//!   symbolic link), owned by the user toolhost runs as, and writable by nobody else; a
//!   missing one is created 0700, one others may read (0755) is made 0700 with a warning.
//!   Anything else is refused, naming the reason. A shared
//!   parent (`/tmp`, a Kubernetes `emptyDir`) is fine: the host's own directory inside it
//!   is what is checked, and someone who made it first owns it, so it is refused.
//! - [`open_regular`]: the only way the host opens a file it will trust there: without
//!   following a symbolic link, without blocking (a FIFO planted as an entry would otherwise
//!   hang the opener forever), and only if what it opened is a regular file that the user
//!   owns and nobody else may write.
//! - [`create_dirs`] / [`write_file`] / [`replace_file`]: everything the host writes there is 0700 / 0600,
//!   whatever the umask.

use std::fs::{File, Metadata};
use std::io::Write;
use std::path::Path;

/// A directory or file the host refuses to trust.
#[derive(Debug, thiserror::Error)]
#[error("refusing the {what} `{path}`: {reason}")]
pub struct Refused {
    /// What the path was for ("compiled cache directory", "state directory").
    pub what: &'static str,
    pub path: String,
    pub reason: String,
}

/// Makes sure `dir` is a directory only this user can write (creating it 0700, with any
/// missing parents, when it does not exist); `what` names it in the error.
pub fn private_dir(dir: &Path, what: &'static str) -> Result<(), Refused> {
    let refused = |reason: String| Refused {
        what,
        path: dir.display().to_string(),
        reason,
    };
    let meta = match std::fs::symlink_metadata(dir) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            create_dirs(dir).map_err(|e| refused(format!("cannot create it: {e}")))?;
            std::fs::symlink_metadata(dir)
        }
        other => other,
    }
    .map_err(|e| refused(format!("cannot inspect it: {e}")))?;
    if meta.file_type().is_symlink() {
        return Err(refused(
            "it is a symbolic link (name the directory itself, which must be owned by this user and writable by nobody else)".into(),
        ));
    }
    if !meta.is_dir() {
        return Err(refused("it is not a directory".into()));
    }
    owned_by_user(&meta).map_err(refused)?;
    tighten(dir, &meta);
    Ok(())
}

/// Makes a directory of this user's that others may read or list (0755, as earlier
/// versions and many umasks made them) 0700: what the host keeps there (journals, inline
/// tasks, compiled code) is nobody else's to read. Best effort: the directory is already
/// safe to trust, so a failure is only logged.
fn tighten(dir: &Path, meta: &Metadata) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = meta.permissions().mode() & 0o7777;
        if mode & 0o077 == 0 {
            return;
        }
        let tight = mode & !0o077;
        match std::fs::set_permissions(dir, std::fs::Permissions::from_mode(tight)) {
            Ok(()) => tracing::warn!(
                dir = %dir.display(),
                "made it private (mode {mode:04o} -> {tight:04o}): what toolhost keeps there is nobody else's to read"
            ),
            Err(e) => tracing::warn!(dir = %dir.display(), error = %e, "cannot make it private"),
        }
    }
    #[cfg(not(unix))]
    let _ = (dir, meta);
}

/// Whoever owns `meta`'s file and who else may write it: the user alone, or why not.
fn owned_by_user(meta: &Metadata) -> Result<(), String> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let me = euid();
        if meta.uid() != me {
            return Err(format!(
                "it is owned by uid {}, not by the user toolhost runs as (uid {me}); someone else could write into it",
                meta.uid()
            ));
        }
        let mode = meta.mode() & 0o7777;
        if mode & 0o022 != 0 {
            let who = match (mode & 0o020 != 0, mode & 0o002 != 0) {
                (true, true) => "its group and every other user",
                (true, false) => "its group",
                _ => "every other user",
            };
            return Err(format!(
                "it is writable by {who} (mode {mode:04o}); use a directory only this user can write (mode 0700), e.g. a new one inside it"
            ));
        }
    }
    #[cfg(not(unix))]
    let _ = meta;
    Ok(())
}

/// The effective user id of this process.
#[cfg(unix)]
fn euid() -> u32 {
    // SAFETY: geteuid(2) cannot fail and touches no memory.
    unsafe { libc::geteuid() }
}

/// Opens `path` for reading if it is a regular file that this user owns and nobody else
/// may write. Never follows a symbolic link in the last component and never blocks on a
/// FIFO or device; a missing file is `NotFound`, every other refusal an error saying why.
pub fn open_regular(path: &Path) -> std::io::Result<File> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::custom_flags(
        &mut options,
        libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY,
    );
    let file = options.open(path).map_err(|e| {
        #[cfg(unix)]
        if e.raw_os_error() == Some(libc::ELOOP) {
            return std::io::Error::other("it is a symbolic link");
        }
        e
    })?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(std::io::Error::other(format!(
            "it is not a regular file but a {}",
            kind(&meta)
        )));
    }
    owned_by_user(&meta).map_err(std::io::Error::other)?;
    Ok(file)
}

/// What a non-regular file is, for messages.
fn kind(meta: &Metadata) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        let t = meta.file_type();
        if t.is_fifo() {
            return "FIFO";
        }
        if t.is_socket() {
            return "socket";
        }
        if t.is_block_device() || t.is_char_device() {
            return "device";
        }
    }
    if meta.is_dir() {
        "directory"
    } else {
        "special file"
    }
}

/// Creates `dir` and its missing parents, each 0700.
pub fn create_dirs(dir: &Path) -> std::io::Result<()> {
    let mut b = std::fs::DirBuilder::new();
    b.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut b, 0o700);
    b.create(dir)
}

/// Writes `bytes` to `path` as a new 0600 file renamed over it (its directory created 0700
/// if missing): a reader sees the old file or the new one, never half of one.
pub fn write_file(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    replace_file(path, bytes, true)
}

/// [`write_file`], synced to disk before the rename only when `durable`: a file whose loss
/// in a crash costs nothing but time (a cache's seal or hint) skips the `fsync`. Either
/// way a reader sees the old file or the new one, never half of one.
pub fn replace_file(path: &Path, bytes: &[u8], durable: bool) -> std::io::Result<()> {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    create_dirs(dir)?;
    // tempfile creates its files 0600 (`O_EXCL`, never through a link).
    let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
    tmp.write_all(bytes)?;
    if durable {
        tmp.as_file().sync_all()?;
    }
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn a_missing_or_readable_directory_is_made_0700_and_a_shared_one_refused() {
        let parent = tempfile::tempdir().unwrap();
        let dir = parent.path().join("a/b");
        private_dir(&dir, "state directory").unwrap();
        for d in [parent.path().join("a"), dir.clone()] {
            let mode = std::fs::metadata(&d).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o700, "{}", d.display());
        }
        // One others may read, as earlier versions made them, is made 0700.
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        private_dir(&dir, "state directory").unwrap();
        let mode = std::fs::metadata(&dir).unwrap().permissions().mode() & 0o7777;
        assert_eq!(mode, 0o700);
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o1777)).unwrap();
        let e = private_dir(&dir, "state directory")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("writable by its group and every other user (mode 1777)"),
            "{e}"
        );
    }

    #[test]
    fn open_regular_refuses_links_and_fifos_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("f");
        write_file(&file, b"x").unwrap();
        let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        assert!(open_regular(&file).is_ok());
        let link = dir.path().join("l");
        std::os::unix::fs::symlink(&file, &link).unwrap();
        assert_eq!(
            open_regular(&link).unwrap_err().to_string(),
            "it is a symbolic link"
        );
        let fifo = dir.path().join("p");
        let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        assert_eq!(
            open_regular(&fifo).unwrap_err().to_string(),
            "it is not a regular file but a FIFO"
        );
    }
}
