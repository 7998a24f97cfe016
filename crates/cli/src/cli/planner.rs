//! The planner flags of the commands that run tasks (`run`, `resume`, `eval`, `submit`),
//! turned into `toolhost_app`'s [`PlannerOptions`].

use std::path::PathBuf;

use toolhost_app::PlannerOptions;
use toolhost_app::task::{PlannerKind, PlannerOverrides};
use toolhost_engine::Mode;

/// `--mode`, for the commands that start runs (`run`, `eval`, `submit`; a resumed run
/// keeps its journal's mode).
#[derive(Debug, Clone, Default, clap::Args)]
pub(crate) struct ModeArg {
    /// Run in this mode instead of the task's: plan-then-execute, step-wise, react (the
    /// ReAct baseline: one planner call per action, the whole transcript each time), or
    /// code (the planner's program calls the tools; a scripted planner's `program`).
    #[arg(long, value_name = "MODE")]
    pub mode: Option<Mode>,
}

/// Planner flags that replace the task file's `[planner]` values (none given replaces
/// none).
#[derive(Debug, Clone, Default, clap::Args)]
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
    /// Charge a scripted planner's answers the tokens a model planner would use for the
    /// same requests: the prompt toolhost would send (rules, tools, budgets, history) and
    /// the answer, at four characters a token. Compares planning modes without a model.
    #[arg(long)]
    count_tokens: bool,
}

impl PlannerArgs {
    /// The options these flags give.
    pub(crate) fn options(&self) -> PlannerOptions {
        let a = self.clone();
        PlannerOptions {
            kind: a.kind,
            model: a.model,
            base_url: a.base_url,
            fast_model: a.fast_model,
            fast_base_url: a.fast_base_url,
            strong_model: a.strong_model,
            strong_base_url: a.strong_base_url,
            api_key_env: a.api_key_env,
            cassette: a.cassette,
            record: a.record,
            plan_memory: a.plan_memory,
            no_plan_memory: a.no_plan_memory,
            count_tokens: a.count_tokens,
        }
    }

    /// What the flags (and `mode`'s `--mode`) replace in the task.
    pub(crate) fn overrides(&self, mode: &ModeArg) -> PlannerOverrides {
        self.options().overrides().with_mode(mode.mode)
    }
}
