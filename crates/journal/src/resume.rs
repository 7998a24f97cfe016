//! Reading a stopped run back from its journal: the [`Checkpoint`] that
//! [`Engine::resume`](toolhost_engine::Engine::resume) carries on from.
//!
//! What counts: `planner_called` (spent tokens and calls, and what the planner was asked),
//! the model calls of extraction steps (`step_finished`'s `model_call`: spent tokens),
//! `plan_accepted` + plan `approval` (the current revision and whether it was approved),
//! `step_started` / `step_finished` (finished steps, and the ones that started and did
//! not finish), `stopped` (why the run stopped last). Wall time is the sum of the spans
//! between each start or resume and the last record before the next one, so the time a
//! crashed run lay dead is not charged.

use std::collections::BTreeSet;
use std::time::Duration;

use serde::Deserialize;
use serde_json::Value;

use super::{Kind, Record, time};
use toolhost_engine::PlannerCall;
use toolhost_engine::budget::{Prices, Spent, StopReason};
use toolhost_engine::plan::{Plan, Step, StepId};
use toolhost_engine::planner::{Mode, Reply, Usage};
use toolhost_engine::record::StepRecord;
use toolhost_engine::resume::{Checkpoint, Current};

/// Why a journal cannot be carried on.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ResumeError {
    #[error("record {seq} (`{kind}`) cannot be read back: {reason}")]
    BadRecord {
        seq: u64,
        kind: &'static str,
        reason: String,
    },
    #[error("the run already ended `{reason}`: there is nothing to carry on")]
    Finished { reason: String },
    /// The journal is an MCP session's (`toolhost mcp`): its calls were the client's
    /// choice, one at a time, with no plan or planner answers to carry on or play back.
    #[error("run {run} is an MCP session journal: there is no plan to {doing}")]
    Session { run: String, doing: &'static str },
}

/// The run id `run_started` records (`?` when there is none).
pub(crate) fn recorded_id(records: &[Record]) -> &str {
    records
        .first()
        .and_then(|r| r.data.get("run"))
        .and_then(Value::as_str)
        .unwrap_or("?")
}

/// Refuses `records` (a verified journal of run `run`) when they are an MCP session's:
/// `doing` (`resume`, `replay`) names what cannot be done with it.
pub fn refuse_session(
    run: &str,
    records: &[Record],
    doing: &'static str,
) -> Result<(), ResumeError> {
    let start = records.first().filter(|r| r.kind == Kind::RunStarted);
    if start
        .and_then(|r| r.data.get("mode"))
        .and_then(Value::as_str)
        == Some(super::SESSION_MODE)
    {
        return Err(ResumeError::Session {
            run: run.to_string(),
            doing,
        });
    }
    Ok(())
}

/// A journal read back: the checkpoint, the run's mode, and how it stopped last (none
/// when it crashed).
#[derive(Debug, Clone)]
pub struct Resumable {
    pub checkpoint: Checkpoint,
    pub mode: Mode,
    pub last_stop: Option<Value>,
}

#[derive(Deserialize)]
struct Accepted {
    revision: u32,
    goal: String,
    steps: Value,
    #[serde(default)]
    answer: Option<Value>,
    #[serde(default)]
    program: Option<String>,
}

#[derive(Deserialize)]
struct Started {
    revision: u32,
    id: StepId,
}

fn bad(r: &Record, reason: impl ToString) -> ResumeError {
    ResumeError::BadRecord {
        seq: r.seq,
        kind: r.kind.as_str(),
        reason: reason.to_string(),
    }
}

fn parse<T: for<'de> Deserialize<'de>>(r: &Record) -> Result<T, ResumeError> {
    T::deserialize(&r.data).map_err(|e| bad(r, e))
}

/// Wall time of the run's sessions: from each start or resume to the last record before
/// the next one.
fn wall(records: &[Record]) -> Duration {
    let mut total = Duration::ZERO;
    let mut first: Option<std::time::SystemTime> = None;
    let mut last: Option<std::time::SystemTime> = None;
    for r in records {
        let at = time::parse(&r.ts);
        if r.kind == Kind::Resumed {
            if let (Some(a), Some(b)) = (first, last) {
                total += b.duration_since(a).unwrap_or_default();
            }
            first = at;
        }
        first = first.or(at);
        last = at;
    }
    if let (Some(a), Some(b)) = (first, last) {
        total += b.duration_since(a).unwrap_or_default();
    }
    // Time spent waiting for people is not the run's.
    let waited: u64 = records
        .iter()
        .filter(|r| r.kind == Kind::Approval)
        .filter_map(|r| r.data.get("waited_ms").and_then(Value::as_u64))
        .sum();
    total.saturating_sub(Duration::from_millis(waited))
}

/// Reads `records` (a verified journal) back into a checkpoint for `goal` (the task's,
/// since the journal's copy is redacted). Refuses a run that completed.
pub fn checkpoint(
    records: &[Record],
    goal: &str,
    prices: &Prices,
) -> Result<Resumable, ResumeError> {
    refuse_session(recorded_id(records), records, "resume")?;
    let mut reading = Reading::new(prices);
    for r in records {
        reading.record(r)?;
    }
    reading.finish(records, goal)
}

/// What the records read so far say, one record at a time.
struct Reading<'p> {
    prices: &'p Prices,
    mode: Mode,
    spent: Spent,
    refused: u64,
    calls: Vec<PlannerCall>,
    revisions: Vec<Plan>,
    steps: Vec<StepRecord>,
    /// The provenance paths read so far (`taint`).
    taints: crate::taint::Read,
    current: Option<Current>,
    /// Steps started and not (or not truly) finished, by revision.
    running: BTreeSet<(u32, StepId)>,
    last_stop: Option<Value>,
    accepted: BTreeSet<u32>,
    /// Whether the last planner answer was acted on (accepted, rejected, or it ended the run).
    answered: bool,
}

impl<'p> Reading<'p> {
    fn new(prices: &'p Prices) -> Reading<'p> {
        Reading {
            prices,
            mode: Mode::PlanThenExecute,
            spent: Spent::default(),
            refused: 0,
            calls: Vec::new(),
            revisions: Vec::new(),
            steps: Vec::new(),
            taints: crate::taint::Read::default(),
            current: None,
            running: BTreeSet::new(),
            last_stop: None,
            accepted: BTreeSet::new(),
            answered: true,
        }
    }

    fn record(&mut self, r: &Record) -> Result<(), ResumeError> {
        self.refused += super::refusals::refused_in(r.kind.as_str(), &r.data);
        if matches!(
            r.kind,
            Kind::PlanAccepted | Kind::PlanRejected | Kind::Stopped
        ) {
            self.answered = true;
        }
        match r.kind {
            Kind::RunStarted => {
                if let Some(m) = r.data.get("mode") {
                    self.mode = Mode::deserialize(m).map_err(|e| bad(r, e))?;
                }
            }
            Kind::PlannerCalled => {
                let call: PlannerCall = parse(r)?;
                self.spent.planner_calls += 1;
                charge(&mut self.spent, &call.usage(), self.prices);
                self.calls.push(call);
                self.answered = false;
            }
            Kind::PlanAccepted => self.plan_accepted(r)?,
            Kind::Approval => self.approval(&r.data),
            Kind::StepStarted => {
                let s: Started = parse(r)?;
                self.spent.steps += 1;
                self.running.insert((s.revision, s.id));
                self.program_call(r)?;
            }
            Kind::StepFinished => {
                let rec = self.taints.step(&r.data).map_err(|e| bad(r, e))?;
                self.step_finished(rec);
            }
            Kind::Stopped => self.last_stop = Some(r.data.clone()),
            Kind::PlanRejected | Kind::Resumed | Kind::Blob | Kind::ClientConnected => {}
        }
        Ok(())
    }

    /// A plan revision becomes the current one; it counts among the revisions once it is
    /// approved (a step-wise turn needs no approval unless it hands off).
    fn plan_accepted(&mut self, r: &Record) -> Result<(), ResumeError> {
        let a: Accepted = parse(r)?;
        let plan = Plan::deserialize(serde_json::json!({
            "goal": a.goal, "revision": a.revision, "steps": a.steps, "answer": a.answer,
            "program": a.program,
        }))
        .map_err(|e| bad(r, e))?;
        self.accepted.insert(a.revision);
        let mode = self.mode;
        let turn = match self.calls.last().map(|c| &c.response) {
            Some(Reply::Turn { turn }) if mode.takes_turns() => Some(turn),
            _ => None,
        };
        let handoff = turn.is_some_and(|t| t.handoff.is_some());
        // An edited plan is accepted again after its approval: it stays approved.
        // A program is not reviewed: it runs as it is accepted.
        let approved = match &self.current {
            Some(c) if c.plan.revision == plan.revision && c.approved => true,
            _ => (mode.takes_turns() && !handoff) || mode == Mode::Code,
        };
        if mode.takes_turns() || approved {
            self.revisions.retain(|p| p.revision != plan.revision);
            self.revisions.push(plan.clone());
        }
        self.current = Some(Current {
            plan,
            approved,
            handoff,
            confidence: turn.map_or(1.0, |t| t.confidence),
            unfinished: Vec::new(),
        });
        Ok(())
    }

    /// Code mode: a call the current program started becomes a step of its revision, so
    /// that one the run stopped in is decided on (and compared with the call the resumed
    /// program makes) like an unfinished plan step.
    fn program_call(&mut self, r: &Record) -> Result<(), ResumeError> {
        let Some(c) = self.current.as_mut().filter(|c| c.plan.program.is_some()) else {
            return Ok(());
        };
        let d = &r.data;
        if d["revision"].as_u64() != Some(u64::from(c.plan.revision)) {
            return Ok(());
        }
        let step = Step::deserialize(serde_json::json!({
            "id": d["id"], "tool": d["tool"], "operation": d["operation"],
            "description": d["description"], "args": d["args"],
            "idempotent": d["idempotent"],
        }))
        .map_err(|e| bad(r, e))?;
        c.plan.steps.retain(|s| s.id != step.id);
        c.plan.steps.push(step);
        Ok(())
    }

    /// A yes to the current plan approves it.
    fn approval(&mut self, d: &Value) {
        let subject_plan = d.get("subject").and_then(Value::as_str) == Some("plan");
        // An edit that waits for its confirmation is not yet a yes.
        let confirming = d.get("then").and_then(Value::as_str) == Some("confirm");
        let yes = match d.get("decision").and_then(Value::as_str) {
            Some("approve") => true,
            Some("edit") => !confirming,
            _ => false,
        };
        let rev = d.get("revision").and_then(Value::as_u64);
        if let Some(c) = self
            .current
            .as_mut()
            .filter(|c| subject_plan && yes && rev == Some(u64::from(c.plan.revision)))
        {
            c.approved = true;
            if !self.revisions.iter().any(|p| p.revision == c.plan.revision) {
                self.revisions.push(c.plan.clone());
            }
        }
    }

    fn step_finished(&mut self, rec: StepRecord) {
        self.spent.fuel += rec.fuel;
        // An extraction's model call, charged like a planner call.
        if let Some(m) = &rec.model_call {
            charge(&mut self.spent, &Usage::from(m), self.prices);
        }
        self.running.remove(&(rec.revision, rec.id.clone()));
        // A step a cancellation cut off did not finish: it is decided on like
        // one a crash cut off.
        if rec.error.as_ref().is_some_and(|e| e.kind == "cancelled") {
            self.running.insert((rec.revision, rec.id.clone()));
            return;
        }
        self.steps.push(rec);
    }

    /// The checkpoint, unless the run already ended.
    fn finish(self, records: &[Record], goal: &str) -> Result<Resumable, ResumeError> {
        let Reading {
            mode,
            mut spent,
            refused,
            calls,
            revisions,
            steps,
            mut current,
            running,
            last_stop,
            accepted,
            answered,
            ..
        } = self;
        if let Some(stop) = &last_stop {
            let reason = stop.get("reason").and_then(Value::as_str).unwrap_or("");
            let ended = [StopReason::Completed, StopReason::PlannerStopped]
                .iter()
                .any(|s| serde_json::json!(s)["reason"] == reason);
            if ended {
                return Err(ResumeError::Finished {
                    reason: reason.to_string(),
                });
            }
        }
        if let Some(c) = current.as_mut() {
            c.unfinished = running
                .iter()
                .filter(|(rev, _)| *rev == c.plan.revision)
                .map(|(_, id)| id.clone())
                .collect();
        }
        spent.replans = if matches!(mode, Mode::PlanThenExecute | Mode::Code) {
            u32::try_from(accepted.len().saturating_sub(1)).unwrap_or(u32::MAX)
        } else {
            0
        };
        spent.wall = wall(records);
        let pending = if answered {
            None
        } else {
            calls.last().cloned()
        };
        Ok(Resumable {
            checkpoint: Checkpoint {
                goal: goal.to_string(),
                spent,
                records: steps,
                revisions,
                calls,
                current,
                pending,
                refused,
            },
            mode,
            last_stop,
        })
    }
}

/// Adds the tokens and cost of `usage` (and of every call it includes) to `spent`.
fn charge(spent: &mut Spent, usage: &Usage, prices: &Prices) {
    for u in usage.calls() {
        spent.input_tokens += u.input_tokens;
        spent.cached_input_tokens += u.cached_input_tokens;
        spent.output_tokens += u.output_tokens;
        if let Some(p) = prices.get(&u.model) {
            spent.cost_usd += u.cost_at(p);
        }
    }
}
