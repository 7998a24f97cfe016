//! Seals: the record that an artifact passed its MAC, bound to the file's identity, so that
//! later loads of the same unchanged file need not hash it again.
//!
//! Hashing the Python tool's 38 MB artifact (keyed BLAKE3, about 5 ms on two cores) was a
//! sixth of its cached load. So an artifact is hashed in full once, and then `KEY.seal`
//! records the opened file's [`Identity`] (device, inode, size, modification and change
//! times) under a MAC of the entry's name, its summary and that identity, made with a key
//! derived from the cache's. A later load whose opened artifact has the recorded identity
//! opens the same file, unmodified since: every write to a file moves its change time,
//! which only the kernel sets, and a file put in its place is another inode (and must
//! still be this user's, [`crate::owned::open_regular`]). Whoever cannot read the cache's
//! key cannot make a seal for a file of their own, just as they cannot make its MAC.
//!
//! **Coarse clocks.** The kernel stamps files from a clock that ticks every few
//! milliseconds, and some file systems keep whole seconds, so a write just after a check
//! can leave the change time as it was (git's "racily clean" index entries). A seal is
//! therefore made only for an artifact whose change time was at least [`SETTLED`] in the
//! past when its identity was taken, before it was hashed: any later write gets a change
//! time after that moment less one tick, which is not the recorded one. An entry younger
//! than that (just compiled) is hashed at every load until it settles.
//!
//! A seal that is missing, stale, damaged or forged only costs a full check; it is
//! written without `fsync` for the same reason.

use std::path::Path;
use std::time::{Duration, SystemTime};

use super::{Identity, MAC_LEN, read_small};
use crate::owned;

/// How old an artifact's change time must be before it is sealed: more than any file
/// system's timestamp granularity toolhost runs on (FAT's is 2 s).
pub const SETTLED: Duration = Duration::from_secs(3);

/// Seal format 1: `MAGIC`, the seal's MAC (32 bytes), the identity (text).
const MAGIC: &[u8; 8] = b"THSEAL01";
/// Longer than any identity `Identity::of` writes.
const MAX_IDENTITY: usize = 160;

/// The key seals are made with: derived from the cache's, so that no seal is ever a valid
/// artifact MAC or the other way round.
pub(super) fn key(cache_key: &[u8; blake3::KEY_LEN]) -> [u8; blake3::KEY_LEN] {
    blake3::derive_key("toolhost compiled-cache seal v1", cache_key)
}

/// What a seal vouches for: the entry `name` whose summary records `len` and `mac`, held in
/// the file with `identity`.
pub(super) struct Sealed<'a> {
    pub name: &'a str,
    pub len: u64,
    pub mac: &'a [u8; MAC_LEN],
    pub identity: &'a Identity,
}

impl Sealed<'_> {
    fn mac(&self, key: &[u8; blake3::KEY_LEN]) -> blake3::Hash {
        let mut h = blake3::Hasher::new_keyed(key);
        h.update(self.name.as_bytes())
            .update(&[0])
            .update(&self.len.to_le_bytes())
            .update(self.mac)
            .update(self.identity.0.as_bytes());
        h.finalize()
    }

    /// Whether the seal at `path` vouches for exactly this.
    pub fn holds(&self, key: &[u8; blake3::KEY_LEN], path: &Path) -> bool {
        let Ok(bytes) = read_small(path, MAGIC.len() + MAC_LEN + MAX_IDENTITY) else {
            return false;
        };
        let Some(rest) = bytes.strip_prefix(MAGIC.as_slice()) else {
            return false;
        };
        if rest.len() < MAC_LEN || &rest[MAC_LEN..] != self.identity.0.as_bytes() {
            return false;
        }
        let recorded: [u8; MAC_LEN] = rest[..MAC_LEN].try_into().expect("32 bytes");
        // `blake3::Hash`'s equality is constant-time.
        self.mac(key) == blake3::Hash::from_bytes(recorded)
    }

    /// Writes the seal to `path`. Best effort: a missing seal costs the next load a hash.
    pub fn write(&self, key: &[u8; blake3::KEY_LEN], path: &Path) {
        let mut bytes = MAGIC.to_vec();
        bytes.extend_from_slice(self.mac(key).as_bytes());
        bytes.extend_from_slice(self.identity.0.as_bytes());
        if let Err(e) = owned::replace_file(path, &bytes, false) {
            tracing::debug!(path = %path.display(), error = %e, "cannot write a cache seal");
        }
    }
}

/// Whether the file with `meta` was last changed at least `settled` before now: only then
/// can a later write not leave its change time as it is.
pub(super) fn settled(meta: &std::fs::Metadata, settled: Duration) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let (secs, nanos) = (meta.ctime(), meta.ctime_nsec());
        let Ok(changed) = u64::try_from(secs)
            .map(|s| SystemTime::UNIX_EPOCH + Duration::new(s, u32::try_from(nanos).unwrap_or(0)))
        else {
            return false;
        };
        SystemTime::now()
            .duration_since(changed)
            .is_ok_and(|age| age >= settled)
    }
    #[cfg(not(unix))]
    {
        let _ = (meta, settled);
        false
    }
}
