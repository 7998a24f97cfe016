//! The cache's MAC key: 32 random bytes in `key`, 0600, made at first use and never
//! replaced, so every process sharing the cache uses one key.

use std::io::Read;
use std::path::Path;

use super::{CacheError, KEY_LEN};
use crate::owned;

/// The cache's MAC key at `path`, made (32 random bytes, 0600) if there is none. It must be
/// this user's regular file, readable by nobody else.
pub(super) fn key(path: &Path) -> Result<[u8; KEY_LEN], CacheError> {
    let refused = |reason: String| CacheError::Key {
        path: path.display().to_string(),
        reason,
    };
    match owned::open_regular(path) {
        Ok(file) => {
            #[cfg(unix)]
            {
                use std::os::unix::fs::PermissionsExt;
                let mode = file
                    .metadata()
                    .map_err(|e| refused(e.to_string()))?
                    .permissions()
                    .mode();
                if mode & 0o077 != 0 {
                    return Err(refused(format!(
                        "others may read it (mode {:04o}); make it 0600",
                        mode & 0o7777
                    )));
                }
            }
            let mut bytes = Vec::with_capacity(KEY_LEN + 1);
            file.take(KEY_LEN as u64 + 1)
                .read_to_end(&mut bytes)
                .map_err(|e| refused(e.to_string()))?;
            bytes.try_into().map_err(|b: Vec<u8>| {
                refused(format!(
                    "it holds {} bytes, not {KEY_LEN}; remove it to start a new cache",
                    b.len()
                ))
            })
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let mut key = [0; KEY_LEN];
            getrandom::fill(&mut key).map_err(|e| refused(format!("no randomness: {e}")))?;
            // Created exclusively and never replaced, so every process sharing the cache
            // uses one key: one that loses the race to create it reads the winner's.
            match new_key_file(path, &key) {
                Ok(()) => Ok(key),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => key_again(path),
                Err(e) => Err(refused(format!("cannot create it: {e}"))),
            }
        }
        Err(e) => Err(refused(e.to_string())),
    }
}

/// The key another process created first.
fn key_again(path: &Path) -> Result<[u8; KEY_LEN], CacheError> {
    // Its writer may not have written it yet.
    for _ in 0..50 {
        if std::fs::metadata(path).is_ok_and(|m| m.len() == KEY_LEN as u64) {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    key(path)
}

/// Makes the key file whole or not at all: the key is written and synced under a name of
/// this process's, then linked to `path` (which fails if another process made it first),
/// so no process ever reads a key file still being written.
fn new_key_file(path: &Path, key: &[u8; KEY_LEN]) -> std::io::Result<()> {
    use std::io::Write;
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let tmp = path.with_file_name(format!(".key.{}.{nanos}.tmp", std::process::id()));
    let mut o = std::fs::OpenOptions::new();
    o.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut o, 0o600);
    let written = o.open(&tmp).and_then(|mut f| {
        f.write_all(key)?;
        f.sync_all()
    });
    let linked = written.and_then(|()| std::fs::hard_link(&tmp, path));
    let _ = std::fs::remove_file(&tmp);
    linked
}

#[cfg(test)]
mod tests {
    use super::super::{Cache, KEY_FILE};
    use wasmtime::Engine;

    /// Processes starting on a new cache at once all read one whole key: none sees the
    /// key file before its 32 bytes are in it (which once failed a test run).
    #[test]
    fn first_uses_at_once_share_one_whole_key() {
        for _ in 0..200 {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join(KEY_FILE);
            let keys: Vec<_> = std::thread::scope(|s| {
                let handles: Vec<_> = (0..16).map(|_| s.spawn(|| super::key(&path))).collect();
                handles.into_iter().map(|h| h.join().unwrap()).collect()
            });
            let first = keys[0].as_ref().unwrap();
            for k in &keys {
                assert_eq!(k.as_ref().unwrap(), first);
            }
            let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().flatten().collect();
            assert_eq!(left.len(), 1, "{left:?}");
        }
    }

    #[test]
    fn the_key_is_made_once_and_kept_private() {
        let dir = tempfile::tempdir().unwrap();
        let engine = Engine::default();
        let a = Cache::open(dir.path().to_path_buf(), &engine).unwrap();
        let b = Cache::open(dir.path().to_path_buf(), &engine).unwrap();
        assert_eq!(a.key, b.key);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let key = dir.path().join(KEY_FILE);
            assert_eq!(
                std::fs::metadata(&key).unwrap().permissions().mode() & 0o777,
                0o600
            );
            std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o644)).unwrap();
            let e = Cache::open(dir.path().to_path_buf(), &engine).unwrap_err();
            assert!(
                e.to_string().contains("others may read it (mode 0644)"),
                "{e}"
            );
        }
    }
}
