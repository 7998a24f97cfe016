//! The eval runner: running a golden task as `toolhost run` runs a task file, with the
//! same task loader (on the task's table), policy, tools, planner, journal and session;
//! nothing watches, and the planner settings come from the command line's options.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::error::{AppError, usage};
use crate::journal::JournalOptions;
use crate::load::{load_task, load_tool};
use crate::planner::{self, PlannerOptions};
use crate::session::Session;
use crate::task::{PlannerOverrides, Task};
use toolhost_engine::Faults;
use toolhost_eval::{GoldenTask, NotRun, Ran, Runner, Suite};
use toolhost_runtime::{Runtime, Tool};

/// Runs an eval suite's tasks (`toolhost_eval::run_suite`).
pub struct SuiteRunner<'a> {
    rt: Arc<Runtime>,
    tools_dir: Option<PathBuf>,
    overrides: PlannerOverrides,
    planner: &'a PlannerOptions,
    journal: &'a JournalOptions,
    /// Tools by path, loaded once for the whole suite.
    loaded: Mutex<HashMap<PathBuf, Arc<Tool>>>,
}

impl<'a> SuiteRunner<'a> {
    /// A runner of tasks with the tools of `tools_dir`, the planner `planner` (with
    /// `overrides`) and journals as `journal` says. Checks the state directory first, as
    /// `toolhost run` does.
    pub fn new(
        rt: Arc<Runtime>,
        tools_dir: Option<PathBuf>,
        planner: &'a PlannerOptions,
        overrides: PlannerOverrides,
        journal: &'a JournalOptions,
    ) -> Result<SuiteRunner<'a>, AppError> {
        crate::journal::state_dir(journal.state_dir.clone())?;
        Ok(SuiteRunner {
            rt,
            tools_dir,
            overrides,
            planner,
            journal,
            loaded: Mutex::new(HashMap::new()),
        })
    }

    fn task(&self, task: &GoldenTask) -> Result<Task, AppError> {
        Task::from_table(
            task.table.clone(),
            &task.path,
            self.tools_dir.as_deref(),
            &self.overrides,
        )
        .map_err(|e| usage(format!("task `{}`: {e}", task.id)))
    }

    /// Loads every task and builds its planner before any runs, so a broken task or a
    /// missing API key is a usage error rather than a suite of failures. Then loads every
    /// component the tasks name that is there, telling `compiled` of each one compiled now
    /// (not found in the compiled cache), with how long it took: the first run of a suite
    /// compiles for a while, and says so.
    pub fn check(
        &self,
        suite: &Suite,
        compiled: &mut dyn FnMut(&Path, std::time::Duration),
    ) -> Result<(), AppError> {
        let mut components = std::collections::BTreeSet::new();
        for t in &suite.tasks {
            let task = self.task(t)?;
            planner::build(&task, self.planner, None)
                .and_then(|_| planner::extractor(&task))
                .map_err(|e| usage(format!("task `{}`: {e}", t.id)))?;
            components.extend(task.tools.into_values().filter(|p| p.is_file()));
        }
        for path in components {
            let started = std::time::Instant::now();
            // One that fails to load fails its tasks, each with the reason.
            if let Ok(tool) = self.tool(&path)
                && tool.compiled != toolhost_runtime::tool::Compiled::FromCache
            {
                compiled(&path, started.elapsed());
            }
        }
        Ok(())
    }

    fn tool(&self, path: &Path) -> Result<Arc<Tool>, AppError> {
        let mut loaded = self.loaded.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(t) = loaded.get(path) {
            return Ok(t.clone());
        }
        let tool = Arc::new(load_tool(&self.rt, path)?);
        loaded.insert(path.to_path_buf(), tool.clone());
        Ok(tool)
    }
}

impl Runner for SuiteRunner<'_> {
    fn run(&self, golden: &GoldenTask, faults: Faults) -> Result<Ran, NotRun> {
        let msg = |e: AppError| NotRun::Failed(e.to_string());
        let mut task = self.task(golden).map_err(msg)?;
        if let Some((name, path)) = task.tools.iter().find(|(_, p)| !p.exists()) {
            return Err(NotRun::Skipped(format!(
                "tool `{name}` is not built (no `{}`)",
                path.display()
            )));
        }
        task.config.faults = faults;
        let mut loaded = load_task(&self.rt, task, &mut |p| self.tool(p)).map_err(msg)?;
        let tools = loaded.tools.clone();
        let planner = planner::build(&loaded.task, self.planner, None).map_err(msg)?;
        loaded.extractor = planner::extractor(&loaded.task).map_err(msg)?;
        let journal =
            crate::journal::open(self.journal, &golden.path, &loaded, None).map_err(msg)?;
        let report = Session::new(self.rt.clone(), loaded, planner)
            .drive(&journal, &mut std::io::sink())
            .map_err(msg)?;
        Ok(Ran {
            report,
            journal: Some(journal.path().to_path_buf()),
            rt: self.rt.clone(),
            tools,
        })
    }
}
