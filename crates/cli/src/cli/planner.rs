//! `toolhost run`'s planner flags, and building the run's planner from the task: the
//! script, a model provider, a cassette, or an ensemble of two models; answering from plan
//! memory on a hit; wrapped in a recorder with `--record`. And the run's extractor (the
//! model of `model.extract` steps), from the task too.

use std::path::PathBuf;
use std::sync::Arc;

use super::{Failure, exit};
use crate::task::Task;
use crate::task::{ExtractorSpec, MemberOverrides, PlannerKind, PlannerOverrides, PlannerSpec};
use toolhost_engine::{
    Canned, Ensemble, EnsembleConfig, Extractor, MemoryPlanner, Mode, Plan, Planner,
};
use toolhost_eval::Adversary;
use toolhost_llm::{LlmConfig, LlmExtractor, LlmPlanner, OnWait, Recorder, Waiting, cassette};

/// `--mode`, for the commands that start runs (`run`, `eval`, `submit`; a resumed run
/// keeps its journal's mode).
#[derive(Debug, Clone, Default, clap::Args, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ModeArg {
    /// Run in this mode instead of the task's: plan-then-execute, step-wise, or react (the
    /// ReAct baseline: one planner call per action, the whole transcript each time).
    #[arg(long, value_name = "MODE")]
    mode: Option<Mode>,
}

impl ModeArg {
    /// `--mode MODE` (none: the task's).
    pub(crate) fn of(mode: Option<Mode>) -> ModeArg {
        ModeArg { mode }
    }

    /// `overrides` with this mode.
    pub(crate) fn apply(&self, overrides: PlannerOverrides) -> PlannerOverrides {
        PlannerOverrides {
            mode: self.mode.or(overrides.mode),
            ..overrides
        }
    }
}

/// Planner settings that replace the task file's `[planner]` values (the default replaces
/// none); a submitted run's spec holds them (resolved, see [`PlannerArgs::resolved`]) for
/// the worker that starts it.
#[derive(Debug, Clone, Default, clap::Args, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct PlannerArgs {
    /// The planner: scripted, openai, anthropic, openai-compatible, replay, or ensemble.
    #[arg(long = "planner", value_name = "KIND")]
    kind: Option<PlannerKind>,
    /// The model name.
    #[arg(long, value_name = "NAME")]
    model: Option<String>,
    /// The provider's base URL, e.g. http://localhost:11434/v1 (an ensemble: both models')
    /// [env: TOOLHOST_BASE_URL, used only by planners that take a URL].
    #[arg(long, value_name = "URL")]
    base_url: Option<String>,
    /// An ensemble's fast model name.
    #[arg(long, value_name = "NAME")]
    fast_model: Option<String>,
    /// An ensemble's fast model's base URL.
    #[arg(long, value_name = "URL")]
    fast_base_url: Option<String>,
    /// An ensemble's strong model name.
    #[arg(long, value_name = "NAME")]
    strong_model: Option<String>,
    /// An ensemble's strong model's base URL.
    #[arg(long, value_name = "URL")]
    strong_base_url: Option<String>,
    /// The environment variable that holds the API key.
    #[arg(long, value_name = "VAR")]
    api_key_env: Option<String>,
    /// With `--planner replay`: the cassette to replay.
    #[arg(long, value_name = "FILE")]
    cassette: Option<PathBuf>,
    /// Save every planner request and answer to FILE (JSON lines), for `--planner replay`.
    #[arg(long, value_name = "FILE")]
    record: Option<PathBuf>,
    /// Use plan memory (STATE_DIR/plans): a plan stored by a completed run with the same
    /// goal and tools is run without asking the planner, and a completed run's plan is
    /// stored. Replaces the task's `[memory] enabled`.
    #[arg(long, overrides_with = "no_plan_memory")]
    plan_memory: bool,
    /// Do not read or write plan memory, whatever the task says.
    #[arg(long, overrides_with = "plan_memory")]
    no_plan_memory: bool,
}

impl PlannerArgs {
    /// `--planner KIND --model NAME` (each if given), as an API client may choose them.
    pub(crate) fn chosen(kind: Option<PlannerKind>, model: Option<String>) -> PlannerArgs {
        PlannerArgs {
            kind,
            model,
            ..PlannerArgs::default()
        }
    }

    /// These flags with what they leave to this process's environment filled in
    /// (`TOOLHOST_BASE_URL`), so another process reads them alike.
    pub(crate) fn resolved(mut self) -> PlannerArgs {
        self.base_url = self.overrides().base_url;
        self
    }

    pub(crate) fn overrides(&self) -> PlannerOverrides {
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

    /// Whether `--record` was given.
    pub(crate) fn records(&self) -> bool {
        self.record.is_some()
    }

    /// Whether plan memory is on, given the task's `[memory] enabled`.
    pub(crate) fn plan_memory(&self, task: bool) -> bool {
        (task || self.plan_memory) && !self.no_plan_memory
    }
}

/// Shows a model planner's waits (a retry after a 429 or a 5xx, a slow answer) on stderr,
/// through the log's writer thread so a stuck stderr never holds up the run:
/// `planner gpt-4o: attempt 1 of 4 failed (429 Too Many Requests: …); attempt 2 in 3.0 s`.
fn on_wait(model: &str) -> OnWait {
    let model = model.to_string();
    std::sync::Arc::new(move |w: &Waiting| {
        crate::stderr_log::stderr_log().line(&format!("planner {model}: {w}"));
    })
}

/// The planner `task` asks for, answering first with `recalled` (a plan-memory hit) if
/// given, and recording to `--record` if given.
pub(crate) fn build(
    task: &Task,
    args: &PlannerArgs,
    recalled: Option<Plan>,
) -> Result<Box<dyn Planner>, Failure> {
    let usage = |m: String| Failure::new(exit::USAGE, m);
    let model = |config: &LlmConfig| -> Result<Box<dyn Planner>, Failure> {
        Ok(Box::new(
            LlmPlanner::from_env_watched(config.clone(), Some(on_wait(&config.model)))
                .map_err(|e| usage(e.to_string()))?,
        ))
    };
    let mut planner: Box<dyn Planner> = match &task.planner {
        PlannerSpec::Scripted => Box::new(Canned::scripted(task.script.clone())),
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
    if recalled.is_some() {
        planner = Box::new(MemoryPlanner::new(planner, recalled));
    }
    match &args.record {
        None => Ok(planner),
        Some(path) => Ok(Box::new(
            Recorder::create(planner, path).map_err(|e| usage(e.to_string()))?,
        )),
    }
}

/// The extractor `task` asks for (`[extractor]`, else the planner's model), if any: built
/// with the planner, so a missing key is a usage error before anything starts.
pub(crate) fn extractor(task: &Task) -> Result<Option<Arc<dyn Extractor>>, Failure> {
    let usage = |m: String| Failure::new(exit::USAGE, m);
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

/// With `--record`, `loaded`'s extractions go to the cassette too (after the planner's
/// [`build`] created it), for `--planner replay` to serve back.
pub(crate) fn record_extractions(
    loaded: &mut super::loaded::Loaded,
    args: &PlannerArgs,
) -> Result<(), Failure> {
    let (Some(path), Some(inner)) = (&args.record, &loaded.extractor) else {
        return Ok(());
    };
    let recorder = cassette::ExtractionRecorder::append(inner.clone(), path)
        .map_err(|e| Failure::new(exit::USAGE, e.to_string()))?;
    loaded.extractor = Some(Arc::new(recorder));
    Ok(())
}
