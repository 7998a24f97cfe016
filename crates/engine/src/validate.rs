//! Plan validation: every problem of a plan, found before any step runs.
//!
//! Checked: step ids unique and the step cap; each step's tool exists and the policy
//! allows the operation; arguments convert to the operation's WIT parameter types, with
//! each reference type-checked against the producing step's result type; references and
//! `depends_on` point at other steps of the plan (or at steps that succeeded in an earlier
//! revision); no cycles; step deadlines within policy; then the policy's data-flow rules
//! ([`flow`]). The reference checks, and the stand-ins the arguments are type-checked
//! with, are in `references`; the problems themselves in `problem`; reading a plan with
//! every shape problem at once in `shape`.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use serde_json::Value;

use super::ask;
use super::extract;
use super::flow::{self, Provenance};
use super::plan::{OperationName, Plan, Step, StepId, ToolName};
use toolhost_runtime::Tool;
use toolhost_runtime::policy::ToolPolicy;
use toolhost_runtime::tool::Operation;

mod problem;
mod references;
mod shape;

pub(crate) use self::problem::escalates_at_once;
pub use self::problem::{Problem, ProblemKind};

/// A tool the planner may use: loaded, with its policy section.
#[derive(Debug, Clone)]
pub struct Entry {
    pub tool: Arc<Tool>,
    pub policy: ToolPolicy,
}

/// The tools of a run, by name.
#[derive(Debug, Clone, Default)]
pub struct Catalog {
    pub tools: BTreeMap<ToolName, Entry>,
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

/// Validates `plan` against `catalog`; returns every problem at once. `prior` holds the
/// `(tool, operation)` of steps that already succeeded in earlier revisions: the plan may
/// reference their outputs but not reuse their ids.
///
/// The checks run in this order, and problems are listed in it (a step's own problems
/// together): the step cap and ids; then per step its tool and operation, what the policy
/// allows, its dependencies, its references and its arguments' types; last the order.
///
/// Last, if nothing else is wrong, the policy's data-flow rules, with the plan written
/// by a planner that has read nothing untrusted; see [`validate_in`] for a plan written
/// during a run.
pub fn validate(
    plan: &Plan,
    catalog: &Catalog,
    max_steps: usize,
    prior: &BTreeMap<StepId, (ToolName, OperationName)>,
) -> Result<ValidPlan, Vec<Problem>> {
    validate_in(plan, catalog, max_steps, prior, &Provenance::default())
}

/// [`validate`] for a plan written during a run: the data-flow rules are checked with
/// what `known` says of the earlier steps' outputs and of what the planner had read.
pub fn validate_in(
    plan: &Plan,
    catalog: &Catalog,
    max_steps: usize,
    prior: &BTreeMap<StepId, (ToolName, OperationName)>,
    known: &Provenance,
) -> Result<ValidPlan, Vec<Problem>> {
    let mut v = Validation {
        catalog,
        prior,
        by_id: BTreeMap::new(),
        deps: BTreeMap::new(),
        problems: Vec::new(),
        uses: HashMap::new(),
        current: None,
        nth: None,
    };
    v.step_cap(plan, max_steps);
    v.no_program(plan);
    v.ids(plan);
    let mut seen: HashMap<&StepId, usize> = HashMap::new();
    for step in &plan.steps {
        let n = seen.entry(&step.id).or_default();
        *n += 1;
        let of = v.uses.get(&step.id).copied().unwrap_or(1);
        v.current = Some(step.id.clone());
        v.nth = (of > 1).then_some((*n, of));
        let op = if ask::is_ask(step) {
            v.builtin(step, (ask::TOOL, ask::OPERATION), ask::schema_of);
            None
        } else if extract::is_extract(step) {
            v.builtin(
                step,
                (extract::TOOL, extract::OPERATION),
                extract::schema_of,
            );
            None
        } else {
            v.operation(step)
        };
        if let Some((entry, _)) = op {
            v.policy(step, entry);
        }
        if !v.args_are_object(step) {
            continue;
        }
        v.dependencies(step);
        let stand_ins = v.references(step);
        if let (Some((_, op)), Some(stand_ins)) = (op, stand_ins) {
            v.arguments(step, op, &stand_ins);
        }
    }
    v.current = None;
    v.nth = None;
    if let Some(answer) = &plan.answer {
        v.answer(answer);
    }
    let order = v.order(plan);
    if v.problems.is_empty() {
        let rules = |t: &ToolName| catalog.tools.get(t).map(|e| &e.policy.flow);
        v.problems = flow::check(plan, &order, &rules, known)
            .into_iter()
            .map(|f| Problem {
                kind: ProblemKind::UntrustedFlow,
                step: Some(f.step),
                nth: None,
                message: f.message,
            })
            .collect();
    }
    if v.problems.is_empty() {
        Ok(ValidPlan {
            plan: plan.clone(),
            deps: v.deps,
            order,
        })
    } else {
        Err(v.problems)
    }
}

/// One validation under way: what it checks against, what it has found.
struct Validation<'a> {
    catalog: &'a Catalog,
    prior: &'a BTreeMap<StepId, (ToolName, OperationName)>,
    /// The plan's steps by id (the first of a duplicated id).
    by_id: BTreeMap<StepId, &'a Step>,
    /// Each step's dependencies: `depends_on` plus the steps its arguments reference.
    deps: BTreeMap<StepId, BTreeSet<StepId>>,
    problems: Vec<Problem>,
    /// How many steps use each id, to tell apart the steps of a duplicated one.
    uses: HashMap<StepId, usize>,
    /// The step being checked, and which of the steps sharing its id it is (when shared).
    current: Option<StepId>,
    nth: Option<(usize, usize)>,
}

impl<'a> Validation<'a> {
    /// A program is a code-mode answer, never part of a validated plan.
    fn no_program(&mut self, plan: &Plan) {
        if plan.program.is_some() {
            let why = "the plan carries a `program`, which answers code mode only (`mode = \"code\"`): a plan's work is its `steps`";
            self.push(ProblemKind::Program, None, why.into());
        }
    }

    fn push(&mut self, kind: ProblemKind, step: Option<&StepId>, message: String) {
        let nth = self.nth.filter(|_| step == self.current.as_ref());
        self.problems.push(Problem {
            kind,
            step: step.cloned(),
            nth,
            message,
        });
    }

    /// A planner may not hand the executor more steps than the run allows.
    fn step_cap(&mut self, plan: &Plan, max_steps: usize) {
        if plan.steps.len() > max_steps {
            self.push(
                ProblemKind::TooManySteps,
                None,
                format!(
                    "the plan has {} steps; at most {max_steps} are allowed",
                    plan.steps.len()
                ),
            );
        }
    }

    /// Ids name outputs and records: unique within the plan and new to the run.
    fn ids(&mut self, plan: &'a Plan) {
        for step in &plan.steps {
            if self.prior.contains_key(&step.id) {
                self.push(
                    ProblemKind::DuplicateId,
                    Some(&step.id),
                    "the id belongs to a step that already ran; choose a new one".into(),
                );
            }
            *self.uses.entry(step.id.clone()).or_default() += 1;
            if self.by_id.insert(step.id.clone(), step).is_some() {
                self.push(
                    ProblemKind::DuplicateId,
                    Some(&step.id),
                    "the id is used by more than one step".into(),
                );
            }
        }
    }

    /// The step's tool and operation, if both exist.
    fn operation(&mut self, step: &Step) -> Option<(&'a Entry, &'a Operation)> {
        let here = Some(&step.id);
        let catalog = self.catalog;
        let Some(e) = catalog.tools.get(&step.tool) else {
            let names: Vec<&str> = catalog.tools.keys().map(ToolName::as_str).collect();
            self.push(
                ProblemKind::UnknownTool,
                here,
                format!(
                    "tool `{}` is not available; the tools are: {}",
                    step.tool,
                    names.join(", ")
                ),
            );
            return None;
        };
        let Some(op) = e.tool.operation(&step.operation) else {
            self.push(
                ProblemKind::UnknownOperation,
                here,
                format!(
                    "tool `{}` has no operation `{}`; its operations are: {}",
                    step.tool,
                    step.operation,
                    e.tool.operation_names()
                ),
            );
            return None;
        };
        Some((e, op))
    }

    /// A built-in step (`human.ask`, `model.extract`): its one operation, and arguments
    /// that `check` accepts (a question, an extraction), with a schema a plan's types can
    /// say.
    fn builtin(
        &mut self,
        step: &Step,
        (tool, operation): (&str, &str),
        check: fn(&Value) -> Result<Value, String>,
    ) {
        let here = Some(&step.id);
        if step.operation != operation {
            self.push(
                ProblemKind::UnknownOperation,
                here,
                format!(
                    "tool `{tool}` has no operation `{}`; its operation is: {operation}",
                    step.operation
                ),
            );
        } else if step.args.is_object()
            && let Err(why) = check(&step.args)
        {
            self.push(
                ProblemKind::BadArguments,
                here,
                format!("bad arguments: {why}"),
            );
        }
    }

    /// What the tool's policy section allows: the operation, and the step's deadline.
    fn policy(&mut self, step: &Step, e: &Entry) {
        let here = Some(&step.id);
        if let Some(allowed) = &e.policy.operations
            && !allowed.iter().any(|a| step.operation == a.as_str())
        {
            self.push(
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
            self.push(
                ProblemKind::TimeoutAbovePolicy,
                here,
                format!(
                    "timeout_ms {t} must be between 1 and the policy's {limit} ms for tool `{}`",
                    step.tool
                ),
            );
        }
    }

    /// Arguments are keyed by parameter name; anything else has no references or types to
    /// check, so the step's other checks are skipped.
    fn args_are_object(&mut self, step: &Step) -> bool {
        if step.args.is_object() {
            return true;
        }
        self.push(
            ProblemKind::BadArguments,
            Some(&step.id),
            format!(
                "`args` must be an object keyed by parameter name, not `{}`",
                step.args
            ),
        );
        false
    }

    /// `depends_on` names other steps of the plan (or steps that already succeeded).
    fn dependencies(&mut self, step: &Step) {
        let here = Some(&step.id);
        self.deps.entry(step.id.clone()).or_default();
        for dep in &step.depends_on {
            if dep == &step.id {
                self.push(
                    ProblemKind::UnknownDependency,
                    here,
                    "depends on itself".into(),
                );
            } else if self.by_id.contains_key(dep) {
                self.deps
                    .entry(step.id.clone())
                    .or_default()
                    .insert(dep.clone());
            } else if self.prior.contains_key(dep) {
                // It succeeded in an earlier revision: already satisfied.
            } else {
                self.push(
                    ProblemKind::UnknownDependency,
                    here,
                    format!("depends on `{dep}`, which is not a step of the plan"),
                );
            }
        }
    }

    /// An order that respects the dependencies; none if they form a cycle.
    fn order(&mut self, plan: &Plan) -> Vec<StepId> {
        let ids: Vec<StepId> = plan.steps.iter().map(|s| s.id.clone()).collect();
        match topological(&ids, &self.deps) {
            Ok(order) => order,
            Err(cycle) => {
                self.push(
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
        }
    }
}

/// Kahn's algorithm in rounds: round 0 holds the steps with no dependencies, round k
/// those whose dependencies are all in earlier rounds and one in round k − 1; the order
/// is by round, then plan order. Each step and edge is visited once (a step's round is
/// one more than its latest dependency's), so this is linear in the plan; on a cycle,
/// the steps left over, in plan order.
pub(crate) fn topological(
    ids: &[StepId],
    deps: &BTreeMap<StepId, BTreeSet<StepId>>,
) -> Result<Vec<StepId>, Vec<StepId>> {
    // A duplicated id (a problem of its own) is one node, placed at each of its positions.
    let mut node: HashMap<&StepId, usize> = HashMap::with_capacity(ids.len());
    for id in ids {
        let next = node.len();
        node.entry(id).or_insert(next);
    }
    let n = node.len();
    let mut unmet = vec![0usize; n];
    let mut dependents: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (id, &i) in &node {
        for d in deps.get(*id).into_iter().flatten() {
            if let Some(&j) = node.get(d) {
                unmet[i] += 1;
                dependents[j].push(i);
            }
        }
    }
    let mut round: Vec<Option<usize>> = vec![None; n];
    let mut queue: Vec<usize> = (0..n).filter(|&i| unmet[i] == 0).collect();
    for &i in &queue {
        round[i] = Some(0);
    }
    let mut next = 0;
    while let Some(&i) = queue.get(next) {
        next += 1;
        let r = round[i].unwrap_or(0) + 1;
        for &d in &dependents[i] {
            round[d] = Some(round[d].map_or(r, |old| old.max(r)));
            unmet[d] -= 1;
            if unmet[d] == 0 {
                queue.push(d);
            }
        }
    }
    let at = |id: &StepId| round[node[id]];
    if queue.len() < n {
        return Err(ids
            .iter()
            .filter(|id| unmet[node[*id]] > 0)
            .cloned()
            .collect());
    }
    let mut order: Vec<(usize, &StepId)> = ids.iter().map(|id| (at(id).unwrap_or(0), id)).collect();
    // Stable: plan order within a round.
    order.sort_by_key(|&(r, _)| r);
    Ok(order.into_iter().map(|(_, id)| id.clone()).collect())
}
