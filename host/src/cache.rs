//! On-disk cache of compiled components.
//!
//! An entry is keyed by the SHA-256 of the component's bytes and a hash of everything that
//! makes compiled code compatible with this engine (wasmtime's compatibility hash and the
//! toolhost version). Each file carries the length and CRC-32 of its payload, checked before
//! the payload is handed to `Component::deserialize`: a truncated, corrupted or foreign
//! entry is rebuilt, never loaded blindly.
//!
//! The checksum guards against damage (a torn write, a bad disk), not against someone who
//! can write the cache directory: such a person could write any checksum alongside, so a
//! cryptographic hash would add nothing there, while CRC-32 runs at memory speed (hashing a
//! 40 MB compiled Python tool with SHA-256 took a third of its cached load). Entries are
//! *keyed* by SHA-256, which does matter: a key collision would run one component's code
//! for another.

use std::hash::{DefaultHasher, Hash, Hasher};
use std::io::Write;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};
use wasmtime::Engine;
use wasmtime::component::Component;

/// Format 2: `MAGIC`, payload length (u64 LE), CRC-32 of the payload (u32 LE), payload.
/// (Format 1 carried a SHA-256; its entries read as foreign and are rebuilt.)
const MAGIC: &[u8; 8] = b"THCACHE2";
const HEADER: usize = MAGIC.len() + 8 + 4;

/// Why a cache entry was not used.
#[derive(Debug, PartialEq, Eq)]
pub enum Miss {
    Absent,
    Corrupt(String),
}

/// A directory of compiled components for one engine configuration.
#[derive(Debug, Clone)]
pub struct Cache {
    dir: PathBuf,
    engine_hash: String,
}

pub fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

impl Cache {
    pub fn new(dir: PathBuf, engine: &Engine) -> Cache {
        // DefaultHasher::new() uses fixed keys, so the hash is stable for a given build.
        let mut h = DefaultHasher::new();
        engine.precompile_compatibility_hash().hash(&mut h);
        env!("CARGO_PKG_VERSION").hash(&mut h);
        Cache {
            dir,
            engine_hash: format!("{:016x}", h.finish()),
        }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Path of the entry for a component whose SHA-256 is `digest`.
    pub fn entry_path(&self, digest: &str) -> PathBuf {
        self.dir
            .join(format!("{digest}-{}.cwasm", self.engine_hash))
    }

    /// Loads the compiled form of the component with SHA-256 `digest`, if a valid one exists.
    pub fn load(&self, engine: &Engine, digest: &str) -> Result<Component, Miss> {
        let path = self.entry_path(digest);
        let bytes = match std::fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(Miss::Absent),
            Err(e) => return Err(Miss::Corrupt(format!("cannot read: {e}"))),
        };
        let payload = check(&bytes).map_err(Miss::Corrupt)?;
        // SAFETY: `deserialize` requires bytes produced by `Component::serialize` of a
        // compatible engine. The file name pins the engine's compatibility hash and the
        // payload's length and CRC-32 were just verified against the ones written with it,
        // so these are the bytes `store` wrote from `serialize`.
        unsafe { Component::deserialize(engine, payload) }
            .map_err(|e| Miss::Corrupt(format!("rejected by wasmtime: {e:#}")))
    }

    /// Stores a compiled component. Failures only cost a recompile next time, so they are
    /// logged, not returned.
    pub fn store(&self, digest: &str, component: &Component) {
        if let Err(e) = self.try_store(digest, component) {
            tracing::warn!(dir = %self.dir.display(), error = %e, "cannot write compiled cache entry");
        }
    }

    fn try_store(&self, digest: &str, component: &Component) -> anyhow::Result<()> {
        let payload = component
            .serialize()
            .map_err(|e| anyhow::anyhow!("{e:#}"))?;
        std::fs::create_dir_all(&self.dir)?;
        let path = self.entry_path(digest);
        // Write then rename, so a crash or a concurrent reader never sees half a file.
        let mut tmp = tempfile::NamedTempFile::new_in(&self.dir)?;
        tmp.write_all(MAGIC)?;
        tmp.write_all(&(payload.len() as u64).to_le_bytes())?;
        tmp.write_all(&crc32fast::hash(&payload).to_le_bytes())?;
        tmp.write_all(&payload)?;
        tmp.as_file().sync_all()?;
        tmp.persist(&path)?;
        Ok(())
    }
}

/// Returns the payload of a well-formed entry.
fn check(bytes: &[u8]) -> Result<&[u8], String> {
    if bytes.len() < HEADER || &bytes[..MAGIC.len()] != MAGIC {
        return Err("not a toolhost cache entry".into());
    }
    let (len, rest) = bytes[MAGIC.len()..].split_at(8);
    let (sum, payload) = rest.split_at(4);
    let len = u64::from_le_bytes(len.try_into().expect("8 bytes"));
    if u64::try_from(payload.len()).ok() != Some(len) {
        return Err(format!(
            "truncated: {} of {len} payload bytes",
            payload.len()
        ));
    }
    if crc32fast::hash(payload).to_le_bytes() != sum {
        return Err("checksum mismatch".into());
    }
    Ok(payload)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn check_rejects_damage() {
        let payload = b"compiled";
        let mut entry = MAGIC.to_vec();
        entry.extend_from_slice(&(payload.len() as u64).to_le_bytes());
        entry.extend_from_slice(&crc32fast::hash(payload).to_le_bytes());
        entry.extend_from_slice(payload);
        assert_eq!(check(&entry).unwrap(), payload);
        let mut flipped = entry.clone();
        *flipped.last_mut().unwrap() ^= 1;
        assert_eq!(check(&flipped).unwrap_err(), "checksum mismatch");
        assert_eq!(
            check(&entry[..entry.len() - 1]).unwrap_err(),
            "truncated: 7 of 8 payload bytes"
        );
        assert_eq!(
            check(&entry[..10]).unwrap_err(),
            "not a toolhost cache entry"
        );
        let mut old = entry.clone();
        old[..MAGIC.len()].copy_from_slice(b"THCACHE1");
        assert_eq!(check(&old).unwrap_err(), "not a toolhost cache entry");
    }
}
