//! `toolhost mcp --code`: the server's `run_program` tool runs each program as a code-mode
//! run over the served tools and the same policy (`toolhost run` of a task whose planner
//! holds the program, no revisions), so every call the program makes is validated,
//! policy-checked, budgeted and journaled as a plan step, in a journal of its own under the
//! state directory, which `toolhost journal verify`, `report` and `resume` read. The task
//! file each run is made from is kept beside its journals (`mcp-programs/`), so the run can
//! be resumed and replayed like any other. With `--database` a program sent as a task is
//! journaled in the database instead, its run tied to the task: the replica that takes
//! the task over writes the same task file (same text, same digest) and carries the run on
//! from its journal, so the calls that finished are served from it, never made again.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use toolhost_app::database::{self, Place};
use toolhost_app::journal::JournalOptions;
use toolhost_app::resume::{Prepared, Resumed, Setup, Source, needs_decision, prepare};
use toolhost_app::session::{self, Session};
use toolhost_engine::validate::Catalog;
use toolhost_engine::{Cancel, Checkpoint, RunReport, StopReason, Unfinished};
use toolhost_mcp::program::ClientUser;
use toolhost_mcp::{ProgramEnd, ProgramRun, ProgramTask, Programs};
use toolhost_runtime::Runtime;
use toolhost_runtime::ask::Kind;

use super::sampled::ClientExtractor;
use super::user::ClientApprover;
use crate::cli::{Failure, exit};

/// The program a run is checked with at start: the whole setup (interpreter, tools,
/// policy) loads before the server serves.
const PROBE: &str = "answer(None)";

/// Runs `run_program`'s programs.
pub(super) struct CodePrograms {
    rt: Arc<Runtime>,
    policy: PathBuf,
    /// Each served tool's section and component.
    tools: Vec<(String, PathBuf)>,
    tools_dir: Option<PathBuf>,
    state_dir: Option<PathBuf>,
    /// Where each run's task file is written.
    tasks: PathBuf,
    api: String,
    limit: usize,
    seq: AtomicU64,
    /// With a task database (`--database`): its URL and the tasks' lease, which each
    /// program task's run is journaled under.
    database: Option<(String, Duration)>,
}

impl CodePrograms {
    /// The programs of a server of `tools` (section, component) under `policy`, at most
    /// `limit` at once; fails, naming why, when a code-mode run could not start (no
    /// interpreter, a tool that does not load).
    pub(super) fn new(
        rt: Arc<Runtime>,
        policy: &Path,
        tools: Vec<(String, PathBuf)>,
        tools_dir: Option<PathBuf>,
        state_dir: Option<PathBuf>,
        limit: usize,
    ) -> Result<CodePrograms, Failure> {
        let fail = |why: String| Failure::new(exit::LOAD, format!("--code: {why}"));
        let state =
            toolhost_app::journal::state_dir(state_dir.clone()).map_err(|e| fail(e.to_string()))?;
        let tasks = state.join("mcp-programs");
        std::fs::create_dir_all(&tasks)
            .map_err(|e| fail(format!("cannot create {}: {e}", tasks.display())))?;
        let policy = std::path::absolute(policy).unwrap_or_else(|_| policy.to_path_buf());
        let mut programs = CodePrograms {
            rt,
            policy,
            tools,
            tools_dir,
            state_dir,
            tasks,
            api: String::new(),
            limit,
            seq: AtomicU64::new(0),
            database: None,
        };
        let probe = programs.write_task(PROBE).map_err(fail)?;
        let loaded = programs.load(&probe).map_err(fail)?;
        let _ = std::fs::remove_file(&probe);
        programs.api = toolhost_engine::pyapi::client_api(&Catalog {
            tools: loaded.tools.clone(),
        });
        Ok(programs)
    }

    /// Journals the runs of program tasks in the database at `url`, under leases of
    /// `lease` (the tasks' own), so that another replica carries them on.
    pub(super) fn in_database(mut self, url: Option<String>, lease: Duration) -> CodePrograms {
        self.database = url.map(|u| (u, lease));
        self
    }

    /// Writes the task file of a run of `program`; its path.
    fn write_task(&self, program: &str) -> Result<PathBuf, String> {
        let s = |v: &str| serde_json::to_string(v).expect("a JSON string");
        let tools: Vec<String> = self
            .tools
            .iter()
            .map(|(name, path)| format!("{} = {}", s(name), s(&path.display().to_string())))
            .collect();
        let text = format!(
            "# A program sent to `toolhost mcp --code`'s run_program.\ngoal = {}\nmode = \"code\"\npolicy = {}\ntools = {{ {} }}\n\n[planner]\nprogram = {}\n\n[budgets]\nmax_replans = 0\n",
            s("Run the program an MCP client sent (run_program)"),
            s(&self.policy.display().to_string()),
            tools.join(", "),
            s(program),
        );
        let n = self.seq.fetch_add(1, Ordering::Relaxed);
        let millis = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis());
        let file = self
            .tasks
            .join(format!("program-{}-{millis}-{n}.toml", std::process::id()));
        std::fs::write(&file, text).map_err(|e| format!("cannot write {}: {e}", file.display()))?;
        Ok(file)
    }

    fn load(&self, task: &Path) -> Result<toolhost_app::Loaded, String> {
        let loaded = toolhost_app::load::load(
            &self.rt,
            task,
            self.tools_dir.as_deref(),
            &Default::default(),
        )
        .map_err(|e| e.to_string())?;
        loaded.runs_here().map_err(|e| e.to_string())?;
        Ok(loaded)
    }

    /// Runs `program` to its end on this thread, cancelled by `stop`, its approvals and
    /// questions put to `user`. As durable task `task` (with a database) the run is
    /// journaled in the database, tied to the task; taken over, the task's run is carried
    /// on from its journal (if it had begun), so no call that finished is made again.
    fn run_here(
        &self,
        program: &str,
        stop: Cancel,
        user: ClientUser,
        task: Option<ProgramTask>,
    ) -> Result<ProgramEnd, String> {
        let file = self.write_task(program)?;
        let place = match (&self.database, &task) {
            (Some((url, lease)), Some(t)) => Some(Place {
                url,
                lease: *lease,
                mcp_task: Some(&t.id),
            }),
            _ => None,
        };
        let journal = JournalOptions {
            state_dir: self.state_dir.clone(),
            writer: Some("mcp"),
            ..JournalOptions::default()
        };
        let begun = match (&place, &task) {
            (Some(place), Some(t)) if t.taken_over => run_of(place.url, &t.id)?,
            _ => None,
        };
        let (mut loaded, opened, resume) = match (&place, begun) {
            (Some(place), Some(run)) => match completed(place.url, &run)? {
                // It completed, and its holder died before the task heard.
                Some(end) => return Ok(end),
                None => self.reopen(place, &run, &file, &journal, &stop)?,
            },
            _ => {
                let loaded = self.load(&file)?;
                let opened = session::open(place.as_ref(), &journal, &file, &loaded, None)
                    .map_err(|e| e.to_string())?;
                (loaded, opened, None)
            }
        };
        // No model of the server's own: the client's answers `model.extract`, if it samples.
        if loaded.extractor.is_none() && user.offers(Kind::Sample) {
            let extractor = ClientExtractor { user: user.clone() };
            loaded.extractor = Some(Arc::new(extractor));
        }
        let planner = toolhost_app::planner::build(&loaded.task, &Default::default(), None)
            .map_err(|e| e.to_string())?;
        let approver = ClientApprover {
            user,
            policy: loaded.policy.approval,
            last: None,
        };
        let mut session = Session::new(self.rt.clone(), loaded, planner)
            .approver(approver)
            .cancel(stop);
        if let Some((checkpoint, unfinished)) = resume {
            session = session.resume(checkpoint, unfinished);
        }
        let ended = session
            .run(opened, &mut std::io::sink())
            .map_err(|e| e.to_string())?;
        let run = json!({
            "run": ended.journal.id(),
            "journal": ended.journal.path(),
        });
        Ok(end_of(&ended.report, run))
    }

    /// Claims `run`, the run of a task taken over, at `place` (waiting up to three leases
    /// for its last holder's lease to lapse, unless `stop`) and reopens its journal to be
    /// carried on with the task file `file` (the same text its first holder wrote, so the
    /// same digest: a replica set up otherwise is refused, naming what differs).
    fn reopen(
        &self,
        place: &Place<'_>,
        run: &str,
        file: &Path,
        journal: &JournalOptions,
        stop: &Cancel,
    ) -> Result<Reopened, String> {
        let patience = place.lease * 3;
        let (claim, first) =
            database::resume_within(place, run, None, patience, &|| stop.is_cancelled())
                .map_err(|e| e.to_string())?;
        let source = Source::Database(claim);
        let setup = Setup {
            task: Some(file),
            tools_dir: self.tools_dir.as_deref(),
            overrides: &Default::default(),
            redact: journal,
            budgets: &Default::default(),
        };
        let prepared =
            prepare(&self.rt, &first, run, &setup).and_then(|p| p.loaded.runs_here().map(|()| p));
        let Prepared {
            loaded,
            redactor,
            resumable,
        } = match prepared {
            Ok(p) => p,
            Err(e) => {
                source.give_back(&mut std::io::sink());
                return Err(format!("cannot carry run {run} on: {e}"));
            }
        };
        let unfinished = Unfinished::default();
        let waiting = needs_decision(&resumable, &unfinished);
        let resumed = Resumed {
            resumable: &resumable,
            unfinished: &unfinished,
            budgets: &loaded.task.config.budgets,
        };
        let (opened, _) = source
            .reopen(first, redactor, &resumed, waiting, &mut std::io::sink())
            .map_err(|e| format!("cannot carry run {run} on: {e}"))?;
        Ok((loaded, opened, Some((resumable.checkpoint, unfinished))))
    }
}

/// A run's setup, its journal open, and where it carries on from (`None`: a new run).
type Reopened = (
    toolhost_app::Loaded,
    session::Opened,
    Option<(Checkpoint, Unfinished)>,
);

/// The end of `run` of the database at `url` as the client gets it, when its journal says
/// it completed (its holder died after the run's end and before the task's): served from
/// the journal (as it holds them, redacted), nothing run again.
fn completed(url: &str, run: &str) -> Result<Option<ProgramEnd>, String> {
    let rep = database::report(url, run).map_err(|e| e.to_string())?;
    let Some(stop) = rep.stop().filter(|s| s["reason"] == "completed") else {
        return Ok(None);
    };
    let calls: Vec<Value> = rep
        .entries
        .iter()
        .filter(|e| e.kind == "step_finished")
        .map(|e| {
            let d = &e.data;
            let mut c = json!({"id": d["id"], "tool": d["tool"], "operation": d["operation"], "status": d["status"]});
            if let Some(e) = d.get("error") {
                c["error"] = json!({"kind": e["kind"], "message": e["message"]});
            }
            c
        })
        .collect();
    let content = json!({
        "run": run,
        "journal": rep.path(),
        "stop": {"reason": "completed"},
        "calls": calls,
        "answer": stop.get("answer").cloned().unwrap_or(Value::Null),
    });
    Ok(Some(ProgramEnd {
        answered: true,
        content,
    }))
}

/// The run of MCP task `task` in the database at `url`, if it has one.
fn run_of(url: &str, task: &str) -> Result<Option<String>, String> {
    database::connect(url)
        .map_err(|e| e.to_string())?
        .run_of_task(task)
        .map_err(|e| format!("cannot look for the run of task {task}: {e}"))
}

/// What the client gets of a run: its answer (or why it has none), how it stopped, and
/// each call the program made.
fn end_of(report: &RunReport, mut doc: Value) -> ProgramEnd {
    let calls: Vec<Value> = report
        .steps
        .iter()
        .map(|s| {
            let mut c =
                json!({"id": s.id, "tool": s.tool, "operation": s.operation, "status": s.status});
            if let Some(e) = &s.error {
                c["error"] = json!({"kind": e.kind, "message": e.message});
            }
            c
        })
        .collect();
    doc["stop"] = serde_json::to_value(&report.stop).unwrap_or(Value::Null);
    doc["calls"] = Value::Array(calls);
    match &report.answer {
        Some(answer) if report.stop == StopReason::Completed => {
            doc["answer"] = answer.clone();
            ProgramEnd {
                answered: true,
                content: doc,
            }
        }
        _ => {
            let failed = report
                .steps
                .iter()
                .rev()
                .find(|s| s.id.as_str() == "program");
            let (kind, message) = match failed.and_then(|s| s.error.as_ref()) {
                Some(e) => (e.kind.clone(), e.message.clone()),
                None => ("stopped".to_string(), report.stop.to_string()),
            };
            doc["error"] = json!({"kind": kind, "message": message});
            ProgramEnd {
                answered: false,
                content: doc,
            }
        }
    }
}

/// Shared by the server's calls.
pub(super) struct Shared(pub Arc<CodePrograms>);

impl Programs for Shared {
    fn api(&self) -> String {
        self.0.api.clone()
    }

    fn limit(&self) -> usize {
        self.0.limit
    }

    fn run(
        &self,
        program: String,
        cancel: CancellationToken,
        user: ClientUser,
        task: Option<ProgramTask>,
    ) -> ProgramRun {
        let programs = self.0.clone();
        Box::pin(async move {
            // The client's cancellation (or the server's stop) cancels the run.
            let stop = Cancel::new();
            let watch = tokio::spawn({
                let stop = stop.clone();
                async move {
                    cancel.cancelled().await;
                    stop.cancel();
                }
            });
            let ran =
                tokio::task::spawn_blocking(move || programs.run_here(&program, stop, user, task))
                    .await;
            watch.abort();
            let why = match ran {
                Ok(Ok(end)) => return end,
                Ok(Err(why)) => why,
                Err(e) => format!("the program's run ended abnormally: {e}"),
            };
            ProgramEnd {
                answered: false,
                content: json!({"error": {"kind": "not_started", "message": why}}),
            }
        })
    }
}
