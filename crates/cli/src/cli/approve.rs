//! The terminal approver of `toolhost run --approve`: shows the validated plan with each
//! step's capabilities from the policy, and asks to approve, edit (in `$EDITOR`, then the
//! engine validates it again: an invalid edit is shown with its problems and reopened, a
//! valid one is shown for approval) or reject; sensitive steps are asked about again just
//! before they run. It also answers a plan's questions (`human.ask`), checked against the
//! question's schema and asked again until they match.

use std::io::{BufRead, Write};

use serde_json::Value;
use toolhost_engine::approval::{
    Answered, Approver, Decider, How, PlanDecision, Question, StepDecision,
};
use toolhost_engine::ask;
use toolhost_engine::validate::{Catalog, Problem, ValidPlan};
use toolhost_engine::{Plan, Step};

/// Runs an editor on a file.
pub(crate) type Editor = Box<dyn FnMut(&std::path::Path) -> std::io::Result<()>>;

/// Asks on `input`, shows on `output`.
pub(crate) struct TerminalApprover<R, W> {
    pub input: R,
    pub output: W,
    /// Runs the editor on a file; `None` uses `$EDITOR` (default `vi`), a command line
    /// the shell splits (`code --wait`).
    pub editor: Option<Editor>,
}

/// The capabilities a step's tool has, one line each.
pub(crate) use toolhost_engine::review::capabilities;

impl<R: BufRead, W: Write> TerminalApprover<R, W> {
    fn ask(&mut self, prompt: &str) -> String {
        let _ = write!(self.output, "{prompt}");
        let _ = self.output.flush();
        let mut line = String::new();
        match self.input.read_line(&mut line) {
            Ok(0) | Err(_) => {
                self.no_answer();
                String::new()
            }
            Ok(_) => line.trim().to_ascii_lowercase(),
        }
    }

    fn show(&mut self, plan: &ValidPlan, catalog: &Catalog) {
        let p = &plan.plan;
        let _ = say!(
            self.output,
            "Plan for: {} (revision {})",
            p.goal,
            p.revision
        );
        let reach = toolhost_engine::review::plan(plan, catalog);
        for id in &plan.order {
            let Some(step) = p.steps.iter().find(|s| &s.id == id) else {
                continue;
            };
            let deps: Vec<&str> = plan.deps[id].iter().map(|d| d.as_str()).collect();
            let _ = say!(
                self.output,
                "  {}  {}.{}  {}{}",
                step.id,
                step.tool,
                step.operation,
                step.args,
                if deps.is_empty() {
                    String::new()
                } else {
                    format!("  (after {})", deps.join(", "))
                }
            );
            if !step.description.is_empty() {
                let _ = say!(self.output, "      {}", step.description);
            }
            for line in capabilities(step, catalog) {
                let _ = say!(self.output, "      - {line}");
            }
            let flows = reach.iter().filter(|r| r.step == step.id.as_str());
            for line in flows.flat_map(|r| &r.untrusted) {
                let _ = say!(self.output, "      - untrusted data: {line}");
            }
        }
    }

    fn edit(&mut self, plan: &Plan) -> Result<Plan, String> {
        let mut file = tempfile::Builder::new()
            .prefix("toolhost-plan-")
            .suffix(".json")
            .tempfile()
            .map_err(|e| format!("cannot create a file to edit: {e}"))?;
        let text = serde_json::to_string_pretty(plan).expect("plans serialise");
        file.write_all(text.as_bytes())
            .map_err(|e| format!("cannot write the plan to edit: {e}"))?;
        let path = file.path().to_path_buf();
        match &mut self.editor {
            Some(run) => run(&path).map_err(|e| format!("the editor failed: {e}"))?,
            None => {
                let editor = std::env::var("EDITOR")
                    .ok()
                    .filter(|e| !e.trim().is_empty())
                    .unwrap_or_else(|| "vi".into());
                // As git runs it: the shell splits `$EDITOR`, so it may carry arguments.
                let status = std::process::Command::new("sh")
                    .arg("-c")
                    .arg(format!("{editor} \"$@\""))
                    .arg(&editor)
                    .arg(&path)
                    .status()
                    .map_err(|e| format!("cannot start `{editor}` through `sh`: {e}"))?;
                if !status.success() {
                    return Err(format!("`{editor}` exited with {status}"));
                }
            }
        }
        let edited = std::fs::read_to_string(&path)
            .map_err(|e| format!("cannot read the edited plan: {e}"))?;
        serde_json::from_str(&edited).map_err(|e| format!("the edited plan is not a plan: {e}"))
    }
}

impl<R: BufRead, W: Write> TerminalApprover<R, W> {
    /// Reads one answer line as typed (not lowercased); `None` at the end of input.
    fn read_answer(&mut self, prompt: &str) -> Option<String> {
        let _ = write!(self.output, "{prompt}");
        let _ = self.output.flush();
        let mut line = String::new();
        match self.input.read_line(&mut line) {
            Ok(0) | Err(_) => {
                self.no_answer();
                None
            }
            Ok(_) => Some(line),
        }
    }

    /// Ends a prompt that got no answer (the input ended, the run was cancelled, or the
    /// wait outlasted `max_wait_ms`) on its own line, so what follows is not glued to it.
    fn no_answer(&mut self) {
        let _ = writeln!(self.output, "\n(no answer)");
    }
}

/// The terminal's user, who makes the decisions of `toolhost run --approve`: `$USER` (or
/// `$LOGNAME`), else the process's uid.
pub(crate) fn terminal_user() -> Option<String> {
    use std::os::unix::fs::MetadataExt as _;
    ["USER", "LOGNAME"]
        .into_iter()
        .find_map(|v| std::env::var(v).ok().filter(|u| !u.is_empty()))
        .or_else(|| {
            std::fs::metadata("/proc/self")
                .ok()
                .map(|m| format!("uid {}", m.uid()))
        })
}

impl<R: BufRead, W: Write> Approver for TerminalApprover<R, W> {
    fn decided_by(&self) -> Option<Decider> {
        Some(Decider::person(terminal_user(), How::Terminal))
    }

    fn review_plan(&mut self, plan: &ValidPlan, catalog: &Catalog) -> PlanDecision {
        let _paused = super::progress::pause();
        self.show(plan, catalog);
        loop {
            match self.ask("[a]pprove, [e]dit or [r]eject? ").as_str() {
                "a" | "approve" | "y" | "yes" => return PlanDecision::Approve,
                "r" | "reject" | "n" | "no" | "" => {
                    return PlanDecision::Reject("the plan was rejected at review".into());
                }
                "e" | "edit" => match self.edit(&plan.plan) {
                    Ok(edited) => return PlanDecision::Edit(edited),
                    Err(why) => {
                        let _ = say!(self.output, "{why}");
                    }
                },
                other => {
                    let _ = say!(self.output, "`{other}`: answer a, e or r");
                }
            }
        }
    }

    fn confirm_edit(&mut self, edited: &ValidPlan, catalog: &Catalog) -> PlanDecision {
        let _ = say!(self.output, "The edited plan is valid.");
        self.review_plan(edited, catalog)
    }

    fn revise_edit(
        &mut self,
        edited: &Plan,
        problems: &[Problem],
        _catalog: &Catalog,
    ) -> Option<PlanDecision> {
        let _paused = super::progress::pause();
        let plan = edited.clone();
        let mut problems: Vec<String> = problems.iter().map(ToString::to_string).collect();
        loop {
            let _ = say!(
                self.output,
                "The edited plan is not valid ({} problem{}):",
                problems.len(),
                if problems.len() == 1 { "" } else { "s" }
            );
            for p in &problems {
                let _ = say!(self.output, "  - {p}");
            }
            match self.ask("[e]dit again or [r]eject? ").as_str() {
                "e" | "edit" => match self.edit(&plan) {
                    Ok(again) => return Some(PlanDecision::Edit(again)),
                    Err(why) => problems = vec![why],
                },
                "r" | "reject" | "n" | "no" | "" => {
                    return Some(PlanDecision::Reject(
                        "the edited plan was not valid and was rejected at review".into(),
                    ));
                }
                other => {
                    let _ = say!(self.output, "`{other}`: answer e or r");
                }
            }
        }
    }

    fn can_answer(&self) -> bool {
        true
    }

    fn answer(&mut self, q: &Question<'_>) -> Answered {
        let _paused = super::progress::pause();
        let _ = say!(self.output, "Step `{}` asks: {}", q.step.id, q.text);
        let prompt = match super::question::hint(q.schema) {
            Some(hint) => format!("answer ({hint})> "),
            None => "answer> ".into(),
        };
        loop {
            let Some(line) = self.read_answer(&prompt) else {
                return Answered::NoOne;
            };
            let answer: Value = match super::question::default(q.schema) {
                Some(d) if line.trim().is_empty() => d.clone(),
                _ => ask::parse_typed(q.schema, &line),
            };
            match ask::check(q.schema, &answer) {
                Ok(()) => return Answered::Answer(answer),
                Err(problems) => {
                    let _ = say!(self.output, "That does not answer the question:");
                    for p in problems {
                        let _ = say!(self.output, "  - {p}");
                    }
                }
            }
        }
    }

    fn approve_step(&mut self, step: &Step, why: &str, catalog: &Catalog) -> StepDecision {
        let _paused = super::progress::pause();
        let _ = say!(
            self.output,
            "Step `{}` ({}.{} {}) needs approval: {why}",
            step.id,
            step.tool,
            step.operation,
            step.args
        );
        for line in capabilities(step, catalog) {
            let _ = say!(self.output, "      - {line}");
        }
        match self.ask("Run it? [y/N] ").as_str() {
            "y" | "yes" => StepDecision::Approve,
            _ => StepDecision::Reject("declined at the prompt".into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, BTreeSet};
    use std::io::Cursor;

    use serde_json::json;

    use super::*;

    fn plan() -> ValidPlan {
        let plan: Plan = serde_json::from_value(json!({
            "goal": "g",
            "steps": [{"id": "s1", "tool": "calc", "operation": "eval", "args": {"expression": "1"}}]
        }))
        .unwrap();
        let id = plan.steps[0].id.clone();
        ValidPlan {
            deps: BTreeMap::from([(id.clone(), BTreeSet::new())]),
            order: vec![id],
            plan,
        }
    }

    fn approver(input: &str) -> TerminalApprover<Cursor<Vec<u8>>, Vec<u8>> {
        TerminalApprover {
            input: Cursor::new(input.as_bytes().to_vec()),
            output: Vec::new(),
            editor: None,
        }
    }

    #[test]
    fn shows_the_plan_and_takes_an_answer() {
        let mut a = approver("what\na\n");
        assert_eq!(
            a.review_plan(&plan(), &Catalog::default()),
            PlanDecision::Approve
        );
        let shown = String::from_utf8(a.output).unwrap();
        assert!(
            shown.contains("s1  calc.eval  {\"expression\":\"1\"}"),
            "{shown}"
        );
        assert!(shown.contains("`what`: answer a, e or r"), "{shown}");
        let mut a = approver("r\n");
        assert!(matches!(
            a.review_plan(&plan(), &Catalog::default()),
            PlanDecision::Reject(_)
        ));
        // End of input is a rejection, never an approval.
        let mut a = approver("");
        assert!(matches!(
            a.review_plan(&plan(), &Catalog::default()),
            PlanDecision::Reject(_)
        ));
    }

    #[test]
    fn edits_in_the_editor() {
        let mut a = approver("e\n");
        a.editor = Some(Box::new(|path| {
            let text = std::fs::read_to_string(path)?.replace("\"1\"", "\"2 + 2\"");
            std::fs::write(path, text)
        }));
        match a.review_plan(&plan(), &Catalog::default()) {
            PlanDecision::Edit(p) => assert_eq!(p.steps[0].args, json!({"expression": "2 + 2"})),
            other => panic!("expected an edit, got {other:?}"),
        }
        // A broken edit is reported and asked again.
        let mut a = approver("e\nr\n");
        a.editor = Some(Box::new(|path| std::fs::write(path, "{not json")));
        assert!(matches!(
            a.review_plan(&plan(), &Catalog::default()),
            PlanDecision::Reject(_)
        ));
        assert!(
            String::from_utf8(a.output)
                .unwrap()
                .contains("the edited plan is not a plan")
        );
    }

    #[test]
    fn steps_need_an_explicit_yes() {
        let step = plan().plan.steps[0].clone();
        let c = Catalog::default();
        assert_eq!(
            approver("y\n").approve_step(&step, "sensitive", &c),
            StepDecision::Approve
        );
        assert!(matches!(
            approver("\n").approve_step(&step, "sensitive", &c),
            StepDecision::Reject(_)
        ));
        assert!(matches!(
            approver("").approve_step(&step, "sensitive", &c),
            StepDecision::Reject(_)
        ));
    }
}
