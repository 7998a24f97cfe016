//! The scripted planner: answers from a script instead of a model, for offline runs,
//! demos and tests. A script holds a first plan and revised plans for failures
//! (plan-then-execute), a list of turns (step-wise), or a program (code mode); a script
//! may hold answers for several modes ([`Script::for_mode`] keeps the run's).
//!
//! ```json
//! {
//!   "plan": {"goal": "…", "steps": [ … ]},
//!   "program": "… Python (code mode) …",
//!   "replans": [{"after_failure_of": "s2", "plan": {"goal": "…", "revision": 2, "steps": [ … ]}}],
//!   "repairs": [ … plans answering validation problems … ],
//!   "turns": [{"thought": "…", "tool": "calc", "operation": "eval", "arguments": {…}}, {"stop": true}],
//!   "usage_per_call": {"model": "scripted", "input_tokens": 0, "output_tokens": 0}
//! }
//! ```

use serde::Deserialize;

use super::canned::{Answer, Canned, Order, Serves};
use super::plan::{Plan, StepId};
use super::planner::{Ask, Reply, Turn, Usage};

/// A revised plan for a failure of `after_failure_of` (`*`: any step); in code mode a
/// revised `program` instead (its failed step is `program`).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(try_from = "RawReplan")]
pub struct ScriptedReplan {
    pub after_failure_of: String,
    pub plan: Plan,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawReplan {
    after_failure_of: String,
    plan: Option<Plan>,
    program: Option<String>,
}

impl TryFrom<RawReplan> for ScriptedReplan {
    type Error = String;

    fn try_from(r: RawReplan) -> Result<ScriptedReplan, String> {
        let plan = match (r.plan, r.program) {
            (Some(plan), None) => plan,
            (None, Some(program)) => program_plan(program),
            _ => {
                return Err(format!(
                    "the replan after `{}` needs one of `plan` (plan-then-execute) or `program` (code mode)",
                    r.after_failure_of
                ));
            }
        };
        Ok(ScriptedReplan {
            after_failure_of: r.after_failure_of,
            plan,
        })
    }
}

/// A code-mode answer: a plan with no steps and `program` (the engine sets its goal and
/// revision).
pub fn program_plan(program: String) -> Plan {
    Plan {
        goal: String::new(),
        revision: 1,
        steps: Vec::new(),
        answer: None,
        program: Some(program),
    }
}

/// A planner script.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Script {
    #[serde(default)]
    pub plan: Option<Plan>,
    /// Code mode: the first program (Python source).
    #[serde(default)]
    pub program: Option<String>,
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

impl Script {
    /// The answers of this script that `mode` can ask for: a script may hold a plan,
    /// turns and a program (a suite then runs under any `--mode`), but plan-then-execute
    /// and code mode both ask for a first plan, so the one for the other mode is dropped
    /// (a program, and revised programs, outside code mode; a plan and revised plans in
    /// it).
    pub fn for_mode(mut self, mode: crate::Mode) -> Script {
        let code = mode == crate::Mode::Code;
        if code {
            self.plan = None;
        } else {
            self.program = None;
        }
        self.replans.retain(|r| r.plan.program.is_some() == code);
        self
    }
}

impl Canned {
    /// The scripted planner: the script's answers found by kind ([`Order::ByKind`]),
    /// each used once; with none left for a request the planner gives up. Every call,
    /// answered or not, is charged the script's `usage_per_call` (model `scripted`
    /// unless it names one).
    pub fn scripted(script: Script) -> Canned {
        let mut usage = script.usage_per_call;
        if usage.model.is_empty() {
            usage.model = "scripted".into();
        }
        let answer = |serves: Serves, reply: Reply| Answer {
            serves,
            revision: None,
            reply: Ok(reply),
            usage: usage.clone(),
        };
        let plan = |plan: Plan| Reply::Plan { plan };
        let mut answers = Vec::new();
        answers.extend(script.plan.map(|p| answer(Serves::Ask(Ask::Plan), plan(p))));
        answers.extend(
            script
                .program
                .map(|p| answer(Serves::Ask(Ask::Plan), plan(program_plan(p)))),
        );
        for r in script.replans {
            let serves = if r.after_failure_of == "*" {
                Serves::AnyReplan
            } else {
                match StepId::try_from(r.after_failure_of) {
                    Ok(failed) => Serves::Ask(Ask::Replan { failed }),
                    // Not a step id: no failure can match it, as before.
                    Err(_) => continue,
                }
            };
            answers.push(answer(serves, plan(r.plan)));
        }
        for p in script.repairs {
            answers.push(answer(Serves::Ask(Ask::Repair), plan(p)));
        }
        for turn in script.turns {
            let turn = Reply::Turn {
                turn: Box::new(turn),
            };
            answers.push(answer(Serves::AnyTurn, turn));
        }
        Canned::new("scripted", "the script", Order::ByKind, answers).charging_misses(usage)
    }
}
