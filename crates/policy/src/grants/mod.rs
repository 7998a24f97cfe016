//! [`Capabilities`]: what one call may reach beyond its own memory, already checked.
//!
//! Grants come from the operator only: a policy file ([`crate::Policy`]) or the CLI's
//! `--allow-*` flags. Nothing a tool or a model can call creates or widens them.
//!
//! - [`origin`]: HTTP origins (`https://*.example.com:8443`) and how requests match them.
//! - [`addr`]: special-purpose address ranges (loopback, private, link-local, metadata)
//!   that are refused unless a grant names the address literally.
//! - [`socket`]: raw `wasi:sockets` TCP grants (`IP[/PREFIX]:PORT`).
//! - `resolve`: a file or environment grant as written, checked against this host.

pub mod addr;
pub mod origin;
mod resolve;
pub mod socket;

use std::path::PathBuf;

pub use self::origin::{HostPattern, Origin, OriginError, Scheme};
pub use self::resolve::{env_grant, file_grant};
pub use self::socket::{SocketGrant, SocketGrantError};

/// Whether a [`FileGrant`] names a directory or a single file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum GrantKind {
    /// The directory and everything below it.
    Directory,
    /// Exactly one file: the guest can open it by its guest path and nothing else in the
    /// directory that holds it (no listing, no siblings, no create, rename or delete).
    File,
}

/// A host directory or file made visible to the guest.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct FileGrant {
    /// Path on the host. For a file grant, the file's canonical path.
    pub host: PathBuf,
    /// Absolute path the guest sees it at.
    pub guest: String,
    /// `false`: read-only (no create, write, rename, unlink, truncate, set-times).
    pub write: bool,
    pub kind: GrantKind,
}

impl FileGrant {
    /// A directory grant.
    pub fn dir(host: impl Into<PathBuf>, guest: impl Into<String>, write: bool) -> FileGrant {
        FileGrant {
            host: host.into(),
            guest: guest.into(),
            write,
            kind: GrantKind::Directory,
        }
    }
}

/// Why `new` cannot be granted beside `existing`, if it cannot: a single-file grant's
/// directory is gated file by file, so no directory grant may share its guest directory.
pub fn conflict(existing: &[FileGrant], new: &FileGrant) -> Option<String> {
    let dir_of = |g: &FileGrant| match g.kind {
        GrantKind::File => g
            .guest
            .rsplit_once('/')
            .map(|(d, _)| if d.is_empty() { "/" } else { d })
            .map(str::to_string),
        GrantKind::Directory => Some(g.guest.trim_end_matches('/').to_string())
            .filter(|d| !d.is_empty())
            .or(Some("/".into())),
    };
    existing.iter().find_map(|g| {
        let clash = g.kind != new.kind && dir_of(g) == dir_of(new);
        clash.then(|| {
            let (file, dir) = if new.kind == GrantKind::File { (new, g) } else { (g, new) };
            format!(
                "`{}` is a single-file grant inside `{}`, which is also granted as a directory; grant the directory or the files in it, not both",
                file.guest, dir.guest
            )
        })
    })
}

/// Network reach of a call.
///
/// `NetworkGrants::default()` reaches nothing:
/// - `http`: empty, so every `wasi:http` request is refused with `HTTP-request-denied`;
/// - `tcp`: empty, so every `wasi:sockets` TCP connect or bind is refused; UDP is always
///   refused;
/// - `name_lookup`: `false`, so `wasi:sockets/ip-name-lookup` fails.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct NetworkGrants {
    /// Origins the tool may send HTTP requests to.
    pub http: Vec<Origin>,
    /// Addresses the tool may open raw TCP connections to.
    pub tcp: Vec<SocketGrant>,
    /// Whether the tool may resolve names with `wasi:sockets/ip-name-lookup`.
    pub name_lookup: bool,
}

crate::settable! {
    /// What a call may reach beyond its own memory.
    ///
    /// [`Capabilities::none`] (also `Default`) grants nothing:
    /// - no directories or files granted: the guest's only preopen is the host's empty `/`,
    ///   on which every filesystem call is refused and recorded as a denial;
    /// - no environment variables and no arguments;
    /// - stdin closed; stdout/stderr captured per call, capped by [`Limits`](crate::Limits);
    /// - no network (see [`NetworkGrants`]);
    /// - no questions to the caller's side (`ask` false: `toolhost:host/ask` refused).
    #[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
    #[non_exhaustive]
    pub struct Capabilities {
        pub files: Vec<FileGrant>,
        /// `(NAME, value)` pairs the guest sees as its environment.
        #[serde(serialize_with = "env_names")]
        pub env: Vec<(String, String)>,
        pub network: NetworkGrants,
        /// Whether the tool may put questions to its caller's side through
        /// `toolhost:host/ask` (a form for the user, a message from the client's model, the
        /// client's roots): the policy's `ask = true`.
        pub ask: bool,
    }
}

/// Environment grants serialise by name only: values may be secrets.
fn env_names<S: serde::Serializer>(env: &[(String, String)], s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(env.iter().map(|(k, _)| k))
}

impl Capabilities {
    /// No capabilities at all.
    pub fn none() -> Capabilities {
        Capabilities::default()
    }
}
