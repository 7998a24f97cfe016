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

fn new_key_file(path: &Path, key: &[u8; KEY_LEN]) -> std::io::Result<()> {
    use std::io::Write;
    let mut o = std::fs::OpenOptions::new();
    o.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut o, 0o600);
    let mut f = o.open(path)?;
    f.write_all(key)?;
    f.sync_all()
}

#[cfg(test)]
mod tests {
    use super::super::{Cache, KEY_FILE};
    use wasmtime::Engine;

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
