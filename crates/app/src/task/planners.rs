//! The `[planner]` table: which planner a task runs (the script, a model, a cassette, or
//! an ensemble of two models); the flags that replace its values are `overrides`'.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use toolhost_engine::plan::Plan;
use toolhost_engine::planner::{Turn, Usage};
use toolhost_engine::scripted::ScriptedReplan;
use toolhost_llm::{Api, LlmConfig, ProviderKind, Structured};

/// Which planner drives the run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PlannerKind {
    /// Answers from a script: offline, deterministic.
    #[default]
    Scripted,
    /// OpenAI Chat Completions.
    #[serde(rename = "openai")]
    OpenAi,
    /// Anthropic Messages.
    Anthropic,
    /// A server speaking Chat Completions at `base_url` (Ollama, vLLM, llama.cpp, …).
    #[serde(rename = "openai-compatible")]
    OpenAiCompatible,
    /// Answers from a cassette recorded with `toolhost run --record`.
    Replay,
    /// A fast model first, a strong one when the fast one's answers fail validation or
    /// its confidence is low ([`toolhost_engine::ensemble`]).
    Ensemble,
    /// For measuring prompt-injection defences only: plays a task's script and follows an
    /// injection's steps once it is shown the injection's text ([`toolhost_eval::adversary`]).
    Adversarial,
}

impl std::str::FromStr for PlannerKind {
    type Err = String;

    fn from_str(s: &str) -> Result<PlannerKind, String> {
        serde_json::from_value(serde_json::Value::String(s.to_string())).map_err(|_| {
            format!(
                "unknown planner `{s}`: use scripted, openai, anthropic, openai-compatible, replay, ensemble or adversarial"
            )
        })
    }
}

/// The planner a task resolved to.
#[derive(Debug, Clone, PartialEq)]
pub enum PlannerSpec {
    /// The task's script (`Task::script`).
    Scripted,
    Llm(LlmConfig),
    /// A cassette file.
    Replay(PathBuf),
    /// Two models; see [`toolhost_engine::ensemble`].
    Ensemble {
        fast: LlmConfig,
        strong: LlmConfig,
        /// Consecutive validation failures before the strong model takes over.
        escalate_after_invalid: u32,
    },
    /// The adversarial planner's script file; see [`toolhost_eval::adversary`].
    Adversary(PathBuf),
}

/// The `[planner]` table.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlannerConfig {
    #[serde(default)]
    pub kind: PlannerKind,
    /// Model planners: the provider's model name (also the key of `[prices]`).
    pub model: Option<String>,
    pub base_url: Option<String>,
    /// The environment variable holding the key (default by provider).
    pub api_key_env: Option<String>,
    /// `kind = "openai"`: `responses` (the default) or `chat` (Chat Completions).
    pub api: Option<Api>,
    pub temperature: Option<f64>,
    pub timeout_ms: Option<u64>,
    pub max_retries: Option<u32>,
    pub backoff_ms: Option<u64>,
    pub max_output_tokens: Option<u64>,
    pub max_repairs: Option<u32>,
    pub context_chars: Option<usize>,
    pub structured_output: Option<Structured>,
    /// `kind = "replay"`: the cassette file.
    pub cassette: Option<String>,
    /// `kind = "adversarial"`: the adversary's script (task steps, injection steps, trigger).
    pub adversary: Option<String>,
    /// A script file (JSON); or give the script's parts inline below.
    pub script: Option<String>,
    pub plan: Option<Plan>,
    /// Code mode: the program (Python) a scripted planner answers first.
    pub program: Option<String>,
    #[serde(default)]
    pub replans: Vec<ScriptedReplan>,
    #[serde(default)]
    pub repairs: Vec<Plan>,
    #[serde(default)]
    pub turns: Vec<Turn>,
    #[serde(default)]
    pub usage_per_call: Usage,
    /// `kind = "ensemble"`: the model asked first (a `[planner]` table of its own).
    pub fast: Option<Box<PlannerConfig>>,
    /// `kind = "ensemble"`: the model that takes over.
    pub strong: Option<Box<PlannerConfig>>,
    /// `kind = "ensemble"`: consecutive validation failures of the fast model's answers
    /// before the strong model takes over (default 2).
    pub escalate_after_invalid: Option<u32>,
}

/// Which planner `p` describes; a setting that the kind does not use is an error, so a
/// typo'd kind cannot silently run the script.
pub(super) fn resolve(p: &PlannerConfig, base: &Path) -> Result<PlannerSpec, String> {
    match p.kind {
        PlannerKind::Ensemble => return ensemble(p, base),
        PlannerKind::Adversarial => return adversarial(p, base),
        _ => {}
    }
    only_its_own_kind(p)?;
    let scripted = p.script.is_some()
        || p.plan.is_some()
        || p.program.is_some()
        || !p.turns.is_empty()
        || !p.replans.is_empty()
        || !p.repairs.is_empty()
        || p.usage_per_call != Usage::default();
    let provider = match p.kind {
        PlannerKind::Scripted => return scripted_planner(p),
        PlannerKind::Replay => return replay(p, scripted, base),
        PlannerKind::Ensemble | PlannerKind::Adversarial => unreachable!("resolved above"),
        PlannerKind::OpenAi => ProviderKind::OpenAi,
        PlannerKind::Anthropic => ProviderKind::Anthropic,
        PlannerKind::OpenAiCompatible => ProviderKind::OpenAiCompatible,
    };
    model(p, provider, scripted).map(PlannerSpec::Llm)
}

/// `kind = "adversarial"`: the adversary's script, and nothing else.
fn adversarial(p: &PlannerConfig, base: &Path) -> Result<PlannerSpec, String> {
    let rest = PlannerConfig {
        kind: PlannerKind::Adversarial,
        adversary: None,
        ..p.clone()
    };
    let others = rest
        != PlannerConfig {
            kind: PlannerKind::Adversarial,
            ..PlannerConfig::default()
        };
    super::adversarial::script(others, p.adversary.as_deref(), base).map(PlannerSpec::Adversary)
}

/// Refuses the settings only the adversarial planner or an ensemble uses.
fn only_its_own_kind(p: &PlannerConfig) -> Result<(), String> {
    if p.adversary.is_some() {
        return Err(format!(
            "[planner] sets `adversary`, which only `kind = \"adversarial\"` uses (this planner is {})",
            kind_name(p.kind)
        ));
    }
    let ensemble_field = [
        ("fast", p.fast.is_some()),
        ("strong", p.strong.is_some()),
        ("escalate_after_invalid", p.escalate_after_invalid.is_some()),
    ]
    .into_iter()
    .find(|(_, set)| *set)
    .map(|(n, _)| n);
    match ensemble_field {
        Some(f) => Err(format!(
            "[planner] sets `{f}`, which only `kind = \"ensemble\"` uses"
        )),
        None => Ok(()),
    }
}

/// The first setting of a model planner that `p` sets, if any.
fn model_field(p: &PlannerConfig) -> Option<&'static str> {
    let model_fields = [
        ("model", p.model.is_some()),
        ("base_url", p.base_url.is_some()),
        ("api_key_env", p.api_key_env.is_some()),
        ("api", p.api.is_some()),
        ("temperature", p.temperature.is_some()),
        ("timeout_ms", p.timeout_ms.is_some()),
        ("max_retries", p.max_retries.is_some()),
        ("backoff_ms", p.backoff_ms.is_some()),
        ("max_output_tokens", p.max_output_tokens.is_some()),
        ("max_repairs", p.max_repairs.is_some()),
        ("context_chars", p.context_chars.is_some()),
        ("structured_output", p.structured_output.is_some()),
    ];
    model_fields.iter().find(|(_, set)| *set).map(|(n, _)| *n)
}

/// `kind = "scripted"` (the default): no model's settings, no cassette.
fn scripted_planner(p: &PlannerConfig) -> Result<PlannerSpec, String> {
    if let Some(f) = model_field(p).or(p.cassette.as_ref().map(|_| "cassette")) {
        return Err(format!(
            "[planner] sets `{f}`, which a scripted planner does not use: set `kind` (openai, anthropic, openai-compatible, replay, ensemble)"
        ));
    }
    Ok(PlannerSpec::Scripted)
}

/// `kind = "replay"`: a cassette, and neither a model's settings nor a script.
fn replay(p: &PlannerConfig, scripted: bool, base: &Path) -> Result<PlannerSpec, String> {
    if let Some(f) = model_field(p) {
        return Err(format!(
            "[planner] sets `{f}`, which `kind = \"replay\"` does not use"
        ));
    }
    if scripted {
        return Err("[planner] gives a script, which `kind = \"replay\"` does not use".into());
    }
    let c = p.cassette.as_ref().ok_or(
        "`kind = \"replay\"` needs `cassette` (a file written by `toolhost run --record`)",
    )?;
    Ok(PlannerSpec::Replay(base.join(c)))
}

/// A model of `provider`: its name and base URL (required), and its settings, each
/// checked.
fn model(p: &PlannerConfig, provider: ProviderKind, scripted: bool) -> Result<LlmConfig, String> {
    let kind = provider.as_str();
    if scripted {
        return Err(format!(
            "[planner] gives a script, which `kind = \"{kind}\"` does not use"
        ));
    }
    if p.cassette.is_some() {
        return Err(format!(
            "[planner] sets `cassette`, which `kind = \"{kind}\"` does not use (record with --record)"
        ));
    }
    let model = p
        .model
        .clone()
        .ok_or_else(|| format!("`kind = \"{kind}\"` needs `model`"))?;
    let mut c = LlmConfig::new(provider, model);
    if p.base_url.is_some() {
        c.base_url.clone_from(&p.base_url);
    }
    match &c.base_url {
        None => {
            return Err(format!(
                "`kind = \"{kind}\"` needs `base_url` (e.g. http://localhost:11434/v1 for Ollama), or pass --base-url"
            ));
        }
        Some(url) => toolhost_llm::check_base_url(url)?,
    }
    if p.api_key_env.is_some() {
        c.api_key_env.clone_from(&p.api_key_env);
    }
    model_settings(p, &mut c)?;
    Ok(c)
}

/// The settings of model `c` that `p` sets: temperature, API, timeouts, retries, limits
/// and the way it answers (one `c`'s provider has).
fn model_settings(p: &PlannerConfig, c: &mut LlmConfig) -> Result<(), String> {
    let provider = c.kind;
    let kind = provider.as_str();
    if let Some(t) = p.temperature {
        if !(0.0..=2.0).contains(&t) {
            return Err(format!("temperature {t} is not between 0 and 2"));
        }
        c.temperature = Some(t);
    }
    if let Some(api) = p.api {
        if provider != ProviderKind::OpenAi {
            return Err(format!(
                "[planner] sets `api = \"{}\"`, which only `kind = \"openai\"` uses (`{kind}` has one wire format)",
                api.as_str()
            ));
        }
        c.api = api;
    }
    c.timeout_ms = p.timeout_ms.unwrap_or(c.timeout_ms);
    c.max_retries = p.max_retries.unwrap_or(c.max_retries);
    c.backoff_ms = p.backoff_ms.unwrap_or(c.backoff_ms);
    c.max_output_tokens = p.max_output_tokens.unwrap_or(c.max_output_tokens);
    c.max_repairs = p.max_repairs.unwrap_or(c.max_repairs);
    c.context_chars = p.context_chars.unwrap_or(c.context_chars);
    c.structured = p.structured_output.unwrap_or(c.structured);
    let fits = match provider {
        ProviderKind::Anthropic => c.structured != Structured::JsonObject,
        ProviderKind::OpenAi | ProviderKind::OpenAiCompatible => c.structured != Structured::Tool,
    };
    if !fits {
        return Err(format!(
            "`structured_output = \"{}\"` is not a way `kind = \"{kind}\"` answers ({})",
            c.structured.as_str(),
            match provider {
                ProviderKind::Anthropic => "auto, json-schema or tool",
                _ => "auto, json-schema or json-object",
            }
        ));
    }
    if c.timeout_ms == 0 || c.max_output_tokens == 0 {
        return Err("timeout_ms and max_output_tokens must be at least 1".into());
    }
    Ok(())
}

/// `kind = "ensemble"`: two model tables, and nothing else at the top.
fn ensemble(p: &PlannerConfig, base: &Path) -> Result<PlannerSpec, String> {
    let top = PlannerConfig {
        kind: PlannerKind::Ensemble,
        fast: None,
        strong: None,
        escalate_after_invalid: None,
        ..p.clone()
    };
    if top
        != (PlannerConfig {
            kind: PlannerKind::Ensemble,
            ..PlannerConfig::default()
        })
    {
        return Err(
            "[planner] with `kind = \"ensemble\"` takes only `fast`, `strong` and `escalate_after_invalid`: set the models' settings in [planner.fast] and [planner.strong]".into(),
        );
    }
    let model = |which: &str, sub: &Option<Box<PlannerConfig>>| {
        let sub = sub.as_deref().ok_or_else(|| {
            format!(
                "`kind = \"ensemble\"` needs [planner.{which}], a model's table (e.g. `{which} = {{ kind = \"openai\", model = \"…\" }}`)"
            )
        })?;
        model_table(&format!("[planner.{which}]"), sub, base)
    };
    let fast = model("fast", &p.fast)?;
    let strong = model("strong", &p.strong)?;
    let escalate_after_invalid = p.escalate_after_invalid.unwrap_or(2);
    if escalate_after_invalid == 0 {
        return Err(
            "escalate_after_invalid 0 would never ask the fast model: give at least 1".into(),
        );
    }
    Ok(PlannerSpec::Ensemble {
        fast,
        strong,
        escalate_after_invalid,
    })
}

/// The model a table named `table` (`[planner.fast]`, `[extractor]`) describes, or why it
/// is not one.
pub(super) fn model_table(
    table: &str,
    sub: &PlannerConfig,
    base: &Path,
) -> Result<LlmConfig, String> {
    match resolve(sub, base) {
        Ok(PlannerSpec::Llm(c)) => Ok(c),
        _ if !matches!(
            sub.kind,
            PlannerKind::OpenAi | PlannerKind::Anthropic | PlannerKind::OpenAiCompatible
        ) =>
        {
            Err(format!(
                "{table} must be a model: set `kind` to openai, anthropic or openai-compatible (it is `{}`)",
                kind_name(sub.kind)
            ))
        }
        Ok(_) => unreachable!("model kinds resolve to models"),
        Err(e) if e.contains("[planner]") => Err(e.replace("[planner]", table)),
        Err(e) => Err(format!("{table}: {e}")),
    }
}

pub(super) fn kind_name(k: PlannerKind) -> &'static str {
    match k {
        PlannerKind::Scripted => "scripted",
        PlannerKind::OpenAi => "openai",
        PlannerKind::Anthropic => "anthropic",
        PlannerKind::OpenAiCompatible => "openai-compatible",
        PlannerKind::Replay => "replay",
        PlannerKind::Ensemble => "ensemble",
        PlannerKind::Adversarial => "adversarial",
    }
}
