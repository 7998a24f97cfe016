//! The policy file as written: serde structs, every one `deny_unknown_fields`. Values that
//! need the file system or the host environment to check keep their spans
//! ([`toml::Spanned`]) so errors can point at them. [`ApprovalMode`] and [`EnvValue`] are
//! read as written and kept so in the checked policy.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use toml::Spanned;

/// What a non-interactive run does with a step that needs approval.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalMode {
    /// Nobody approves: the run escalates and the step does not run.
    #[default]
    Deny,
    /// Approve automatically (for trusted, unattended deployments).
    Auto,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawPolicy {
    pub version: Spanned<u32>,
    /// What unattended runs do with steps that need approval.
    #[serde(default)]
    pub approval: ApprovalMode,
    /// A run stops once the policy has refused this many of its actions.
    pub max_refusals: Option<Spanned<i64>>,
    #[serde(default)]
    pub defaults: RawDefaults,
    #[serde(default)]
    pub tools: BTreeMap<Spanned<String>, RawTool>,
    #[serde(default)]
    pub flows: RawFlows,
    #[serde(default)]
    pub trust: RawTrust,
}

/// `[trust]`: the public keys components may be signed with, and whether every tool needs
/// a signature.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawTrust {
    /// Every tool's component must carry a valid signature from an allowed key.
    #[serde(default)]
    pub require_signature: bool,
    /// Key name → a PEM public key, inline or the path of a `.pub` file.
    #[serde(default)]
    pub keys: BTreeMap<Spanned<String>, Spanned<String>>,
}

/// `[flows]`: rules on where untrusted data may go, beyond each tool's `trusted_args`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawFlows {
    /// If set, untrusted data may be an argument of these tools only.
    pub untrusted_may_reach: Option<Spanned<Vec<Spanned<String>>>>,
    /// Whether a code-mode program may answer with an untrusted call's output.
    #[serde(default)]
    pub untrusted_may_answer: bool,
}

/// Whether a tool's outputs can be trusted, as written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum RawOutputs {
    Trusted,
    Untrusted,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawDefaults {
    #[serde(default)]
    pub limits: RawLimits,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawTool {
    pub component: Option<Spanned<String>>,
    pub sha256: Option<Spanned<String>>,
    #[serde(default)]
    pub files: Vec<RawFile>,
    #[serde(default)]
    pub network: RawNetwork,
    #[serde(default)]
    pub env: BTreeMap<Spanned<String>, Spanned<EnvValue>>,
    pub operations: Option<Spanned<Vec<Spanned<String>>>>,
    #[serde(default)]
    pub limits: RawLimits,
    #[serde(default)]
    pub sensitive: bool,
    #[serde(default)]
    pub ask: bool,
    #[serde(default)]
    pub idempotent: bool,
    /// Operations (or `*`) that `toolhost mcp` runs as MCP tasks for clients that declare
    /// the tasks extension.
    #[serde(default)]
    pub tasks: Vec<Spanned<String>>,
    /// Operations (or `*`) that `toolhost mcp` runs only as MCP tasks: a client that does
    /// not declare the tasks extension is refused (`-32021`).
    #[serde(default)]
    pub tasks_required: Vec<Spanned<String>>,
    /// Task operations (or `*`) whose calls ask their first question before they become
    /// tasks (an `input_required` result; the call made again with the answer starts it).
    #[serde(default)]
    pub tasks_ask_first: Vec<Spanned<String>>,
    /// The executor pool whose workers run this tool's calls.
    pub pool: Option<Spanned<String>>,
    pub outputs: Option<RawOutputs>,
    /// Operation (or `*`) → arguments that must not derive from untrusted data.
    #[serde(default)]
    pub trusted_args: BTreeMap<Spanned<String>, Vec<Spanned<String>>>,
    /// The `[trust.keys]` that may sign this tool's component (a signature is then required).
    pub signers: Option<Spanned<Vec<Spanned<String>>>>,
    /// This tool's component must carry a valid signature.
    pub require_signature: Option<Spanned<bool>>,
}

/// `read` or `read-write`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Access {
    Read,
    ReadWrite,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawFile {
    pub host: Spanned<String>,
    pub guest: Option<Spanned<String>>,
    pub access: Access,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawNetwork {
    #[serde(default)]
    pub http: Vec<Spanned<String>>,
    #[serde(default)]
    pub tcp: Vec<Spanned<String>>,
    #[serde(default)]
    pub name_lookup: bool,
}

/// The value of an environment grant: a literal, or a host variable read at load time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EnvValue {
    Literal(String),
    FromHost { from_host: String },
}

impl<'de> Deserialize<'de> for EnvValue {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<EnvValue, D::Error> {
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct FromHost {
            from_host: String,
        }
        const EXPECTED: &str = "a string, or a table `{ from_host = \"HOST_VAR\" }`";
        match toml::Value::deserialize(d)? {
            toml::Value::String(s) => Ok(EnvValue::Literal(s)),
            toml::Value::Table(t) => FromHost::deserialize(t)
                .map(|f| EnvValue::FromHost {
                    from_host: f.from_host,
                })
                .map_err(|e| {
                    serde::de::Error::custom(format!("{}; expected {EXPECTED}", e.message()))
                }),
            other => Err(serde::de::Error::invalid_type(
                serde::de::Unexpected::Other(&format!("{} `{other}`", other.type_str())),
                &EXPECTED,
            )),
        }
    }
}

/// Limits as written; unset fields come from `[defaults.limits]`, then from
/// [`Limits::default`](crate::Limits).
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawLimits {
    pub fuel: Option<Spanned<u64>>,
    pub timeout_ms: Option<Spanned<u64>>,
    pub memory_mib: Option<Spanned<u64>>,
    pub max_output_bytes: Option<Spanned<u64>>,
    pub max_stdio_bytes: Option<Spanned<u64>>,
    pub max_log_bytes: Option<Spanned<u64>>,
    pub max_http_response_bytes: Option<Spanned<u64>>,
    pub max_host_bytes: Option<Spanned<u64>>,
    pub max_resources: Option<Spanned<u64>>,
    pub max_written_bytes: Option<Spanned<u64>>,
    pub max_file_bytes: Option<Spanned<u64>>,
    pub max_args_bytes: Option<Spanned<u64>>,
    pub max_audit_bytes: Option<Spanned<u64>>,
    pub max_calls_per_minute: Option<Spanned<u64>>,
}
