//! [`Ask`]: what kind of answer a planner request asks for. Below the planner and the
//! budgets, since a call's [`Usage`](crate::planner::Usage) can say what its model was
//! sent ([`Usage::sent_as`](crate::planner::Usage::sent_as)); the planner says how a
//! request is classed (`Ask::of`).

use serde::{Deserialize, Serialize};

use super::plan::StepId;

/// What kind of answer a request asks for: kept in the record of each planner call, so
/// that a resumed run can bring a stateful planner (a script) back to where it was.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Ask {
    /// A first plan.
    Plan,
    /// A revised plan after step `failed` failed.
    Replan { failed: StepId },
    /// A plan repaired for validation problems.
    Repair,
    /// The next step-wise turn.
    Turn,
    /// A step-wise turn repaired for validation problems.
    TurnRepair,
}
