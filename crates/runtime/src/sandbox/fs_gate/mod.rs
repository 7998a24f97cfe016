//! The filesystem gate: `wasi:filesystem` functions shadowed in the linker, so every path
//! a guest names is recorded (and, for single-file grants, checked) before wasmtime-wasi
//! runs it.
//!
//! wasmtime-wasi already confines directory grants: its preopens are cap-std directories
//! that refuse `..` above the preopen, absolute paths and symlinks leading out, and its
//! `FsPerms::ReadOnly` refuses every mutation. The gate adds what it lacks:
//!
//! - an [`AuditEvent::File`] for each path-taking call, with the full guest path
//!   (`/data/../secret`: the descriptor's guest path joined to the path as given);
//! - single-file grants ([`GrantKind::File`]), which wasmtime-wasi has no notion of;
//! - an empty preopen at guest `/` where no grant is, so that a path outside every grant
//!   reaches the host and is refused and recorded, rather than failing unseen in the
//!   guest's libc (`outside`).
//!
//! Decisions: `Allowed` when the call succeeds; `Denied` when it fails with a refusal
//! (`access`, `not-permitted`, `read-only`) or the gate refuses it (reason `access: …`,
//! naming the rule); any other failure (`no-entry`, `exist`, …) is recorded as `Allowed`
//! with the error code as its reason: the sandbox let it through and the filesystem said no.
//! Writes through an already open descriptor are recorded only when refused: the
//! `open-write` or `create` that produced the descriptor was recorded already.
//!
//! Besides recording, the gate enforces what wasmtime-wasi does not: single-file grants
//! (and that a file grant's directory gives away no host metadata), symlink targets that
//! stay inside the grant, the call's write budget, and the audit budget (every gated call
//! traps once it is spent).
//!
//! - `files`: the guest directories that hold single-file grants and their rules.
//! - `outside`: the empty `/` that stands for everything outside the grants.
//! - `links`: which symlink targets a guest may create.
//! - `budget`: the write budget (bytes written, file sizes) and the metered file stream.
//! - `wrap`: the shadowing functions themselves.

mod budget;
mod files;
mod links;
mod outside;
mod wrap;

pub(crate) use self::budget::WriteBudget;
pub(crate) use self::budget::WriteLimitExceeded;

use std::collections::HashMap;
use std::sync::Arc;

use wasmtime::component::Linker;
use wasmtime_wasi::p2::FsError;
use wasmtime_wasi::p2::bindings::filesystem::types::ErrorCode;

use self::files::FileDir;
use super::{GrantError, HostState};
use crate::grants::{FileGrant, GrantKind};
use crate::sandbox::{AuditEvent, Decision};

/// Shadows the `wasi:filesystem` functions of `linker` (which must allow shadowing and
/// already hold wasmtime-wasi's definitions).
pub(crate) fn add_to_linker(linker: &mut Linker<HostState>) -> wasmtime::Result<()> {
    wrap::add_to_linker(linker)
}

/// What the gate knows about one call's descriptors.
#[derive(Default)]
pub(crate) struct FsScopes {
    /// Descriptor resource rep → its guest path and scope. Every descriptor comes from
    /// `get-directories` or `open-at`, both shadowed, so every live one has an entry; a
    /// dropped one's entry stays until its rep is reused by a new descriptor, which
    /// overwrites it (the table reuses freed reps, so this stays as small as the table).
    descriptors: HashMap<u32, Node>,
    /// Guest directories holding single-file grants, in the order they are preopened
    /// after the directory grants.
    file_dirs: Vec<FileDir>,
    /// Whether guest `/` is free for the empty preopen (`outside`), preopened last.
    outside: bool,
    /// The empty preopen's handle, opened the first time the guest asks for its preopens
    /// and shared by every descriptor for it.
    nothing: Option<wasmtime_wasi::filesystem::Dir>,
}

#[derive(Clone)]
struct Node {
    path: Arc<str>,
    scope: Scope,
}

/// What paths may be resolved from a descriptor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Scope {
    /// A directory grant, or anything opened below one: wasmtime-wasi's checks apply.
    Tree,
    /// The guest directory of single-file grants (index into `file_dirs`): only its
    /// granted names.
    Files(usize),
    /// A file opened through a file grant: no path may be resolved from it.
    Sealed,
    /// The empty `/`: everything resolved from it is outside every grant.
    Outside,
}

impl Scope {
    /// The rule a path-less call that would describe or change the descriptor itself
    /// breaks (`stat`, `metadata-hash`, `is-same-object`, `set-times`): a file grant's
    /// directory and the empty `/` stand for no host object.
    fn no_object(self, files_rule: &'static str) -> Option<&'static str> {
        match self {
            Scope::Tree | Scope::Sealed => None,
            Scope::Files(_) => Some(files_rule),
            Scope::Outside => Some(outside::OUTSIDE),
        }
    }
}

impl FsScopes {
    /// Checks the file grants among `grants` and opens their directories.
    pub(crate) fn new(grants: &[FileGrant]) -> Result<FsScopes, GrantError> {
        let file_dirs = files::file_dirs(grants)?;
        let trees = grants
            .iter()
            .filter(|g| g.kind == GrantKind::Directory)
            .map(|g| g.guest.as_str());
        let outside = outside::wanted(trees.chain(file_dirs.iter().map(|d| d.guest.as_str())));
        Ok(FsScopes {
            descriptors: HashMap::new(),
            file_dirs,
            outside,
            nothing: None,
        })
    }

    /// The full guest path of `path` resolved from descriptor `rep`, and the scope it is
    /// resolved in.
    fn resolve(&self, rep: u32, path: &str) -> (String, Scope) {
        match self.descriptors.get(&rep) {
            Some(node) => (join(&node.path, path), node.scope),
            // Unreachable while every descriptor source is shadowed; wasmtime-wasi's own
            // confinement still applies to whatever this is.
            None => (join("?", path), Scope::Tree),
        }
    }

    fn scope(&self, rep: u32) -> Scope {
        self.descriptors.get(&rep).map_or(Scope::Tree, |n| n.scope)
    }

    /// The guest path of descriptor `rep` itself.
    fn path(&self, rep: u32) -> String {
        self.descriptors
            .get(&rep)
            .map_or_else(|| "?".to_string(), |n| n.path.to_string())
    }

    fn insert(&mut self, rep: u32, path: impl Into<Arc<str>>, scope: Scope) {
        self.descriptors.insert(
            rep,
            Node {
                path: path.into(),
                scope,
            },
        );
    }
}

/// `dir` and `path` joined the way the guest named them: `/data` + `../x` is
/// `/data/../x`, and an absolute `path` shows as `/data//etc/passwd`, an absolute path
/// handed to a directory descriptor (which wasmtime-wasi refuses).
fn join(dir: &str, path: &str) -> String {
    let mut out = String::with_capacity(dir.len() + 1 + path.len());
    out.push_str(dir);
    if !dir.ends_with('/') {
        out.push('/');
    }
    out.push_str(path);
    out
}

/// Why a gated call failed.
enum Failure {
    /// wasmtime-wasi's answer: an error code, or a trap.
    Wasi(FsError),
    /// The gate's own rule (a file grant's), refused with `access`.
    Rule(&'static str),
}

impl From<FsError> for Failure {
    fn from(e: FsError) -> Failure {
        Failure::Wasi(e)
    }
}

impl From<wasmtime::component::ResourceTableError> for Failure {
    fn from(e: wasmtime::component::ResourceTableError) -> Failure {
        Failure::Wasi(FsError::trap(e))
    }
}

/// Error codes that mean the sandbox (or the host OS) refused, rather than that the
/// action failed on its own terms.
fn is_refusal(code: ErrorCode) -> bool {
    matches!(
        code,
        ErrorCode::Access | ErrorCode::NotPermitted | ErrorCode::ReadOnly
    )
}

/// Records `action` on `path` and turns `result` into what the guest gets. Traps are
/// passed on unrecorded: they end the call. With `errors_only`, a success is not
/// recorded.
fn finish<T>(
    state: &HostState,
    action: &'static str,
    path: impl FnOnce() -> String,
    result: Result<T, Failure>,
    errors_only: bool,
) -> wasmtime::Result<Result<T, ErrorCode>> {
    let (decision, reason, out) = match result {
        Ok(v) if errors_only => {
            state.audit.answered();
            return Ok(Ok(v));
        }
        Ok(v) => (Decision::Allowed, None, Ok(v)),
        Err(Failure::Rule(rule)) => (
            Decision::Denied,
            Some(format!("access: {rule}")),
            Err(ErrorCode::Access),
        ),
        Err(Failure::Wasi(e)) => {
            let code = e.downcast()?;
            let decision = if is_refusal(code) {
                Decision::Denied
            } else if errors_only {
                state.audit.answered();
                return Ok(Err(code));
            } else {
                Decision::Allowed
            };
            (decision, Some(code.name().to_string()), Err(code))
        }
    };
    state.audit.record(AuditEvent::File {
        action: action.to_string(),
        path: path(),
        decision,
        reason,
    });
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn join_keeps_what_the_guest_named() {
        assert_eq!(join("/data", "../secret"), "/data/../secret");
        assert_eq!(join("/data", "/etc/passwd"), "/data//etc/passwd");
        assert_eq!(join("/", "etc"), "/etc");
        assert_eq!(join("/data/", "a"), "/data/a");
    }

    #[test]
    fn refusals_are_access_not_permitted_and_read_only() {
        assert!(is_refusal(ErrorCode::Access));
        assert!(is_refusal(ErrorCode::NotPermitted));
        assert!(is_refusal(ErrorCode::ReadOnly));
        assert!(!is_refusal(ErrorCode::NoEntry));
        assert!(!is_refusal(ErrorCode::Exist));
    }

    #[test]
    fn unknown_descriptors_resolve_as_trees() {
        let mut s = FsScopes::default();
        assert_eq!(s.resolve(7, "x"), ("?/x".to_string(), Scope::Tree));
        s.insert(7, "/data", Scope::Files(0));
        assert_eq!(s.resolve(7, "x"), ("/data/x".to_string(), Scope::Files(0)));
        assert_eq!(s.path(7), "/data");
    }
}
