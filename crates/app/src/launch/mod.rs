//! Launching the runs of `toolhost serve` as `toolhost run` runs a task ([`TaskLauncher`],
//! the `toolhost_serve::Launcher` of both backends): tasks by name from the task
//! directory (`NAME.toml`, under its own policy), or inline.
//!
//! An inline task runs under the server's `policy`, names its tools (found in the tools
//! directory), and may give only the keys known to be safe for a remote submitter
//! (`inline`: an allow-list; every other key is refused by name); its `max_parallel` and
//! `[budgets]` are held to the configuration's `[run_limits]` (a value above its limit is
//! refused naming both). It is written to `STATE/serve/tasks/` so that its journal's task
//! digest holds and `toolhost resume` finds it.

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

mod inline;
mod resumed;

use crate::error::AppError;
use crate::load::{self, Loaded};
use crate::session::Session;
use crate::task::{PlannerKind, PlannerOverrides};
use crate::{journal, planner};
use toolhost_engine::approval::Approver;
use toolhost_engine::{Cancel, Mode, Planner, RunReport};
use toolhost_journal::Journal;
use toolhost_runtime::{CallLoad, Runtime};
use toolhost_serve::{
    Launcher, Overrides, Prepared, RegistryError, RunLimits, ServeConfig, TaskSource,
};

/// Runs a server's tasks as `toolhost run` does.
pub struct TaskLauncher {
    rt: Arc<Runtime>,
    tasks_dir: Option<PathBuf>,
    tools_dir: Option<PathBuf>,
    policy: Option<PathBuf>,
    state_dir: PathBuf,
    run_limits: RunLimits,
}

/// A task that cannot run, as the API refuses it (422, with the reason).
pub fn invalid(e: AppError) -> RegistryError {
    RegistryError::Invalid {
        problems: vec![e.to_string()],
    }
}

impl TaskLauncher {
    /// The launcher of a server configured as `config`, running tools on `rt` and
    /// writing inline tasks and journals under `state_dir` (checked already).
    pub fn new(rt: Arc<Runtime>, config: &ServeConfig, state_dir: PathBuf) -> TaskLauncher {
        TaskLauncher {
            rt,
            tasks_dir: config.tasks_dir.clone(),
            tools_dir: config.tools_dir.clone(),
            policy: config.policy.clone(),
            state_dir,
            run_limits: config.run_limits.clone(),
        }
    }

    /// The runtime the runs' tools run on.
    pub fn rt(&self) -> &Arc<Runtime> {
        &self.rt
    }

    /// Where tool names in tasks are found.
    pub fn tools_dir(&self) -> Option<&std::path::Path> {
        self.tools_dir.as_deref()
    }

    /// The task file to run: one of the task directory, or an inline task written out.
    pub fn task_file(&self, task: &TaskSource) -> Result<PathBuf, RegistryError> {
        let table = match task {
            TaskSource::Name(name) => return self.named(name),
            TaskSource::Toml(text) => toml::from_str::<toml::Table>(text).map_err(|e| {
                RegistryError::BadRequest(format!(
                    "the task is not TOML: {}",
                    e.to_string().trim_end()
                ))
            })?,
            TaskSource::Json(v) => serde_json::from_value::<toml::Table>(v.clone())
                .map_err(|e| RegistryError::BadRequest(format!("the task is not a table: {e}")))?,
        };
        self.inline(table)
    }

    /// Refuses overrides that ask for more than the run limits allow (they apply to
    /// tasks by name too).
    pub fn check_overrides(&self, o: &Overrides) -> Result<(), RegistryError> {
        match o.max_steps.map(|n| self.run_limits.check_max_steps(n)) {
            Some(Err(problem)) => Err(RegistryError::Invalid {
                problems: vec![problem],
            }),
            _ => Ok(()),
        }
    }

    fn named(&self, name: &str) -> Result<PathBuf, RegistryError> {
        let valid = !name.is_empty()
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
        if !valid {
            return Err(RegistryError::BadRequest(format!(
                "task name `{name}`: use letters, digits, `-` and `_` only"
            )));
        }
        let dir = self.tasks_dir.as_ref().ok_or_else(|| {
            RegistryError::NoTask(format!("{name}` (this server has no task directory)"))
        })?;
        let path = dir.join(format!("{name}.toml"));
        if !path.is_file() {
            return Err(RegistryError::NoTask(name.to_string()));
        }
        Ok(path)
    }

    fn inline(&self, mut table: toml::Table) -> Result<PathBuf, RegistryError> {
        let mut problems = Vec::new();
        let policy = match &self.policy {
            Some(p) => Some(std::path::absolute(p).unwrap_or_else(|_| p.clone())),
            None => {
                problems.push(
                    "this server has no `policy` for inline tasks: submit a task by name".into(),
                );
                None
            }
        };
        problems.extend(inline::problems(&table));
        problems.extend(self.run_limits.apply(&mut table));
        if !problems.is_empty() {
            return Err(RegistryError::Invalid { problems });
        }
        if let Some(p) = policy {
            table.insert("policy".into(), p.display().to_string().into());
        }
        let dir = self.state_dir.join("serve").join("tasks");
        let path = dir.join(format!("{}.toml", toolhost_journal::new_run_id()));
        let text = toml::to_string(&table)
            .map_err(|e| RegistryError::BadRequest(format!("the task cannot be written: {e}")))?;
        toolhost_runtime::owned::write_file(&path, text.as_bytes()).map_err(|e| {
            RegistryError::Internal(format!("cannot write `{}`: {e}", path.display()))
        })?;
        Ok(path)
    }
}

/// The planner settings an API request's `o` chooses; a planner kind that reads a file of
/// the server is refused.
pub fn planner_overrides(o: &Overrides) -> Result<PlannerOverrides, RegistryError> {
    let bad = RegistryError::BadRequest;
    let mode = o
        .mode
        .as_deref()
        .map(str::parse::<Mode>)
        .transpose()
        .map_err(bad)?;
    let kind = o
        .planner
        .as_deref()
        .map(str::parse::<PlannerKind>)
        .transpose()
        .map_err(bad)?;
    if let Some(k) = &o.planner
        && !inline::KINDS.contains(&k.as_str())
    {
        return Err(RegistryError::BadRequest(format!(
            "planner `{k}`: not one the API runs (use {}): it reads a file of the server",
            inline::KINDS.join(", ")
        )));
    }
    Ok(PlannerOverrides {
        mode,
        kind,
        model: o.model.clone(),
        ..PlannerOverrides::default()
    })
}

impl Launcher for TaskLauncher {
    fn prepare(
        &self,
        task: &TaskSource,
        overrides: &Overrides,
    ) -> Result<Box<dyn Prepared>, RegistryError> {
        let planner_overrides = planner_overrides(overrides)?;
        self.check_overrides(overrides)?;
        let path = self.task_file(task)?;
        let mut loaded = load::load(
            &self.rt,
            &path,
            self.tools_dir.as_deref(),
            &planner_overrides,
        )
        .map_err(invalid)?;
        // Only the embedded backend prepares runs here: it has no executor pools.
        loaded.runs_here().map_err(invalid)?;
        if let Some(n) = overrides.max_steps {
            loaded.task.config.budgets.max_steps = n;
        }
        let planner = planner::build(&loaded.task, &planner::PlannerOptions::default(), None)
            .map_err(invalid)?;
        loaded.extractor = planner::extractor(&loaded.task).map_err(invalid)?;
        let options = journal::JournalOptions {
            redact: Vec::new(),
            state_dir: Some(self.state_dir.clone()),
            writer: Some("serve"),
        };
        let journal = journal::open(&options, &path, &loaded, None)
            .map_err(|e| RegistryError::Internal(e.to_string()))?;
        Ok(ServedRun::boxed(
            self.rt.clone(),
            loaded,
            journal,
            planner,
            None,
        ))
    }

    fn resume(&self, run: &str, overrides: &Overrides) -> Result<Box<dyn Prepared>, RegistryError> {
        self.reopen(run, overrides)
    }

    fn warm(&self) -> Result<(), String> {
        let policy = match &self.policy {
            Some(p) => Some(toolhost_runtime::policy::Policy::load(p).map_err(|e| e.to_string())?),
            None => None,
        };
        let Some(dir) = &self.tools_dir else {
            return Ok(());
        };
        let entries = std::fs::read_dir(dir)
            .map_err(|e| format!("cannot read the tools directory `{}`: {e}", dir.display()))?;
        // Compiled once here (and cached), so the first run does not wait for it.
        for e in entries.flatten() {
            let path = e.path();
            // A tool whose policy requires a signature is compiled only once a run has
            // checked it (`load::load_task`), never ahead of that.
            let signed = path
                .file_stem()
                .and_then(|s| s.to_str())
                .is_some_and(|name| {
                    policy
                        .as_ref()
                        .and_then(|p| p.tools.get(name))
                        .is_some_and(|t| t.signature.is_some())
                });
            if path.extension().is_some_and(|x| x == "wasm") && !signed {
                self.rt.load(&path).map_err(|e| e.to_string())?;
            }
        }
        Ok(())
    }

    fn calls(&self) -> Option<CallLoad> {
        self.rt.call_load()
    }
}

impl ServedRun {
    /// A run ready to execute, carried on from `resume` when given.
    fn boxed(
        rt: Arc<Runtime>,
        loaded: Loaded,
        journal: Journal,
        planner: Box<dyn Planner>,
        resume: Option<(toolhost_engine::Checkpoint, toolhost_engine::Unfinished)>,
    ) -> Box<dyn Prepared> {
        Box::new(ServedRun {
            rt,
            loaded,
            journal,
            planner,
            resume,
        })
    }
}

/// A run with its journal open.
struct ServedRun {
    rt: Arc<Runtime>,
    loaded: Loaded,
    journal: Journal,
    planner: Box<dyn Planner>,
    /// Where a carried-on run resumes.
    resume: Option<(toolhost_engine::Checkpoint, toolhost_engine::Unfinished)>,
}

impl Prepared for ServedRun {
    fn run_id(&self) -> &str {
        self.journal.id()
    }

    fn goal(&self) -> &str {
        &self.loaded.task.goal
    }

    fn journal_path(&self) -> PathBuf {
        self.journal.path().to_path_buf()
    }

    fn approval(&self) -> toolhost_engine::ApprovalMode {
        self.loaded.policy.approval
    }

    fn execute(
        self: Box<Self>,
        approver: Option<&mut dyn Approver>,
        cancel: Cancel,
    ) -> Result<RunReport, String> {
        let ServedRun {
            rt,
            loaded,
            journal,
            planner,
            resume,
        } = *self;
        let mut session = Session::new(rt, loaded, planner).cancel(cancel);
        if let Some((checkpoint, unfinished)) = resume {
            session = session.resume(checkpoint, unfinished);
        }
        if let Some(a) = approver {
            session = session.approver(a);
        }
        session
            .drive(&journal, &mut Warnings)
            .map_err(|e| e.to_string())
    }
}

/// A run's warnings, as log lines.
struct Warnings;

impl Write for Warnings {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let text = String::from_utf8_lossy(buf);
        if !text.trim().is_empty() {
            tracing::warn!("{}", text.trim_end());
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
