//! The policy file as written: serde structs, every one `deny_unknown_fields`. Values that
//! need the file system or the host environment to check keep their spans
//! ([`toml::Spanned`]) so errors can point at them.

use std::collections::BTreeMap;

use serde::Deserialize;
use toml::Spanned;

use crate::grants::{Origin, SocketGrant};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawPolicy {
    pub version: Spanned<u32>,
    #[serde(default)]
    pub defaults: RawDefaults,
    #[serde(default)]
    pub tools: BTreeMap<Spanned<String>, RawTool>,
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
    pub http: Vec<Origin>,
    #[serde(default)]
    pub tcp: Vec<SocketGrant>,
    #[serde(default)]
    pub name_lookup: bool,
}

/// The value of an environment grant: a literal, or a host variable read at load time.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(
    untagged,
    expecting = "a string, or a table `{ from_host = \"HOST_VAR\" }`"
)]
pub enum EnvValue {
    Literal(String),
    FromHost { from_host: String },
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
    pub max_calls_per_minute: Option<Spanned<u64>>,
}

impl<'de> Deserialize<'de> for Origin {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Origin, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

impl<'de> Deserialize<'de> for SocketGrant {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<SocketGrant, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}
