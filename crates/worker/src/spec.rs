//! What a submitted run is started from: the `spec` column of its row in the run queue,
//! JSON. The worker's own types, so the stored shape changes only when this file does:
//! rows written by earlier builds (field for field what the command line's `--planner`,
//! `--model`, … and `--mode` flags serialised to) keep loading, and unknown fields are
//! refused.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use toolhost_app::PlannerOptions;
use toolhost_app::task::{PlannerKind, PlannerOverrides};
use toolhost_engine::Mode;

/// What a submitted run is started from (the `spec` of its row): the task file, by path
/// and digest (a worker refuses a file that changed since), and the options it was
/// submitted with.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Spec {
    /// Absolute.
    pub task: PathBuf,
    pub task_sha256: String,
    /// The task file's text when submitted, for people and API clients to read.
    pub task_text: String,
    #[serde(default)]
    pub planner: SpecPlanner,
    #[serde(default)]
    pub mode: SpecMode,
    /// `--redact` patterns.
    #[serde(default)]
    pub redact: Vec<String>,
    /// Park the run for a person's decision on each validated plan and each step that
    /// needs approval, answered through `toolhost serve`'s API (a run submitted there with
    /// `approve`).
    #[serde(default)]
    pub approve: bool,
    /// Who submitted it through the API (a token's name).
    #[serde(default)]
    pub submitter: Option<String>,
    /// Replaces the task's `budgets.max_steps`.
    #[serde(default)]
    pub max_steps: Option<u32>,
}

impl Spec {
    /// What replaces the task's `[planner]` values and mode for this run.
    pub fn overrides(&self) -> PlannerOverrides {
        self.planner().overrides().with_mode(self.mode.mode)
    }

    /// The planner options the run was submitted with.
    pub fn planner(&self) -> PlannerOptions {
        PlannerOptions::from(&self.planner)
    }
}

/// The planner settings of a submitted run, resolved where the submitter stood (its
/// `TOOLHOST_BASE_URL` filled in).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SpecPlanner {
    kind: Option<PlannerKind>,
    model: Option<String>,
    base_url: Option<String>,
    fast_model: Option<String>,
    fast_base_url: Option<String>,
    strong_model: Option<String>,
    strong_base_url: Option<String>,
    api_key_env: Option<String>,
    cassette: Option<PathBuf>,
    record: Option<PathBuf>,
    plan_memory: bool,
    no_plan_memory: bool,
}

impl From<&PlannerOptions> for SpecPlanner {
    fn from(o: &PlannerOptions) -> SpecPlanner {
        let o = o.clone();
        SpecPlanner {
            kind: o.kind,
            model: o.model,
            base_url: o.base_url,
            fast_model: o.fast_model,
            fast_base_url: o.fast_base_url,
            strong_model: o.strong_model,
            strong_base_url: o.strong_base_url,
            api_key_env: o.api_key_env,
            cassette: o.cassette,
            record: o.record,
            plan_memory: o.plan_memory,
            no_plan_memory: o.no_plan_memory,
        }
    }
}

impl From<&SpecPlanner> for PlannerOptions {
    fn from(s: &SpecPlanner) -> PlannerOptions {
        let s = s.clone();
        PlannerOptions {
            kind: s.kind,
            model: s.model,
            base_url: s.base_url,
            fast_model: s.fast_model,
            fast_base_url: s.fast_base_url,
            strong_model: s.strong_model,
            strong_base_url: s.strong_base_url,
            api_key_env: s.api_key_env,
            cassette: s.cassette,
            record: s.record,
            plan_memory: s.plan_memory,
            no_plan_memory: s.no_plan_memory,
            // A submitted run's planner is charged what it reports.
            count_tokens: false,
        }
    }
}

/// The mode a submitted run runs in instead of its task's, if any.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SpecMode {
    pub mode: Option<Mode>,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A row written by the build before this crate existed, when the spec held the
    /// command line's own flag structs: it still loads, field for field.
    #[test]
    fn a_spec_stored_by_an_earlier_build_still_loads() {
        let stored = r#"{"task":"/srv/tasks/seed.toml","task_sha256":"ab12","task_text":"goal = 'g'","planner":{"kind":"openai","model":"gpt-4o-mini","base_url":"http://127.0.0.1:9/v1","fast_model":null,"fast_base_url":null,"strong_model":null,"strong_base_url":null,"api_key_env":"KEY","cassette":null,"record":null,"plan_memory":false,"no_plan_memory":true},"mode":{"mode":"step-wise"},"redact":["secret-\\d+"],"approve":true,"submitter":"ci","max_steps":7}"#;
        let spec: Spec = serde_json::from_str(stored).expect("an old row loads");
        let options = spec.planner();
        assert_eq!(options.kind, Some(PlannerKind::OpenAi));
        assert_eq!(options.model.as_deref(), Some("gpt-4o-mini"));
        assert_eq!(options.api_key_env.as_deref(), Some("KEY"));
        assert!(options.no_plan_memory && !options.plan_memory);
        assert_eq!(spec.mode.mode, Some(Mode::StepWise));
        assert_eq!(spec.overrides().mode, Some(Mode::StepWise));
        assert_eq!((spec.approve, spec.max_steps), (true, Some(7)));
        // And is written back the same.
        let again: serde_json::Value = serde_json::to_value(&spec).unwrap();
        assert_eq!(
            again,
            serde_json::from_str::<serde_json::Value>(stored).unwrap()
        );
        // The oldest rows had neither planner nor mode.
        let bare = r#"{"task":"/t.toml","task_sha256":"00","task_text":""}"#;
        let spec: Spec = serde_json::from_str(bare).expect("a bare row loads");
        assert_eq!(spec.planner(), PlannerOptions::default());
        // What no build wrote is refused.
        let unknown =
            r#"{"task":"/t.toml","task_sha256":"00","task_text":"","planner":{"temperature":1}}"#;
        assert!(serde_json::from_str::<Spec>(unknown).is_err());
    }
}
