//! toolhost-policy: the operator's policy, checked, without the sandbox.
//!
//! Which tools may run, what each may reach, and its limits. A policy is a TOML file
//! (`version = 1`) with `[defaults.limits]` and one `[tools.NAME]` section per tool.
//! Everything is denied unless a section grants it, and a tool without a section cannot be
//! called at all. Grants are the operator's alone: nothing a tool or a model can call reads
//! or changes a policy.
//!
//! This crate reads and checks policies and holds the types they are made of; it has no
//! WebAssembly engine in its dependencies, so a program that only reads policies (a
//! linter, a console, an editor plugin) depends on it alone. `toolhost-runtime` applies a
//! section to calls (its `Gate`) and re-exports this crate's items at their former paths
//! (`toolhost_runtime::policy`, `::grants`, `::limits`).
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
//! component = "tools/http.wasm"   # optional: the component this section is for (a file,
//!                                 # or oci://REGISTRY/REPO[:TAG|@sha256:HEX])
//! operations = ["get-text"]       # optional: default all
//! sensitive = true                # the engine asks for approval first
//! ask = true                      # may ask the user through toolhost:host/ask
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
//! untrusted_may_answer = false     # optional: a program may answer with an untrusted value
//!
//! [trust]                          # optional: signed components (see `trust`)
//! require_signature = true
//! keys = { release = "keys/release.pub" }
//! ```
//!
//! A tool's `outputs` default to untrusted when its section grants files or network, and
//! otherwise derive from its arguments (untrusted if any argument is): such a tool reaches
//! nothing but what it is given. Without `[flows]`, untrusted data may reach any tool
//! (subject to `trusted_args`).
//!
//! # Layout
//!
//! Data flows: TOML text → `raw` (serde, spans kept) → `policy` (the file: version,
//! defaults, `[flows]`) → `tool` (one section: grants resolved on this host, limits, call
//! and data-flow rules) → [`Policy`] of [`ToolPolicy`]s, or one [`PolicyError`] listing
//! every problem found.
//!
//! - `policy`: [`Policy`], reading and checking a whole file, finding a component's section.
//! - `tool`: [`ToolPolicy`], one `[tools.NAME]` section checked part by part.
//! - `operations`: the section's `operations` and the MCP task lists (`tasks`,
//!   `tasks_required`, `tasks_ask_first`), checked name by name.
//! - `declared`: [`Declared`], the policy a component carries (`toolhost:policy`), which
//!   can only narrow its section ([`ToolPolicy::narrowed_by`]).
//! - `raw`: the file as written (serde, `deny_unknown_fields`, spans kept): [`EnvValue`],
//!   [`ApprovalMode`].
//! - `error`: [`PolicyError`] and [`Located`], a problem located by line and column with
//!   the source line underlined; the problems found so far, kept to report all at once.
//! - `suggest`: [`did_you_mean`], the nearest valid name added to an unknown key's message
//!   (every located error passes through it).
//! - [`flow`]: the data-flow rules: [`Flow`], [`Trust`], `[flows] untrusted_may_reach`.
//! - [`grants`]: [`Capabilities`]: files, env, network origins and sockets a call may
//!   reach, and [`file_grant`] / [`env_grant`], which check a grant against this host.
//! - `limits`: [`Limits`], the budget of one call (defaults for untrusted code), and the
//!   `[…limits]` tables applied over them.
//! - [`trust`]: `[trust]`, the public keys components may be signed with
//!   ([`TrustedKey`]) and each tool's [`SignatureRule`] (who may sign it).
//! - `names`: [`ToolName`], [`OperationName`] and [`PoolName`], kept apart by type.
//! - `settable`: the macro that gives a configuration struct a setter per field (also used
//!   by `toolhost-runtime`).

mod declared;
mod error;
pub mod flow;
pub mod grants;
mod limits;
mod names;
mod operations;
mod policy;
mod raw;
mod settable;
mod suggest;
#[cfg(test)]
mod tests;
mod tool;
pub mod trust;

pub use self::declared::{Declared, SECTION as DECLARED_SECTION};
pub use self::error::{Located, PolicyError};
pub use self::flow::{Flow, Trust};
pub use self::grants::{Capabilities, FileGrant, GrantKind, NetworkGrants, env_grant, file_grant};
pub use self::limits::Limits;
pub use self::names::{OperationName, PoolName, ToolName, check_tool_name};
pub use self::policy::{Policy, VERSION, component_name};
pub use self::raw::{ApprovalMode, EnvValue};
pub use self::suggest::did_you_mean;
pub use self::tool::ToolPolicy;
pub use self::trust::{SignatureRule, TrustedKey};

/// The scheme of a component reference in a registry (`oci://REGISTRY/REPOSITORY:TAG`):
/// a section's `component` that starts with it is kept as written, not resolved as a file.
pub const OCI_SCHEME: &str = "oci://";
