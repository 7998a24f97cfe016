//! The content-addressed local store of pulled components: every manifest and component
//! is a file named by its sha256 digest, and every read hashes it again, so a corrupted
//! or edited entry is refused by name, never run.
//!
//! ```text
//! STORE/blobs/sha256/HEX                 a manifest or a component, 0600
//! STORE/tags/REGISTRY/REPOSITORY/TAG     the manifest digest the tag had when last pulled
//! STORE/signatures/sha256/HEX.json       the cosign signatures of manifest HEX, as last read
//! ```
//!
//! Signatures are kept so that a component whose policy requires a signature loads offline
//! once pulled; they are checked against the policy's keys on every load, so a kept
//! signature vouches for nothing by being kept.
//!
//! Directories are 0700. Writes go to a temporary file in the same directory, synced,
//! then renamed over the name, so a reader never sees half a file.

use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::{DistError, OciRef};

/// The environment variable that moves the store (tests, shared machines).
pub const STORE_ENV: &str = "TOOLHOST_STORE_DIR";

/// A local store rooted at a directory (created on the first write).
#[derive(Debug, Clone)]
pub struct Store {
    root: PathBuf,
}

/// `sha256:HEX` of `bytes`.
pub fn sha256_digest(bytes: &[u8]) -> String {
    format!("sha256:{}", hex::encode(Sha256::digest(bytes)))
}

impl Store {
    /// The store at `root`.
    pub fn at(root: impl Into<PathBuf>) -> Store {
        Store { root: root.into() }
    }

    /// The store at `given`, else `$TOOLHOST_STORE_DIR`, else the user's data directory
    /// (`$XDG_DATA_HOME/toolhost/store`, `~/.local/share/toolhost/store`); `None` when none
    /// of them is known.
    pub fn locate(given: Option<&Path>) -> Option<Store> {
        if let Some(dir) = given {
            return Some(Store::at(dir));
        }
        let env = |k: &str| {
            std::env::var_os(k)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        };
        env(STORE_ENV)
            .or_else(|| env("XDG_DATA_HOME").map(|d| d.join("toolhost/store")))
            .or_else(|| env("HOME").map(|h| h.join(".local/share/toolhost/store")))
            .map(Store::at)
    }

    /// The store's directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Where the blob of `digest` (`sha256:HEX`, checked by [`OciRef::parse`] or
    /// computed here) lives.
    pub fn blob_path(&self, digest: &str) -> PathBuf {
        let hex = digest.strip_prefix("sha256:").unwrap_or(digest);
        self.root.join("blobs/sha256").join(hex)
    }

    /// Stores `bytes` under their digest, which it returns.
    pub fn put(&self, bytes: &[u8]) -> Result<String, DistError> {
        let digest = sha256_digest(bytes);
        let path = self.blob_path(&digest);
        if self.get(&digest).ok().flatten().is_none() {
            write_atomic(&path, bytes)?;
        }
        Ok(digest)
    }

    /// The bytes of `digest`, hashed again; `None` when the store does not have it.
    pub fn get(&self, digest: &str) -> Result<Option<Vec<u8>>, DistError> {
        let path = self.blob_path(digest);
        let bytes = match std::fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(DistError::io("cannot read store entry", path, e)),
        };
        let actual = sha256_digest(&bytes);
        if actual != digest {
            return Err(DistError::Corrupted {
                path,
                expected: digest.to_string(),
                actual,
            });
        }
        Ok(Some(bytes))
    }

    /// Keeps `kept`, the cosign signatures of manifest `digest` (`sha256:HEX`) as
    /// `resolve` writes them.
    pub fn put_signatures(&self, digest: &str, kept: &[u8]) -> Result<(), DistError> {
        write_atomic(&self.signatures_path(digest), kept)
    }

    /// The signatures of manifest `digest` last kept; `None` when none were.
    pub fn signatures(&self, digest: &str) -> Result<Option<Vec<u8>>, DistError> {
        let path = self.signatures_path(digest);
        match std::fs::read(&path) {
            Ok(b) => Ok(Some(b)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(DistError::io("cannot read store entry", path, e)),
        }
    }

    fn signatures_path(&self, digest: &str) -> PathBuf {
        let hex = digest.strip_prefix("sha256:").unwrap_or(digest);
        self.root
            .join("signatures/sha256")
            .join(format!("{hex}.json"))
    }

    /// Records that `reference`'s tag pointed at manifest `digest`.
    pub fn set_tag(&self, reference: &OciRef, digest: &str) -> Result<(), DistError> {
        match self.tag_path(reference) {
            Some(path) => write_atomic(&path, digest.as_bytes()),
            None => Ok(()),
        }
    }

    /// The manifest digest `reference`'s tag had when last pulled.
    pub fn tag(&self, reference: &OciRef) -> Result<Option<String>, DistError> {
        let Some(path) = self.tag_path(reference) else {
            return Ok(None);
        };
        match std::fs::read_to_string(&path) {
            Ok(d) => Ok(Some(d.trim().to_string())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(DistError::io("cannot read store entry", path, e)),
        }
    }

    fn tag_path(&self, reference: &OciRef) -> Option<PathBuf> {
        // Registry names may hold `:` (a port) and `[`/`]` (IPv6): kept as `_` on disk.
        let registry: String = reference
            .registry()
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '.' || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        let tag = reference.tag()?;
        Some(
            self.root
                .join("tags")
                .join(registry)
                .join(reference.repository())
                .join(tag),
        )
    }
}

/// Writes `bytes` to `path` through a synced temporary file renamed over it: 0600, in
/// directories made 0700.
fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), DistError> {
    let dir = path.parent().expect("store paths have a parent");
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|e| DistError::io("cannot create store directory", dir, e))?;
    let io = |e| DistError::io("cannot write store entry", path, e);
    let mut tmp = tempfile::NamedTempFile::new_in(dir).map_err(io)?;
    tmp.as_file()
        .set_permissions(std::fs::Permissions::from_mode(0o600))
        .map_err(io)?;
    tmp.write_all(bytes).map_err(io)?;
    tmp.as_file().sync_all().map_err(io)?;
    tmp.persist(path).map_err(|e| io(e.error))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stores_by_digest_and_refuses_a_corrupted_entry() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::at(dir.path().join("s"));
        let digest = store.put(b"component").unwrap();
        assert_eq!(store.get(&digest).unwrap().unwrap(), b"component");
        let path = store.blob_path(&digest);
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!((mode(&path), mode(path.parent().unwrap())), (0o600, 0o700));
        std::fs::write(&path, b"edited").unwrap();
        let err = store.get(&digest).unwrap_err().to_string();
        assert!(
            err.contains("is corrupted") && err.contains(&digest),
            "{err}"
        );
        // Putting the bytes again repairs the entry.
        store.put(b"component").unwrap();
        assert!(store.get(&digest).unwrap().is_some());
        assert!(store.get(&sha256_digest(b"other")).unwrap().is_none());
    }
}
