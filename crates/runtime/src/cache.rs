//! On-disk cache of compiled components.
//!
//! An entry is keyed by the SHA-256 of the component's bytes and a hash of everything that
//! makes compiled code compatible with this engine (wasmtime's compatibility hash and the
//! toolhost version). It is two files: `KEY.cwasm`, exactly what `Component::serialize`
//! wrote, and `KEY.sum`, the length and CRC-32 of that file. The artifact is checked
//! against its summary through a read-only mapping and then handed to
//! `Component::deserialize_file`, which maps it again rather than copying it: a 40 MB
//! compiled Python tool loads without reading it into memory twice. A truncated,
//! corrupted, foreign or half-written entry is rebuilt, never loaded blindly.
//!
//! The checksum guards against damage (a torn write, a bad disk), not against someone who
//! can write the cache directory: such a person could write any checksum alongside, so a
//! cryptographic hash would add nothing there, while CRC-32 runs at memory speed (hashing a
//! 40 MB compiled Python tool with SHA-256 took a third of its cached load). Entries are
//! *keyed* by SHA-256, which does matter: a key collision would run one component's code
//! for another.
//!
//! Files are only ever replaced by renaming a complete file over them, never rewritten in
//! place, so a mapping taken by a reader stays whole while a writer replaces the entry.
//!
//! **Digest hints.** The key needs the component's SHA-256, which for an 18 MB Python tool
//! takes longer than everything else a cached load does. So the cache also remembers, per
//! source file `Identity` (device, inode, size, modification and change times), the
//! digest that file had: `hints/IDENTITY` holds it. A hint is only a guess that lets the
//! runtime start loading the compiled entry while the real digest is still being computed
//! on another thread; the tool is returned only once the two agree (see
//! `Runtime::load`). A wrong, stale or planted hint costs time, never correctness.

use std::hash::{DefaultHasher, Hash, Hasher};
use std::io::Write;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};
use wasmtime::Engine;
use wasmtime::component::Component;

/// Summary format 3: `MAGIC`, artifact length (u64 LE), CRC-32 of the artifact (u32 LE).
/// (Formats 1 and 2 put a header in front of the artifact in the `.cwasm` file itself; such
/// a file has no summary beside it, so it reads as absent and is rebuilt.)
const MAGIC: &[u8; 8] = b"THCACHE3";
const SUMMARY: usize = MAGIC.len() + 8 + 4;

/// What identifies one version of a source file without reading it: what `git` and `make`
/// compare. Any write changes the change time, which only the kernel sets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Identity(String);

impl Identity {
    /// The identity of the opened file `file` (`None` where the platform has no inodes).
    pub fn of(file: &std::fs::File) -> Option<Identity> {
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            let m = file.metadata().ok()?;
            Some(Identity(format!(
                "{:x}-{:x}-{:x}-{}.{:09}-{}.{:09}",
                m.dev(),
                m.ino(),
                m.size(),
                m.mtime(),
                m.mtime_nsec(),
                m.ctime(),
                m.ctime_nsec()
            )))
        }
        #[cfg(not(unix))]
        {
            let _ = file;
            None
        }
    }
}

/// Why a cache entry was not used.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Miss {
    Absent,
    Corrupt(String),
}

/// A directory of compiled components for one engine configuration.
#[derive(Debug, Clone)]
pub(crate) struct Cache {
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

    /// Path of the compiled artifact for a component whose SHA-256 is `digest`.
    pub fn entry_path(&self, digest: &str) -> PathBuf {
        self.dir
            .join(format!("{digest}-{}.cwasm", self.engine_hash))
    }

    /// Path of the artifact's summary (length and CRC-32).
    fn summary_path(&self, digest: &str) -> PathBuf {
        self.entry_path(digest).with_extension("sum")
    }

    fn hint_path(&self, identity: &Identity) -> PathBuf {
        self.dir.join("hints").join(&identity.0)
    }

    /// The digest the source file with this identity had when it was last loaded: a guess,
    /// to be confirmed against the file's bytes.
    pub fn hint(&self, identity: &Identity) -> Option<String> {
        let hint = std::fs::read_to_string(self.hint_path(identity)).ok()?;
        (hint.len() == 64 && hint.bytes().all(|b| b.is_ascii_hexdigit())).then_some(hint)
    }

    /// Records the digest of the source file with this identity. Best effort: a missing
    /// hint only costs the next load its head start.
    pub fn remember(&self, identity: &Identity, digest: &str) {
        let path = self.hint_path(identity);
        let written = std::fs::create_dir_all(path.parent().expect("hints/ has a parent"))
            .map_err(anyhow::Error::from)
            .and_then(|()| {
                let mut tmp = tempfile::NamedTempFile::new_in(path.parent().expect("hints/"))?;
                tmp.write_all(digest.as_bytes())?;
                tmp.persist(&path)?;
                Ok(())
            });
        if let Err(e) = written {
            tracing::debug!(path = %path.display(), error = %e, "cannot write a digest hint");
        }
    }

    /// Loads the compiled form of the component with SHA-256 `digest`, if a valid one exists.
    pub fn load(&self, engine: &Engine, digest: &str) -> Result<Component, Miss> {
        let summary = match std::fs::read(self.summary_path(digest)) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(Miss::Absent),
            Err(e) => return Err(Miss::Corrupt(format!("cannot read the summary: {e}"))),
        };
        let (len, sum) = parse_summary(&summary).map_err(Miss::Corrupt)?;
        let path = self.entry_path(digest);
        verify(&path, len, sum).map_err(Miss::Corrupt)?;
        // SAFETY: `deserialize_file` requires a file produced by `Component::serialize` of a
        // compatible engine that nobody modifies while it is mapped. The file name pins the
        // engine's compatibility hash; the file's length and CRC-32 were just verified
        // against the ones `store` recorded from `serialize`; and entries are only ever
        // replaced by a rename, never modified in place.
        unsafe { Component::deserialize_file(engine, &path) }
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
        let artifact = component
            .serialize()
            .map_err(|e| anyhow::anyhow!("{e:#}"))?;
        std::fs::create_dir_all(&self.dir)?;
        // Artifact first, summary last: until the summary lands the entry reads as absent.
        // Each is written then renamed, so a crash or a concurrent reader never sees half a
        // file.
        let mut summary = MAGIC.to_vec();
        summary.extend_from_slice(&(artifact.len() as u64).to_le_bytes());
        summary.extend_from_slice(&crc32fast::hash(&artifact).to_le_bytes());
        self.write(&self.entry_path(digest), &artifact)?;
        self.write(&self.summary_path(digest), &summary)
    }

    fn write(&self, path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
        let mut tmp = tempfile::NamedTempFile::new_in(&self.dir)?;
        tmp.write_all(bytes)?;
        tmp.as_file().sync_all()?;
        tmp.persist(path)?;
        Ok(())
    }
}

/// The artifact length and CRC-32 a well-formed summary records.
fn parse_summary(bytes: &[u8]) -> Result<(u64, u32), String> {
    if bytes.len() != SUMMARY || &bytes[..MAGIC.len()] != MAGIC {
        return Err("the summary is not a toolhost cache summary".into());
    }
    let (len, sum) = bytes[MAGIC.len()..].split_at(8);
    Ok((
        u64::from_le_bytes(len.try_into().expect("8 bytes")),
        u32::from_le_bytes(sum.try_into().expect("4 bytes")),
    ))
}

/// Checks the artifact at `path` against its summary, reading it through a mapping.
fn verify(path: &Path, len: u64, sum: u32) -> Result<(), String> {
    let file = std::fs::File::open(path).map_err(|e| format!("cannot open the artifact: {e}"))?;
    let actual = file
        .metadata()
        .map_err(|e| format!("cannot inspect the artifact: {e}"))?
        .len();
    if actual != len {
        return Err(format!("truncated: {actual} of {len} bytes"));
    }
    // SAFETY: the mapping is read-only and dropped before returning; cache files are only
    // replaced by rename, never truncated or rewritten in place, so its pages stay valid.
    let map = unsafe { memmap2::Mmap::map(&file) }
        .map_err(|e| format!("cannot map the artifact: {e}"))?;
    check(&map, sum)
}

fn check(artifact: &[u8], sum: u32) -> Result<(), String> {
    if crc32fast::hash(artifact) == sum {
        Ok(())
    } else {
        Err("checksum mismatch".into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summaries_and_checksums_reject_damage() {
        let artifact = b"compiled";
        let mut summary = MAGIC.to_vec();
        summary.extend_from_slice(&(artifact.len() as u64).to_le_bytes());
        summary.extend_from_slice(&crc32fast::hash(artifact).to_le_bytes());
        let (len, sum) = parse_summary(&summary).unwrap();
        assert_eq!(len, 8);
        assert_eq!(check(artifact, sum), Ok(()));
        assert_eq!(check(b"compilee", sum).unwrap_err(), "checksum mismatch");
        for bad in [&summary[..10], b"THCACHE2\0\0\0\0\0\0\0\0\0\0\0\0"] {
            assert_eq!(
                parse_summary(bad).unwrap_err(),
                "the summary is not a toolhost cache summary"
            );
        }
    }

    #[test]
    fn verify_names_a_short_artifact() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.cwasm");
        std::fs::write(&path, b"compil").unwrap();
        assert_eq!(verify(&path, 8, 0).unwrap_err(), "truncated: 6 of 8 bytes");
    }
}
