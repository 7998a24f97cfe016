//! Quarantined replanning: what a planner is shown of steps whose outputs are untrusted.
//!
//! Their ids, tools, operations, status and error kinds, and the WIT type of their
//! output; never the output's text, the error's message or value, or the evaluator's
//! detail. Every step's arguments are shown as the plan wrote them (references
//! unresolved), since resolved arguments may hold untrusted text. So nothing a tool
//! returns reaches the planner, and it cannot change which calls run — except through
//! whether a step succeeded, which the planner still sees.

use serde_json::{Value, json};

use super::plan::Plan;
use super::planner::PlanRequest;
use super::record::StepRecord;
use super::validate::Catalog;
use super::{ask, extract};
use toolhost_runtime::tool::Returns;

/// What stands in for a withheld message.
const WITHHELD: &str = "withheld: it may hold untrusted data (quarantined replanning)";

/// Withholds the untrusted text of `req`'s records.
pub(crate) fn withhold(req: &mut PlanRequest, revisions: &[Plan], catalog: &Catalog) {
    for r in req.history.iter_mut().chain(req.failure.as_mut()) {
        r.args = planned_args(r, revisions);
        // A reference that did not resolve is told with the value it met, which may be
        // an untrusted output even when this step's own output is vouched for.
        if let Some(e) = r.error.as_mut().filter(|e| e.kind == "bad_reference") {
            e.message = WITHHELD.into();
        }
        if r.untrusted.is_trusted() {
            continue;
        }
        if r.output.is_some() {
            let ty = if extract::is(r.tool.as_str(), r.operation.as_str()) {
                // An extraction's type is its schema's, as the plan wrote it.
                ask::answer_type(&extract::output_schema(&r.args))
                    .map_or_else(|_| "unknown".into(), |t| t.wit_name())
            } else {
                output_type(r, catalog)
            };
            r.output = Some(json!({ "untrusted": ty }));
        }
        if let Some(e) = &mut r.error {
            e.message = WITHHELD.into();
            e.value = None;
        }
        if let Some(ev) = &mut r.evaluation {
            ev.detail = WITHHELD.into();
        }
    }
}

/// The step's arguments as its revision wrote them; withheld if no revision has it.
fn planned_args(r: &StepRecord, revisions: &[Plan]) -> Value {
    revisions
        .iter()
        .filter(|p| p.revision == r.revision)
        .flat_map(|p| &p.steps)
        .find(|s| s.id == r.id)
        .map_or_else(|| json!(WITHHELD), |s| s.args.clone())
}

/// The WIT type of the step's output, as the planner's tool list names it.
fn output_type(r: &StepRecord, catalog: &Catalog) -> String {
    let op = catalog
        .tools
        .get(&r.tool)
        .and_then(|e| e.tool.operation(&r.operation));
    match op.map(|o| &o.returns) {
        Some(Returns::Value(t) | Returns::Fallible { ok: Some(t), .. }) => t.wit_name(),
        Some(Returns::Nothing | Returns::Fallible { ok: None, .. }) => "nothing".into(),
        None => "unknown".into(),
    }
}
