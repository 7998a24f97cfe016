//! One run of the embedded backend: its state, the decision it may be waiting for, and
//! its outcome, from the report of a run executed here or from the journal of one found
//! in the state directory.

use std::path::PathBuf;
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::Duration;

use serde_json::{Value, json};
use toolhost_engine::approval::{Decider, PlanCheck};
use toolhost_engine::{Cancel, RunReport, StepStatus};
use toolhost_journal::{Kind, Record};

use crate::head::Head;
use crate::registry::{Pending, RegistryError, RunState, RunView, StepCounts};

/// A person's answer, as the approver takes it.
pub(crate) use crate::registry::Taken as Answer;

/// How a run ended: its stop record (without the answer and usage, shown apart), its
/// answer, its steps by outcome, and what it spent.
#[derive(Debug, Clone, Default)]
pub struct Outcome {
    pub stop: Option<Value>,
    pub answer: Option<Value>,
    pub steps: StepCounts,
    pub usage: Option<Value>,
}

impl Outcome {
    pub(crate) fn of_report(r: &RunReport) -> Outcome {
        let mut steps = StepCounts::default();
        for s in &r.steps {
            match s.status {
                StepStatus::Succeeded => steps.succeeded += 1,
                StepStatus::Failed => steps.failed += 1,
                StepStatus::Skipped => steps.skipped += 1,
            }
        }
        Outcome {
            stop: Some(json!(r.stop)),
            answer: r.answer.clone(),
            steps,
            usage: Some(json!(r.spent)),
        }
    }

    /// A run that could not start: failed, with why.
    pub(crate) fn not_started(why: String) -> Outcome {
        Outcome {
            stop: Some(json!({"reason": "not_started", "why": why})),
            ..Outcome::default()
        }
    }

    /// From a journal's records (a run this server did not execute, or executed before a
    /// restart).
    pub fn of_records(records: &[Record]) -> Outcome {
        let mut o = Outcome::default();
        for r in records {
            match r.kind {
                Kind::StepFinished => match r.data["status"].as_str() {
                    Some("succeeded") => o.steps.succeeded += 1,
                    Some("failed") => o.steps.failed += 1,
                    Some("skipped") => o.steps.skipped += 1,
                    _ => {}
                },
                Kind::Stopped => {
                    let mut stop = r.data.clone();
                    o.answer = stop
                        .as_object_mut()
                        .and_then(|m| m.remove("answer"))
                        .filter(|a| !a.is_null());
                    o.usage = stop.as_object_mut().and_then(|m| m.remove("spent"));
                    o.stop = Some(stop);
                }
                // Carried on: the stop before no longer holds.
                Kind::Resumed => {
                    o.stop = None;
                    o.answer = None;
                }
                _ => {}
            }
        }
        o
    }

    /// The stop's reason (`completed`, `suspended`, …); none while the run goes on or
    /// after a crash.
    pub(crate) fn stop_reason(&self) -> Option<&str> {
        self.stop.as_ref().and_then(|s| s["reason"].as_str())
    }

    fn state(&self) -> RunState {
        match self.stop_reason() {
            Some(reason) => RunState::of_stop(reason),
            None => RunState::Interrupted,
        }
    }
}

#[derive(Debug)]
struct Status {
    state: RunState,
    pending: Option<Pending>,
    /// The answer, and who gave it.
    answer: Option<(Answer, Decider)>,
    /// What the engine made of the last edit: set when it validated it (see
    /// [`Run::edit_verdict`]).
    verdict: Option<EditVerdict>,
    /// The run's check of draft edits of the plan under review (see [`Run::check_draft`]).
    check: Option<PlanCheck>,
    outcome: Outcome,
    /// What its journal's first records say; read from the file until complete.
    head: Head,
    /// Whether `head` is all there is to read.
    head_settled: bool,
}

/// What validation made of a person's edit to a plan.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum EditVerdict {
    /// Valid: the edited plan is the one that runs.
    Accepted,
    /// Invalid, with every problem (each naming its step): the run waits again.
    Invalid(Vec<String>),
}

/// A run the registry knows.
#[derive(Debug)]
pub(crate) struct Run {
    pub id: String,
    pub goal: String,
    pub submitter: Option<String>,
    pub path: PathBuf,
    pub cancel: Cancel,
    status: Mutex<Status>,
    changed: Condvar,
}

impl Run {
    pub(crate) fn queued(
        id: String,
        goal: String,
        submitter: Option<String>,
        path: PathBuf,
    ) -> Run {
        Run::new(
            id,
            goal,
            submitter,
            path,
            RunState::Queued,
            Outcome::default(),
        )
    }

    /// A run found in the state directory, with what its journal says.
    pub(crate) fn found(
        id: String,
        goal: String,
        submitter: Option<String>,
        path: PathBuf,
        outcome: Outcome,
        head: Head,
    ) -> Run {
        let state = outcome.state();
        let run = Run::new(id, goal, submitter, path, state, outcome);
        {
            let mut s = run.status();
            s.head_settled = head.is_complete() || state.is_final();
            s.head = head;
        }
        run
    }

    fn new(
        id: String,
        goal: String,
        submitter: Option<String>,
        path: PathBuf,
        state: RunState,
        outcome: Outcome,
    ) -> Run {
        Run {
            id,
            goal,
            submitter,
            path,
            cancel: Cancel::new(),
            status: Mutex::new(Status {
                state,
                pending: None,
                answer: None,
                verdict: None,
                check: None,
                outcome,
                head: Head::default(),
                head_settled: false,
            }),
            changed: Condvar::new(),
        }
    }

    fn status(&self) -> MutexGuard<'_, Status> {
        self.status.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn state(&self) -> RunState {
        self.status().state
    }

    pub(crate) fn started(&self) {
        self.status().state = RunState::Running;
    }

    pub(crate) fn finished(&self, outcome: Outcome) {
        let mut s = self.status();
        s.state = outcome.state();
        s.pending = None;
        s.outcome = outcome;
        self.changed.notify_all();
    }

    /// Parks the run until [`Run::answer`] (see [`Run::wait_for_answer`]).
    pub(crate) fn park(&self, pending: Pending) {
        let mut s = self.status();
        s.state = if pending.subject == "question" {
            RunState::WaitingForInput
        } else {
            RunState::WaitingForApproval
        };
        s.pending = Some(pending);
        s.answer = None;
    }

    /// The answer to the pending decision, and who gave it; `None` when the run was
    /// cancelled first.
    pub(crate) fn wait_for_answer(&self, poll: Duration) -> Option<(Answer, Decider)> {
        let mut s = self.status();
        loop {
            if let Some(a) = s.answer.take() {
                s.pending = None;
                s.state = RunState::Running;
                return Some(a);
            }
            if self.cancel.is_cancelled() {
                s.pending = None;
                s.state = RunState::Running;
                return None;
            }
            s = self
                .changed
                .wait_timeout(s, poll)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    }

    /// Gives the pending decision its answer, after `check` accepts it for the pending
    /// subject; `Err` when nothing is pending or `check` refuses.
    pub(crate) fn answer(
        &self,
        by: Decider,
        check: impl FnOnce(&Pending) -> Result<Answer, RegistryError>,
    ) -> Result<(), AnswerError> {
        let mut s = self.status();
        let pending = match (&s.pending, &s.answer) {
            (Some(p), None) => p,
            _ => return Err(AnswerError::NothingPending),
        };
        let a = check(pending).map_err(AnswerError::Refused)?;
        s.answer = Some((a, by));
        s.verdict = None;
        self.changed.notify_all();
        Ok(())
    }

    /// Keeps the run's check of draft edits of the plan it is about to park on.
    pub(crate) fn offer_check(&self, check: PlanCheck) {
        self.status().check = Some(check);
    }

    /// The problems `draft` would meet as an edit of the plan this run waits on; 409
    /// when it waits on no plan.
    pub(crate) fn check_draft(
        &self,
        draft: &toolhost_engine::Plan,
    ) -> Result<Vec<toolhost_engine::Problem>, RegistryError> {
        let check = {
            let s = self.status();
            match (&s.pending, &s.answer, &s.check) {
                (Some(p), None, Some(check)) if p.subject == "plan" => check.clone(),
                _ => {
                    return Err(RegistryError::Conflict(format!(
                        "run `{}` is {}, not waiting for a review of its plan",
                        self.id,
                        s.state.name()
                    )));
                }
            }
        };
        // Outside the lock: validation takes its time, and the run may move on meanwhile.
        Ok(check.check(draft))
    }

    /// Records what validation made of the last edit, for [`Run::edit_verdict`].
    pub(crate) fn judged(&self, verdict: EditVerdict) {
        self.status().verdict = Some(verdict);
        self.changed.notify_all();
    }

    /// Waits (at most `limit`) for the engine to validate the edit just given: its
    /// verdict, or `None` when the run ended or moved on without one.
    pub(crate) fn edit_verdict(&self, limit: Duration) -> Option<EditVerdict> {
        let deadline = std::time::Instant::now() + limit;
        let mut s = self.status();
        loop {
            if let Some(v) = s.verdict.take() {
                return Some(v);
            }
            let now = std::time::Instant::now();
            if s.state.is_final() || now >= deadline {
                return None;
            }
            s = self
                .changed
                .wait_timeout(s, deadline - now)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    }

    pub(crate) fn view(&self) -> RunView {
        let read = {
            let s = self.status();
            !s.head_settled && s.state != RunState::Queued
        };
        // Read outside the lock: the run parks and finishes meanwhile.
        let head = read.then(|| Head::read(&self.path)).flatten();
        let mut s = self.status();
        if let Some(head) = head {
            s.head_settled = head.is_complete() || s.state.is_final();
            s.head = head;
        }
        RunView {
            id: self.id.clone(),
            url: format!("/v1/runs/{}", self.id),
            state: s.state,
            goal: self.goal.clone(),
            submitter: self.submitter.clone(),
            stop: s.outcome.stop.clone(),
            answer: s.outcome.answer.clone(),
            steps: s.outcome.steps,
            usage: s.outcome.usage.clone(),
            pending: s.pending.clone().filter(|_| s.answer.is_none()),
            head: s.head.clone(),
        }
    }
}

pub(crate) enum AnswerError {
    NothingPending,
    /// The decision does not fit what is pending.
    Refused(RegistryError),
}
