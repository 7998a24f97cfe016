//! `toolhost mcp --code`: the server's `run_program` tool runs each program as a code-mode
//! run over the served tools and the same policy (`toolhost run` of a task whose planner
//! holds the program, no revisions), so every call the program makes is validated,
//! policy-checked, budgeted and journaled as a plan step, in a journal of its own under the
//! state directory, which `toolhost journal verify`, `report` and `resume` read. The task
//! file each run is made from is kept beside its journals (`mcp-programs/`), so the run can
//! be resumed and replayed like any other.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use toolhost_app::journal::JournalOptions;
use toolhost_app::session::{self, Session};
use toolhost_engine::validate::Catalog;
use toolhost_engine::{Cancel, RunReport, StopReason};
use toolhost_mcp::program::ClientUser;
use toolhost_mcp::{ProgramEnd, ProgramRun, Programs};
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
        };
        let probe = programs.write_task(PROBE).map_err(fail)?;
        let loaded = programs.load(&probe).map_err(fail)?;
        let _ = std::fs::remove_file(&probe);
        programs.api = toolhost_engine::pyapi::client_api(&Catalog {
            tools: loaded.tools.clone(),
        });
        Ok(programs)
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
    /// questions put to `user`.
    fn run_here(
        &self,
        program: &str,
        stop: Cancel,
        user: ClientUser,
    ) -> Result<ProgramEnd, String> {
        let task = self.write_task(program)?;
        let mut loaded = self.load(&task)?;
        // No model of the server's own: the client's answers `model.extract`, if it samples.
        if loaded.extractor.is_none() && user.offers(Kind::Sample) {
            let extractor = ClientExtractor { user: user.clone() };
            loaded.extractor = Some(Arc::new(extractor));
        }
        let planner = toolhost_app::planner::build(&loaded.task, &Default::default(), None)
            .map_err(|e| e.to_string())?;
        let journal = JournalOptions {
            state_dir: self.state_dir.clone(),
            writer: Some("mcp"),
            ..JournalOptions::default()
        };
        let opened =
            session::open(None, &journal, &task, &loaded, None).map_err(|e| e.to_string())?;
        let approver = ClientApprover {
            user,
            policy: loaded.policy.approval,
            last: None,
        };
        let ended = Session::new(self.rt.clone(), loaded, planner)
            .approver(approver)
            .cancel(stop)
            .run(opened, &mut std::io::sink())
            .map_err(|e| e.to_string())?;
        let run = json!({
            "run": ended.journal.id(),
            "journal": ended.journal.path(),
        });
        Ok(end_of(&ended.report, run))
    }
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

    fn run(&self, program: String, cancel: CancellationToken, user: ClientUser) -> ProgramRun {
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
                tokio::task::spawn_blocking(move || programs.run_here(&program, stop, user)).await;
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
