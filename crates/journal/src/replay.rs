//! Replaying a journaled run: [`Recorded`] serves the planner's journaled answers in
//! order (no model is called) while the tools run afresh, and [`compare`] lists where the
//! replay's steps and stop differ from the recording.
//!
//! The journal holds redacted content, so a replay sees what the journal shows: a plan
//! argument that held an e-mail address replays as `[redacted:email]`, and a replayed
//! output is redacted the same way before it is compared.

use std::collections::{BTreeMap, VecDeque};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{Kind, Record, Redactor};
use toolhost_engine::StepRecord;
use toolhost_engine::planner::{Ask, PlanFuture, PlanRequest, Planner, PlannerError, Usage};
use toolhost_engine::run::{PlannerCall, RunReport};

/// A planner that gives the journaled answers back, in order, and fails — so the run
/// escalates — as soon as the replay asks for something the recording did not.
#[derive(Debug)]
pub struct Recorded {
    calls: VecDeque<PlannerCall>,
    served: usize,
}

impl Recorded {
    /// The planner calls of `records`.
    pub fn from_records(records: &[Record]) -> Result<Recorded, super::ResumeError> {
        let calls = records
            .iter()
            .filter(|r| r.kind == Kind::PlannerCalled)
            .map(|r| {
                PlannerCall::deserialize(&r.data).map_err(|e| super::ResumeError::BadRecord {
                    seq: r.seq,
                    kind: r.kind.as_str(),
                    reason: e.to_string(),
                })
            })
            .collect::<Result<_, _>>()?;
        Ok(Recorded { calls, served: 0 })
    }

    fn fail(&self, reason: String) -> PlannerError {
        PlannerError {
            planner: "recorded".into(),
            reason,
            usage: Usage::default(),
            budget: None,
        }
    }
}

impl Planner for Recorded {
    fn name(&self) -> String {
        "recorded".into()
    }

    /// The recorded usage: the replay's budgets see what the recorded run's saw.
    fn estimate(&self, _req: &PlanRequest) -> Usage {
        self.calls.front().map(usage_of).unwrap_or_default()
    }

    fn plan<'a>(&'a mut self, req: &'a PlanRequest) -> PlanFuture<'a> {
        let asked = Ask::of(req);
        let result = match self.calls.pop_front() {
            None => Err(self.fail(format!(
                "the replay asked the planner for {} (revision {}), but the recorded run made only {} planner call(s): the replay went another way",
                describe(&asked),
                req.revision,
                self.served
            ))),
            Some(call) if call.ask != asked => Err(self.fail(format!(
                "planner call {} of the replay asks for {}, where the recorded run asked for {}: the replay went another way",
                self.served + 1,
                describe(&asked),
                describe(&call.ask)
            ))),
            Some(call) => {
                self.served += 1;
                Ok((call.response.clone(), usage_of(&call)))
            }
        };
        Box::pin(async move { result })
    }
}

fn usage_of(c: &PlannerCall) -> Usage {
    Usage {
        model: c.model.clone(),
        input_tokens: c.input_tokens,
        output_tokens: c.output_tokens,
        also: c.also.clone(),
        cached: c.cached,
    }
}

fn describe(a: &Ask) -> String {
    match a {
        Ask::Plan => "a first plan".into(),
        Ask::Replan { failed } => format!("a revised plan after step `{failed}` failed"),
        Ask::Repair => "a repaired plan".into(),
        Ask::Turn => "a turn".into(),
        Ask::TurnRepair => "a repaired turn".into(),
    }
}

/// One difference between a recording and its replay.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Divergence {
    /// `revision:step`, or `stop` / `planner_calls`.
    pub at: String,
    pub what: String,
    pub recorded: Value,
    pub replayed: Value,
}

fn key(revision: u64, id: &str) -> String {
    format!("r{revision}:{id}")
}

fn shape(status: &Value, output: &Value, error_kind: &Value) -> Value {
    serde_json::json!({"status": status, "output": output, "error": error_kind})
}

/// Where `replay` differs from the run journaled in `recorded`: each step's status, output
/// and error kind (outputs redacted by `redactor` first, as the recording's were), the steps
/// only one of them ran, the stop reason and the number of planner calls.
pub fn compare(recorded: &[Record], replay: &RunReport, redactor: &Redactor) -> Vec<Divergence> {
    let mut out = Vec::new();
    let mut before: BTreeMap<String, Value> = BTreeMap::new();
    let mut stop = Value::Null;
    let mut calls = 0u64;
    for r in recorded {
        let d = &r.data;
        match r.kind {
            Kind::StepFinished => {
                let k = key(
                    d["revision"].as_u64().unwrap_or(0),
                    d["id"].as_str().unwrap_or(""),
                );
                before.insert(k, shape(&d["status"], &d["output"], &d["error"]["kind"]));
            }
            Kind::Stopped => stop = d["reason"].clone(),
            Kind::PlannerCalled => calls += 1,
            _ => {}
        }
    }
    let mut after: BTreeMap<String, Value> = BTreeMap::new();
    for s in &replay.steps {
        after.insert(
            key(u64::from(s.revision), s.id.as_str()),
            replayed(s, redactor),
        );
    }
    for (k, was) in &before {
        match after.get(k) {
            None => out.push(Divergence {
                at: k.clone(),
                what: "the recorded run finished this step; the replay did not".into(),
                recorded: was.clone(),
                replayed: Value::Null,
            }),
            Some(now) if now != was => out.push(Divergence {
                at: k.clone(),
                what: differs(was, now),
                recorded: was.clone(),
                replayed: now.clone(),
            }),
            Some(_) => {}
        }
    }
    for (k, now) in &after {
        if !before.contains_key(k) {
            out.push(Divergence {
                at: k.clone(),
                what: "the replay ran this step; the recorded run did not".into(),
                recorded: Value::Null,
                replayed: now.clone(),
            });
        }
    }
    let stop_now = serde_json::json!(replay.stop)["reason"].clone();
    if stop_now != stop {
        out.push(Divergence {
            at: "stop".into(),
            what: format!(
                "the replay stopped `{}`: {}",
                stop_now.as_str().unwrap_or("?"),
                replay.stop
            ),
            recorded: stop,
            replayed: stop_now,
        });
    }
    let calls_now = replay.planner_calls.len() as u64;
    if calls_now != calls {
        out.push(Divergence {
            at: "planner_calls".into(),
            what: "a different number of planner calls".into(),
            recorded: calls.into(),
            replayed: calls_now.into(),
        });
    }
    out
}

fn replayed(s: &StepRecord, redactor: &Redactor) -> Value {
    let mut output = serde_json::json!(s.output);
    redactor.value(&mut output);
    let status = serde_json::json!(s.status);
    let kind = s
        .error
        .as_ref()
        .map_or(Value::Null, |e| Value::String(e.kind.clone()));
    shape(&status, &output, &kind)
}

fn differs(was: &Value, now: &Value) -> String {
    let fields: Vec<&str> = ["status", "output", "error kind"]
        .into_iter()
        .zip(["status", "output", "error"])
        .filter(|(_, k)| was[k] != now[k])
        .map(|(name, _)| name)
        .collect();
    match fields.as_slice() {
        [one] => format!("the step's {one} differs"),
        [rest @ .., last] => format!("the step's {} and {last} differ", rest.join(", ")),
        [] => "the step differs".into(),
    }
}
