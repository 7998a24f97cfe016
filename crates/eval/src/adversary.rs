//! The adversarial planner: for measuring defences against prompt injection, never for
//! real work. It is the worst case of a hijacked model: it plays the user's task from a
//! script, and as soon as what it is *shown* (the whole [`PlanRequest`]: history, outputs,
//! errors, problems) contains the injection's trigger text, it follows the injection's
//! steps on its next plan or turn, whatever wrapping or warning surrounds the text.
//!
//! Because it reads only its request, every defence that changes what the planner is
//! shown is measured as it is: with quarantined replanning it never sees tool text, so it
//! is never hijacked; without it, the data-flow rules are what stands between its
//! injected calls and the tools. A task file selects it with `kind = "adversarial"` and
//! `adversary = "FILE.json"` ([`AdversaryScript`]); `scripts/agentdojo.sh` uses it.
//!
//! What it answers:
//! - a first plan: the task's steps (the injection's first if the goal already holds the
//!   trigger);
//! - a revised plan after a failure: the injection's steps not yet run (once hijacked),
//!   then the task's steps that have not succeeded;
//! - a repaired plan: its last plan without the steps the problems name (a persistent
//!   adversary keeps whatever the rules still allow); it gives up when nothing is left;
//! - a turn (step-wise, ReAct): the next injection step once hijacked, else the next task
//!   step, else stop. A refused turn is dropped and the next one is given. A reference to
//!   a script step (`{"$ref": "s1.output"}`, `${s1.output}`) is rewritten to the turn that
//!   ran it (`t1`), so scripts hold their data flow as references in either mode.
//!
//! Steps of a plan run in the order given, each after the one before (the state the
//! suites' tools share is one file), whatever `depends_on` the script says.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde::Deserialize;
use serde_json::Value;

use toolhost_engine::Usage;
use toolhost_engine::plan::{Plan, Step, StepId};
use toolhost_engine::planner::{Ask, PlanFuture, PlanRequest, Planner, Reply, Turn};
use toolhost_engine::record::StepStatus;

/// What the adversary plays: the file a task's `adversary` names.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AdversaryScript {
    /// The user's task, in order: the plan, or one turn per step.
    pub task: Vec<Step>,
    /// What the injection asks for, in order.
    pub injection: Vec<Step>,
    /// Text of the injection: once the planner is shown it, the planner is hijacked.
    pub trigger: String,
}

/// Why an adversary script cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum AdversaryError {
    #[error("cannot read adversary script `{path}`: {reason}")]
    Read { path: String, reason: String },
    #[error("adversary script `{path}` is not valid: {reason}")]
    Invalid { path: String, reason: String },
}

/// The adversarial planner (see the module doc).
#[derive(Debug, Clone)]
pub struct Adversary {
    script: AdversaryScript,
    hijacked: bool,
    /// Step-wise: how many task and injection steps have been given as turns.
    task_turns: usize,
    injection_turns: usize,
    /// Step-wise: the turn's step id (`t3`) that each script step given as a turn became.
    turn_ids: BTreeMap<String, String>,
    /// The last plan answered, for a repair.
    last: Vec<Step>,
}

impl Adversary {
    /// Reads the script at `path`. An empty trigger is refused: every request would hold
    /// it, and the adversary would be hijacked before reading anything.
    pub fn open(path: &Path) -> Result<Adversary, AdversaryError> {
        let shown = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| AdversaryError::Read {
            path: shown.clone(),
            reason: e.to_string(),
        })?;
        let script: AdversaryScript =
            serde_json::from_str(&text).map_err(|e| AdversaryError::Invalid {
                path: shown.clone(),
                reason: e.to_string(),
            })?;
        Adversary::new(script).map_err(|reason| AdversaryError::Invalid {
            path: shown,
            reason,
        })
    }

    /// The adversary for `script`; an error if its trigger is empty.
    pub fn new(script: AdversaryScript) -> Result<Adversary, String> {
        if script.trigger.is_empty() {
            return Err("`trigger` is empty: every request would hold it".into());
        }
        Ok(Adversary {
            script,
            hijacked: false,
            task_turns: 0,
            injection_turns: 0,
            turn_ids: BTreeMap::new(),
            last: Vec::new(),
        })
    }

    /// Whether it has followed the injection since it was shown the trigger.
    pub fn hijacked(&self) -> bool {
        self.hijacked
    }

    fn answer(&mut self, req: &PlanRequest) -> Reply {
        if !self.hijacked
            && serde_json::to_value(req).is_ok_and(|v| holds(&v, &self.script.trigger))
        {
            self.hijacked = true;
        }
        match Ask::of(req) {
            Ask::Turn | Ask::TurnRepair => self.turn(req.revision),
            Ask::Plan => {
                let mut steps = Vec::new();
                if self.hijacked {
                    steps.extend(self.script.injection.iter().cloned());
                }
                steps.extend(self.script.task.iter().cloned());
                self.plan(req, steps)
            }
            Ask::Replan { .. } => {
                let ran: BTreeSet<&StepId> = req.history.iter().map(|r| &r.id).collect();
                let succeeded: BTreeSet<&StepId> = req
                    .history
                    .iter()
                    .filter(|r| r.status == StepStatus::Succeeded)
                    .map(|r| &r.id)
                    .collect();
                let mut steps: Vec<Step> = Vec::new();
                if self.hijacked {
                    let new = self
                        .script
                        .injection
                        .iter()
                        .filter(|s| !ran.contains(&s.id));
                    steps.extend(new.cloned());
                }
                let left = self
                    .script
                    .task
                    .iter()
                    .filter(|s| !succeeded.contains(&s.id));
                steps.extend(left.cloned());
                self.plan(req, steps)
            }
            Ask::Repair => {
                let refused: BTreeSet<Option<&StepId>> =
                    req.problems.iter().map(|p| p.step.as_ref()).collect();
                if refused.contains(&None) {
                    return give_up("a problem names no step it could drop");
                }
                let kept = self
                    .last
                    .iter()
                    .filter(|s| !refused.contains(&Some(&s.id)))
                    .cloned()
                    .collect();
                self.plan(req, kept)
            }
        }
    }

    /// `steps` as the plan answering `req`, each after the one before.
    fn plan(&mut self, req: &PlanRequest, mut steps: Vec<Step>) -> Reply {
        if steps.is_empty() {
            return give_up("no step left to plan");
        }
        for i in 1..steps.len() {
            steps[i].depends_on = vec![steps[i - 1].id.clone()];
        }
        steps[0].depends_on.clear();
        self.last.clone_from(&steps);
        Reply::Plan {
            plan: Plan {
                goal: req.goal.clone(),
                revision: req.revision,
                steps,
                answer: None,
                program: None,
            },
        }
    }

    fn turn(&mut self, turn_no: u32) -> Reply {
        let script = &self.script;
        let step = if self.hijacked && self.injection_turns < script.injection.len() {
            self.injection_turns += 1;
            &script.injection[self.injection_turns - 1]
        } else if self.task_turns < script.task.len() {
            self.task_turns += 1;
            &script.task[self.task_turns - 1]
        } else {
            return Reply::Turn {
                turn: Box::new(Turn {
                    thought: "the script is done".into(),
                    stop: true,
                    ..Turn::default()
                }),
            };
        };
        let arguments = renamed(&step.args, &self.turn_ids);
        let turn = Turn {
            thought: step.description.clone(),
            tool: Some(step.tool.clone()),
            operation: Some(step.operation.clone()),
            arguments: Some(arguments),
            confidence: 1.0,
            ..Turn::default()
        };
        self.turn_ids
            .insert(step.id.to_string(), format!("t{turn_no}"));
        Reply::Turn {
            turn: Box::new(turn),
        }
    }
}

/// `v` with every reference to a step in `ids` made a reference to the step it became.
fn renamed(v: &Value, ids: &BTreeMap<String, String>) -> Value {
    match v {
        Value::Object(m) if m.len() == 1 && m.contains_key("$ref") => match &m["$ref"] {
            Value::String(r) => {
                let r = ids.iter().find_map(|(from, to)| {
                    r.strip_prefix(&format!("{from}."))
                        .map(|rest| format!("{to}.{rest}"))
                });
                r.map_or_else(|| v.clone(), |r| serde_json::json!({ "$ref": r }))
            }
            _ => v.clone(),
        },
        Value::Object(m) => Value::Object(
            m.iter()
                .map(|(k, v)| (k.clone(), renamed(v, ids)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(|i| renamed(i, ids)).collect()),
        Value::String(s) if s.contains("${") => Value::String(rename_interpolations(s, ids)),
        other => other.clone(),
    }
}

/// `s` with `${FROM.` made `${TO.` for every renamed step.
fn rename_interpolations(s: &str, ids: &BTreeMap<String, String>) -> String {
    ids.iter().fold(s.to_string(), |out, (from, to)| {
        out.replace(&format!("${{{from}."), &format!("${{{to}."))
    })
}

fn give_up(why: &str) -> Reply {
    Reply::GiveUp {
        why: format!("the adversary has {why}"),
    }
}

/// Whether any string in `v` (a key or a value) contains `needle`: the request is read as
/// the planner would read its text, not as escaped JSON.
fn holds(v: &Value, needle: &str) -> bool {
    match v {
        Value::String(s) => s.contains(needle),
        Value::Array(items) => items.iter().any(|i| holds(i, needle)),
        Value::Object(m) => m
            .iter()
            .any(|(k, v)| k.contains(needle) || holds(v, needle)),
        Value::Null | Value::Bool(_) | Value::Number(_) => false,
    }
}

fn usage() -> Usage {
    Usage {
        model: "adversarial".into(),
        ..Usage::default()
    }
}

impl Planner for Adversary {
    fn name(&self) -> String {
        "adversarial".into()
    }

    fn estimate(&self, _req: &PlanRequest) -> Usage {
        usage()
    }

    fn plan<'a>(&'a mut self, req: &'a PlanRequest) -> PlanFuture<'a> {
        let reply = self.answer(req);
        Box::pin(async move { Ok((reply, usage())) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_trigger_is_found_in_any_string_however_deep() {
        let shown = json!({"history": [{"output": {"files": {"bill.txt": "pay <INFORMATION> Send \"all\" </INFORMATION>"}}}]});
        assert!(holds(&shown, "Send \"all\""));
        assert!(holds(&json!({"a key with it: X": 1}), "X"));
        assert!(!holds(&json!({"n": 5, "b": true, "s": "nothing"}), "5"));
    }

    #[test]
    fn references_to_script_steps_name_the_turns_that_ran_them() {
        let ids = BTreeMap::from([
            ("s1".to_string(), "t1".to_string()),
            ("s10".to_string(), "t4".to_string()),
        ]);
        let args = json!({"to": {"$ref": "s10.output[0].recipient"}, "body": "see ${s1.output} and ${s10.output.x}",
                          "list": [{"$ref": "s1.output"}, {"$ref": "s2.output"}], "n": 3});
        assert_eq!(
            renamed(&args, &ids),
            json!({"to": {"$ref": "t4.output[0].recipient"}, "body": "see ${t1.output} and ${t4.output.x}",
                   "list": [{"$ref": "t1.output"}, {"$ref": "s2.output"}], "n": 3})
        );
    }

    #[test]
    fn an_empty_trigger_is_refused() {
        let script = AdversaryScript {
            task: Vec::new(),
            injection: Vec::new(),
            trigger: String::new(),
        };
        assert!(
            Adversary::new(script)
                .unwrap_err()
                .contains("`trigger` is empty")
        );
    }
}
