//! `toolhost run`'s planner flags, and building the run's planner from the task: the
//! script, a model provider, or a cassette; wrapped in a recorder with `--record`.

use std::path::PathBuf;

use super::{Failure, exit};
use crate::engine::task::{PlannerKind, PlannerOverrides, PlannerSpec};
use crate::engine::{Planner, ScriptedPlanner, Task};
use crate::llm::{LlmPlanner, Recorder, ReplayPlanner};

/// Planner settings that replace the task file's `[planner]` values.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct PlannerArgs {
    /// The planner: scripted, openai, anthropic, openai-compatible, or replay.
    #[arg(long = "planner", value_name = "KIND")]
    kind: Option<PlannerKind>,
    /// The model name.
    #[arg(long, value_name = "NAME")]
    model: Option<String>,
    /// The provider's base URL, e.g. http://localhost:11434/v1 [env: TOOLHOST_BASE_URL].
    #[arg(long, value_name = "URL")]
    base_url: Option<String>,
    /// The environment variable that holds the API key.
    #[arg(long, value_name = "VAR")]
    api_key_env: Option<String>,
    /// With `--planner replay`: the cassette to replay.
    #[arg(long, value_name = "FILE")]
    cassette: Option<PathBuf>,
    /// Save every planner request and answer to FILE (JSON lines), for `--planner replay`.
    #[arg(long, value_name = "FILE")]
    record: Option<PathBuf>,
}

impl PlannerArgs {
    pub(crate) fn overrides(&self) -> PlannerOverrides {
        PlannerOverrides {
            kind: self.kind,
            model: self.model.clone(),
            base_url: self
                .base_url
                .clone()
                .or_else(|| std::env::var("TOOLHOST_BASE_URL").ok()),
            api_key_env: self.api_key_env.clone(),
            cassette: self.cassette.clone(),
        }
    }
}

/// The planner `task` asks for, recording to `--record` if given.
pub(crate) fn build(task: &Task, args: &PlannerArgs) -> Result<Box<dyn Planner>, Failure> {
    let usage = |m: String| Failure::new(exit::USAGE, m);
    let planner: Box<dyn Planner> = match &task.planner {
        PlannerSpec::Scripted => Box::new(ScriptedPlanner::new(task.script.clone())),
        PlannerSpec::Llm(config) => {
            Box::new(LlmPlanner::from_env(config.clone()).map_err(|e| usage(e.to_string()))?)
        }
        PlannerSpec::Replay(path) => {
            Box::new(ReplayPlanner::open(path).map_err(|e| usage(e.to_string()))?)
        }
    };
    match &args.record {
        None => Ok(planner),
        Some(path) => Ok(Box::new(
            Recorder::create(planner, path).map_err(|e| usage(e.to_string()))?,
        )),
    }
}
