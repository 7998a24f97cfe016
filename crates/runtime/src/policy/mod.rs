//! Operator policy: which tools may run, what each may reach, and its limits.
//!
//! A policy is a TOML file (`version = 1`) with `[defaults.limits]` and one
//! `[tools.NAME]` section per tool. Everything is denied unless a section grants it, and a
//! tool without a section cannot be called at all. Grants are the operator's alone:
//! nothing a tool or a model can call reads or changes a policy.
//!
//! - `raw`: the file as written (serde, `deny_unknown_fields`, spans kept).
//! - `error`: [`PolicyError`], located by line and column.
//! - [`gate`]: [`Gate`], which applies a policy to calls (section, digest pin, allowed
//!   operations, rate limit) before the sandbox applies the grants.
//!
//! ```toml
//! version = 1
//! approval = "deny"               # unattended runs: steps needing approval escalate
//! max_refusals = 3                # optional: stop a run once 3 of its actions were refused
//!
//! [defaults.limits]
//! timeout_ms = 2000
//!
//! [tools.fetch]
//! component = "tools/http.wasm"   # optional: the component this section is for
//! operations = ["get-text"]       # optional: default all
//! sensitive = true                # the engine asks for approval first
//! idempotent = true               # the operator vouches a repeated call changes nothing more
//! pool = "egress"                 # optional: calls run on the workers of this executor pool
//! outputs = "untrusted"           # optional: "trusted" or "untrusted"; default below
//! trusted_args = { post = ["url"] } # arguments (by operation, or "*") no untrusted data may reach
//! files = [{ host = "data", guest = "/data", access = "read" }]
//! network = { http = ["https://api.example.com", "https://*.example.com:8443"] }
//! env = { API_BASE = "https://api.example.com", TOKEN = { from_host = "FETCH_TOKEN" } }
//! limits = { memory_mib = 32, max_calls_per_minute = 30 }
//!
//! [flows]
//! untrusted_may_reach = ["fetch"]  # optional: the only tools untrusted data may reach
//! ```
//!
//! A tool's `outputs` default to untrusted when its section grants files or network, and
//! otherwise derive from its arguments (untrusted if any argument is): such a tool reaches
//! nothing but what it is given. Without `[flows]`, untrusted data may reach any tool
//! (subject to `trusted_args`).

mod error;
pub mod flow;
pub mod gate;
mod pool;
mod raw;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Serialize;
use toml::Spanned;

pub use self::error::{Located, PolicyError};
pub use self::flow::{Flow, Trust};
pub use self::gate::Gate;
pub use self::pool::PoolName;
pub use self::raw::EnvValue;
use self::raw::{Access, RawLimits, RawPolicy, RawTool};
use crate::Limits;
use crate::grants::{Capabilities, FileGrant, GrantKind, NetworkGrants};

/// The only policy format version.
pub const VERSION: u32 = 1;

/// What a non-interactive run does with a step that needs approval.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalMode {
    /// Nobody approves: the run escalates and the step does not run.
    #[default]
    Deny,
    /// Approve automatically (for trusted, unattended deployments).
    Auto,
}

/// A checked policy: every path exists, every host variable was read.
#[derive(Debug, Clone, Serialize)]
pub struct Policy {
    /// Where it was read from (shown in messages).
    pub source: String,
    /// What unattended runs do with a step that needs approval (a `sensitive` tool, a
    /// low-confidence turn): `deny` (default: the run escalates) or `auto`.
    pub approval: ApprovalMode,
    /// A run stops (`refusal_limit`) once the policy has refused this many of its actions
    /// (requests outside the grants, operations not allowed, plans breaking a data-flow
    /// rule): a planner that keeps trying what it may not is treated as hijacked. `None`
    /// (the default): each such action is refused and counted, and the run goes on.
    pub max_refusals: Option<u64>,
    pub tools: BTreeMap<String, ToolPolicy>,
}

/// What one tool may do: its grants, limits and call rules.
#[derive(Debug, Clone, Serialize)]
pub struct ToolPolicy {
    pub name: String,
    /// If set, the section applies only to this component file (canonical path).
    pub component: Option<PathBuf>,
    /// If set, the component's SHA-256 (hex) must be this.
    pub sha256: Option<String>,
    pub capabilities: Capabilities,
    /// Where each environment value comes from, by name (values are never shown).
    pub env_sources: Vec<(String, String)>,
    /// Operations that may be called; `None`: all of them.
    pub operations: Option<Vec<String>>,
    /// Calls need approval (or confidence gating) from the planner engine.
    pub sensitive: bool,
    /// The operator vouches that calling this tool's operations twice with the same
    /// arguments has the effect of calling them once; advertised to MCP clients as
    /// `idempotentHint`. Not checked by the sandbox.
    pub idempotent: bool,
    /// The executor pool whose workers run this tool's calls (they hold its grants); `None`:
    /// calls run in the process that runs the plan. Only a run on the PostgreSQL backend
    /// can route a call to a pool.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pool: Option<PoolName>,
    /// The section's files and environment grants are the pool's, not this process's:
    /// it is not a worker of `pool`, so they were not resolved here (the host paths may
    /// exist only on the pool's workers) and `capabilities` holds none of them. Such a
    /// tool's calls go to its pool; nothing here runs them.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub grants_on_pool: bool,
    /// Data-flow rules: whether outputs are trusted, which arguments must not derive
    /// from untrusted data (checked by the engine, on plans and again before each call).
    pub flow: Flow,
    #[serde(serialize_with = "limits_json")]
    pub limits: Limits,
    /// Calls allowed per tool in any 60-second window of one run or process; `None`:
    /// unlimited.
    pub max_calls_per_minute: Option<u32>,
}

fn limits_json<S: serde::Serializer>(l: &Limits, s: S) -> Result<S::Ok, S::Error> {
    serde_json::json!({
        "fuel": l.fuel,
        "timeout_ms": u64::try_from(l.timeout.as_millis()).unwrap_or(u64::MAX),
        "memory_mib": l.memory_mib,
        "max_output_bytes": l.max_result_bytes,
        "max_stdio_bytes": l.max_stdio_bytes,
        "max_log_bytes": l.max_log_bytes,
        "max_http_response_bytes": l.max_http_response_bytes,
        "max_host_bytes": l.max_host_bytes,
        "max_resources": l.max_resources,
        "max_written_bytes": l.max_written_bytes,
        "max_file_bytes": l.max_file_bytes,
        "max_args_bytes": l.max_args_bytes,
        "max_audit_bytes": l.max_audit_bytes,
    })
    .serialize(s)
}

impl Policy {
    /// Reads and checks the policy at `path`. Relative host paths are relative to the
    /// policy file's directory. The files and environment grants of a section sent to an
    /// executor pool (`pool = "NAME"`) are left to the pool's workers ([`Policy::load_for`]):
    /// one policy file can serve the owners of runs and the pool's workers alike.
    pub fn load(path: &Path) -> Result<Policy, PolicyError> {
        Policy::load_for(path, &[])
    }

    /// [`Policy::load`] by a worker of executor pools `pools`: the grants of the sections
    /// sent to those pools are resolved (and checked) here too.
    pub fn load_for(path: &Path, pools: &[PoolName]) -> Result<Policy, PolicyError> {
        let text = std::fs::read_to_string(path).map_err(|e| PolicyError::Read {
            path: path.display().to_string(),
            reason: e.to_string(),
        })?;
        let base = path.parent().unwrap_or(Path::new("."));
        Policy::parse_for(&path.display().to_string(), &text, base, pools)
    }

    /// Checks policy `text`; `file` names it in messages, `base` anchors relative paths.
    pub fn parse(file: &str, text: &str, base: &Path) -> Result<Policy, PolicyError> {
        Policy::parse_for(file, text, base, &[])
    }

    /// [`Policy::parse`] by a worker of executor pools `pools` (see [`Policy::load_for`]).
    pub fn parse_for(
        file: &str,
        text: &str,
        base: &Path,
        pools: &[PoolName],
    ) -> Result<Policy, PolicyError> {
        let raw: RawPolicy =
            toml::from_str(text).map_err(|e| PolicyError::from_toml(file, text, &e))?;
        let at = |span: std::ops::Range<usize>, message: String| {
            PolicyError::at(file, text, span, message)
        };
        let mut problems = Problems::default();
        if *raw.version.get_ref() != VERSION {
            problems.push(at(
                raw.version.span(),
                format!(
                    "unsupported policy version {}: this toolhost reads version {VERSION}",
                    raw.version.get_ref()
                ),
            ));
        }
        let max_refusals = raw.max_refusals.as_ref().and_then(|n| {
            problems.take(match u64::try_from(*n.get_ref()) {
                Ok(v) if v > 0 => Ok(v),
                _ => Err(at(
                    n.span(),
                    format!(
                        "max_refusals = {} is not a count of refusals: write 1 or more (leave it out to let runs go on after refusals)",
                        n.get_ref()
                    ),
                )),
            })
        });
        let defaults = limits(Limits::default(), &raw.defaults.limits, &at, &mut problems);
        let mut tools = BTreeMap::new();
        for (name, section) in &raw.tools {
            problems.take(check_tool_name(name.get_ref()).map_err(|why| at(name.span(), why)));
            let here = section
                .pool
                .as_ref()
                .is_none_or(|p| pools.iter().any(|q| q.as_str() == p.get_ref()));
            let grants = if here { Grants::Here } else { Grants::OnPool };
            if let Some(tool) = tool_policy(
                name.get_ref(),
                section,
                &defaults,
                (base, grants),
                &at,
                &mut problems,
            ) {
                tools.insert(name.get_ref().clone(), tool);
            }
        }
        let sections: Vec<&str> = raw.tools.keys().map(|k| k.get_ref().as_str()).collect();
        flow::untrusted_may_reach(
            raw.flows.untrusted_may_reach.as_ref(),
            &mut tools,
            &sections,
            &at,
            &mut problems,
        );
        if let Some(e) = PolicyError::all(problems.0) {
            return Err(e);
        }
        Ok(Policy {
            source: file.to_string(),
            approval: raw.approval,
            max_refusals,
            tools,
        })
    }

    /// The section for the component at `path`: the one whose `component` is that file,
    /// else the one named after the file stem (if it names no other component).
    pub fn section_for(&self, path: &Path) -> Option<&ToolPolicy> {
        let canonical = std::fs::canonicalize(path).ok();
        if let Some(c) = &canonical
            && let Some(t) = self
                .tools
                .values()
                .find(|t| t.component.as_ref() == Some(c))
        {
            return Some(t);
        }
        let stem = path.file_stem()?.to_str()?;
        self.tools.get(stem).filter(|t| t.component.is_none())
    }
}

/// Tool names: lower-case letters, digits, `-` and `_`, starting with a letter.
fn check_tool_name(name: &str) -> Result<(), String> {
    if pool::well_formed(name) {
        Ok(())
    } else {
        Err(format!(
            "`{name}` is not a valid tool name: use lower-case letters, digits, `-` and `_`, starting with a letter (at most 64 characters)"
        ))
    }
}

type At<'a> = dyn Fn(std::ops::Range<usize>, String) -> PolicyError + 'a;

/// Problems found so far: checking goes on past each one, so that a policy reports all
/// of them at once (as plan validation does), not only the first.
#[derive(Default)]
struct Problems(Vec<PolicyError>);

impl Problems {
    fn push(&mut self, e: PolicyError) {
        self.0.push(e);
    }

    /// `r`'s value, or `None` with its error kept.
    fn take<T>(&mut self, r: Result<T, PolicyError>) -> Option<T> {
        r.map_err(|e| self.push(e)).ok()
    }
}

/// The tool's policy, or `None` when the section has problems (kept in `problems`).
/// Whether a section's files and environment grants are resolved by this process.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Grants {
    Here,
    /// A section sent to a pool this process does not work for: the grants are the
    /// pool's workers' (their host paths and variables may exist only there).
    OnPool,
}

/// One section checked; `base` anchors relative paths (the component's and the grants').
fn tool_policy(
    name: &str,
    raw: &RawTool,
    defaults: &(Limits, Option<u32>),
    (base, grants): (&Path, Grants),
    at: &At<'_>,
    problems: &mut Problems,
) -> Option<ToolPolicy> {
    let found_before = problems.0.len();
    let grants_on_pool = grants == Grants::OnPool;
    let component = raw.component.as_ref().and_then(|c| {
        problems.take(std::fs::canonicalize(base.join(c.get_ref())).map_err(|e| {
            at(
                c.span(),
                format!("component `{}` cannot be used: {e}", c.get_ref()),
            )
        }))
    });
    let sha256 = raw.sha256.as_ref().and_then(|s| {
        let hex = s.get_ref().strip_prefix("sha256:").unwrap_or(s.get_ref());
        if hex.len() != 64 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            problems.push(at(
                s.span(),
                format!(
                    "`{}` is not a SHA-256 digest: expected 64 hex digits",
                    s.get_ref()
                ),
            ));
            return None;
        }
        Some(hex.to_ascii_lowercase())
    });
    let mut caps = Capabilities {
        files: Vec::new(),
        env: Vec::new(),
        network: NetworkGrants {
            http: parse_each(&raw.network.http, at, problems),
            tcp: parse_each(&raw.network.tcp, at, problems),
            name_lookup: raw.network.name_lookup,
        },
    };
    // A pool's grants are resolved on its workers, by `load_for` with the pool's name.
    let (files, env) = match grants {
        Grants::Here => (&raw.files[..], &raw.env),
        Grants::OnPool => (&[][..], &Default::default()),
    };
    for f in files {
        let host = base.join(f.host.get_ref());
        let guest = f.guest.as_ref().unwrap_or(&f.host);
        let grant =
            file_grant(&host, guest.get_ref(), f.access == Access::ReadWrite).map_err(|why| {
                let span = if f.guest.is_some() && why.contains("guest path") {
                    guest.span()
                } else {
                    f.host.span()
                };
                at(span, why)
            });
        let Some(grant) = problems.take(grant) else {
            continue;
        };
        if let Some(dup) = caps.files.iter().find(|g| g.guest == grant.guest) {
            problems.push(at(
                guest.span(),
                format!(
                    "guest path `{}` is granted twice (also for `{}`)",
                    grant.guest,
                    dup.host.display()
                ),
            ));
            continue;
        }
        if let Some(why) = crate::grants::conflict(&caps.files, &grant) {
            problems.push(at(guest.span(), why));
            continue;
        }
        caps.files.push(grant);
    }
    let mut env_sources = Vec::new();
    for (k, v) in env {
        let value = env_grant(k.get_ref(), v.get_ref()).map_err(|why| {
            let span = if why.contains("variable name") {
                k.span()
            } else {
                v.span()
            };
            at(span, why)
        });
        let Some(value) = problems.take(value) else {
            continue;
        };
        env_sources.push((
            k.get_ref().clone(),
            match v.get_ref() {
                EnvValue::Literal(_) => "literal".to_string(),
                EnvValue::FromHost { from_host } => format!("host ${from_host}"),
            },
        ));
        caps.env.push((k.get_ref().clone(), value));
    }
    let operations = raw.operations.as_ref().map(|ops| {
        if ops.get_ref().is_empty() {
            problems.push(at(
                ops.span(),
                "`operations = []` would allow nothing: list the operations to allow, or leave `operations` out to allow all"
                    .into(),
            ));
        }
        let mut names: Vec<String> = Vec::new();
        for op in ops.get_ref() {
            let n = op.get_ref();
            if n.is_empty() || n.contains(char::is_whitespace) {
                problems.push(at(op.span(), format!("`{n}` is not an operation name")));
            } else if names.contains(n) {
                problems.push(at(op.span(), format!("operation `{n}` is listed twice")));
            } else {
                names.push(n.clone());
            }
        }
        names
    });
    let (limits, rate) = limits(defaults.0.clone(), &raw.limits, at, problems);
    let rate = rate.or(defaults.1);
    let flow = flow::flow(raw, at, problems);
    let pool = raw.pool.as_ref().and_then(|p| {
        problems.take(
            p.get_ref()
                .parse::<PoolName>()
                .map_err(|why| at(p.span(), why)),
        )
    });
    if problems.0.len() > found_before {
        return None;
    }
    Some(ToolPolicy {
        name: name.to_string(),
        component,
        sha256,
        capabilities: caps,
        env_sources,
        operations,
        sensitive: raw.sensitive,
        idempotent: raw.idempotent,
        pool,
        grants_on_pool,
        flow,
        limits,
        max_calls_per_minute: rate,
    })
}

/// Parses each string; an error points at the string that failed, and the rest are
/// still parsed.
fn parse_each<T>(items: &[Spanned<String>], at: &At<'_>, problems: &mut Problems) -> Vec<T>
where
    T: std::str::FromStr,
    T::Err: std::fmt::Display,
{
    items
        .iter()
        .filter_map(|s| {
            problems.take(
                s.get_ref()
                    .parse()
                    .map_err(|e: T::Err| at(s.span(), e.to_string())),
            )
        })
        .collect()
}

/// Applies `raw` over `base`; returns the limits and the rate limit, if set. A bad value
/// is kept in `problems` and leaves the base's.
fn limits(
    base: Limits,
    raw: &RawLimits,
    at: &At<'_>,
    problems: &mut Problems,
) -> (Limits, Option<u32>) {
    let mut l = base;
    let mut check = |v: &Option<Spanned<u64>>, name: &str, max: u64| -> Option<u64> {
        match v {
            None => None,
            Some(s) if *s.get_ref() == 0 => {
                problems.push(at(
                    s.span(),
                    format!("`{name} = 0` would make every call fail: give a positive value"),
                ));
                None
            }
            Some(s) if *s.get_ref() > max => {
                problems.push(at(
                    s.span(),
                    format!("`{name} = {}` is above the maximum of {max}", s.get_ref()),
                ));
                None
            }
            Some(s) => Some(*s.get_ref()),
        }
    };
    const GIB: u64 = 1 << 30;
    if let Some(v) = check(&raw.fuel, "fuel", u64::MAX / 2) {
        l.fuel = v;
    }
    if let Some(v) = check(&raw.timeout_ms, "timeout_ms", 3_600_000) {
        l.timeout = Duration::from_millis(v);
    }
    if let Some(v) = check(&raw.memory_mib, "memory_mib", 4096) {
        l.memory_mib = v;
    }
    let bytes = |v: u64| usize::try_from(v).unwrap_or(usize::MAX);
    if let Some(v) = check(&raw.max_output_bytes, "max_output_bytes", GIB) {
        l.max_result_bytes = bytes(v);
    }
    if let Some(v) = check(&raw.max_stdio_bytes, "max_stdio_bytes", GIB) {
        l.max_stdio_bytes = bytes(v);
    }
    if let Some(v) = check(&raw.max_log_bytes, "max_log_bytes", GIB) {
        l.max_log_bytes = bytes(v);
    }
    if let Some(v) = check(&raw.max_http_response_bytes, "max_http_response_bytes", GIB) {
        l.max_http_response_bytes = bytes(v);
    }
    if let Some(v) = check(&raw.max_host_bytes, "max_host_bytes", GIB) {
        l.max_host_bytes = bytes(v);
    }
    if let Some(v) = check(&raw.max_resources, "max_resources", 65_536) {
        l.max_resources = bytes(v);
    }
    const TIB: u64 = 1 << 40;
    if let Some(v) = check(&raw.max_written_bytes, "max_written_bytes", TIB) {
        l.max_written_bytes = v;
    }
    if let Some(v) = check(&raw.max_file_bytes, "max_file_bytes", TIB) {
        l.max_file_bytes = v;
    }
    if let Some(v) = check(&raw.max_args_bytes, "max_args_bytes", GIB) {
        l.max_args_bytes = bytes(v);
    }
    if let Some(v) = check(&raw.max_audit_bytes, "max_audit_bytes", GIB) {
        l.max_audit_bytes = bytes(v);
    }
    let rate = check(&raw.max_calls_per_minute, "max_calls_per_minute", 1_000_000)
        .map(|v| u32::try_from(v).unwrap_or(u32::MAX));
    (l, rate)
}

/// Checks a file or directory grant: the host path must exist; a file grant is pinned to
/// the file's canonical path so a later symlink swap cannot redirect it.
pub fn file_grant(host: &Path, guest: &str, write: bool) -> Result<FileGrant, String> {
    if host.as_os_str().is_empty() {
        return Err("the host path is empty".into());
    }
    if !guest.starts_with('/') || guest.split('/').any(|c| c == ".." || c == ".") {
        return Err(format!(
            "guest path `{guest}` must be absolute and must not contain `.` or `..` components"
        ));
    }
    let meta =
        std::fs::metadata(host).map_err(|e| format!("cannot use `{}`: {e}", host.display()))?;
    let kind = if meta.is_dir() {
        GrantKind::Directory
    } else if meta.is_file() {
        GrantKind::File
    } else {
        return Err(format!(
            "`{}` is neither a directory nor a regular file",
            host.display()
        ));
    };
    if kind == GrantKind::File && guest.ends_with('/') {
        return Err(format!(
            "guest path `{guest}` ends in `/` but `{}` is a file",
            host.display()
        ));
    }
    let host = match kind {
        GrantKind::File => std::fs::canonicalize(host)
            .map_err(|e| format!("cannot use `{}`: {e}", host.display()))?,
        GrantKind::Directory => host.to_path_buf(),
    };
    Ok(FileGrant {
        host,
        guest: guest.to_string(),
        write,
        kind,
    })
}

/// Checks an environment grant and returns the value the tool will see.
pub fn env_grant(name: &str, value: &EnvValue) -> Result<String, String> {
    let valid = !name.is_empty()
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !valid {
        return Err(format!(
            "`{name}` is not a valid variable name: use letters, digits and `_`, not starting with a digit"
        ));
    }
    match value {
        EnvValue::Literal(v) => Ok(v.clone()),
        EnvValue::FromHost { from_host } => std::env::var(from_host).map_err(|_| {
            format!("`{from_host}` is not set in the host environment (or is not UTF-8)")
        }),
    }
}
