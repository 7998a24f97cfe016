//! On-disk cache of compiled components.
//!
//! An entry is keyed by the SHA-256 of the component's bytes and a hash of everything that
//! makes compiled code compatible with this engine (wasmtime's compatibility hash and the
//! toolhost version). It is two files: `KEY.cwasm`, exactly what `Component::serialize`
//! wrote, and `KEY.sum`, the length of that file and its MAC. The artifact is checked
//! against its summary through a read-only mapping of the opened file and then handed to
//! wasmtime, which maps the same file again rather than copying it: a 40 MB compiled
//! Python tool loads without reading it into memory twice. A truncated, corrupted,
//! foreign, half-written or forged entry is rebuilt, never loaded.
//!
//! **Trust.** An entry is machine code the host runs as its user, so it is trusted only
//! where nobody else can have written it:
//! - the cache directory must be owned by the user and writable by nobody else
//!   ([`crate::owned::private_dir`]; `Runtime::new` refuses any other), and every file in
//!   it is opened with [`crate::owned::open_regular`] (no symbolic links, no FIFOs, only
//!   the user's own files);
//! - every artifact carries a keyed BLAKE3 MAC of its entry's name and bytes, under a
//!   per-cache 32-byte key (`key`, 0600, made at first use). Whoever cannot read the key
//!   cannot make an entry the host accepts, and an entry moved under another name (one
//!   component's code for another's) fails too. Keyed BLAKE3 replaced the CRC-32 of format
//!   3 at about 5 GB/s per core, a few milliseconds on a 40 MB artifact (BENCHMARKS.md);
//!   SHA-256 there once took a third of the load. The key is `key`'s.
//!
//! - an artifact checked in full once is sealed (`seal`): later loads of the very same,
//!   unchanged file check its identity instead of hashing it again.
//!
//! An entry that fails a check is reported (a warning naming the entry and the reason, and
//! the tool's [`Compiled::Rebuilt`](crate::tool::Compiled::Rebuilt)) and compiled again.
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
use std::io::Read;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};
use wasmtime::Engine;
use wasmtime::component::Component;

use crate::owned;

mod key;
mod seal;

pub use seal::SETTLED;

/// Summary format 4: `MAGIC`, artifact length (u64 LE), keyed BLAKE3 of the entry's name and
/// the artifact (32 bytes). Summaries of formats 1 to 3 (CRC-32) read as foreign: their
/// entries are rebuilt once.
const MAGIC: &[u8; 8] = b"THCACHE4";
const MAC_LEN: usize = blake3::OUT_LEN;
const SUMMARY: usize = MAGIC.len() + 8 + MAC_LEN;

/// The file holding the cache's MAC key.
const KEY_FILE: &str = "key";
const KEY_LEN: usize = blake3::KEY_LEN;

/// Artifacts at least this large are MACed on several threads (BLAKE3 hashes a tree, so
/// the result is the same): below it, starting them costs more than it saves.
const PARALLEL_MAC: usize = 4 << 20;

/// What identifies one version of a source file without reading it: what `git` and `make`
/// compare. Any write changes the change time, which only the kernel sets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Identity(String);

impl Identity {
    /// The identity of the opened file `file` (`None` where the platform has no inodes).
    pub fn of(file: &std::fs::File) -> Option<Identity> {
        Identity::of_meta(&file.metadata().ok()?)
    }

    /// The identity of the file with metadata `m`.
    fn of_meta(m: &std::fs::Metadata) -> Option<Identity> {
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
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
            let _ = m;
            None
        }
    }
}

/// How an artifact passed its check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Checked {
    /// Its MAC was computed over its bytes.
    Hashed,
    /// It is the same unchanged file as one hashed earlier (`seal`).
    Sealed,
}

/// Why a cache entry was not used.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Miss {
    Absent,
    Corrupt(String),
}

/// Why a cache could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum CacheError {
    #[error(transparent)]
    Dir(#[from] owned::Refused),
    #[error("cannot use the compiled cache's key `{path}`: {reason}")]
    Key { path: String, reason: String },
}

/// A directory of compiled components for one engine configuration.
#[derive(Clone)]
pub(crate) struct Cache {
    dir: PathBuf,
    engine_hash: String,
    key: [u8; KEY_LEN],
    seal_key: [u8; KEY_LEN],
    /// How old an artifact must be before it is sealed (`seal::SETTLED`; shorter in tests).
    settled: std::time::Duration,
}

impl std::fmt::Debug for Cache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cache")
            .field("dir", &self.dir)
            .field("engine_hash", &self.engine_hash)
            .finish_non_exhaustive()
    }
}

/// The SHA-256 of `bytes` in lower-case hex: a component's digest, as policies pin it.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

impl Cache {
    /// The cache in `dir`, which must be (or is created as) a directory only this user can
    /// write; its MAC key is read, or made at first use.
    pub fn open(dir: PathBuf, engine: &Engine) -> Result<Cache, CacheError> {
        owned::private_dir(&dir, "compiled cache directory")?;
        let key = key::key(&dir.join(KEY_FILE))?;
        // DefaultHasher::new() uses fixed keys, so the hash is stable for a given build.
        let mut h = DefaultHasher::new();
        engine.precompile_compatibility_hash().hash(&mut h);
        env!("CARGO_PKG_VERSION").hash(&mut h);
        Ok(Cache {
            dir,
            engine_hash: format!("{:016x}", h.finish()),
            seal_key: seal::key(&key),
            key,
            settled: seal::SETTLED,
        })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Path of the compiled artifact for a component whose SHA-256 is `digest`.
    pub fn entry_path(&self, digest: &str) -> PathBuf {
        self.dir.join(self.entry_name(digest))
    }

    fn entry_name(&self, digest: &str) -> String {
        format!("{digest}-{}.cwasm", self.engine_hash)
    }

    /// Path of the artifact's summary (length and MAC).
    fn summary_path(&self, digest: &str) -> PathBuf {
        self.entry_path(digest).with_extension("sum")
    }

    /// Path of the artifact's seal.
    fn seal_path(&self, digest: &str) -> PathBuf {
        self.entry_path(digest).with_extension("seal")
    }

    fn hint_path(&self, identity: &Identity) -> PathBuf {
        self.dir.join("hints").join(&identity.0)
    }

    /// The MAC of the artifact `bytes` stored as the entry of `digest`: the name is part of
    /// it, so a valid entry renamed to another component's is not valid there.
    fn mac(&self, digest: &str, bytes: &[u8]) -> blake3::Hash {
        let mut h = blake3::Hasher::new_keyed(&self.key);
        h.update(self.entry_name(digest).as_bytes()).update(&[0]);
        if bytes.len() >= PARALLEL_MAC {
            h.update_rayon(bytes);
        } else {
            h.update(bytes);
        }
        h.finalize()
    }

    /// The digest the source file with this identity had when it was last loaded: a guess,
    /// to be confirmed against the file's bytes.
    pub fn hint(&self, identity: &Identity) -> Option<String> {
        let mut hint = String::new();
        owned::open_regular(&self.hint_path(identity))
            .ok()?
            .take(65)
            .read_to_string(&mut hint)
            .ok()?;
        (hint.len() == 64 && hint.bytes().all(|b| b.is_ascii_hexdigit())).then_some(hint)
    }

    /// Records the digest of the source file with this identity. Best effort: a missing
    /// hint only costs the next load its head start.
    pub fn remember(&self, identity: &Identity, digest: &str) {
        let path = self.hint_path(identity);
        if let Err(e) = owned::replace_file(&path, digest.as_bytes(), false) {
            tracing::debug!(path = %path.display(), error = %e, "cannot write a digest hint");
        }
    }

    /// Loads the compiled form of the component with SHA-256 `digest`, if a valid one exists.
    pub fn load(&self, engine: &Engine, digest: &str) -> Result<Component, Miss> {
        let summary = match read_small(&self.summary_path(digest), SUMMARY) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(Miss::Absent),
            Err(e) => return Err(Miss::Corrupt(format!("cannot read the summary: {e}"))),
        };
        let (len, mac) = parse_summary(&summary).map_err(Miss::Corrupt)?;
        let path = self.entry_path(digest);
        let (file, _) = self
            .verify(&path, digest, len, &mac)
            .map_err(Miss::Corrupt)?;
        let mapped = reopen_path(&file).unwrap_or(path);
        // SAFETY: `deserialize_file` requires a file produced by `Component::serialize` of a
        // compatible engine that nobody modifies while it is mapped. The file name pins the
        // engine's compatibility hash; the opened file is this user's, writable by nobody
        // else, and its bytes carry the MAC `store` made of what `serialize` wrote, under a
        // key only this user can read; `mapped` names that same open file; and entries are
        // only ever replaced by a rename, never modified in place.
        unsafe { Component::deserialize_file(engine, &mapped) }
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
        // Artifact first, summary last: until the summary lands the entry reads as absent.
        // Each is written then renamed, so a crash or a concurrent reader never sees half a
        // file.
        let mut summary = MAGIC.to_vec();
        summary.extend_from_slice(&(artifact.len() as u64).to_le_bytes());
        summary.extend_from_slice(self.mac(digest, &artifact).as_bytes());
        owned::write_file(&self.entry_path(digest), &artifact)?;
        owned::write_file(&self.summary_path(digest), &summary)?;
        Ok(())
    }

    /// Opens the artifact at `path` and checks it against its summary: its seal where it has
    /// one for this very file, else its MAC, read through a mapping (and then seals it, once
    /// it has settled). The checked file, for wasmtime to map.
    fn verify(
        &self,
        path: &Path,
        digest: &str,
        len: u64,
        mac: &[u8; MAC_LEN],
    ) -> Result<(std::fs::File, Checked), String> {
        let file =
            owned::open_regular(path).map_err(|e| format!("cannot open the artifact: {e}"))?;
        let meta = file
            .metadata()
            .map_err(|e| format!("cannot inspect the artifact: {e}"))?;
        if meta.len() != len {
            return Err(format!("truncated: {} of {len} bytes", meta.len()));
        }
        let name = self.entry_name(digest);
        let identity = Identity::of_meta(&meta);
        let sealed = identity.as_ref().map(|identity| seal::Sealed {
            name: &name,
            len,
            mac,
            identity,
        });
        if let Some(s) = &sealed
            && s.holds(&self.seal_key, &self.seal_path(digest))
        {
            return Ok((file, Checked::Sealed));
        }
        // Whether it may be sealed is decided now, before its bytes are read: a write after
        // this moment moves its change time (see `seal`).
        let settled = seal::settled(&meta, self.settled);
        // SAFETY: the mapping is read-only and dropped before returning; cache files are only
        // replaced by rename, never truncated or rewritten in place, so its pages stay valid.
        let map = unsafe { memmap2::Mmap::map(&file) }
            .map_err(|e| format!("cannot map the artifact: {e}"))?;
        // `blake3::Hash`'s equality is constant-time.
        if self.mac(digest, &map) != blake3::Hash::from_bytes(*mac) {
            return Err("its MAC does not match: it was not written by this cache (damaged, or written by someone without the cache's key)".into());
        }
        if let Some(s) = sealed.filter(|_| settled) {
            s.write(&self.seal_key, &self.seal_path(digest));
        }
        Ok((file, Checked::Hashed))
    }
}

/// A path that opens the very file `file` is, whatever happens to its name meanwhile
/// (Linux's `/proc/self/fd`); `None` where there is none.
fn reopen_path(file: &std::fs::File) -> Option<PathBuf> {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        let p = PathBuf::from(format!("/proc/self/fd/{}", file.as_raw_fd()));
        p.exists().then_some(p)
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = file;
        None
    }
}

/// Reads at most `max` bytes of the regular file at `path` (a longer file reads as
/// `max + 1` bytes, which no caller accepts).
fn read_small(path: &Path, max: usize) -> std::io::Result<Vec<u8>> {
    let mut bytes = Vec::with_capacity(max + 1);
    owned::open_regular(path)?
        .take(max as u64 + 1)
        .read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// The artifact length and MAC a well-formed summary records.
fn parse_summary(bytes: &[u8]) -> Result<(u64, [u8; MAC_LEN]), String> {
    if bytes.len() != SUMMARY || &bytes[..MAGIC.len()] != MAGIC {
        return Err("the summary is not a toolhost cache summary".into());
    }
    let (len, mac) = bytes[MAGIC.len()..].split_at(8);
    Ok((
        u64::from_le_bytes(len.try_into().expect("8 bytes")),
        mac.try_into().expect("32 bytes"),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summaries_and_macs_reject_damage() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::open(dir.path().join("c"), &Engine::default()).unwrap();
        let digest = "d".repeat(64);
        let path = cache.entry_path(&digest);
        std::fs::write(&path, b"compiled").unwrap();
        let mac = *cache.mac(&digest, b"compiled").as_bytes();
        assert!(cache.verify(&path, &digest, 8, &mac).is_ok());
        // Another name, another key, other bytes: each fails.
        let other = "e".repeat(64);
        assert!(cache.verify(&path, &other, 8, &mac).is_err());
        let again = Cache::open(dir.path().join("c2"), &Engine::default()).unwrap();
        assert!(again.verify(&path, &digest, 8, &mac).is_err());
        std::fs::write(&path, b"compilee").unwrap();
        assert!(
            cache
                .verify(&path, &digest, 8, &mac)
                .unwrap_err()
                .starts_with("its MAC does not match")
        );
        std::fs::write(&path, b"compil").unwrap();
        assert_eq!(
            cache.verify(&path, &digest, 8, &mac).unwrap_err(),
            "truncated: 6 of 8 bytes"
        );
        let mut summary = MAGIC.to_vec();
        summary.extend_from_slice(&8u64.to_le_bytes());
        summary.extend_from_slice(&mac);
        assert_eq!(parse_summary(&summary).unwrap(), (8, mac));
        for bad in [&summary[..10], b"THCACHE3\0\0\0\0\0\0\0\0\0\0\0\0"] {
            assert_eq!(
                parse_summary(bad).unwrap_err(),
                "the summary is not a toolhost cache summary"
            );
        }
    }

    /// An entry written `age` ago, as far as sealing goes: the cache waits that long.
    fn cache_settling_after(dir: &Path, age: std::time::Duration) -> Cache {
        let mut cache = Cache::open(dir.join("c"), &Engine::default()).unwrap();
        cache.settled = age;
        cache
    }

    #[test]
    fn a_settled_artifact_is_sealed_and_a_changed_one_hashed_again() {
        let dir = tempfile::tempdir().unwrap();
        let settle = std::time::Duration::from_millis(60);
        let cache = cache_settling_after(dir.path(), settle);
        let digest = "d".repeat(64);
        let path = cache.entry_path(&digest);
        let bytes = vec![7u8; 1 << 20];
        owned::write_file(&path, &bytes).unwrap();
        let mac = *cache.mac(&digest, &bytes).as_bytes();
        let len = bytes.len() as u64;
        let check = || cache.verify(&path, &digest, len, &mac).map(|(_, c)| c);

        // Young: hashed at every load, and not sealed.
        assert_eq!(check(), Ok(Checked::Hashed));
        assert_eq!(check(), Ok(Checked::Hashed));
        assert!(!cache.seal_path(&digest).exists());
        // Settled: hashed once more, sealed; then the seal is enough.
        std::thread::sleep(settle + std::time::Duration::from_millis(20));
        assert_eq!(check(), Ok(Checked::Hashed));
        assert_eq!(check(), Ok(Checked::Sealed));
        let seal = std::fs::read(cache.seal_path(&digest)).unwrap();

        // The same file and seal under another key, or under another entry's name, vouch
        // for nothing: the other cache hashes (and refuses) what this one had sealed.
        let other = cache_settling_after(&dir.path().join("o"), settle);
        owned::write_file(&other.seal_path(&digest), &seal).unwrap();
        assert!(other.verify(&path, &digest, len, &mac).is_err());
        let identity = Identity::of(&std::fs::File::open(&path).unwrap()).unwrap();
        let seal_path = cache.seal_path(&digest);
        let holds = |name: &str| {
            seal::Sealed {
                name,
                len,
                mac: &mac,
                identity: &identity,
            }
            .holds(&cache.seal_key, &seal_path)
        };
        assert!(holds(&cache.entry_name(&digest)));
        assert!(!holds(&cache.entry_name(&"e".repeat(64))));
        // A forged seal (its layout right, its MAC not) is hashed past, then made anew.
        let mut forged = seal.clone();
        forged[MAGIC.len() + 3] ^= 1;
        owned::write_file(&seal_path, &forged).unwrap();
        assert_eq!(check(), Ok(Checked::Hashed));
        assert_eq!(check(), Ok(Checked::Sealed));

        // Patched in place, same length: its change time moved, so it is hashed and refused.
        let mut patched = bytes.clone();
        patched[len as usize / 2] ^= 1;
        std::fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .and_then(|mut f| std::io::Write::write_all(&mut f, &patched))
            .unwrap();
        assert!(check().unwrap_err().starts_with("its MAC does not match"));
    }
}
