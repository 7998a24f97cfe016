//! Record and replay of planner calls. `toolhost run --record FILE` wraps the run's planner
//! in a [`Recorder`], which appends one JSON line per call: the request, then the reply and
//! usage or the error. A task with `kind = "replay"` runs [`open`]'s planner, a
//! [`Canned`] that serves those lines back in order with no network, so a recorded run of
//! a real model replays offline with the same outcome (only timings differ).
//!
//! The run's extractions (`model.extract`) go to the same file, one line each
//! (`"extractor"`: the request, the value or failure, usage) through an
//! [`ExtractionRecorder`], and [`extractions`] serves them back for the same steps.
//!
//! Each answer is checked against the request it is served for (mode, revision, whether
//! it is a repair or a replan, and for which step); a run that diverges from the recording
//! stops with an error naming the call, rather than answering the wrong question.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::LlmError;
use toolhost_engine::budget::Budget;
use toolhost_engine::extract::{self, ExtractFuture, Failure};
use toolhost_engine::plan::{Plan, StepId};
use toolhost_engine::planner::{
    Ask, Mode, PlanFuture, PlanRequest, Planner, PlannerError, Reply, Turn, Usage,
};
use toolhost_engine::{Answer, Canned, Order, Serves};
use toolhost_engine::{ExtractError, Extracted, Extraction, Extractor};

/// A reply as a cassette holds it (the same JSON as [`Reply`]).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
enum Recorded {
    Plan { plan: Plan },
    Turn { turn: Box<Turn> },
    GiveUp { why: String },
}

impl From<Recorded> for Reply {
    fn from(r: Recorded) -> Reply {
        match r {
            Recorded::Plan { plan } => Reply::Plan { plan },
            Recorded::Turn { turn } => Reply::Turn { turn },
            Recorded::GiveUp { why } => Reply::GiveUp { why },
        }
    }
}

/// What identifies a request across runs (history and budgets hold timings, so they
/// are recorded but not compared).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Key {
    mode: Mode,
    revision: u32,
    repair: bool,
    failure: Option<String>,
}

impl Key {
    /// The request kind this key records (the same mapping as [`Ask::of`]).
    fn ask(&self) -> Result<Ask, String> {
        Ok(match (self.mode, self.repair, &self.failure) {
            (Mode::StepWise | Mode::React, false, _) => Ask::Turn,
            (Mode::StepWise | Mode::React, true, _) => Ask::TurnRepair,
            (Mode::PlanThenExecute | Mode::Code, true, _) => Ask::Repair,
            (Mode::PlanThenExecute | Mode::Code, false, Some(f)) => Ask::Replan {
                failed: StepId::try_from(f.clone())?,
            },
            (Mode::PlanThenExecute | Mode::Code, false, None) => Ask::Plan,
        })
    }

    fn of(req: &PlanRequest) -> Key {
        Key {
            mode: req.mode,
            revision: req.revision,
            repair: !req.problems.is_empty(),
            failure: req.failure.as_ref().map(|f| f.id.to_string()),
        }
    }
}

/// One line of a cassette.
#[derive(Debug, Clone, Deserialize)]
struct Line {
    planner: String,
    key: Key,
    #[serde(default)]
    reply: Option<Recorded>,
    #[serde(default)]
    usage: Usage,
    #[serde(default)]
    error: Option<String>,
}

/// Wraps a planner and appends each of its calls to a cassette file.
pub struct Recorder {
    inner: Box<dyn Planner>,
    path: PathBuf,
    out: File,
}

impl Recorder {
    /// Records `inner`'s calls to `path` (created or truncated).
    pub fn create(inner: Box<dyn Planner>, path: &Path) -> Result<Recorder, LlmError> {
        let out = open_cassette(path, true)?;
        Ok(Recorder {
            inner,
            path: path.to_path_buf(),
            out,
        })
    }

    fn write(&mut self, line: &Value) -> std::io::Result<()> {
        append(&mut self.out, line)
    }

    fn write_failed(&self, e: &std::io::Error) -> PlannerError {
        PlannerError {
            planner: self.name(),
            reason: format!("cannot write cassette `{}`: {e}", self.path.display()),
            usage: Usage::default(),
            budget: None,
        }
    }
}

impl Planner for Recorder {
    fn name(&self) -> String {
        self.inner.name()
    }

    fn estimate(&self, req: &PlanRequest) -> Usage {
        self.inner.estimate(req)
    }

    fn plan<'a>(&'a mut self, req: &'a PlanRequest) -> PlanFuture<'a> {
        Box::pin(async move {
            let result = self.inner.plan(req).await;
            let mut line = json!({
                "planner": self.inner.name(),
                "key": Key::of(req),
                "request": req,
            });
            match &result {
                Ok((reply, usage)) => {
                    line["reply"] = json!(reply);
                    line["usage"] = json!(usage);
                }
                Err(e) => line["error"] = json!(e.reason),
            }
            self.write(&line).map_err(|e| self.write_failed(&e))?;
            result
        })
    }

    fn fast_forward(&mut self, asked: &[Ask]) {
        self.inner.fast_forward(asked);
    }
}

/// The planner of `kind = "replay"`: the cassette at `path`'s answers, served in recorded
/// order with no network ([`Order::Recorded`]: a request that is not the one recorded
/// next fails the call, naming both).
pub fn open(path: &Path) -> Result<Canned, LlmError> {
    let shown = path.display().to_string();
    let bad = |reason: String| LlmError::Cassette {
        path: shown.clone(),
        reason,
    };
    let text = std::fs::read_to_string(path).map_err(|e| bad(e.to_string()))?;
    let mut answers = Vec::new();
    for (i, l) in text.lines().enumerate() {
        if l.trim().is_empty() {
            continue;
        }
        let v: Value = serde_json::from_str(l).map_err(|e| bad(format!("line {}: {e}", i + 1)))?;
        if v.get("extractor").is_some() {
            continue;
        }
        let line = Line::deserialize(v).map_err(|e| bad(format!("line {}: {e}", i + 1)))?;
        let reply = match (line.reply, line.error) {
            (_, Some(reason)) => Err(PlannerError {
                planner: line.planner,
                reason,
                usage: Usage::default(),
                budget: None,
            }),
            (Some(r), None) => Ok(Reply::from(r)),
            (None, None) => return Err(bad(format!("line {}: neither reply nor error", i + 1))),
        };
        answers.push(Answer {
            serves: Serves::Ask(
                line.key
                    .ask()
                    .map_err(|e| bad(format!("line {}: {e}", i + 1)))?,
            ),
            revision: Some(line.key.revision),
            reply,
            usage: line.usage,
        });
    }
    Ok(Canned::new(
        "replay",
        format!("cassette `{shown}`"),
        Order::Recorded,
        answers,
    ))
}

/// The cassette at `path` opened to append to, emptied first if `fresh`. A cassette holds
/// tool outputs in the clear: created readable by the operator only.
fn open_cassette(path: &Path, fresh: bool) -> Result<File, LlmError> {
    let mut o = std::fs::OpenOptions::new();
    o.append(true).create(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut o, 0o600);
    o.open(path)
        .and_then(|f| {
            if fresh {
                f.set_len(0).map(|()| f)
            } else {
                Ok(f)
            }
        })
        .map_err(|e| LlmError::Cassette {
            path: path.display().to_string(),
            reason: e.to_string(),
        })
}

/// One line in `out`, written with a single `write` (two writers append to a cassette:
/// the planner's and the extractor's) and flushed at once, so a run that dies mid-way
/// leaves every call before it on disk.
fn append(out: &mut File, line: &Value) -> std::io::Result<()> {
    out.write_all(format!("{line}\n").as_bytes())
        .and_then(|()| out.flush())
}

/// Wraps an extractor and appends each of its extractions to a cassette.
pub struct ExtractionRecorder {
    inner: Arc<dyn Extractor>,
    path: PathBuf,
    out: Arc<Mutex<File>>,
}

impl ExtractionRecorder {
    /// Records `inner`'s extractions to the cassette at `path`, after what a [`Recorder`]
    /// created there writes.
    pub fn append(inner: Arc<dyn Extractor>, path: &Path) -> Result<ExtractionRecorder, LlmError> {
        let out = open_cassette(path, false)?;
        Ok(ExtractionRecorder {
            inner,
            path: path.to_path_buf(),
            out: Arc::new(Mutex::new(out)),
        })
    }
}

impl Extractor for ExtractionRecorder {
    fn name(&self) -> String {
        self.inner.name()
    }

    fn estimate(&self, req: &Extraction) -> Usage {
        self.inner.estimate(req)
    }

    fn extract(&self, req: Extraction) -> ExtractFuture {
        let (inner, out, path) = (self.inner.clone(), self.out.clone(), self.path.clone());
        Box::pin(async move {
            let result = inner.extract(req.clone()).await;
            let mut line = json!({
                "extractor": inner.name(),
                "step": req.step,
                "revision": req.revision,
                "request": {"instruction": req.instruction, "input": req.input, "schema": req.schema},
            });
            match &result {
                Ok(x) => {
                    line["value"] = x.value.clone();
                    line["usage"] = json!(x.usage);
                    line["attempts"] = json!(x.attempts);
                }
                Err(e) => {
                    line["error"] =
                        json!({"failure": failure_name(&e.failure), "reason": e.reason});
                    line["usage"] = json!(e.usage);
                    line["attempts"] = json!(e.attempts);
                }
            }
            let mut file = out.lock().unwrap_or_else(|e| e.into_inner());
            if let Err(e) = append(&mut file, &line) {
                return Err(ExtractError {
                    failure: Failure::Unavailable,
                    reason: format!("cannot write cassette `{}`: {e}", path.display()),
                    usage: match &result {
                        Ok(x) => x.usage.clone(),
                        Err(e) => e.usage.clone(),
                    },
                    attempts: 0,
                });
            }
            result
        })
    }
}

fn failure_name(f: &Failure) -> String {
    match f {
        Failure::Unusable => "unusable".into(),
        Failure::Budget(b) => format!("budget:{}", json!(b).as_str().unwrap_or("")),
        _ => "unavailable".into(),
    }
}

/// An extraction as a cassette holds it.
#[derive(Debug, Clone, Deserialize)]
struct ExtractionLine {
    extractor: String,
    step: StepId,
    revision: u32,
    #[serde(default)]
    value: Option<Value>,
    #[serde(default)]
    error: Option<ExtractionFailed>,
    #[serde(default)]
    usage: Usage,
    #[serde(default)]
    attempts: u32,
}

#[derive(Debug, Clone, Deserialize)]
struct ExtractionFailed {
    failure: String,
    reason: String,
}

/// The extractor of a task whose planner is `kind = "replay"`: the extractions the
/// cassette at `path` recorded, each served back for the same step of the same revision.
pub fn extractions(path: &Path) -> Result<extract::Recorded, LlmError> {
    let shown = path.display().to_string();
    let bad = |reason: String| LlmError::Cassette {
        path: shown.clone(),
        reason,
    };
    let text = std::fs::read_to_string(path).map_err(|e| bad(e.to_string()))?;
    let mut served = BTreeMap::new();
    for (i, l) in text.lines().enumerate() {
        let v: Value = match serde_json::from_str(l) {
            Ok(v) => v,
            // `open` reports a line that is not JSON.
            Err(_) => continue,
        };
        if v.get("extractor").is_none() {
            continue;
        }
        let x = ExtractionLine::deserialize(v).map_err(|e| bad(format!("line {}: {e}", i + 1)))?;
        let result = match (x.value, x.error) {
            (_, Some(e)) => Err(ExtractError {
                failure: match e.failure.strip_prefix("budget:") {
                    Some(b) => {
                        Budget::deserialize(json!(b)).map_or(Failure::Unavailable, Failure::Budget)
                    }
                    None if e.failure == "unusable" => Failure::Unusable,
                    None => Failure::Unavailable,
                },
                reason: format!("{} (recorded from `{}`)", e.reason, x.extractor),
                usage: x.usage,
                attempts: x.attempts,
            }),
            (Some(value), None) => Ok(Extracted {
                value,
                usage: x.usage,
                attempts: x.attempts,
            }),
            (None, None) => return Err(bad(format!("line {}: neither value nor error", i + 1))),
        };
        served.insert((x.revision, x.step), result);
    }
    Ok(extract::Recorded::new(
        format!("cassette `{shown}`"),
        served,
    ))
}
