//! The scripted planner: answers from a script instead of a model, for offline runs,
//! demos and tests. A script holds a first plan and revised plans for failures
//! (plan-then-execute), or a list of turns (step-wise).
//!
//! ```json
//! {
//!   "plan": {"goal": "…", "steps": [ … ]},
//!   "replans": [{"after_failure_of": "s2", "plan": {"goal": "…", "revision": 2, "steps": [ … ]}}],
//!   "repairs": [ … plans answering validation problems … ],
//!   "turns": [{"thought": "…", "tool": "calc", "operation": "eval", "arguments": {…}}, {"stop": true}],
//!   "usage_per_call": {"model": "scripted", "input_tokens": 0, "output_tokens": 0}
//! }
//! ```

use std::collections::VecDeque;

use serde::Deserialize;

use super::plan::{Plan, StepId};
use super::planner::{Ask, PlanFuture, PlanRequest, Planner, Reply, Turn, Usage};

/// A revised plan for a failure of `after_failure_of` (`*`: any step).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptedReplan {
    pub after_failure_of: String,
    pub plan: Plan,
}

/// A planner script.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Script {
    #[serde(default)]
    pub plan: Option<Plan>,
    #[serde(default)]
    pub replans: Vec<ScriptedReplan>,
    #[serde(default)]
    pub repairs: Vec<Plan>,
    #[serde(default)]
    pub turns: Vec<Turn>,
    /// Tokens charged per answer, to exercise token and cost budgets offline.
    #[serde(default)]
    pub usage_per_call: Usage,
}

/// Answers from a [`Script`], in order; each answer is used once.
#[derive(Debug)]
pub struct ScriptedPlanner {
    first: Option<Plan>,
    replans: Vec<ScriptedReplan>,
    repairs: VecDeque<Plan>,
    turns: VecDeque<Turn>,
    usage: Usage,
}

impl ScriptedPlanner {
    pub fn new(script: Script) -> ScriptedPlanner {
        let mut usage = script.usage_per_call;
        if usage.model.is_empty() {
            usage.model = "scripted".into();
        }
        ScriptedPlanner {
            first: script.plan,
            replans: script.replans,
            repairs: script.repairs.into(),
            turns: script.turns.into(),
            usage,
        }
    }

    fn answer(&mut self, ask: &Ask) -> Reply {
        if matches!(ask, Ask::Turn | Ask::TurnRepair) {
            return match self.turns.pop_front() {
                Some(turn) => Reply::Turn {
                    turn: Box::new(turn),
                },
                None => Reply::GiveUp {
                    why: "the script has no more turns".into(),
                },
            };
        }
        if *ask == Ask::Repair {
            return match self.repairs.pop_front() {
                Some(plan) => Reply::Plan { plan },
                None => Reply::GiveUp {
                    why: "the script has no repaired plan for the validation problems".into(),
                },
            };
        }
        if let Ask::Replan { failed } = ask {
            let matches = |r: &ScriptedReplan| {
                r.after_failure_of == "*"
                    || StepId::try_from(r.after_failure_of.clone()).ok().as_ref() == Some(failed)
            };
            return match self.replans.iter().position(matches) {
                Some(i) => Reply::Plan {
                    plan: self.replans.remove(i).plan,
                },
                None => Reply::GiveUp {
                    why: format!("the script has no revised plan for a failure of step `{failed}`"),
                },
            };
        }
        match self.first.take() {
            Some(plan) => Reply::Plan { plan },
            None => Reply::GiveUp {
                why: "the script has no plan".into(),
            },
        }
    }
}

impl Planner for ScriptedPlanner {
    fn name(&self) -> String {
        "scripted".into()
    }

    fn estimate(&self, _req: &PlanRequest) -> Usage {
        self.usage.clone()
    }

    fn plan<'a>(&'a mut self, req: &'a PlanRequest) -> PlanFuture<'a> {
        let reply = self.answer(&Ask::of(req));
        let usage = self.usage.clone();
        Box::pin(async move { Ok((reply, usage)) })
    }

    fn fast_forward(&mut self, asked: &[Ask]) {
        for ask in asked {
            self.answer(ask);
        }
    }
}
