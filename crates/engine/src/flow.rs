//! Provenance of values and the policy's data-flow rules.
//!
//! - `taint`: [`Taint`], a value's path from its untrusted source, shared hop by hop.
//!
//! Every step output carries a [`Taint`]: empty when the output can be trusted, otherwise
//! the flow by which untrusted data reached it, source first. Where it comes from:
//! - a tool whose policy says `outputs = "untrusted"` (the default for a section granting
//!   files or network) taints its output, whatever its arguments;
//! - `outputs = "trusted"` clears it: the operator vouches for the tool;
//! - any other tool's output is as tainted as its arguments: taint flows through
//!   `{"$ref": …}`, `${…}` interpolation and every value derived from them;
//! - a literal value in a plan is as tainted as what the planner had read when it wrote
//!   it ([`Provenance::planner`]): untrusted once it was shown an untrusted output (never
//!   with quarantined replanning, which shows only types), trusted for the first plan,
//!   which comes from the goal alone. The goal, a person's answers and built-in steps
//!   without a tool are trusted;
//! - an extraction (`model.extract`, [`extract`]) is as tainted as its
//!   arguments: a model reading untrusted text gives an untrusted value.
//!
//! The rules (`trusted_args`, `[flows] untrusted_may_reach`) are checked on each plan at
//! validation, and again on each step before its call, with the flow in the message:
//! `` `s1` (`bank.read-file`, untrusted output) → `s2` (`text.upper`) → `s3` args.recipient ``.

use std::collections::BTreeMap;

use serde_json::Value;

mod taint;

pub use self::taint::Taint;

use super::extract;
use super::plan::{Plan, Step, StepId, ToolName};
use super::reference;
use toolhost_runtime::policy::{Flow, Trust};

/// The error kind of a step the rules stopped before its call.
pub(crate) const UNTRUSTED_FLOW: &str = "untrusted_flow";

/// A rule a step breaks: validation reports it as a problem, the executor as the step's
/// `untrusted_flow` error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Violation {
    pub step: StepId,
    pub message: String,
}

/// The data-flow rules of each tool, by name (`None`: a built-in step, no tool).
pub(crate) type Rules<'a> = &'a dyn Fn(&ToolName) -> Option<&'a Flow>;

/// Where a check finds the taint of the step a reference names.
pub(crate) trait Taints {
    fn taint(&self, id: &StepId) -> Option<&Taint>;
}

impl Taints for BTreeMap<StepId, Taint> {
    fn taint(&self, id: &StepId) -> Option<&Taint> {
        self.get(id)
    }
}

/// The taints of a plan's steps checked so far, over the run's: a check looks through
/// both without copying the run's, which grow with every step it ran (a code-mode
/// program's calls are checked one at a time).
struct Layered<'a> {
    run: &'a BTreeMap<StepId, Taint>,
    plan: BTreeMap<StepId, Taint>,
}

impl Taints for Layered<'_> {
    fn taint(&self, id: &StepId) -> Option<&Taint> {
        self.plan.get(id).or_else(|| self.run.get(id))
    }
}

/// What a run knows about provenance so far.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct Provenance {
    /// The output taint of each step that ran, by id.
    pub steps: BTreeMap<StepId, Taint>,
    /// The untrusted data the planner has been shown; literal values in its later answers
    /// derive from it.
    pub planner: Taint,
}

impl Provenance {
    /// Notes that the planner was shown the output or error of a step tainted `t`.
    pub(crate) fn shown(&mut self, t: &Taint) {
        if self.planner.is_trusted() && !t.is_trusted() {
            self.planner = t.then("shown to the planner, which wrote the value".into(), None);
        }
    }
}

/// Checks every step of `plan`, in `order`, against the rules; the problems, if any.
pub(crate) fn check(
    plan: &Plan,
    order: &[StepId],
    rules: Rules<'_>,
    known: &Provenance,
) -> Vec<Violation> {
    let by_id: BTreeMap<&StepId, &Step> = plan.steps.iter().map(|s| (&s.id, s)).collect();
    let mut steps = Layered {
        run: &known.steps,
        plan: BTreeMap::new(),
    };
    let mut problems = Vec::new();
    for id in order {
        let Some(step) = by_id.get(id) else { continue };
        match output(step, rules, &steps, &known.planner) {
            Ok(t) => {
                steps.plan.insert(id.clone(), t);
            }
            Err(p) => problems.extend(p),
        }
    }
    problems
}

/// The taint of `step`'s output, given the taints of the steps it may reference and of
/// the planner that wrote it; the rules it breaks, if it breaks any.
pub(crate) fn output(
    step: &Step,
    rules: Rules<'_>,
    steps: &dyn Taints,
    planner: &Taint,
) -> Result<Taint, Vec<Violation>> {
    let what = format!("`{}.{}`", step.tool, step.operation);
    let Some(flow) = rules(&step.tool) else {
        if extract::is_extract(step) {
            // A model read the value out of its input: as tainted as what it read (and as
            // the planner that wrote the instruction). It may read anything: it has no
            // tools, and the rules hold wherever its value goes.
            let first = step
                .args
                .as_object()
                .into_iter()
                .flatten()
                .map(|(_, v)| argument(v, steps, planner))
                .find(|t| !t.is_trusted());
            return Ok(first.map_or_else(Taint::default, |t| {
                t.then(format!("`{}` ({what})", step.id), Some(step.id.clone()))
            }));
        }
        // Any other built-in step (no tool): its value comes from the run or a person.
        return Ok(Taint::default());
    };
    let mut problems = Vec::new();
    let mut first: Option<Taint> = None;
    let args = step.args.as_object().into_iter().flatten();
    for (name, value) in args {
        let t = argument(value, steps, planner);
        if t.is_trusted() {
            continue;
        }
        // The path is joined only for a message: O(hops), where extending it is O(1).
        let path = || format!("{} → `{}` args.{name}", t.path(), step.id);
        if !flow.accepts_untrusted {
            problems.push(refused(
                step,
                format!(
                    "tool `{}` may not take untrusted data (it is not in `[flows] untrusted_may_reach`): {}",
                    step.tool,
                    path()
                ),
            ));
        } else if flow.needs_trusted(step.operation.as_str(), name) {
            problems.push(refused(
                step,
                format!(
                    "argument `{name}` of {what} must not derive from untrusted data: {}",
                    path()
                ),
            ));
        }
        first.get_or_insert(t);
    }
    if !problems.is_empty() {
        return Err(problems);
    }
    Ok(match flow.outputs {
        Trust::Trusted => Taint::default(),
        Trust::Untrusted => Taint::source(
            format!("`{}` ({what}, untrusted output)", step.id),
            Some(step.id.clone()),
        ),
        Trust::Derived => first.map_or_else(Taint::default, |t| {
            t.then(format!("`{}` ({what})", step.id), Some(step.id.clone()))
        }),
    })
}

/// The arguments of `step` that untrusted data would reach, with how it gets there.
pub(crate) fn untrusted_args(
    step: &Step,
    steps: &dyn Taints,
    planner: &Taint,
) -> Vec<(String, Taint)> {
    step.args
        .as_object()
        .into_iter()
        .flatten()
        .map(|(name, value)| (name.clone(), argument(value, steps, planner)))
        .filter(|(_, t)| !t.is_trusted())
        .collect()
}

fn refused(step: &Step, message: String) -> Violation {
    Violation {
        step: step.id.clone(),
        message,
    }
}

/// The taint of one argument value: its first tainted reference, else the planner's if
/// the value holds anything the planner wrote.
fn argument(value: &Value, steps: &dyn Taints, planner: &Taint) -> Taint {
    for found in reference::find_all(value) {
        let Ok(r) = found.reference else { continue };
        match steps.taint(&r.step) {
            Some(t) if !t.is_trusted() => return t.clone(),
            Some(_) => {}
            // Validation refuses a reference to no step; at run time a step without an
            // output was never launched with it.
            None => return Taint::source(format!("`{}` (no provenance)", r.text), None),
        }
    }
    if written(value) {
        planner.clone()
    } else {
        Taint::default()
    }
}

/// Whether `v` holds a value the planner wrote, outside references.
fn written(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::Bool(_) | Value::Number(_) => true,
        Value::String(s) => !reference::without_interpolations(s).is_empty(),
        Value::Array(items) => items.iter().any(written),
        Value::Object(m) => !reference::is_whole(m) && m.values().any(written),
    }
}
