//! [`Declared`]: the policy a component carries, what it says it needs at most, and
//! [`ToolPolicy::narrowed_by`], which applies it to the operator's section.
//!
//! It travels inside the component, as a `toolhost:policy` custom section
//! ([`SECTION`], written by `toolhost tool pack --policy FILE`), so the component's digest
//! and signature cover it. It can only **narrow** what the operator's section grants, never
//! widen it: an operation, file, origin, socket or variable it does not name is dropped; a
//! limit it sets lower is lowered; `sensitive = true` is kept. What it asks beyond the
//! operator's grants is ignored. Each part it leaves out leaves that part of the operator's
//! section as it is.
//!
//! ```toml
//! version = 1
//! operations = ["get-text"]                         # only these
//! files = [{ guest = "/data/in", access = "read" }]  # only within these, at most this access
//! network = { http = ["https://api.example.com"] }  # only these origins (and no tcp, no DNS)
//! env = ["API_BASE"]                                # only these variables
//! limits = { memory_mib = 16, timeout_ms = 1000 }   # at most these
//! sensitive = true                                  # ask a person before each call
//! ```

use std::path::Path;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use toml::Spanned;

use crate::error::{PolicyError, Problems};
use crate::grants::{FileGrant, GrantKind, HostPattern, NetworkGrants, Origin};
use crate::limits::{self, Limits};
use crate::raw::{Access, RawLimits};
use crate::tool::{ToolPolicy, parse_each};

/// The name of the custom section a component carries its policy in.
pub const SECTION: &str = "toolhost:policy";

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawDeclared {
    version: Spanned<u32>,
    operations: Option<Vec<String>>,
    files: Option<Vec<RawDeclaredFile>>,
    network: Option<RawDeclaredNetwork>,
    env: Option<Vec<String>>,
    #[serde(default)]
    limits: RawLimits,
    #[serde(default)]
    sensitive: bool,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawDeclaredFile {
    guest: Spanned<String>,
    access: Access,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawDeclaredNetwork {
    #[serde(default)]
    http: Vec<Spanned<String>>,
    #[serde(default)]
    tcp: Vec<Spanned<String>>,
    #[serde(default)]
    name_lookup: bool,
}

/// What a component says it needs at most; `None` parts leave the operator's as they are.
#[derive(Debug, Clone, Serialize)]
pub struct Declared {
    /// The operations it may be called for.
    pub operations: Option<Vec<String>>,
    /// Guest paths it may reach, with write access or not.
    pub files: Option<Vec<(String, bool)>>,
    /// Origins and sockets it may reach, and whether it may look names up.
    pub network: Option<NetworkGrants>,
    /// Environment variables it may read.
    pub env: Option<Vec<String>>,
    /// Its limits, over "no limit" for whatever it leaves out.
    #[serde(skip)]
    pub limits: Limits,
    /// Its rate limit, if it sets one.
    pub max_calls_per_minute: Option<u32>,
    /// Every call needs approval.
    pub sensitive: bool,
}

/// Limits that cap nothing: what [`Declared::limits`] starts from.
fn unbounded() -> Limits {
    Limits {
        fuel: u64::MAX,
        timeout: Duration::MAX,
        memory_mib: u64::MAX,
        max_result_bytes: usize::MAX,
        max_stdio_bytes: usize::MAX,
        max_log_bytes: usize::MAX,
        max_http_response_bytes: usize::MAX,
        max_host_bytes: usize::MAX,
        max_resources: usize::MAX,
        max_written_bytes: u64::MAX,
        max_file_bytes: u64::MAX,
        max_args_bytes: usize::MAX,
        max_audit_bytes: usize::MAX,
    }
}

impl Declared {
    /// Reads a component's policy `text`; `origin` names it in messages (the component's
    /// path and the section). Every problem is reported at once, located.
    pub fn parse(origin: &str, text: &str) -> Result<Declared, PolicyError> {
        let raw: RawDeclared =
            toml::from_str(text).map_err(|e| PolicyError::from_toml(origin, text, &e))?;
        let at = |span: std::ops::Range<usize>, message: String| {
            PolicyError::at(origin, text, span, message)
        };
        let mut problems = Problems::default();
        if *raw.version.get_ref() != crate::VERSION {
            problems.push(at(
                raw.version.span(),
                format!(
                    "unsupported policy version {}: this toolhost reads version {}",
                    raw.version.get_ref(),
                    crate::VERSION
                ),
            ));
        }
        let files = raw.files.map(|files| {
            files
                .into_iter()
                .filter_map(|f| {
                    let guest = f.guest.get_ref();
                    if guest.starts_with('/') && !guest.split('/').any(|c| c == "..") {
                        Some((
                            guest.trim_end_matches('/').to_string(),
                            f.access == Access::ReadWrite,
                        ))
                    } else {
                        problems.push(at(
                            f.guest.span(),
                            format!("`{guest}` is not an absolute guest path without `..`"),
                        ));
                        None
                    }
                })
                .collect()
        });
        let network = raw.network.map(|n| NetworkGrants {
            http: parse_each(&n.http, &at, &mut problems),
            tcp: parse_each(&n.tcp, &at, &mut problems),
            name_lookup: n.name_lookup,
        });
        let (limits, max_calls_per_minute) =
            limits::apply(unbounded(), &raw.limits, &at, &mut problems);
        if let Some(e) = problems.into_error() {
            return Err(e);
        }
        Ok(Declared {
            operations: raw.operations,
            files,
            network,
            env: raw.env,
            limits,
            max_calls_per_minute,
            sensitive: raw.sensitive,
        })
    }
}

impl ToolPolicy {
    /// This section narrowed by what the component declares: never a grant this section
    /// does not hold, never a limit above this section's.
    pub fn narrowed_by(&self, declared: &Declared) -> ToolPolicy {
        let mut t = self.clone();
        if let Some(ops) = &declared.operations {
            let allowed = |op: &String| t.operations.as_ref().is_none_or(|o| o.contains(op));
            t.operations = Some(ops.iter().filter(|op| allowed(op)).cloned().collect());
        }
        if let Some(files) = &declared.files {
            t.capabilities.files = self
                .capabilities
                .files
                .iter()
                .flat_map(|g| {
                    files
                        .iter()
                        .filter_map(move |(guest, write)| narrow_file(g, guest, *write))
                })
                .collect();
            // One grant per guest path (two declared paths may both hold one of the
            // operator's grants): write access if either allows it.
            let files = &mut t.capabilities.files;
            files.sort_by(|a, b| a.guest.cmp(&b.guest).then(b.write.cmp(&a.write)));
            files.dedup_by(|later, kept| later.guest == kept.guest);
        }
        if let Some(net) = &declared.network {
            let have = &self.capabilities.network;
            t.capabilities.network = NetworkGrants {
                http: net
                    .http
                    .iter()
                    .filter(|d| have.http.iter().any(|o| covers(o, d)))
                    .cloned()
                    .collect(),
                tcp: net
                    .tcp
                    .iter()
                    .filter(|d| {
                        have.tcp
                            .iter()
                            .any(|o| o.port == d.port && o.net.contains(&d.net))
                    })
                    .cloned()
                    .collect(),
                name_lookup: have.name_lookup && net.name_lookup,
            };
        }
        if let Some(names) = &declared.env {
            t.capabilities.env.retain(|(name, _)| names.contains(name));
            t.env_sources.retain(|(name, _)| names.contains(name));
        }
        t.limits = self.limits.capped_by(&declared.limits);
        t.max_calls_per_minute = match (self.max_calls_per_minute, declared.max_calls_per_minute) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        t.sensitive = self.sensitive || declared.sensitive;
        t
    }
}

/// The part of grant `g` within guest path `guest` (at most `write` access): `g` itself
/// when it lies within `guest`; for a directory grant that holds `guest`, the directory
/// under it (when that exists on this host); otherwise nothing.
fn narrow_file(g: &FileGrant, guest: &str, write: bool) -> Option<FileGrant> {
    let within = |path: &str, dir: &str| {
        dir == "/" || path == dir || path.strip_prefix(dir).is_some_and(|r| r.starts_with('/'))
    };
    let g_guest = g.guest.trim_end_matches('/');
    if within(g_guest, guest) {
        return Some(FileGrant {
            write: g.write && write,
            ..g.clone()
        });
    }
    if g.kind != GrantKind::Directory || !within(guest, g_guest) {
        return None;
    }
    let rel = guest[g_guest.len()..].trim_start_matches('/');
    let host = std::fs::canonicalize(g.host.join(rel)).ok()?;
    // Never out of the grant through a link inside it.
    (host.starts_with(&g.host) && Path::new(&host).is_dir())
        .then(|| FileGrant::dir(host, guest, g.write && write))
}

/// Whether operator origin `o` allows everything declared origin `d` names.
fn covers(o: &Origin, d: &Origin) -> bool {
    if o.scheme != d.scheme || o.port != d.port {
        return false;
    }
    match (&o.host, &d.host) {
        (a, b) if a == b => true,
        (HostPattern::Subdomains(s), HostPattern::Name(n) | HostPattern::Subdomains(n)) => n
            .strip_suffix(s.as_str())
            .is_some_and(|head| head.len() > 1 && head.ends_with('.')),
        _ => false,
    }
}
