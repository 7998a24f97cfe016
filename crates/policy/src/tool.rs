//! [`ToolPolicy`]: one `[tools.NAME]` section, checked part by part (component and digest
//! pin, network, files, environment, operations, limits, data flow, pool), every problem
//! kept so that the file reports all of them at once.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Serialize;
use toml::Spanned;

use crate::error::{At, Problems};
use crate::flow::{self, Flow};
use crate::grants::{self, Capabilities, FileGrant, NetworkGrants};
use crate::limits::{self, Limits};
use crate::names::PoolName;
use crate::operations::{ask_first, operations, task_lists};
use crate::raw::{Access, EnvValue, RawFile, RawNetwork, RawTool};
use crate::trust::SignatureRule;

/// What one tool may do: its grants, limits and call rules.
#[derive(Debug, Clone, Serialize)]
pub struct ToolPolicy {
    pub name: String,
    /// If set, the section applies only to this component: a file (canonical path) or an
    /// `oci://` reference, kept as written.
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
    /// Operations (`*`: all of them) that `toolhost mcp` runs as MCP tasks (the
    /// `io.modelcontextprotocol/tasks` extension) for a client that declares it: the call
    /// answers at once with a task id to poll. Empty: every call answers when it ends.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tasks: Vec<String>,
    /// Operations (`*`: all of them) that `toolhost mcp` runs only as MCP tasks: as
    /// `tasks`, and a call from a client that does not declare the extension is refused
    /// (JSON-RPC `-32021`, naming the extension) instead of answering when it ends. Never
    /// one that `tasks` lists too.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tasks_required: Vec<String>,
    /// Operations (`*`: all of those in `tasks` and `tasks_required`) whose calls from a
    /// 2026-07-28 client ask their first question before they become tasks: a call without
    /// answers ends with an `input_required` result (MRTR), and the call made again with the
    /// answers starts the task. Each one a task operation; the section grants `ask`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tasks_ask_first: Vec<String>,
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
    /// The component must carry a valid signature from one of these keys, checked before
    /// it is compiled (`[trust]`); `None`: no signature is required.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signature: Option<SignatureRule>,
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

impl ToolPolicy {
    /// The section that grant flags make (`toolhost tool call --allow-read …`): exactly
    /// `capabilities` and `limits`, every operation, nothing sensitive or pooled, outputs
    /// untrusted when it reaches files, the network or the environment (as a written
    /// section's default). A policy the component carries narrows it like any section.
    pub fn granted(name: &str, capabilities: Capabilities, limits: Limits) -> ToolPolicy {
        let reaches_out = !capabilities.files.is_empty()
            || !capabilities.network.http.is_empty()
            || !capabilities.network.tcp.is_empty()
            || capabilities.network.name_lookup
            || !capabilities.env.is_empty();
        ToolPolicy {
            name: name.to_string(),
            component: None,
            sha256: None,
            capabilities,
            env_sources: Vec::new(),
            operations: None,
            sensitive: false,
            idempotent: false,
            tasks: Vec::new(),
            tasks_required: Vec::new(),
            tasks_ask_first: Vec::new(),
            pool: None,
            grants_on_pool: false,
            flow: Flow {
                outputs: if reaches_out {
                    flow::Trust::Untrusted
                } else {
                    flow::Trust::Derived
                },
                trusted_args: BTreeMap::new(),
                accepts_untrusted: true,
            },
            limits,
            max_calls_per_minute: None,
            signature: None,
        }
    }
}

/// Whether a section's files and environment grants are resolved by this process.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Grants {
    Here,
    /// A section sent to a pool this process does not work for: the grants are the
    /// pool's workers' (their host paths and variables may exist only there).
    OnPool,
}

/// One section checked; `base` anchors relative paths (the component's and the grants').
/// The tool's policy, or `None` when the section has problems (kept in `problems`).
pub(crate) fn tool_policy(
    name: &str,
    raw: &RawTool,
    defaults: &(Limits, Option<u32>),
    (base, grants): (&Path, Grants),
    at: &At<'_>,
    problems: &mut Problems,
) -> Option<ToolPolicy> {
    let found_before = problems.count();
    let component = component(raw.component.as_ref(), base, at, problems);
    let sha256 = raw.sha256.as_ref().and_then(|s| digest(s, at, problems));
    // A pool's grants are resolved on its workers, by `load_for` with the pool's name.
    let (files, env) = match grants {
        Grants::Here => (&raw.files[..], &raw.env),
        Grants::OnPool => (&[][..], &Default::default()),
    };
    let (env, env_sources) = environment(env, at, problems);
    let capabilities = Capabilities {
        files: files_granted(files, base, at, problems),
        env,
        network: network(&raw.network, at, problems),
        ask: raw.ask,
    };
    let operations = raw
        .operations
        .as_ref()
        .map(|ops| operations(ops, at, problems));
    let (tasks, tasks_required) = task_lists(raw, operations.as_deref(), at, problems);
    let tasks_ask_first = ask_first(raw, (&tasks, &tasks_required), at, problems);
    let (limits, rate) = limits::apply(defaults.0.clone(), &raw.limits, at, problems);
    let flow = flow::flow(raw, at, problems);
    let pool = raw.pool.as_ref().and_then(|p| {
        problems.take(
            p.get_ref()
                .parse::<PoolName>()
                .map_err(|why| at(p.span(), why)),
        )
    });
    if problems.count() > found_before {
        return None;
    }
    Some(ToolPolicy {
        name: name.to_string(),
        component,
        sha256,
        capabilities,
        env_sources,
        operations,
        sensitive: raw.sensitive,
        idempotent: raw.idempotent,
        tasks,
        tasks_required,
        tasks_ask_first,
        pool,
        grants_on_pool: grants == Grants::OnPool,
        flow,
        limits,
        max_calls_per_minute: rate.or(defaults.1),
        signature: None,
    })
}

/// The component file the section is for, canonical, if it names one; an `oci://`
/// reference is kept as written (the loader resolves it to a digest when it loads it).
fn component(
    written: Option<&Spanned<String>>,
    base: &Path,
    at: &At<'_>,
    problems: &mut Problems,
) -> Option<PathBuf> {
    let c = written?;
    if let Some(rest) = c.get_ref().strip_prefix(crate::OCI_SCHEME) {
        if rest.is_empty() || rest.contains(char::is_whitespace) {
            problems.push(at(
                c.span(),
                format!(
                    "component `{}` is not an OCI reference: expected oci://REGISTRY/REPOSITORY[:TAG|@sha256:HEX]",
                    c.get_ref()
                ),
            ));
            return None;
        }
        return Some(PathBuf::from(c.get_ref()));
    }
    problems.take(std::fs::canonicalize(base.join(c.get_ref())).map_err(|e| {
        at(
            c.span(),
            format!("component `{}` cannot be used: {e}", c.get_ref()),
        )
    }))
}

/// The digest pin: 64 hex digits, `sha256:` before them allowed, kept in lower case.
fn digest(s: &Spanned<String>, at: &At<'_>, problems: &mut Problems) -> Option<String> {
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
}

/// The HTTP origins and TCP addresses granted, and whether names may be looked up.
fn network(raw: &RawNetwork, at: &At<'_>, problems: &mut Problems) -> NetworkGrants {
    NetworkGrants {
        http: parse_each(&raw.http, at, problems),
        tcp: parse_each(&raw.tcp, at, problems),
        name_lookup: raw.name_lookup,
    }
}

/// The file grants, each resolved on this host; a guest path granted twice, or a file
/// inside a directory also granted, is a problem at its guest path.
fn files_granted(
    files: &[RawFile],
    base: &Path,
    at: &At<'_>,
    problems: &mut Problems,
) -> Vec<FileGrant> {
    let mut granted: Vec<FileGrant> = Vec::new();
    for f in files {
        let host = base.join(f.host.get_ref());
        let guest = f.guest.as_ref().unwrap_or(&f.host);
        let grant = grants::file_grant(&host, guest.get_ref(), f.access == Access::ReadWrite)
            .map_err(|why| {
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
        if let Some(dup) = granted.iter().find(|g| g.guest == grant.guest) {
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
        if let Some(why) = grants::conflict(&granted, &grant) {
            problems.push(at(guest.span(), why));
            continue;
        }
        granted.push(grant);
    }
    granted
}

/// Environment values by name, and where each comes from (shown instead of the value).
type Environment = (Vec<(String, String)>, Vec<(String, String)>);

/// The environment grants: the values the tool will see, and their sources.
fn environment(
    env: &BTreeMap<Spanned<String>, Spanned<EnvValue>>,
    at: &At<'_>,
    problems: &mut Problems,
) -> Environment {
    let (mut values, mut sources) = (Vec::new(), Vec::new());
    for (k, v) in env {
        let value = grants::env_grant(k.get_ref(), v.get_ref()).map_err(|why| {
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
        sources.push((
            k.get_ref().clone(),
            match v.get_ref() {
                EnvValue::Literal(_) => "literal".to_string(),
                EnvValue::FromHost { from_host } => format!("host ${from_host}"),
            },
        ));
        values.push((k.get_ref().clone(), value));
    }
    (values, sources)
}

/// Parses each string; an error points at the string that failed, and the rest are
/// still parsed.
pub(crate) fn parse_each<T>(
    items: &[Spanned<String>],
    at: &At<'_>,
    problems: &mut Problems,
) -> Vec<T>
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
