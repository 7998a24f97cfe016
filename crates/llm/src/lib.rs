//! toolhost-llm: model planners, real models behind the engine's
//! [`Planner`](toolhost_engine::Planner) trait, over HTTP with `reqwest`, for every planning
//! mode.
//!
//! # Layout
//!
//! Data flows: [`PlanRequest`](toolhost_engine::PlanRequest) → [`prompt`] (goal, allowed
//! tools with schemas, budgets left, history as untrusted data) → a provider's wire format
//! → [`transport`] (timeouts, retries, backoff, deadline) → [`decode`] (JSON → plan or turn,
//! re-asking with the exact errors) → [`Reply`](toolhost_engine::Reply) and usage, which the
//! engine validates and charges.
//!
//! - [`config`]: [`LlmConfig`] (defaults listed), [`ApiKey`] (never printed), keys from env.
//! - [`schema`]: the plan and turn schemas as sent (strict and loose shapes).
//! - [`prompt`]: what the model is told; tool outputs delimited as data.
//! - `react`: the ReAct baseline's transcript (every thought, action, observation, uncut).
//! - `untrusted`: the `<untrusted-data>` block every tool value is written in.
//! - [`decode`]: answers → replies, or the reasons they are not.
//! - [`transport`]: POST with retries on 429/5xx/timeouts, `Retry-After`, jitter.
//! - [`openai`] (Responses and Chat Completions), [`anthropic`] (Messages), [`compatible`]
//!   (Chat Completions at any URL): one provider each; `Provider` dispatches.
//! - [`planner`]: [`LlmPlanner`], the loop around a provider.
//! - [`extractor`]: [`LlmExtractor`], the engine's extractor (`model.extract`): one
//!   provider request per attempt, no tools, the input as untrusted data, the answer
//!   typed by the step's schema.
//! - [`cassette`]: `--record` ([`Recorder`]) and `kind = "replay"` ([`cassette::open`]).
//! - [`counted`]: [`Counted`], another planner charged what a model planner would be
//!   (`--count-tokens`).

pub mod anthropic;
pub mod cassette;
pub mod compatible;
pub mod config;
pub mod counted;
pub mod decode;
pub mod extractor;
pub mod openai;
pub mod planner;
pub mod prompt;
mod react;
pub mod schema;
pub mod transport;
mod untrusted;

use std::time::Instant;

pub use self::cassette::Recorder;
pub use self::config::{
    Api, ApiKey, LlmConfig, ProviderKind, Structured, check_base_url, key_from_env,
};
pub use self::counted::Counted;
pub use self::extractor::LlmExtractor;
pub use self::planner::LlmPlanner;
pub use self::transport::{OnWait, Waiting};

use self::anthropic::Anthropic;
use self::compatible::Compatible;
use self::openai::{Completion, Format, OpenAi};
use self::prompt::Prompt;
use self::transport::{Http, RetryPolicy};

/// Why an LLM planner could not be built or could not answer. No message holds a key:
/// response bodies pass through [`ApiKey::redact`] first.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum LlmError {
    #[error("no API key for `{provider}`: set the environment variable `{var}`")]
    MissingKey { var: String, provider: &'static str },
    #[error("`{provider}` needs `base_url` (the server's `/v1` URL)")]
    MissingBaseUrl { provider: &'static str },
    #[error("`{provider}`'s base_url `{url}` is not an http(s) URL: {reason}")]
    BadBaseUrl {
        provider: &'static str,
        url: String,
        reason: String,
    },
    #[error("`{provider}` needs `model`")]
    MissingModel { provider: &'static str },
    #[error("HTTP client: {0}")]
    Client(String),
    #[error("gave up after {attempts} attempts: {last}")]
    Retries { attempts: u32, last: String },
    #[error(
        "the run's wall-time budget ran out waiting for the provider (after {attempts} attempts)"
    )]
    WallTime { attempts: u32 },
    #[error("the provider refused the request with status {status}: {body}")]
    Rejected { status: u16, body: String },
    #[error("unexpected response: {0}")]
    Response(String),
    #[error("the model refused: {0}")]
    Refused(String),
    #[error("no usable answer after {attempts} attempts: {errors}")]
    Unusable { attempts: u32, errors: String },
    #[error("another attempt would exceed the run's {0} budget")]
    Budget(&'static str),
    #[error("cassette `{path}`: {reason}")]
    Cassette { path: String, reason: String },
}

/// One provider, by wire format.
#[derive(Debug, Clone)]
pub(crate) enum Provider {
    OpenAi(OpenAi),
    Anthropic(Anthropic),
    Compatible(Compatible),
}

impl Provider {
    /// The provider `config` names, authenticating with `key` (none: no auth header) and
    /// telling `on_wait` of every retry wait and slow answer; the configuration is checked
    /// here, before a run opens its journal, not at the first request.
    pub(crate) fn new(
        config: &LlmConfig,
        key: Option<ApiKey>,
        on_wait: Option<OnWait>,
    ) -> Result<Provider, LlmError> {
        let provider_name = config.kind.as_str();
        if config.model.trim().is_empty() {
            return Err(LlmError::MissingModel {
                provider: provider_name,
            });
        }
        let base_url = config.base_url.clone().ok_or(LlmError::MissingBaseUrl {
            provider: provider_name,
        })?;
        // Checked here, before a run opens its journal, not at the first request.
        let bad = |reason: String| LlmError::BadBaseUrl {
            provider: provider_name,
            url: base_url.clone(),
            reason,
        };
        match reqwest::Url::parse(&base_url) {
            Ok(u) if matches!(u.scheme(), "http" | "https") && u.host().is_some() => {}
            Ok(u) => return Err(bad(format!("scheme `{}` or no host", u.scheme()))),
            Err(e) => return Err(bad(e.to_string())),
        }
        let http = Http::new(RetryPolicy::of(config), key)?.on_wait(on_wait);
        let openai = |official, api| OpenAi {
            http: http.clone(),
            base_url: base_url.clone(),
            model: config.model.clone(),
            api,
            temperature: config.temperature,
            official,
        };
        Ok(match config.kind {
            ProviderKind::OpenAi => Provider::OpenAi(openai(true, config.api)),
            ProviderKind::OpenAiCompatible => {
                Provider::Compatible(Compatible::new(openai(false, Api::Chat), config.structured))
            }
            ProviderKind::Anthropic => Provider::Anthropic(Anthropic::new(
                http.clone(),
                base_url.clone(),
                config.model.clone(),
                config.temperature,
                config.structured,
            )),
        })
    }

    /// Asks for `p`, within `deadline`.
    pub async fn complete(
        &mut self,
        p: &Prompt,
        deadline: Instant,
    ) -> Result<Completion, LlmError> {
        match self {
            Provider::OpenAi(o) => match o.send(p, Format::JsonSchema, deadline).await? {
                Ok(c) => Ok(c),
                Err(r) => Err(LlmError::Rejected {
                    status: r.status,
                    body: r.body,
                }),
            },
            Provider::Anthropic(a) => a.complete(p, deadline).await,
            Provider::Compatible(c) => c.complete(p, deadline).await,
        }
    }
}
