//! The guest's `/` where nothing is granted: a preopen that holds nothing, so that a path
//! outside every grant reaches the gate, which refuses and records it.
//!
//! wasi-libc resolves a path against the preopen whose guest path is its longest prefix,
//! and resolves a relative path from `/` (the initial working directory). A path that no
//! preopen prefixes fails in the guest with `ENOENT` before the host hears of it: without
//! this preopen, a tool in any language could try `/etc/passwd` and the sandbox would
//! neither record the attempt nor call it a denial. With it, every such path is resolved
//! against `/`, a zero-length prefix that every real grant outranks, and every call on it
//! is refused with `access` (reason `access: outside every grant`) and recorded as
//! `Denied`, its path cut to the audit's bounds like any other.
//!
//! It is offered only when no grant already sits at guest `/` (a directory grant of `/`
//! covers everything; file grants at `/` have their own gated directory, which already
//! refuses every name it does not hold), and only to a tool that asks for its preopens: a
//! tool that imports no `wasi:filesystem` never sees it.
//!
//! Its handle is the null device, not a directory: the gate answers every call on it
//! before wasmtime-wasi could, and if one ever got through by mistake, no path resolves
//! from a handle that is not a directory, and it has nothing to read, list or describe.

use wasmtime_wasi::filesystem::Dir;
use wasmtime_wasi::{FsPerms, OpenMode};

/// The rule a call on the empty `/` breaks.
pub(super) const OUTSIDE: &str = "outside every grant";

/// The guest path of the empty preopen.
pub(super) const ROOT: &str = "/";

#[cfg(unix)]
const NULL_DEVICE: &str = "/dev/null";
#[cfg(windows)]
const NULL_DEVICE: &str = "NUL";

/// A fresh handle for the empty `/`, read-only whatever else is granted.
pub(super) fn open() -> std::io::Result<Dir> {
    let file = std::fs::File::open(NULL_DEVICE)?;
    // Not blocking the current thread, like the preopens of the default `WasiCtxBuilder`.
    Ok(Dir::new(file, FsPerms::ReadOnly, OpenMode::READ, false))
}

/// Whether the grants leave guest `/` free for the empty preopen: no directory grant and
/// no file-grant directory is `/` itself.
pub(super) fn wanted<'a>(guest_dirs: impl IntoIterator<Item = &'a str>) -> bool {
    !guest_dirs
        .into_iter()
        .any(|g| g.trim_end_matches('/').is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_grant_at_the_root_takes_its_place() {
        assert!(wanted([]));
        assert!(wanted(["/data", "/config"]));
        assert!(!wanted(["/data", "/"]));
        assert!(!wanted(["//"]));
    }

    #[test]
    fn its_handle_resolves_no_path() {
        let dir = open().unwrap();
        let file = dir.dir.try_clone().unwrap();
        let cap = cap_std::fs::Dir::from_std_file(file);
        assert!(cap.open("etc/passwd").is_err());
        assert!(cap.open(".").is_err());
        assert!(cap.read_dir(".").is_err());
    }
}
