//! Task files: what `toolhost run` runs (and `toolhost eval`, from a golden task's table:
//! [`Task::from_table`]). TOML, `deny_unknown_fields` throughout; relative
//! paths are relative to the task file.
//!
//! ```toml
//! goal = "What is 12 * 4 + 5?"
//! mode = "step-wise"              # or "plan-then-execute" (default), "react"
//! policy = "policy.toml"
//! tools = ["calc"]                # names, found as NAME.wasm in --tools-dir …
//! # tools = { calc = "build/calc.wasm" }   # … or paths
//! # tools = { calc = "oci://ghcr.io/o/calc:1.0" }   # … or OCI references (pulled, pinned)
//! max_parallel = 4
//! confidence_threshold = 0.6
//! quarantine = true               # replanning sees untrusted outputs' types, not their text
//!
//! [extractor]                     # the model of `model.extract` steps (default: the planner's)
//! kind = "openai-compatible"
//! model = "llama3.1:8b"
//! base_url = "http://localhost:11434/v1"
//!
//! [planner]                       # the embedded scripted planner:
//! script = "seed.script.json"     # a script file, or the script inline:
//! [[planner.turns]]
//! tool = "calc"
//! operation = "eval"
//! arguments = { expression = "12 * 4 + 5" }
//!
//! # … or a model (see `toolhost_llm`):
//! # [planner]
//! # kind = "openai"               # "anthropic" | "openai-compatible" | "replay"
//! # model = "gpt-4o-mini"
//! # base_url = "http://localhost:11434/v1"   # required for openai-compatible
//! # api_key_env = "OPENAI_API_KEY"
//! # temperature = 0.0, timeout_ms = 60000, max_retries = 3, max_output_tokens = 4096
//! # cassette = "run.cassette.jsonl"           # for kind = "replay"
//!
//! # … or two models, the strong one asked when the fast one is not good enough:
//! # [planner]
//! # kind = "ensemble"
//! # escalate_after_invalid = 2
//! # fast = { kind = "openai", model = "gpt-4o-mini" }
//! # strong = { kind = "anthropic", model = "claude-sonnet-4-5" }
//!
//! # … or, for measuring prompt-injection defences only (SECURITY.md, "Measurement"):
//! # [planner]
//! # kind = "adversarial"           # a hijacked model's worst case
//! # adversary = "attack.json"      # {"task": [steps], "injection": [steps], "trigger": "text"}
//!
//! [memory]                        # plan memory: off unless enabled
//! enabled = true
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

use toolhost_engine::RunConfig;
use toolhost_engine::budget::{Budgets, Prices};
use toolhost_engine::evaluate::EvaluatorConfig;
use toolhost_engine::planner::{Mode, Usage};
use toolhost_engine::scripted::Script;
use toolhost_runtime::policy::PolicyError;

mod adversarial;
mod extractor;
mod overrides;
mod planners;

pub use self::extractor::ExtractorSpec;
pub use self::overrides::{MemberOverrides, PlannerOverrides};
use self::planners::resolve;
pub use self::planners::{PlannerConfig, PlannerKind, PlannerSpec};

/// `tools`: names to find in the tools directory, or name → component path.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(untagged)]
pub(crate) enum ToolList {
    Names(Vec<String>),
    Paths(BTreeMap<String, String>),
}

/// A task file as written.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct TaskFile {
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
    #[serde(default)]
    pub memory: MemoryConfig,
    /// Quarantined replanning: the planner is shown types, not the text, of untrusted
    /// outputs ([`toolhost_engine::flow`]).
    #[serde(default)]
    pub quarantine: bool,
    /// The model that makes extractions (default: the planner's).
    pub extractor: Option<PlannerConfig>,
}

/// The `[memory]` table: plan memory ([`toolhost_engine::memory`]), off unless enabled.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct MemoryConfig {
    /// Serve a stored plan for the same goal and tools instead of asking the planner, and
    /// store the plan of every completed run.
    #[serde(default)]
    pub enabled: bool,
}

fn default_mode() -> Mode {
    Mode::PlanThenExecute
}

/// Whether `script` has answers for `mode`: a plan for plan-then-execute, turns for
/// step-wise and ReAct (which a script answers alike), a program for code mode. A script
/// may hold answers for several modes (a suite then runs under any `--mode`); the error
/// for a missing one says which modes the script does answer. `overridden`: the mode came
/// from `--mode`, so the error says so.
fn scripted_for(mode: Mode, overridden: bool, script: &Script) -> Result<(), String> {
    let from = if overridden { " (from --mode)" } else { "" };
    let (has, needs) = match mode {
        Mode::PlanThenExecute => (script.plan.is_some(), "a `plan`"),
        Mode::StepWise | Mode::React => (!script.turns.is_empty(), "`turns`"),
        Mode::Code => (script.program.is_some(), "a `program` (Python source)"),
    };
    if has {
        return Ok(());
    }
    let mut answers = Vec::new();
    if script.plan.is_some() {
        answers.push("a `plan`, which answers plan-then-execute");
    }
    if !script.turns.is_empty() {
        answers.push("`turns`, which answer step-wise and react");
    }
    if script.program.is_some() {
        answers.push("a `program`, which answers code mode only");
    }
    let mut why = format!("mode `{mode}`{from} needs {needs} in the planner script");
    if !answers.is_empty() {
        why += &format!("; it has only {}", answers.join(" and "));
        if script.program.is_some() && answers.len() == 1 {
            why += ": set `mode = \"code\"` or pass `--mode code`";
        }
    }
    Err(why)
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
    /// What makes the plan's extractions (`model.extract`), if anything does.
    pub extractor: Option<ExtractorSpec>,
    pub policy: PathBuf,
    /// Name → component path.
    pub tools: BTreeMap<String, PathBuf>,
    /// `[memory] enabled`: plan memory is on (flags may turn it on or off).
    pub memory: bool,
    /// Code mode: the interpreter component.
    pub interpreter: Option<Interpreter>,
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
        let raw: TaskFile = toml::from_str(&text).map_err(|e| {
            TaskError::Parse(PolicyError::at(
                &shown,
                &text,
                e.span().unwrap_or(0..0),
                e.message().trim_end().to_string(),
            ))
        })?;
        Task::from_raw(raw, path, tools_dir, overrides)
    }

    /// A task from a parsed task-file `table`, as if read from `path` (relative paths
    /// start at its directory): how `toolhost eval` loads a golden task once its harness
    /// keys are taken out.
    pub fn from_table(
        table: toml::Table,
        path: &Path,
        tools_dir: Option<&Path>,
        overrides: &PlannerOverrides,
    ) -> Result<Task, TaskError> {
        let raw = TaskFile::deserialize(table).map_err(|e| TaskError::Invalid {
            task: path.display().to_string(),
            reason: e.message().trim_end().to_string(),
        })?;
        Task::from_raw(raw, path, tools_dir, overrides)
    }

    fn from_raw(
        mut raw: TaskFile,
        path: &Path,
        tools_dir: Option<&Path>,
        overrides: &PlannerOverrides,
    ) -> Result<Task, TaskError> {
        let base = path.parent().unwrap_or(Path::new("."));
        // Every independent check runs, so that a task reports all its problems at once.
        let mut problems: Vec<String> = Vec::new();
        let tools = tools(&raw.tools, base, tools_dir).unwrap_or_else(|e| {
            problems.push(e);
            BTreeMap::new()
        });
        let planner = match overrides
            .apply(&mut raw.planner)
            .and_then(|()| resolve(&raw.planner, base))
        {
            Ok(planner) => Some(planner),
            Err(e) => {
                problems.push(e);
                None
            }
        };
        let extractor = planner.as_ref().map(|planner| {
            extractor::resolve(raw.extractor.as_ref(), planner, base).unwrap_or_else(|e| {
                problems.push(e);
                None
            })
        });
        let script = script(&raw.planner, base).unwrap_or_else(|e| {
            problems.push(e);
            Script::default()
        });
        if let Some(mode) = overrides.mode {
            raw.mode = mode;
        }
        if planner == Some(PlannerSpec::Scripted)
            && let Err(e) = scripted_for(raw.mode, overrides.mode.is_some(), &script)
        {
            problems.push(e);
        }
        if raw.mode == Mode::Code && matches!(planner, Some(PlannerSpec::Adversary(_))) {
            problems.push(
                "mode `code` takes a program from a scripted, model, ensemble or replay planner; the adversarial planner answers plans only".into(),
            );
        }
        let config = run_config(&raw, &mut problems);
        let planner = match (planner, problems.len()) {
            (Some(planner), 0) => planner,
            _ => return Err(invalid(path, problems)),
        };
        Ok(Task {
            goal: raw.goal,
            config,
            script,
            planner,
            extractor: extractor.flatten(),
            policy: base.join(&raw.policy),
            tools,
            memory: raw.memory.enabled,
            interpreter: (raw.mode == Mode::Code).then(|| interpreter(tools_dir)),
        })
    }
}

/// Code mode's interpreter component.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Interpreter {
    /// The one built into this program (`toolhost_interpreter`).
    BuiltIn,
    /// A component file: `python.wasm` in the tools directory, which replaces the built-in
    /// one.
    File(PathBuf),
}

impl Interpreter {
    /// How the journal names it: the file's path, or `<built-in>/python.wasm`.
    pub fn label(&self) -> String {
        match self {
            Interpreter::BuiltIn => toolhost_interpreter::LABEL.into(),
            Interpreter::File(path) => path.display().to_string(),
        }
    }
}

/// Where code mode finds its interpreter: `python.wasm` in `tools_dir`, else the one built
/// into this program.
fn interpreter(tools_dir: Option<&Path>) -> Interpreter {
    match tools_dir.map(|dir| dir.join("python.wasm")) {
        Some(file) if file.is_file() => Interpreter::File(file),
        _ => Interpreter::BuiltIn,
    }
}

/// Name → component path of the task's `tools` (relative to `base`, or found as NAME.wasm
/// in `tools_dir`).
fn tools(
    list: &ToolList,
    base: &Path,
    tools_dir: Option<&Path>,
) -> Result<BTreeMap<String, PathBuf>, String> {
    match list {
        // An `oci://` reference is kept as written: `load::load_tool` resolves it.
        ToolList::Paths(map) => Ok(map
            .iter()
            .map(|(n, p)| match toolhost_dist::OciRef::is_oci(p) {
                true => (n.clone(), PathBuf::from(p)),
                false => (n.clone(), base.join(p)),
            })
            .collect()),
        ToolList::Names(names) => match tools_dir {
            Some(dir) => Ok(names
                .iter()
                .map(|n| (n.clone(), dir.join(format!("{n}.wasm"))))
                .collect()),
            None => Err(format!(
                "`tools` names {} but no tools directory was given: pass --tools-dir DIR (or set TOOLHOST_TOOLS_DIR), or map names to paths",
                names.join(", ")
            )),
        },
    }
}

/// The planner script of `[planner]` table `p`: its `script` file (relative to `base`), or
/// the script given inline (empty when neither is).
fn script(p: &PlannerConfig, base: &Path) -> Result<Script, String> {
    let inline = p.plan.is_some()
        || p.program.is_some()
        || !p.turns.is_empty()
        || !p.replans.is_empty()
        || !p.repairs.is_empty();
    match (&p.script, inline) {
        (Some(_), true) => {
            Err("[planner] gives both `script` and an inline script; keep one".to_string())
        }
        (Some(file), false) => {
            let file = base.join(file);
            std::fs::read_to_string(&file)
                .map_err(|e| format!("cannot read planner script `{}`: {e}", file.display()))
                .and_then(|text| {
                    serde_json::from_str::<Script>(&text).map_err(|e| {
                        format!("planner script `{}` is not valid: {e}", file.display())
                    })
                })
                .map(|mut script| {
                    if script.usage_per_call == Usage::default() {
                        script.usage_per_call = p.usage_per_call.clone();
                    }
                    script
                })
        }
        (None, _) => Ok(Script {
            plan: p.plan.clone(),
            program: p.program.clone(),
            replans: p.replans.clone(),
            repairs: p.repairs.clone(),
            turns: p.turns.clone(),
            usage_per_call: p.usage_per_call.clone(),
        }),
    }
}

/// The run settings of task file `raw`; a value that would run nothing is a problem.
fn run_config(raw: &TaskFile, problems: &mut Vec<String>) -> RunConfig {
    let defaults = RunConfig::default();
    let threshold = raw
        .confidence_threshold
        .unwrap_or(defaults.confidence_threshold);
    if !(0.0..=1.0).contains(&threshold) {
        problems.push(format!(
            "confidence_threshold {threshold} is not between 0 and 1"
        ));
    }
    let max_parallel = raw.max_parallel.unwrap_or(defaults.max_parallel);
    if max_parallel == 0 {
        problems.push("max_parallel 0 would run nothing: give at least 1".into());
    }
    RunConfig {
        mode: raw.mode,
        budgets: raw.budgets.clone(),
        prices: raw.prices.clone(),
        max_parallel,
        confidence_threshold: threshold,
        max_plan_steps: raw.max_plan_steps.unwrap_or(defaults.max_plan_steps),
        evaluator: raw.evaluator.clone(),
        faults: defaults.faults,
        quarantine: raw.quarantine,
        // The policy's (`load_task`), not the task file's.
        max_refusals: None,
        untrusted_may_answer: false,
    }
}

/// The task at `path` is invalid for `problems` (one, or a list).
fn invalid(path: &Path, mut problems: Vec<String>) -> TaskError {
    let reason = match problems.len() {
        1 => problems.remove(0),
        n => format!("{n} problems:\n  - {}", problems.join("\n  - ")),
    };
    TaskError::Invalid {
        task: path.display().to_string(),
        reason,
    }
}
