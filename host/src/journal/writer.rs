//! [`Journal`]: appends one redacted, hash-chained record per engine event, and syncs it to
//! disk at every step boundary.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::SystemTime;

use serde::Serialize;
use serde_json::{Value, json};

use super::redact::Redactor;
use super::{ChainProblem, GENESIS, JournalError, Kind, Record, runs_dir, time};
use crate::cache::sha256_hex;
use crate::engine::approval::{Approver, PlanDecision, StepDecision};
use crate::engine::budget::{Budgets, Spent, StopReason};
use crate::engine::plan::Step;
use crate::engine::planner::Mode;
use crate::engine::record::StepRecord;
use crate::engine::run::{Observer, PlannerCall};
use crate::engine::validate::{Catalog, Problem, ValidPlan};

/// A file a run depends on, by content.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FileDigest {
    pub path: String,
    /// Hex SHA-256 of the file's bytes.
    pub sha256: String,
}

impl FileDigest {
    /// Reads `path` and hashes it.
    pub fn of(path: &Path) -> std::io::Result<FileDigest> {
        Ok(FileDigest {
            path: path.display().to_string(),
            sha256: sha256_hex(&std::fs::read(path)?),
        })
    }
}

/// What the first record says about a run.
#[derive(Debug, Clone, PartialEq)]
pub struct RunStart {
    pub goal: String,
    pub mode: Mode,
    pub task: Option<FileDigest>,
    pub policy: FileDigest,
    /// Tool name → component file and digest.
    pub tools: BTreeMap<String, FileDigest>,
    pub budgets: Budgets,
    pub max_parallel: usize,
    /// The run this one replays (`toolhost replay`).
    pub replay_of: Option<String>,
}

/// A reopened journal's records, and the torn last line cut off it.
#[derive(Debug, Clone)]
pub struct Reopened {
    pub records: Vec<Record>,
    pub torn: Option<Torn>,
}

/// A torn last line: where it was, how many bytes were cut, and why it counted as torn.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Torn {
    pub line: usize,
    pub bytes: usize,
    pub why: String,
}

/// Appends a run's records. Cheap to clone: clones write to the same file, in order.
///
/// Writing never fails a callback (the engine's [`Observer`] cannot be told): the first
/// write error is kept, nothing more is written (a gap would break the chain), and
/// [`Journal::error`] reports it when the run ends.
#[derive(Debug, Clone)]
pub struct Journal {
    inner: Arc<Mutex<Writer>>,
    id: String,
    path: PathBuf,
}

#[derive(Debug)]
struct Writer {
    file: File,
    path: PathBuf,
    seq: u64,
    prev: String,
    redactor: Redactor,
    error: Option<JournalError>,
}

impl Writer {
    fn append(&mut self, kind: Kind, data: Value, sync: bool) {
        if self.error.is_some() {
            return;
        }
        let record = Record {
            seq: self.seq + 1,
            ts: time::format(SystemTime::now()),
            prev: self.prev.clone(),
            kind,
            data,
        };
        // Compact JSON escapes every newline, so one record is exactly one line.
        let line = serde_json::to_string(&record).expect("records serialise");
        let mut bytes = Vec::with_capacity(line.len() + 1);
        bytes.extend_from_slice(line.as_bytes());
        bytes.push(b'\n');
        let written = self
            .file
            .write_all(&bytes)
            .and_then(|()| if sync { self.file.sync_data() } else { Ok(()) });
        match written {
            Ok(()) => {
                self.seq += 1;
                self.prev = sha256_hex(line.as_bytes());
                super::crash::after_record(self.seq);
            }
            Err(e) => {
                tracing::error!(journal = %self.path.display(), error = %e, "journal write failed; no further records are written");
                self.error = Some(JournalError::Write {
                    path: self.path.display().to_string(),
                    reason: e.to_string(),
                });
            }
        }
    }
}

fn new_id() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let now = SystemTime::now();
    let nanos = now
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap_or_default()
        .as_nanos();
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let seed = format!("{nanos}-{}-{n}", std::process::id());
    format!(
        "{}-{}",
        time::compact(now),
        &sha256_hex(seed.as_bytes())[..8]
    )
}

fn create_dir(dir: &Path) -> Result<(), JournalError> {
    let mut b = std::fs::DirBuilder::new();
    b.recursive(true);
    // Journals hold tool outputs: readable by the operator only.
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut b, 0o700);
    b.create(dir).map_err(|e| JournalError::CreateDir {
        path: dir.display().to_string(),
        reason: e.to_string(),
    })
}

fn open_new(path: &Path) -> std::io::Result<File> {
    let mut o = std::fs::OpenOptions::new();
    o.append(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut o, 0o600);
    o.open(path)
}

impl Journal {
    /// Creates a new journal under `state_dir` and writes (and syncs) its `run_started`
    /// record.
    pub fn create(
        state_dir: &Path,
        start: &RunStart,
        redactor: Redactor,
    ) -> Result<Journal, JournalError> {
        let dir = runs_dir(state_dir);
        create_dir(&dir)?;
        let write_err = |path: &Path, e: std::io::Error| JournalError::Write {
            path: path.display().to_string(),
            reason: e.to_string(),
        };
        let (id, path, file) = loop {
            let id = new_id();
            let path = dir.join(format!("{id}.jsonl"));
            match open_new(&path) {
                Ok(f) => break (id, path, f),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(write_err(&path, e)),
            }
        };
        // The new directory entry must survive a crash as well as the file's contents.
        File::open(&dir)
            .and_then(|d| d.sync_all())
            .map_err(|e| write_err(&dir, e))?;
        let red = |s: &str| redactor.text(s).into_owned();
        let file_json = |f: &FileDigest| json!({"path": red(&f.path), "sha256": f.sha256});
        let data = json!({
            "run": id,
            "toolhost": env!("CARGO_PKG_VERSION"),
            "goal": red(&start.goal),
            "mode": start.mode,
            "task": start.task.as_ref().map(file_json),
            "policy": file_json(&start.policy),
            "tools": start.tools.iter().map(|(n, f)| (n.clone(), file_json(f))).collect::<serde_json::Map<_, _>>(),
            "budgets": start.budgets,
            "max_parallel": start.max_parallel,
            "replay_of": start.replay_of,
            "redaction": {
                "builtin": ["secret", "email", "phone", "card", "api_key"],
                "custom_patterns": redactor.custom_patterns(),
            },
        });
        let mut writer = Writer {
            file,
            path: path.clone(),
            seq: 0,
            prev: GENESIS.to_string(),
            redactor,
            error: None,
        };
        writer.append(Kind::RunStarted, data, true);
        if let Some(e) = writer.error.take() {
            return Err(e);
        }
        Ok(Journal {
            inner: Arc::new(Mutex::new(writer)),
            id,
            path,
        })
    }

    /// Opens the journal at `path` to carry its run on: the chain must verify, except for a
    /// torn last line (the run was killed mid-write), which is cut off and returned so the
    /// caller can record it.
    pub fn reopen(path: &Path, redactor: Redactor) -> Result<(Journal, Reopened), JournalError> {
        let shown = || path.display().to_string();
        let v = super::verify(path, None)?;
        let mut torn = None;
        match v.problem {
            None => {}
            Some(ChainProblem::Torn { line, why }) if line > 1 => {
                let bytes = std::fs::read(path).map_err(|e| JournalError::Read {
                    path: shown(),
                    reason: e.to_string(),
                })?;
                // The intact lines end at the newline before the torn one.
                let keep = bytes
                    .iter()
                    .enumerate()
                    .filter(|(_, b)| **b == b'\n')
                    .nth(line - 2)
                    .map_or(0, |(i, _)| i + 1);
                let cut = bytes.len() - keep;
                std::fs::OpenOptions::new()
                    .write(true)
                    .open(path)
                    .and_then(|f| {
                        f.set_len(keep as u64)?;
                        f.sync_all()
                    })
                    .map_err(|e| JournalError::Write {
                        path: shown(),
                        reason: e.to_string(),
                    })?;
                torn = Some(Torn {
                    line,
                    bytes: cut,
                    why,
                });
            }
            Some(problem) => {
                return Err(JournalError::Broken {
                    path: shown(),
                    problem,
                });
            }
        }
        let file = std::fs::OpenOptions::new()
            .append(true)
            .open(path)
            .map_err(|e| JournalError::Write {
                path: shown(),
                reason: e.to_string(),
            })?;
        let writer = Writer {
            file,
            path: path.to_path_buf(),
            seq: v.records.len() as u64,
            prev: v.head.clone().unwrap_or_else(|| GENESIS.to_string()),
            redactor,
            error: None,
        };
        let journal = Journal {
            inner: Arc::new(Mutex::new(writer)),
            id: super::run_id(path),
            path: path.to_path_buf(),
        };
        Ok((
            journal,
            Reopened {
                records: v.records,
                torn,
            },
        ))
    }

    /// Records (synced) that the run is carried on.
    pub fn resumed(&self, data: &Value) {
        self.append(Kind::Resumed, data, true);
    }

    /// The run id: `YYYYMMDDTHHMMSSZ-` and 8 hex digits.
    pub fn id(&self) -> &str {
        &self.id
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn writer(&self) -> MutexGuard<'_, Writer> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Hex SHA-256 of the last record written: keep it to detect a cut or edited tail
    /// (`toolhost journal verify --head`).
    pub fn head(&self) -> String {
        self.writer().prev.clone()
    }

    /// Records written so far.
    pub fn records(&self) -> u64 {
        self.writer().seq
    }

    /// The first write failure, if any: the journal ends before it.
    pub fn error(&self) -> Option<String> {
        self.writer().error.as_ref().map(ToString::to_string)
    }

    /// Appends a record whose `data` is redacted whole.
    fn append<T: Serialize + ?Sized>(&self, kind: Kind, data: &T, sync: bool) {
        let mut w = self.writer();
        let data = w.redactor.json(data);
        w.append(kind, data, sync);
    }

    /// Wraps `inner` so each decision it makes is journaled (synced) before it takes
    /// effect.
    pub fn approvals<'a>(&self, inner: &'a mut dyn Approver) -> Approvals<'a> {
        Approvals {
            journal: self.clone(),
            inner,
        }
    }
}

impl Observer for Journal {
    fn plan_accepted(&mut self, plan: &ValidPlan) {
        let data = json!({
            "revision": plan.plan.revision,
            "goal": plan.plan.goal,
            "steps": plan.plan.steps,
            "order": plan.order,
        });
        self.append(Kind::PlanAccepted, &data, true);
    }

    fn plan_rejected(&mut self, problems: &[Problem]) {
        self.append(Kind::PlanRejected, &json!({ "problems": problems }), false);
    }

    fn planner_called(&mut self, call: &PlannerCall) {
        // The answer is kept (redacted) for resume and replay, but not a step-wise turn's
        // free-form reasoning: no redaction pattern can vouch for prose.
        let mut data = serde_json::to_value(call).expect("planner calls serialise");
        if let Some(turn) = data
            .pointer_mut("/response/turn")
            .and_then(Value::as_object_mut)
        {
            turn.remove("thought");
        }
        self.append(Kind::PlannerCalled, &data, false);
    }

    fn step_started(&mut self, step: &Step, revision: u32) {
        // Written (so it survives the process being killed) but not synced: an fsync here
        // would hold up the launch of the next parallel step. The step's finish, or the
        // next step boundary, syncs it.
        let data = json!({
            "revision": revision,
            "id": step.id,
            "tool": step.tool,
            "operation": step.operation,
            "description": step.description,
            "args": step.args,
            "idempotent": step.idempotent,
        });
        self.append(Kind::StepStarted, &data, false);
    }

    fn step_finished(&mut self, record: &StepRecord) {
        let mut w = self.writer();
        let mut data = serde_json::to_value(record).expect("step records serialise");
        // Numbers such as fuel and timings are the host's own; only content is redacted.
        for key in ["args", "output", "error", "evaluation", "events"] {
            if let Some(v) = data.get_mut(key) {
                w.redactor.value(v);
            }
        }
        if let Value::Object(map) = &mut data {
            map.insert(
                "duration_us".into(),
                record.finished_us.saturating_sub(record.started_us).into(),
            );
        }
        w.append(Kind::StepFinished, data, true);
    }

    fn stopped(&mut self, reason: &StopReason, spent: &Spent, answer: Option<&Value>) {
        let mut data = json!(reason);
        data["spent"] = json!(spent);
        data["answer"] = json!(answer);
        self.append(Kind::Stopped, &data, true);
    }

    fn run_id(&self) -> Option<String> {
        Some(self.id.clone())
    }
}

/// An [`Approver`] that journals each decision of the approver it wraps.
pub struct Approvals<'a> {
    journal: Journal,
    inner: &'a mut dyn Approver,
}

impl Approver for Approvals<'_> {
    fn review_plan(&mut self, plan: &ValidPlan, catalog: &Catalog) -> PlanDecision {
        let decision = self.inner.review_plan(plan, catalog);
        let data = match &decision {
            PlanDecision::Approve => json!({"decision": "approve"}),
            PlanDecision::Edit(edited) => json!({"decision": "edit", "edited": edited}),
            PlanDecision::Reject(why) => json!({"decision": "reject", "reason": why}),
        };
        let mut data = data;
        data["subject"] = "plan".into();
        data["revision"] = plan.plan.revision.into();
        self.journal.append(Kind::Approval, &data, true);
        decision
    }

    fn approve_step(&mut self, step: &Step, why: &str, catalog: &Catalog) -> StepDecision {
        let decision = self.inner.approve_step(step, why, catalog);
        let (name, reason) = match &decision {
            StepDecision::Approve => ("approve", None),
            StepDecision::Reject(r) => ("reject", Some(r.as_str())),
            StepDecision::NoApprover => ("no_approver", None),
        };
        let data = json!({
            "subject": "step",
            "step": step.id,
            "tool": step.tool,
            "operation": step.operation,
            "why": why,
            "decision": name,
            "reason": reason,
        });
        self.journal.append(Kind::Approval, &data, true);
        decision
    }
}

/// Feeds every event to two observers, `0` first (put the journal there, so a record is
/// on disk before it is shown).
pub struct Tee<'a>(pub &'a mut dyn Observer, pub &'a mut dyn Observer);

impl Observer for Tee<'_> {
    fn plan_accepted(&mut self, plan: &ValidPlan) {
        self.0.plan_accepted(plan);
        self.1.plan_accepted(plan);
    }

    fn plan_rejected(&mut self, problems: &[Problem]) {
        self.0.plan_rejected(problems);
        self.1.plan_rejected(problems);
    }

    fn planner_called(&mut self, call: &PlannerCall) {
        self.0.planner_called(call);
        self.1.planner_called(call);
    }

    fn step_started(&mut self, step: &Step, revision: u32) {
        self.0.step_started(step, revision);
        self.1.step_started(step, revision);
    }

    fn step_finished(&mut self, record: &StepRecord) {
        self.0.step_finished(record);
        self.1.step_finished(record);
    }

    fn stopped(&mut self, reason: &StopReason, spent: &Spent, answer: Option<&Value>) {
        self.0.stopped(reason, spent, answer);
        self.1.stopped(reason, spent, answer);
    }

    fn run_id(&self) -> Option<String> {
        self.0.run_id().or_else(|| self.1.run_id())
    }
}
