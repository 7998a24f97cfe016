//! Task files: what `toolhost run` runs. TOML, `deny_unknown_fields` throughout; relative
//! paths are relative to the task file.
//!
//! ```toml
//! goal = "What is 12 * 4 + 5?"
//! mode = "step-wise"              # or "plan-then-execute" (default)
//! policy = "policy.toml"
//! tools = ["calc"]                # names, found as NAME.wasm in --tools-dir …
//! # tools = { calc = "build/calc.wasm" }   # … or paths
//! max_parallel = 4
//! confidence_threshold = 0.6
//!
//! [planner]                       # the embedded scripted planner:
//! script = "seed.script.json"     # a script file, or the script inline:
//! [[planner.turns]]
//! tool = "calc"
//! operation = "eval"
//! arguments = { expression = "12 * 4 + 5" }
//!
//! # … or a model (see `crate::llm`):
//! # [planner]
//! # kind = "openai"               # "anthropic" | "openai-compatible" | "replay"
//! # model = "gpt-4o-mini"
//! # base_url = "http://localhost:11434/v1"   # required for openai-compatible
//! # api_key_env = "OPENAI_API_KEY"
//! # temperature = 0.0, timeout_ms = 60000, max_retries = 3, max_output_tokens = 4096
//! # cassette = "run.cassette.jsonl"           # for kind = "replay"
//!
//! [budgets]
//! max_steps = 10
//!
//! [evaluator]
//! on_fail = "replan"
//!
//! [prices.scripted]
//! input_per_mtok = 1.0
//! output_per_mtok = 2.0
//! ```

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::budget::{Budgets, Prices};
use super::evaluate::EvaluatorConfig;
use super::plan::Plan;
use super::planner::{Mode, Turn, Usage};
use super::run::RunConfig;
use super::scripted::{Script, ScriptedReplan};
use crate::llm::{LlmConfig, ProviderKind, Structured};
use crate::policy::PolicyError;

/// Which planner drives the run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
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
}

impl std::str::FromStr for PlannerKind {
    type Err = String;

    fn from_str(s: &str) -> Result<PlannerKind, String> {
        serde_json::from_value(serde_json::Value::String(s.to_string())).map_err(|_| {
            format!(
                "unknown planner `{s}`: use scripted, openai, anthropic, openai-compatible or replay"
            )
        })
    }
}

/// The planner a task resolved to.
#[derive(Debug, Clone, PartialEq)]
pub enum PlannerSpec {
    /// The task's script ([`Task::script`]).
    Scripted,
    Llm(LlmConfig),
    /// A cassette file.
    Replay(PathBuf),
}

/// Planner settings given outside the task file (command-line flags); each replaces the
/// task's value. Choosing a model `kind` here drops the task's inline script.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PlannerOverrides {
    pub kind: Option<PlannerKind>,
    pub model: Option<String>,
    pub base_url: Option<String>,
    pub api_key_env: Option<String>,
    /// Taken as given (relative to the working directory, not the task file).
    pub cassette: Option<PathBuf>,
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
    /// A script file (JSON); or give the script's parts inline below.
    pub script: Option<String>,
    pub plan: Option<Plan>,
    #[serde(default)]
    pub replans: Vec<ScriptedReplan>,
    #[serde(default)]
    pub repairs: Vec<Plan>,
    #[serde(default)]
    pub turns: Vec<Turn>,
    #[serde(default)]
    pub usage_per_call: Usage,
}

/// `tools`: names to find in the tools directory, or name → component path.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(untagged)]
pub enum ToolList {
    Names(Vec<String>),
    Paths(BTreeMap<String, String>),
}

/// A task file as written.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskFile {
    pub goal: String,
    #[serde(default = "default_mode")]
    pub mode: Mode,
    pub policy: String,
    pub tools: ToolList,
    #[serde(default)]
    pub planner: PlannerConfig,
    #[serde(default)]
    pub budgets: Budgets,
    #[serde(default)]
    pub prices: Prices,
    #[serde(default)]
    pub evaluator: EvaluatorConfig,
    pub max_parallel: Option<usize>,
    pub confidence_threshold: Option<f64>,
    pub max_plan_steps: Option<usize>,
}

fn default_mode() -> Mode {
    Mode::PlanThenExecute
}

/// Why a task cannot run.
#[derive(Debug, thiserror::Error)]
pub enum TaskError {
    #[error("cannot read task `{path}`: {reason}")]
    Read { path: String, reason: String },
    #[error("{0}")]
    Parse(PolicyError),
    #[error("task `{task}`: {reason}")]
    Invalid { task: String, reason: String },
}

/// A loaded task: goal, run settings, script, and where its policy and tools are.
#[derive(Debug, Clone)]
pub struct Task {
    pub goal: String,
    pub config: RunConfig,
    pub script: Script,
    /// Which planner runs: the script above, a model, or a cassette.
    pub planner: PlannerSpec,
    pub policy: PathBuf,
    /// Name → component path.
    pub tools: BTreeMap<String, PathBuf>,
}

impl Task {
    /// Reads the task at `path`; `tools_dir` resolves tool names.
    pub fn load(path: &Path, tools_dir: Option<&Path>) -> Result<Task, TaskError> {
        Task::load_with(path, tools_dir, &PlannerOverrides::default())
    }

    /// [`Task::load`], with planner settings from outside the file.
    pub fn load_with(
        path: &Path,
        tools_dir: Option<&Path>,
        overrides: &PlannerOverrides,
    ) -> Result<Task, TaskError> {
        let shown = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| TaskError::Read {
            path: shown.clone(),
            reason: e.to_string(),
        })?;
        let mut raw: TaskFile = toml::from_str(&text).map_err(|e| {
            TaskError::Parse(PolicyError::at(
                &shown,
                &text,
                e.span().unwrap_or(0..0),
                e.message().trim_end().to_string(),
            ))
        })?;
        let base = path.parent().unwrap_or(Path::new("."));
        let invalid = |reason: String| TaskError::Invalid {
            task: shown.clone(),
            reason,
        };
        let tools = match &raw.tools {
            ToolList::Paths(map) => map.iter().map(|(n, p)| (n.clone(), base.join(p))).collect(),
            ToolList::Names(names) => {
                let dir = tools_dir.ok_or_else(|| {
                    invalid(format!(
                        "`tools` names {} but no tools directory was given: pass --tools-dir DIR (or set TOOLHOST_TOOLS_DIR), or map names to paths",
                        names.join(", ")
                    ))
                })?;
                names
                    .iter()
                    .map(|n| (n.clone(), dir.join(format!("{n}.wasm"))))
                    .collect()
            }
        };
        overrides.apply(&mut raw.planner);
        let planner = resolve(&raw.planner, base).map_err(&invalid)?;
        let p = &raw.planner;
        let inline = p.plan.is_some()
            || !p.turns.is_empty()
            || !p.replans.is_empty()
            || !p.repairs.is_empty();
        let script = match (&p.script, inline) {
            (Some(_), true) => {
                return Err(invalid(
                    "[planner] gives both `script` and an inline script; keep one".into(),
                ));
            }
            (Some(file), false) => {
                let file = base.join(file);
                let text = std::fs::read_to_string(&file).map_err(|e| {
                    invalid(format!(
                        "cannot read planner script `{}`: {e}",
                        file.display()
                    ))
                })?;
                let mut script: Script = serde_json::from_str(&text).map_err(|e| {
                    invalid(format!(
                        "planner script `{}` is not valid: {e}",
                        file.display()
                    ))
                })?;
                if script.usage_per_call == Usage::default() {
                    script.usage_per_call = p.usage_per_call.clone();
                }
                script
            }
            (None, _) => Script {
                plan: p.plan.clone(),
                replans: p.replans.clone(),
                repairs: p.repairs.clone(),
                turns: p.turns.clone(),
                usage_per_call: p.usage_per_call.clone(),
            },
        };
        match raw.mode {
            _ if planner != PlannerSpec::Scripted => {}
            Mode::PlanThenExecute if script.plan.is_none() => {
                return Err(invalid(
                    "mode `plan-then-execute` needs a `plan` in the planner script".into(),
                ));
            }
            Mode::StepWise if script.turns.is_empty() => {
                return Err(invalid(
                    "mode `step-wise` needs `turns` in the planner script".into(),
                ));
            }
            _ => {}
        }
        let defaults = RunConfig::default();
        let threshold = raw
            .confidence_threshold
            .unwrap_or(defaults.confidence_threshold);
        if !(0.0..=1.0).contains(&threshold) {
            return Err(invalid(format!(
                "confidence_threshold {threshold} is not between 0 and 1"
            )));
        }
        let max_parallel = raw.max_parallel.unwrap_or(defaults.max_parallel);
        if max_parallel == 0 {
            return Err(invalid(
                "max_parallel 0 would run nothing: give at least 1".into(),
            ));
        }
        Ok(Task {
            goal: raw.goal,
            config: RunConfig {
                mode: raw.mode,
                budgets: raw.budgets,
                prices: raw.prices,
                max_parallel,
                confidence_threshold: threshold,
                max_plan_steps: raw.max_plan_steps.unwrap_or(defaults.max_plan_steps),
                evaluator: raw.evaluator,
                faults: defaults.faults,
            },
            script,
            planner,
            policy: base.join(&raw.policy),
            tools,
        })
    }
}

impl PlannerOverrides {
    fn apply(&self, p: &mut PlannerConfig) {
        if let Some(kind) = self.kind
            && kind != p.kind
        {
            // A different kind keeps only the task's settings that it uses.
            let old = std::mem::take(p);
            let model = |k: PlannerKind| !matches!(k, PlannerKind::Scripted | PlannerKind::Replay);
            *p = match kind {
                PlannerKind::Scripted => PlannerConfig {
                    script: old.script,
                    plan: old.plan,
                    replans: old.replans,
                    repairs: old.repairs,
                    turns: old.turns,
                    usage_per_call: old.usage_per_call,
                    ..PlannerConfig::default()
                },
                PlannerKind::Replay => PlannerConfig {
                    cassette: old.cassette,
                    ..PlannerConfig::default()
                },
                _ if model(old.kind) => PlannerConfig {
                    script: None,
                    plan: None,
                    replans: Vec::new(),
                    repairs: Vec::new(),
                    turns: Vec::new(),
                    usage_per_call: Usage::default(),
                    cassette: None,
                    ..old
                },
                _ => PlannerConfig::default(),
            };
            p.kind = kind;
        }
        let set = |field: &mut Option<String>, v: &Option<String>| {
            if v.is_some() {
                field.clone_from(v);
            }
        };
        set(&mut p.model, &self.model);
        set(&mut p.base_url, &self.base_url);
        set(&mut p.api_key_env, &self.api_key_env);
        if let Some(c) = &self.cassette {
            p.cassette = Some(c.display().to_string());
        }
    }
}

/// Which planner `p` describes; a setting that the kind does not use is an error, so a
/// typo'd kind cannot silently run the script.
fn resolve(p: &PlannerConfig, base: &Path) -> Result<PlannerSpec, String> {
    let scripted = p.script.is_some()
        || p.plan.is_some()
        || !p.turns.is_empty()
        || !p.replans.is_empty()
        || !p.repairs.is_empty()
        || p.usage_per_call != Usage::default();
    let model_fields = [
        ("model", p.model.is_some()),
        ("base_url", p.base_url.is_some()),
        ("api_key_env", p.api_key_env.is_some()),
        ("temperature", p.temperature.is_some()),
        ("timeout_ms", p.timeout_ms.is_some()),
        ("max_retries", p.max_retries.is_some()),
        ("backoff_ms", p.backoff_ms.is_some()),
        ("max_output_tokens", p.max_output_tokens.is_some()),
        ("max_repairs", p.max_repairs.is_some()),
        ("context_chars", p.context_chars.is_some()),
        ("structured_output", p.structured_output.is_some()),
    ];
    let model_field = model_fields.iter().find(|(_, set)| *set).map(|(n, _)| *n);
    let provider = match p.kind {
        PlannerKind::Scripted => {
            if let Some(f) = model_field.or(p.cassette.as_ref().map(|_| "cassette")) {
                return Err(format!(
                    "[planner] sets `{f}`, which a scripted planner does not use: set `kind` (openai, anthropic, openai-compatible, replay)"
                ));
            }
            return Ok(PlannerSpec::Scripted);
        }
        PlannerKind::Replay => {
            if let Some(f) = model_field {
                return Err(format!(
                    "[planner] sets `{f}`, which `kind = \"replay\"` does not use"
                ));
            }
            if scripted {
                return Err(
                    "[planner] gives a script, which `kind = \"replay\"` does not use".into(),
                );
            }
            let c = p.cassette.as_ref().ok_or(
                "`kind = \"replay\"` needs `cassette` (a file written by `toolhost run --record`)",
            )?;
            return Ok(PlannerSpec::Replay(base.join(c)));
        }
        PlannerKind::OpenAi => ProviderKind::OpenAi,
        PlannerKind::Anthropic => ProviderKind::Anthropic,
        PlannerKind::OpenAiCompatible => ProviderKind::OpenAiCompatible,
    };
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
    if c.base_url.is_none() {
        return Err(format!(
            "`kind = \"{kind}\"` needs `base_url` (e.g. http://localhost:11434/v1 for Ollama), or pass --base-url"
        ));
    }
    if p.api_key_env.is_some() {
        c.api_key_env.clone_from(&p.api_key_env);
    }
    if let Some(t) = p.temperature {
        if !(0.0..=2.0).contains(&t) {
            return Err(format!("temperature {t} is not between 0 and 2"));
        }
        c.temperature = t;
    }
    c.timeout_ms = p.timeout_ms.unwrap_or(c.timeout_ms);
    c.max_retries = p.max_retries.unwrap_or(c.max_retries);
    c.backoff_ms = p.backoff_ms.unwrap_or(c.backoff_ms);
    c.max_output_tokens = p.max_output_tokens.unwrap_or(c.max_output_tokens);
    c.max_repairs = p.max_repairs.unwrap_or(c.max_repairs);
    c.context_chars = p.context_chars.unwrap_or(c.context_chars);
    c.structured = p.structured_output.unwrap_or(c.structured);
    if c.timeout_ms == 0 || c.max_output_tokens == 0 {
        return Err("timeout_ms and max_output_tokens must be at least 1".into());
    }
    Ok(PlannerSpec::Llm(c))
}
