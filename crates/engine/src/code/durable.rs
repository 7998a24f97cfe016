//! Durable code mode: a resumed run re-executes the program it stopped in from its start
//! and serves every call the journal holds from the journal, in the program's order, so
//! no finished call runs twice and the journal gains no step it already has.
//!
//! Re-execution is deterministic because the program observes nothing but its source and
//! the values its calls return: the interpreter (monty) has no clock, no random numbers
//! and no operating system (`datetime.now()` is an OS call the interpreter refuses),
//! hashes with fixed keys, and numbers `id()` by heap slot. What the journal served is
//! what the program saw the first time, redacted as the journal holds it.
//!
//! A call the program makes at a position the journal holds is compared with the
//! journal's (tool, operation, arguments as journaled): another call is a divergence, and
//! the run stops before running anything past it. A call the stop cut off follows the rule
//! for plan steps that are not idempotent: it runs again (under its id) only with
//! `--rerun`, is recorded failed with `--abandon` (the program gets a `ToolError`), and
//! otherwise the resume stops for a person to decide.

use serde_json::Value;
use toolhost_runtime::CallError;

use crate::budget::StopReason;
use crate::engine::Engine;
use crate::plan::Plan;
use crate::planner::Planner;
use crate::report::RunReport;
use crate::resume::{Current, Unfinished, undecided_stop};
use crate::state::{Carried, Journaled, State};

use super::PROGRAM_STEP;

impl Journaled {
    fn call(&self) -> (&str, &str, &str, &Value) {
        match self {
            Journaled::Done(r) => (
                r.id.as_str(),
                r.tool.as_str(),
                r.operation.as_str(),
                &r.args,
            ),
            Journaled::Rerun(s) => (
                s.id.as_str(),
                s.tool.as_str(),
                s.operation.as_str(),
                &s.args,
            ),
        }
    }

    /// Why the program's call of `tool`.`operation` with `args` (as the journal would hold
    /// them) is not this one, if it is not.
    pub(crate) fn diverges(
        &self,
        tool: &str,
        operation: &str,
        args: &Value,
        revision: u32,
    ) -> Option<String> {
        let (id, held_tool, held_op, held_args) = self.call();
        if (held_tool, held_op, held_args) == (tool, operation, args) {
            return None;
        }
        Some(format!(
            "the resumed program diverged from its journal at step `{id}` of revision {revision}: the journal holds {}, the program asked {}; nothing past it was run",
            shown(held_tool, held_op, held_args),
            shown(tool, operation, args),
        ))
    }
}

fn shown(tool: &str, operation: &str, args: &Value) -> String {
    format!("{tool}.{operation} {args}")
}

/// The stop of a resumed program that ended (`result`) before making call `held`, which
/// the journal holds.
pub(crate) fn ended_early(
    held: &Journaled,
    revision: u32,
    result: &Result<Value, CallError>,
) -> StopReason {
    let (id, tool, operation, args) = held.call();
    let ended = match result {
        Ok(_) => "answered".to_string(),
        Err(e) => format!("stopped ({})", e.kind().as_str()),
    };
    StopReason::Escalated {
        why: format!(
            "the resumed program diverged from its journal at step `{id}` of revision {revision}: the journal holds {}, the program {ended} without asking it",
            shown(tool, operation, args),
        ),
    }
}

/// The number of call `id` (`c7` → 7), if it is a call's.
fn call_number(id: &str) -> Option<u64> {
    id.strip_prefix('c')?.parse().ok()
}

impl Engine<'_> {
    /// Carries a code-mode run on in the program of `current`, its finished steps in
    /// `st.records`: the calls cut off are settled as `unfinished` says (or the run stops
    /// for a person), then the program runs again from its start with the journal's calls
    /// served.
    pub(crate) async fn resume_program(
        &mut self,
        goal: &str,
        planner: &mut dyn Planner,
        mut st: State,
        current: Current,
        unfinished: &Unfinished,
    ) -> RunReport {
        let undecided = self.settle_unfinished(&current, unfinished, &mut st);
        if !undecided.is_empty() {
            let stop = undecided_stop(&undecided);
            return self.finish(goal, st, stop, None).await;
        }
        let revision = current.plan.revision;
        let mut calls: Vec<(u64, Journaled)> = st
            .records
            .iter()
            .filter(|r| r.revision == revision)
            .filter_map(|r| Some((call_number(r.id.as_str())?, Journaled::Done(r.clone()))))
            .collect();
        // Cut off and not abandoned (those have a record now): run again under their ids.
        for step in &current.plan.steps {
            let n = call_number(step.id.as_str())
                .filter(|_| current.unfinished.contains(&step.id))
                .filter(|n| !calls.iter().any(|(m, _)| m == n));
            if let Some(n) = n {
                calls.push((n, Journaled::Rerun(step.clone())));
            }
        }
        calls.sort_by_key(|(n, _)| *n);
        let failed = st
            .records
            .iter()
            .find(|r| r.revision == revision && r.id.as_str() == PROGRAM_STEP)
            .cloned()
            .map(Box::new);
        let plan = Plan {
            steps: Vec::new(),
            ..current.plan
        };
        st.program = Some(Carried {
            plan,
            calls: calls.into_iter().map(|(_, c)| c).collect(),
            failed,
        });
        self.drive(goal, planner, st).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::Step;
    use serde_json::json;

    fn held(id: &str, args: Value) -> Journaled {
        let step: Step = serde_json::from_value(
            json!({"id": id, "tool": "calc", "operation": "eval", "args": args}),
        )
        .expect("a step");
        Journaled::Rerun(step)
    }

    #[test]
    fn the_same_call_does_not_diverge_and_another_names_both() {
        let h = held("c3", json!({"expression": "1"}));
        assert_eq!(
            h.diverges("calc", "eval", &json!({"expression": "1"}), 1),
            None
        );
        let why = h
            .diverges("calc", "eval", &json!({"expression": "2"}), 1)
            .expect("diverges");
        assert_eq!(
            why,
            r#"the resumed program diverged from its journal at step `c3` of revision 1: the journal holds calc.eval {"expression":"1"}, the program asked calc.eval {"expression":"2"}; nothing past it was run"#
        );
        assert!(
            h.diverges("text", "eval", &json!({"expression": "1"}), 1)
                .is_some()
        );
    }

    #[test]
    fn call_numbers_are_read_from_call_ids_only() {
        assert_eq!(call_number("c12"), Some(12));
        assert_eq!(call_number("program"), None);
        assert_eq!(call_number("c"), None);
    }
}
