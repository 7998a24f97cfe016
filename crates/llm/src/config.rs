//! How an LLM planner is configured: provider, model, endpoint, key source, sampling,
//! timeouts and retries. Built from a task file's `[planner]` table and command-line flags;
//! the key itself is read from the environment only when the planner is built.

use std::fmt;

use serde::Deserialize;

/// Which wire format a provider speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProviderKind {
    /// OpenAI: the Responses API with `text.format: json_schema` (strict), or Chat
    /// Completions with `response_format: json_schema` when [`Api::Chat`] is chosen.
    OpenAi,
    /// Anthropic Messages, with native structured output (`output_config.format`), or a
    /// forced tool call whose input schema is the planner's on a model without it.
    Anthropic,
    /// Any server speaking Chat Completions (Ollama, vLLM, llama.cpp, LM Studio): a
    /// `base_url` is required, a key optional, and a server that rejects `json_schema`
    /// gets `json_object` plus the schema in the prompt.
    OpenAiCompatible,
}

impl ProviderKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ProviderKind::OpenAi => "openai",
            ProviderKind::Anthropic => "anthropic",
            ProviderKind::OpenAiCompatible => "openai-compatible",
        }
    }

    /// The endpoint used when the task names none.
    pub(crate) fn default_base_url(self) -> Option<&'static str> {
        match self {
            ProviderKind::OpenAi => Some("https://api.openai.com/v1"),
            ProviderKind::Anthropic => Some("https://api.anthropic.com/v1"),
            ProviderKind::OpenAiCompatible => None,
        }
    }

    /// The environment variable holding the key when the task names none.
    pub(crate) fn default_key_env(self) -> Option<&'static str> {
        match self {
            ProviderKind::OpenAi => Some("OPENAI_API_KEY"),
            ProviderKind::Anthropic => Some("ANTHROPIC_API_KEY"),
            ProviderKind::OpenAiCompatible => None,
        }
    }
}

/// Checks a provider endpoint before anything starts: an absolute `http`/`https` URL with
/// a host. The error names the value and shows the form wanted.
pub fn check_base_url(url: &str) -> Result<(), String> {
    let wanted = "an http:// or https:// URL such as http://localhost:11434/v1";
    match reqwest::Url::parse(url) {
        Ok(u) if matches!(u.scheme(), "http" | "https") && u.host_str().is_some() => Ok(()),
        Ok(u) if !matches!(u.scheme(), "http" | "https") => Err(format!(
            "base URL `{url}` is not {wanted} (its scheme is `{}`)",
            u.scheme()
        )),
        Ok(_) => Err(format!("base URL `{url}` is not {wanted} (it has no host)")),
        Err(e) => Err(format!("base URL `{url}` is not {wanted} ({e})")),
    }
}

/// Which of OpenAI's APIs `kind = "openai"` speaks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Api {
    /// `POST /responses`, structured output through `text.format` (the default).
    #[default]
    Responses,
    /// `POST /chat/completions`, structured output through `response_format` (what
    /// OpenAI-compatible servers speak).
    Chat,
}

impl Api {
    pub fn as_str(self) -> &'static str {
        match self {
            Api::Responses => "responses",
            Api::Chat => "chat",
        }
    }
}

/// How structured output is asked of a provider.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Structured {
    /// The provider's strict JSON Schema output first; on a server or model that rejects
    /// it, the fallback from then on (`json_object` for OpenAI-shaped servers, the forced
    /// tool call for Anthropic).
    #[default]
    Auto,
    /// Strict JSON Schema output only (OpenAI `json_schema`, Anthropic
    /// `output_config.format`).
    JsonSchema,
    /// OpenAI-shaped servers: `response_format: {type: "json_object"}`, the schema in the
    /// prompt, validated here.
    JsonObject,
    /// Anthropic: a forced call of one tool whose input schema is the planner's.
    Tool,
}

impl Structured {
    pub fn as_str(self) -> &'static str {
        match self {
            Structured::Auto => "auto",
            Structured::JsonSchema => "json-schema",
            Structured::JsonObject => "json-object",
            Structured::Tool => "tool",
        }
    }
}

/// An LLM planner's settings. `LlmConfig::new(kind, model)`:
/// - `base_url`: the provider's public endpoint (none for `openai-compatible`: required);
/// - `api_key_env`: `OPENAI_API_KEY` / `ANTHROPIC_API_KEY` (none for `openai-compatible`:
///   no `Authorization` header);
/// - `api`: [`Api::Responses`] (only `kind = "openai"` reads it; compatible servers
///   speak Chat Completions);
/// - `temperature`: 0 for OpenAI-shaped providers (plans should not be creative); unset,
///   and so not sent, for Anthropic, whose current Messages API does not declare it;
/// - `timeout_ms`: 60,000 per HTTP request;
/// - `max_retries`: 3 (on 429, 5xx, connection errors and timeouts), waiting
///   `backoff_ms` 500 doubled each time, with jitter, at most `max_backoff_ms` 8,000
///   (or what `Retry-After` says, up to `max_retry_after_ms` 30,000);
/// - `max_output_tokens`: 4,096 per response (and never more than the run has left);
/// - `max_repairs`: 2 re-asks for an answer that is not JSON or not the schema's shape;
/// - `context_chars`: 24,000 characters of prior step records in the prompt;
/// - `structured`: [`Structured::Auto`].
///
/// Every wait and request is also cut short by the run's remaining wall time.
#[derive(Clone, PartialEq)]
pub struct LlmConfig {
    pub kind: ProviderKind,
    pub model: String,
    pub base_url: Option<String>,
    pub api_key_env: Option<String>,
    pub api: Api,
    /// Sent only when set.
    pub temperature: Option<f64>,
    pub timeout_ms: u64,
    pub max_retries: u32,
    pub backoff_ms: u64,
    pub max_backoff_ms: u64,
    pub max_retry_after_ms: u64,
    pub max_output_tokens: u64,
    pub max_repairs: u32,
    pub context_chars: usize,
    pub structured: Structured,
}

impl LlmConfig {
    pub fn new(kind: ProviderKind, model: impl Into<String>) -> LlmConfig {
        LlmConfig {
            kind,
            model: model.into(),
            base_url: kind.default_base_url().map(String::from),
            api_key_env: kind.default_key_env().map(String::from),
            api: Api::Responses,
            temperature: match kind {
                ProviderKind::Anthropic => None,
                ProviderKind::OpenAi | ProviderKind::OpenAiCompatible => Some(0.0),
            },
            timeout_ms: 60_000,
            max_retries: 3,
            backoff_ms: 500,
            max_backoff_ms: 8_000,
            max_retry_after_ms: 30_000,
            max_output_tokens: 4_096,
            max_repairs: 2,
            context_chars: 24_000,
            structured: Structured::Auto,
        }
    }
}

impl fmt::Debug for LlmConfig {
    // Hand-written so that a future secret-bearing field cannot slip into a debug print
    // by derive; today no field holds a key, only the variable's name.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LlmConfig")
            .field("kind", &self.kind)
            .field("model", &self.model)
            .field("base_url", &self.base_url)
            .field("api_key_env", &self.api_key_env)
            .field("api", &self.api)
            .field("temperature", &self.temperature)
            .field("timeout_ms", &self.timeout_ms)
            .field("max_retries", &self.max_retries)
            .field("max_output_tokens", &self.max_output_tokens)
            .field("structured", &self.structured)
            .finish_non_exhaustive()
    }
}

/// A provider key. It prints as `[redacted]` and is only read to build a request header;
/// error texts that might echo it are passed through [`ApiKey::redact`].
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(String);

impl ApiKey {
    pub fn new(key: impl Into<String>) -> ApiKey {
        ApiKey(key.into())
    }

    pub(crate) fn expose(&self) -> &str {
        &self.0
    }

    /// `text` with every occurrence of the key replaced by `[redacted]`.
    pub fn redact(&self, text: &str) -> String {
        if self.0.is_empty() {
            text.to_string()
        } else {
            text.replace(&self.0, "[redacted]")
        }
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApiKey([redacted])")
    }
}

/// Reads the key that `config` names: `Ok(None)` when it names no variable (keyless
/// local servers).
pub fn key_from_env(config: &LlmConfig) -> Result<Option<ApiKey>, super::LlmError> {
    let Some(var) = &config.api_key_env else {
        return Ok(None);
    };
    match std::env::var(var) {
        Ok(v) if !v.trim().is_empty() => Ok(Some(ApiKey::new(v.trim()))),
        _ => Err(super::LlmError::MissingKey {
            var: var.clone(),
            provider: config.kind.as_str(),
        }),
    }
}
