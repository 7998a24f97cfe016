//! Building a run's planner from its task: the script, a model provider, a cassette, or an
//! ensemble of two models; answering from plan memory on a hit; wrapped in a recorder when
//! the planner's calls are recorded. And the run's extractor (the model of `model.extract`
//! steps), from the task too. [`PlannerOptions`] are the settings a front door gives on top
//! of the task's (`toolhost run`'s flags, an API request's choice).

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::error::{AppError, usage};
use crate::load::Loaded;
use crate::task::Task;
use crate::task::{ExtractorSpec, MemberOverrides, PlannerKind, PlannerOverrides, PlannerSpec};
use toolhost_engine::validate::Catalog;
use toolhost_engine::{
    Canned, Ensemble, EnsembleConfig, Extractor, MemoryPlanner, Mode, Plan, PlanMemory, Planner,
    RunReport,
};
use toolhost_eval::Adversary;
use toolhost_llm::{
    Counted, LlmConfig, LlmExtractor, LlmPlanner, OnWait, ProviderKind, Recorder, Waiting, cassette,
};

/// Planner settings that replace the task file's `[planner]` values, and what else a
/// run's planner is built with (recording, plan memory). `Default` replaces nothing,
/// records nothing and leaves plan memory to the task.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlannerOptions {
    /// The planner kind (`--planner`).
    pub kind: Option<PlannerKind>,
    /// The model name.
    pub model: Option<String>,
    /// The provider's base URL (an ensemble: both models'); unset, `TOOLHOST_BASE_URL`
    /// is used by planners that take a URL.
    pub base_url: Option<String>,
    /// An ensemble's fast model name.
    pub fast_model: Option<String>,
    /// An ensemble's fast model's base URL.
    pub fast_base_url: Option<String>,
    /// An ensemble's strong model name.
    pub strong_model: Option<String>,
    /// An ensemble's strong model's base URL.
    pub strong_base_url: Option<String>,
    /// The environment variable that holds the API key.
    pub api_key_env: Option<String>,
    /// With `kind = replay`: the cassette to replay.
    pub cassette: Option<PathBuf>,
    /// Save every planner request and answer to this file (JSON lines).
    pub record: Option<PathBuf>,
    /// Use plan memory whatever the task says.
    pub plan_memory: bool,
    /// Do not read or write plan memory, whatever the task says.
    pub no_plan_memory: bool,
    /// Charge a scripted planner's answers what a model planner would be charged for the
    /// same requests ([`Counted`]).
    #[serde(default)]
    pub count_tokens: bool,
}

impl PlannerOptions {
    /// `kind` and `model` (each if given), as an API client may choose them.
    pub fn chosen(kind: Option<PlannerKind>, model: Option<String>) -> PlannerOptions {
        PlannerOptions {
            kind,
            model,
            ..PlannerOptions::default()
        }
    }

    /// These options with what they leave to this process's environment filled in
    /// (`TOOLHOST_BASE_URL`), so another process reads them alike.
    pub fn resolved(mut self) -> PlannerOptions {
        self.base_url = self.overrides().base_url;
        self
    }

    /// What these options replace in a task's `[planner]` table.
    pub fn overrides(&self) -> PlannerOverrides {
        PlannerOverrides {
            kind: self.kind,
            model: self.model.clone(),
            base_url: self.base_url.clone(),
            env_base_url: std::env::var("TOOLHOST_BASE_URL")
                .ok()
                .filter(|v| !v.trim().is_empty()),
            api_key_env: self.api_key_env.clone(),
            cassette: self.cassette.clone(),
            mode: None,
            fast: MemberOverrides {
                model: self.fast_model.clone(),
                base_url: self.fast_base_url.clone(),
            },
            strong: MemberOverrides {
                model: self.strong_model.clone(),
                base_url: self.strong_base_url.clone(),
            },
        }
    }

    /// Whether the planner's calls are recorded.
    pub fn records(&self) -> bool {
        self.record.is_some()
    }

    /// Whether plan memory is on, given the task's `[memory] enabled`.
    pub fn plan_memory(&self, task: bool) -> bool {
        (task || self.plan_memory) && !self.no_plan_memory
    }
}

/// Shows a model planner's waits (a retry after a 429 or a 5xx, a slow answer) on stderr,
/// through the log's writer thread so a stuck stderr never holds up the run:
/// `planner gpt-4o: attempt 1 of 4 failed (429 Too Many Requests: …); attempt 2 in 3.0 s`.
fn on_wait(model: &str) -> OnWait {
    let model = model.to_string();
    Arc::new(move |w: &Waiting| {
        crate::log::line(&format!("planner {model}: {w}"));
    })
}

/// The planner `task` asks for, answering first with `recalled` (a plan-memory hit) if
/// given, and recording to `options.record` if given.
pub fn build(
    task: &Task,
    options: &PlannerOptions,
    recalled: Option<Plan>,
) -> Result<Box<dyn Planner>, AppError> {
    let model = |config: &LlmConfig| -> Result<Box<dyn Planner>, AppError> {
        Ok(Box::new(
            LlmPlanner::from_env_watched(config.clone(), Some(on_wait(&config.model)))
                .map_err(|e| usage(e.to_string()))?,
        ))
    };
    let mut planner: Box<dyn Planner> = match &task.planner {
        PlannerSpec::Scripted => Box::new(Canned::scripted(
            task.script.clone().for_mode(task.config.mode),
        )),
        PlannerSpec::Llm(config) => model(config)?,
        PlannerSpec::Replay(path) => {
            Box::new(cassette::open(path).map_err(|e| usage(e.to_string()))?)
        }
        PlannerSpec::Ensemble {
            fast,
            strong,
            escalate_after_invalid,
        } => {
            let mut c = EnsembleConfig::new(task.config.confidence_threshold);
            c.escalate_after_invalid = *escalate_after_invalid;
            c.prices = task.config.prices.clone();
            Box::new(Ensemble::new(model(fast)?, model(strong)?, c))
        }
        PlannerSpec::Adversary(path) => {
            Box::new(Adversary::open(path).map_err(|e| usage(e.to_string()))?)
        }
    };
    if options.count_tokens {
        planner = counted(planner, &task.planner)?;
    }
    if recalled.is_some() {
        planner = Box::new(MemoryPlanner::new(planner, recalled));
    }
    match &options.record {
        None => Ok(planner),
        Some(path) => Ok(Box::new(
            Recorder::create(planner, path).map_err(|e| usage(e.to_string()))?,
        )),
    }
}

/// `planner` charged as a model planner would be (`--count-tokens`), when it answers from a
/// record of its own (a script or an adversary's script); a model or a cassette already
/// reports the usage that was really charged, so counting over it is refused.
fn counted(planner: Box<dyn Planner>, spec: &PlannerSpec) -> Result<Box<dyn Planner>, AppError> {
    match spec {
        PlannerSpec::Scripted | PlannerSpec::Adversary(_) => Ok(Box::new(Counted::new(
            planner,
            LlmConfig::new(ProviderKind::OpenAi, "counted").context_chars,
        ))),
        _ => Err(usage(format!(
            "--count-tokens charges a scripted planner's answers as a model planner's would be; this run's planner (`{}`) reports the usage it was charged itself",
            planner.name()
        ))),
    }
}

/// The extractor `task` asks for (`[extractor]`, else the planner's model), if any: built
/// with the planner, so a missing key is a usage error before anything starts.
pub fn extractor(task: &Task) -> Result<Option<Arc<dyn Extractor>>, AppError> {
    Ok(match &task.extractor {
        None => None,
        Some(ExtractorSpec::Llm(config)) => Some(Arc::new(
            LlmExtractor::from_env(config.clone(), Some(on_wait(&config.model)))
                .map_err(|e| usage(format!("extractor: {e}")))?,
        )),
        Some(ExtractorSpec::Replay(path)) => Some(Arc::new(
            cassette::extractions(path).map_err(|e| usage(e.to_string()))?,
        )),
    })
}

/// When the planner's calls are recorded, `loaded`'s extractions go to the cassette too
/// (after [`build`] created it), for `kind = replay` to serve back.
pub fn record_extractions(loaded: &mut Loaded, options: &PlannerOptions) -> Result<(), AppError> {
    let (Some(path), Some(inner)) = (&options.record, &loaded.extractor) else {
        return Ok(());
    };
    let recorder = cassette::ExtractionRecorder::append(inner.clone(), path)
        .map_err(|e| usage(e.to_string()))?;
    loaded.extractor = Some(Arc::new(recorder));
    Ok(())
}

/// The run's plan memory, when `options` and the task turn it on and the run plans before
/// executing (a run of another mode neither reads nor stores it, and a note on `err` says
/// so). Kept in the state directory `state_dir`.
pub fn plan_memory(
    options: &PlannerOptions,
    task: &Task,
    catalog: &Catalog,
    state_dir: Option<PathBuf>,
    err: &mut dyn Write,
) -> Result<Option<PlanMemory>, AppError> {
    if !options.plan_memory(task.memory) {
        return Ok(None);
    }
    if task.config.mode != Mode::PlanThenExecute {
        let _ = writeln!(
            err,
            "note: plan memory serves plan-then-execute runs only; this {} run neither reads nor stores it",
            task.config.mode
        );
        return Ok(None);
    }
    let state = crate::journal::state_dir(state_dir)?;
    Ok(Some(PlanMemory::new(&state, &task.goal, catalog)))
}

/// The plan `memory` holds for the run, if any; a memory that cannot be read is a warning
/// on `err`, and the planner is asked.
pub fn recall(memory: Option<&PlanMemory>, err: &mut dyn Write) -> Option<Plan> {
    match memory?.recall() {
        Ok(plan) => plan,
        Err(e) => {
            crate::warn(err, &e);
            None
        }
    }
}

/// Stores the plan of the run that ended as `report` in `memory`, if it completed; a
/// memory that cannot be written is a warning on `err`.
pub fn remember(
    memory: Option<&PlanMemory>,
    report: &RunReport,
    catalog: &Catalog,
    max_plan_steps: usize,
    err: &mut dyn Write,
) {
    let Some(m) = memory else { return };
    match m.remember(report, catalog, max_plan_steps) {
        Ok(true) => tracing::debug!(path = %m.path().display(), "plan stored in plan memory"),
        Ok(false) => {}
        Err(e) => crate::warn(err, &e),
    }
}
