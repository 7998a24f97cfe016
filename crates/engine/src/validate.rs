//! Plan validation: every problem of a plan, found before any step runs.
//!
//! Checked: step ids unique and the step cap; each step's tool exists and the policy
//! allows the operation; arguments convert to the operation's WIT parameter types, with
//! each reference type-checked against the producing step's result type; references and
//! `depends_on` point at other steps of the plan (or at steps that succeeded in an earlier
//! revision); no cycles; step deadlines within policy.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::sync::Arc;

use serde::Serialize;
use serde_json::Value;

use super::plan::{Plan, StepId};
use super::reference::{self, Found};
use super::sample::sample;
use toolhost_runtime::policy::ToolPolicy;
use toolhost_runtime::tool::{Operation, Returns};
use toolhost_runtime::types::WitType;
use toolhost_runtime::{Tool, convert};

/// The class of a plan problem, stable for machines.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ProblemKind {
    TooManySteps,
    DuplicateId,
    UnknownTool,
    UnknownOperation,
    NotAllowed,
    BadArguments,
    BadReference,
    UnknownDependency,
    Cycle,
    TimeoutAbovePolicy,
}

/// One thing wrong with a plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Problem {
    pub kind: ProblemKind,
    /// The step it concerns, if one.
    pub step: Option<StepId>,
    pub message: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.step {
            Some(s) => write!(f, "step `{s}`: {}", self.message),
            None => f.write_str(&self.message),
        }
    }
}

/// A tool the planner may use: loaded, with its policy section.
#[derive(Debug, Clone)]
pub struct Entry {
    pub tool: Arc<Tool>,
    pub policy: ToolPolicy,
}

/// The tools of a run, by name.
#[derive(Debug, Clone, Default)]
pub struct Catalog {
    pub tools: BTreeMap<String, Entry>,
}

impl Catalog {
    fn operation(&self, tool: &str, op: &str) -> Option<&Operation> {
        self.tools.get(tool)?.tool.operation(op)
    }
}

/// A plan that passed validation, with its full dependency graph.
#[derive(Debug, Clone)]
pub struct ValidPlan {
    pub plan: Plan,
    /// Each step's dependencies: `depends_on` plus the steps its arguments reference.
    pub deps: BTreeMap<StepId, BTreeSet<StepId>>,
    /// The steps in an order that respects `deps`.
    pub order: Vec<StepId>,
}

/// The type of a step's output, if the step's operation is known.
fn output_type(op: &Operation) -> Option<WitType> {
    match &op.returns {
        Returns::Nothing | Returns::Fallible { ok: None, .. } => None,
        Returns::Value(t) | Returns::Fallible { ok: Some(t), .. } => Some(t.clone()),
    }
}

/// Validates `plan` against `catalog`; returns every problem at once. `prior` holds the
/// `(tool, operation)` of steps that already succeeded in earlier revisions: the plan may
/// reference their outputs but not reuse their ids.
pub fn validate(
    plan: &Plan,
    catalog: &Catalog,
    max_steps: usize,
    prior: &BTreeMap<StepId, (String, String)>,
) -> Result<ValidPlan, Vec<Problem>> {
    let mut problems = Vec::new();
    let mut push = |kind, step: Option<&StepId>, message: String| {
        problems.push(Problem {
            kind,
            step: step.cloned(),
            message,
        });
    };
    if plan.steps.len() > max_steps {
        push(
            ProblemKind::TooManySteps,
            None,
            format!(
                "the plan has {} steps; at most {max_steps} are allowed",
                plan.steps.len()
            ),
        );
    }
    let mut by_id = BTreeMap::new();
    for step in &plan.steps {
        if prior.contains_key(&step.id) {
            push(
                ProblemKind::DuplicateId,
                Some(&step.id),
                "the id belongs to a step that already ran; choose a new one".into(),
            );
        }
        if by_id.insert(step.id.clone(), step).is_some() {
            push(
                ProblemKind::DuplicateId,
                Some(&step.id),
                "the id is used by more than one step".into(),
            );
        }
    }
    let mut deps: BTreeMap<StepId, BTreeSet<StepId>> = BTreeMap::new();
    for step in &plan.steps {
        let here = Some(&step.id);
        let entry = catalog.tools.get(&step.tool);
        let op = match entry {
            None => {
                let names: Vec<&str> = catalog.tools.keys().map(String::as_str).collect();
                push(
                    ProblemKind::UnknownTool,
                    here,
                    format!(
                        "tool `{}` is not available; the tools are: {}",
                        step.tool,
                        names.join(", ")
                    ),
                );
                None
            }
            Some(e) => match e.tool.operation(&step.operation) {
                None => {
                    push(
                        ProblemKind::UnknownOperation,
                        here,
                        format!(
                            "tool `{}` has no operation `{}`; its operations are: {}",
                            step.tool,
                            step.operation,
                            e.tool.operation_names()
                        ),
                    );
                    None
                }
                Some(op) => Some((e, op)),
            },
        };
        if let Some((e, _)) = op {
            if let Some(allowed) = &e.policy.operations
                && !allowed.contains(&step.operation)
            {
                push(
                    ProblemKind::NotAllowed,
                    here,
                    format!(
                        "the policy does not allow operation `{}` of tool `{}`; allowed: {}",
                        step.operation,
                        step.tool,
                        allowed.join(", ")
                    ),
                );
            }
            let limit = u64::try_from(e.policy.limits.timeout.as_millis()).unwrap_or(u64::MAX);
            if let Some(t) = step.timeout_ms
                && (t == 0 || t > limit)
            {
                push(
                    ProblemKind::TimeoutAbovePolicy,
                    here,
                    format!(
                        "timeout_ms {t} must be between 1 and the policy's {limit} ms for tool `{}`",
                        step.tool
                    ),
                );
            }
        }
        if !step.args.is_object() {
            push(
                ProblemKind::BadArguments,
                here,
                format!(
                    "`args` must be an object keyed by parameter name, not `{}`",
                    step.args
                ),
            );
            continue;
        }
        let d = deps.entry(step.id.clone()).or_default();
        for dep in &step.depends_on {
            if dep == &step.id {
                push(
                    ProblemKind::UnknownDependency,
                    here,
                    "depends on itself".into(),
                );
            } else if by_id.contains_key(dep) {
                d.insert(dep.clone());
            } else if prior.contains_key(dep) {
                // It succeeded in an earlier revision: already satisfied.
            } else {
                push(
                    ProblemKind::UnknownDependency,
                    here,
                    format!("depends on `{dep}`, which is not a step of the plan"),
                );
            }
        }
        // Stand-ins for the referenced values; `None` once a reference cannot be typed.
        let mut typed = true;
        let mut stand_ins: BTreeMap<String, Value> = BTreeMap::new();
        for Found {
            reference,
            at,
            interpolated,
        } in reference::find_all(&step.args)
        {
            let r = match reference {
                Ok(r) => r,
                Err(why) => {
                    push(ProblemKind::BadReference, here, format!("{at}: {why}"));
                    typed = false;
                    continue;
                }
            };
            if r.step == step.id {
                push(
                    ProblemKind::BadReference,
                    here,
                    format!("{at}: `{}` refers to the step itself", r.text),
                );
                typed = false;
                continue;
            }
            // A step of this plan runs first; one that succeeded in an earlier revision
            // has its output already, so it adds no dependency.
            let producer = match by_id.get(&r.step) {
                Some(p) => {
                    d.insert(r.step.clone());
                    Some((p.tool.as_str(), p.operation.as_str()))
                }
                None => prior.get(&r.step).map(|(t, o)| (t.as_str(), o.as_str())),
            };
            let Some((producer_tool, producer_op)) = producer else {
                push(
                    ProblemKind::BadReference,
                    here,
                    format!(
                        "{at}: `{}` refers to `{}`, which is not a step of the plan",
                        r.text, r.step
                    ),
                );
                typed = false;
                continue;
            };
            let Some(pop) = catalog.operation(producer_tool, producer_op) else {
                typed = false;
                continue;
            };
            let out = output_type(pop);
            let ty = match &out {
                None if r.path.is_empty() => None,
                None => {
                    push(
                        ProblemKind::BadReference,
                        here,
                        format!("{at}: `{}`: step `{}` returns nothing", r.text, r.step),
                    );
                    typed = false;
                    continue;
                }
                Some(t) => match reference::type_at(t, &r.path) {
                    Ok(t) => Some(t.clone()),
                    Err(why) => {
                        push(
                            ProblemKind::BadReference,
                            here,
                            format!("{at}: `{}`: the output of `{}` {why}", r.text, r.step),
                        );
                        typed = false;
                        continue;
                    }
                },
            };
            if !interpolated {
                let v = ty.map_or(Value::Null, |t| convert::to_json(&t, &sample(&t)));
                stand_ins.insert(r.text.clone(), v);
            }
        }
        if let (Some((_, op)), true) = (op, typed) {
            let args = reference::substitute(&step.args, &mut |r| {
                Ok(stand_ins
                    .get(&r.text)
                    .cloned()
                    .unwrap_or(Value::String(String::new())))
            });
            if let Ok(args) = args
                && let Err(e) = convert::args_to_vals(&op.params, &args)
            {
                push(
                    ProblemKind::BadArguments,
                    here,
                    format!("bad arguments: {e}"),
                );
            }
        }
    }
    let order = match topological(
        &plan.steps.iter().map(|s| s.id.clone()).collect::<Vec<_>>(),
        &deps,
    ) {
        Ok(order) => order,
        Err(cycle) => {
            push(
                ProblemKind::Cycle,
                None,
                format!(
                    "steps {} depend on each other in a cycle",
                    cycle
                        .iter()
                        .map(|s| format!("`{s}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            );
            Vec::new()
        }
    };
    if problems.is_empty() {
        Ok(ValidPlan {
            plan: plan.clone(),
            deps,
            order,
        })
    } else {
        Err(problems)
    }
}

/// Kahn's algorithm, stable in plan order; on a cycle, the steps left over.
fn topological(
    ids: &[StepId],
    deps: &BTreeMap<StepId, BTreeSet<StepId>>,
) -> Result<Vec<StepId>, Vec<StepId>> {
    let mut done: BTreeSet<StepId> = BTreeSet::new();
    let mut order = Vec::new();
    loop {
        let ready: Vec<&StepId> = ids
            .iter()
            .filter(|id| !done.contains(*id))
            .filter(|id| {
                deps.get(*id)
                    .is_none_or(|d| d.iter().all(|x| done.contains(x)))
            })
            .collect();
        if ready.is_empty() {
            break;
        }
        for id in ready {
            done.insert(id.clone());
            order.push(id.clone());
        }
    }
    if order.len() == ids.len() {
        Ok(order)
    } else {
        Err(ids
            .iter()
            .filter(|id| !done.contains(*id))
            .cloned()
            .collect())
    }
}
