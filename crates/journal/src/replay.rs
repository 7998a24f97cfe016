//! Replaying a journaled run: [`recorded`] serves the planner's journaled answers in
//! order and [`extractions`] each extraction step's journaled value (no model is called)
//! while the tools run afresh, and [`compare`] lists where the replay's steps and stop
//! differ from the recording.
//!
//! The journal holds redacted content, so a replay sees what the journal shows: a plan
//! argument that held an e-mail address replays as `[redacted:email]`, and a replayed
//! output is redacted the same way before it is compared.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{Kind, Record, Redactor};
use toolhost_engine::StepRecord;
use toolhost_engine::budget::Budget;
use toolhost_engine::extract::{Failure, Recorded};
use toolhost_engine::planner::Usage;
use toolhost_engine::{Answer, Canned, Order, Serves};
use toolhost_engine::{ExtractError, Extracted};
use toolhost_engine::{PlannerCall, RunReport};

/// The planner of a replay: the journaled answers given back in order
/// ([`Order::Recorded`]), failing the call — so the run escalates — as soon as the replay
/// asks for something the recording did not. An MCP session's journal is refused: it
/// has no planner answers.
pub fn recorded(records: &[Record]) -> Result<Canned, super::ResumeError> {
    let run = super::resume::recorded_id(records);
    super::refuse_session(run, records, "replay")?;
    let answers = records
        .iter()
        .filter(|r| r.kind == Kind::PlannerCalled)
        .map(|r| {
            let call =
                PlannerCall::deserialize(&r.data).map_err(|e| super::ResumeError::BadRecord {
                    seq: r.seq,
                    kind: r.kind.as_str(),
                    reason: e.to_string(),
                })?;
            Ok(Answer {
                serves: Serves::Ask(call.ask.clone()),
                revision: Some(call.revision),
                usage: call.usage(),
                reply: Ok(call.response),
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Canned::new(
        "recorded",
        "the recorded run",
        Order::Recorded,
        answers,
    ))
}

/// The extractor of a replay: each extraction step's journaled value (or failure) served
/// back for the same step of the same revision, with no model called.
pub fn extractions(records: &[Record]) -> Result<Recorded, super::ResumeError> {
    let mut served = BTreeMap::new();
    let mut taints = crate::taint::Read::default();
    for r in records.iter().filter(|r| r.kind == Kind::StepFinished) {
        let rec = taints
            .step(&r.data)
            .map_err(|reason| super::ResumeError::BadRecord {
                seq: r.seq,
                kind: r.kind.as_str(),
                reason,
            })?;
        let Some(call) = &rec.model_call else {
            continue;
        };
        let usage = Usage::from(call);
        let result = match (rec.output, rec.error) {
            (Some(value), None) => Ok(Extracted {
                value,
                usage,
                attempts: call.attempts,
            }),
            (_, error) => {
                let (kind, reason, value) = error
                    .map(|e| (e.kind, e.message, e.value))
                    .unwrap_or_default();
                let failure = match kind.as_str() {
                    "bad_extraction" => Failure::Unusable,
                    "budget_exhausted" => value
                        .and_then(|v| Budget::deserialize(v).ok())
                        .map_or(Failure::Unavailable, Failure::Budget),
                    _ => Failure::Unavailable,
                };
                Err(ExtractError {
                    failure,
                    reason,
                    usage,
                    attempts: call.attempts,
                })
            }
        };
        served.insert((rec.revision, rec.id), result);
    }
    Ok(Recorded::new("the recorded run", served))
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

/// A code-mode step's call, compared too: a program chooses its calls as it runs, where a
/// plan's steps are the journaled plan's.
fn with_call(mut shape: Value, tool: &Value, operation: &Value, args: &Value) -> Value {
    shape["call"] = serde_json::json!({"tool": tool, "operation": operation, "args": args});
    shape
}

/// What a recording says: each finished step's shape, its stop and its planner calls.
struct Recording {
    steps: BTreeMap<String, Value>,
    stop: Value,
    calls: u64,
    /// Code mode: steps are compared with their calls too.
    code: bool,
}

fn recording(recorded: &[Record]) -> Recording {
    let mut before: BTreeMap<String, Value> = BTreeMap::new();
    let mut stop = Value::Null;
    let mut calls = 0u64;
    let code = recorded
        .first()
        .is_some_and(|r| r.kind == Kind::RunStarted && r.data["mode"] == "code");
    for r in recorded {
        let d = &r.data;
        match r.kind {
            Kind::StepFinished => {
                let k = key(
                    d["revision"].as_u64().unwrap_or(0),
                    d["id"].as_str().unwrap_or(""),
                );
                let mut was = shape(&d["status"], &d["output"], &d["error"]["kind"]);
                if code {
                    was = with_call(was, &d["tool"], &d["operation"], &d["args"]);
                }
                before.insert(k, was);
            }
            Kind::Stopped => stop = d["reason"].clone(),
            Kind::PlannerCalled => calls += 1,
            _ => {}
        }
    }
    Recording {
        steps: before,
        stop,
        calls,
        code,
    }
}

/// Where `replay` differs from the run journaled in `recorded`: each step's status, output
/// and error kind (outputs redacted by `redactor` first, as the recording's were) and, in
/// code mode, its call (tool, operation and arguments, redacted the same way), the steps
/// only one of them ran, the stop reason and the number of planner calls.
pub fn compare(recorded: &[Record], replay: &RunReport, redactor: &Redactor) -> Vec<Divergence> {
    let mut out = Vec::new();
    let Recording {
        steps: before,
        stop,
        calls,
        code,
    } = recording(recorded);
    let mut after: BTreeMap<String, Value> = BTreeMap::new();
    for s in &replay.steps {
        let mut now = replayed(s, redactor);
        if code {
            let mut args = s.args.clone();
            redactor.value(&mut args);
            now = with_call(
                now,
                &serde_json::json!(s.tool),
                &serde_json::json!(s.operation),
                &args,
            );
        }
        after.insert(key(u64::from(s.revision), s.id.as_str()), now);
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
    let fields: Vec<&str> = ["call", "status", "output", "error kind"]
        .into_iter()
        .zip(["call", "status", "output", "error"])
        .filter(|(_, k)| was[k] != now[k])
        .map(|(name, _)| name)
        .collect();
    match fields.as_slice() {
        [one] => format!("the step's {one} differs"),
        [rest @ .., last] => format!("the step's {} and {last} differ", rest.join(", ")),
        [] => "the step differs".into(),
    }
}
