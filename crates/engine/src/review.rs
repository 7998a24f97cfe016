//! What a plan or a step would be allowed to do, for the person asked to approve it: each
//! step's capabilities from its tool's policy (files, network, name lookup, environment),
//! whether the tool is `sensitive`, and the untrusted data that would reach its arguments
//! (the flow, source first, as the data-flow rules trace it). The terminal approver, the
//! console and the API show the same lines.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::flow::{self, Taint};
use super::plan::{Step, StepId};
use super::validate::{Catalog, ValidPlan};
use super::{ask, extract};
use toolhost_runtime::grants::GrantKind;

/// What one step may do.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reach {
    pub step: String,
    /// One line per capability its tool holds (`files: /notes (read)`, `http: …`), or
    /// what a built-in step does.
    pub capabilities: Vec<String>,
    /// Its tool is `sensitive`: the step asks a person again before it runs.
    pub sensitive: bool,
    /// One line per argument untrusted data would reach: `args.text ← `read` (`fs.read-file`,
    /// untrusted output)`.
    pub untrusted: Vec<String>,
}

/// The capabilities `step`'s tool has, one line each (the last says when it is sensitive).
pub fn capabilities(step: &Step, catalog: &Catalog) -> Vec<String> {
    if ask::is_ask(step) {
        return vec!["asks you a question; your answer is the step's output".into()];
    }
    if extract::is_extract(step) {
        return vec!["a model extracts a value; no tool runs".into()];
    }
    let Some(e) = catalog.tools.get(&step.tool) else {
        return vec!["(unknown tool)".into()];
    };
    let c = &e.policy.capabilities;
    let mut lines = Vec::new();
    for f in &c.files {
        lines.push(format!(
            "files: {} ({}{})",
            f.guest,
            if f.write { "read-write" } else { "read" },
            if f.kind == GrantKind::File {
                ", single file"
            } else {
                ""
            }
        ));
    }
    for o in &c.network.http {
        lines.push(format!("http: {o}"));
    }
    for t in &c.network.tcp {
        lines.push(format!("tcp: {t}"));
    }
    if c.network.name_lookup {
        lines.push("name lookup".into());
    }
    if !c.env.is_empty() {
        let names: Vec<&str> = c.env.iter().map(|(k, _)| k.as_str()).collect();
        lines.push(format!("env: {}", names.join(", ")));
    }
    if lines.is_empty() {
        lines.push("no capabilities (pure computation)".into());
    }
    if e.policy.sensitive {
        lines.push("sensitive: asks again before it runs".into());
    }
    lines
}

/// What each step of `plan` may do, in the order it runs. Untrusted data is traced
/// between the plan's own steps, from the goal alone: data an earlier revision showed the
/// planner is not listed here (the data-flow rules still hold it, at validation and
/// before each call).
pub fn plan(plan: &ValidPlan, catalog: &Catalog) -> Vec<Reach> {
    let rules = |t: &super::plan::ToolName| catalog.tools.get(t).map(|e| &e.policy.flow);
    let by_id: BTreeMap<&StepId, &Step> = plan.plan.steps.iter().map(|s| (&s.id, s)).collect();
    let mut taints: BTreeMap<StepId, Taint> = BTreeMap::new();
    let trusted = Taint::default();
    let mut out = Vec::new();
    for id in &plan.order {
        let Some(step) = by_id.get(id) else { continue };
        let mut reach = step_only(step, catalog);
        reach.untrusted = flow::untrusted_args(step, &taints, &trusted)
            .into_iter()
            .map(|(arg, t)| format!("args.{arg} ← {}", t.path()))
            .collect();
        let taint = flow::output(step, &rules, &taints, &trusted).unwrap_or_default();
        taints.insert(id.clone(), taint);
        out.push(reach);
    }
    out
}

/// What `step` alone may do (its arguments' provenance is the run's, not shown).
pub fn step_only(step: &Step, catalog: &Catalog) -> Reach {
    Reach {
        step: step.id.to_string(),
        capabilities: capabilities(step, catalog),
        sensitive: catalog
            .tools
            .get(&step.tool)
            .is_some_and(|e| e.policy.sensitive),
        untrusted: Vec::new(),
    }
}
