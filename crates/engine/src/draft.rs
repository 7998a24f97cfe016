//! A reviewer's draft of a plan, checked as the run would check it.
//!
//! The run validates a plan it is given (by a planner or a person's edit) against its
//! catalog, its step cap, the steps that already succeeded, what it knows of provenance,
//! and who can answer a question or extract a value: [`validate_for_run`]. While a plan
//! waits for review, the engine hands the approver a [`PlanCheck`] holding that same
//! context, owned, so that an editor can check a draft as the person types (the console's
//! plan editor, `POST /v1/runs/{id}/plan/check`) with exactly the validation the edit
//! will meet, without the run doing anything: checking a draft decides nothing.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::ask;
use super::extract;
use super::flow::Provenance;
use super::plan::{OperationName, Plan, StepId, ToolName};
use super::validate::{Catalog, Problem, ProblemKind, ValidPlan, validate_in};

/// The steps that already succeeded in a run, with their tool and operation.
pub(crate) type Done = BTreeMap<StepId, (ToolName, OperationName)>;

/// Who in a run can serve the built-in steps a plan may use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Builtins {
    /// A person can answer `human.ask`.
    pub answers: bool,
    /// An extractor can serve `model.extract`.
    pub extracts: bool,
}

/// Validates `plan` for a run: against `catalog` and the steps that already succeeded
/// (`done`), the data-flow rules with what `known` says; if it asks a person anything,
/// that a person can answer; if it extracts, that the run has an extractor. Every problem
/// at once.
pub(crate) fn validate_for_run(
    plan: &Plan,
    catalog: &Catalog,
    max_steps: usize,
    done: &Done,
    known: &Provenance,
    builtins: Builtins,
) -> Result<ValidPlan, Vec<Problem>> {
    let checked = validate_in(plan, catalog, max_steps, done, known);
    let nobody = nobody_to_serve(plan, builtins);
    match (checked, nobody.is_empty()) {
        (checked, true) => checked,
        (Ok(_), false) => Err(nobody),
        (Err(mut problems), false) => {
            problems.extend(nobody);
            Err(problems)
        }
    }
}

/// The built-in steps of `plan` that nobody in the run can serve.
fn nobody_to_serve(plan: &Plan, builtins: Builtins) -> Vec<Problem> {
    plan.steps
        .iter()
        .filter_map(|s| {
            let message = if ask::is_ask(s) && !builtins.answers {
                format!(
                    "the step asks a person (`{}.{}`) and nobody can answer in this run: run it at a terminal with `--approve`, through `toolhost serve`, or from an MCP client that answers forms (elicitation)",
                    ask::TOOL,
                    ask::OPERATION
                )
            } else if extract::is_extract(s) && !builtins.extracts {
                format!(
                    "the step asks a model to extract a value (`{}.{}`) and this run has no extractor: give the task a model planner or an `[extractor]` table",
                    extract::TOOL,
                    extract::OPERATION
                )
            } else {
                return None;
            };
            Some(Problem {
                kind: ProblemKind::NobodyToAnswer,
                step: Some(s.id.clone()),
                nth: None,
                message,
            })
        })
        .collect()
}

/// Checks a draft of the plan under review as the run would check it as an edit: the
/// problems it would meet, none when the edit would be accepted. Cheap to clone; usable
/// from any thread while the run waits.
#[derive(Clone)]
pub struct PlanCheck(Arc<CheckFn>);

/// What a [`PlanCheck`] runs.
type CheckFn = dyn Fn(&Plan) -> Vec<Problem> + Send + Sync;

impl PlanCheck {
    /// A check of drafts of the plan of `revision`, in the run's context as it is now.
    pub(crate) fn new(
        catalog: Arc<Catalog>,
        max_steps: usize,
        done: Done,
        known: Provenance,
        builtins: Builtins,
        revision: u32,
    ) -> PlanCheck {
        PlanCheck(Arc::new(move |draft: &Plan| {
            let mut draft = draft.clone();
            // As an edit: it replaces the plan under review, whatever revision it names.
            draft.revision = revision;
            validate_for_run(&draft, &catalog, max_steps, &done, &known, builtins)
                .err()
                .unwrap_or_default()
        }))
    }

    /// A check that finds whatever `f` finds (for approvers' tests and other hosts).
    pub fn from_fn(f: impl Fn(&Plan) -> Vec<Problem> + Send + Sync + 'static) -> PlanCheck {
        PlanCheck(Arc::new(f))
    }

    /// The problems `draft` would meet as an edit; empty when it would be accepted.
    pub fn check(&self, draft: &Plan) -> Vec<Problem> {
        (self.0)(draft)
    }
}

impl std::fmt::Debug for PlanCheck {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PlanCheck")
    }
}
