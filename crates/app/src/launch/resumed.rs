//! Carrying a served run on after the server shut down under it (stop `suspended`): its
//! journal is claimed and checked as `toolhost resume` does (the same task, policy and
//! tools, by digest), marked `resumed`, and driven on from its checkpoint.

use toolhost_engine::Unfinished;
use toolhost_journal::Journal;
use toolhost_serve::{Overrides, Prepared, RegistryError};

use super::{ServedRun, TaskLauncher, invalid, planner_overrides};
use crate::journal::JournalOptions;
use crate::planner;
use crate::resume::{BudgetOverrides, Resumed, Setup, Source, mark_resumed, prepare};

impl TaskLauncher {
    /// Reopens run `run` of the state directory with the `overrides` it was submitted with.
    pub(super) fn reopen(
        &self,
        run: &str,
        overrides: &Overrides,
    ) -> Result<Box<dyn Prepared>, RegistryError> {
        let planner_overrides = planner_overrides(overrides)?;
        let (source, first, run_id) =
            Source::claim(None, Some(self.state_dir.clone()), run, None).map_err(invalid)?;
        let Source::File(_, lock) = source else {
            return Err(RegistryError::Internal(format!(
                "run {run} is not journaled in the state directory"
            )));
        };
        let prepared = prepare(
            &self.rt,
            &first,
            &run_id,
            &Setup {
                task: None,
                tools_dir: self.tools_dir.as_deref(),
                overrides: &planner_overrides,
                redact: &JournalOptions {
                    redact: Vec::new(),
                    state_dir: Some(self.state_dir.clone()),
                    writer: None,
                },
                budgets: &BudgetOverrides {
                    max_steps: overrides.max_steps,
                    ..BudgetOverrides::default()
                },
            },
        )
        .map_err(invalid)?;
        let crate::resume::Prepared {
            mut loaded,
            redactor,
            resumable,
        } = prepared;
        let planner = planner::build(&loaded.task, &planner::PlannerOptions::default(), None)
            .map_err(invalid)?;
        loaded.extractor = planner::extractor(&loaded.task).map_err(invalid)?;
        let (journal, reopened) = Journal::reopen(lock, first, redactor)
            .map_err(|e| RegistryError::Internal(e.to_string()))?;
        // Nobody decided on steps cut off at shutdown: one that is not idempotent stops
        // the run for a decision, as `toolhost resume` without `--rerun` does.
        let unfinished = Unfinished::default();
        mark_resumed(
            &journal,
            &reopened,
            &Resumed {
                resumable: &resumable,
                unfinished: &unfinished,
                budgets: &loaded.task.config.budgets,
            },
        )
        .map_err(|e| RegistryError::Internal(e.to_string()))?;
        let resume = Some((resumable.checkpoint, unfinished));
        Ok(ServedRun::boxed(
            self.rt.clone(),
            loaded,
            journal,
            planner,
            resume,
        ))
    }
}
