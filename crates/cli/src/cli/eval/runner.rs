//! Running a golden task as `toolhost run` runs a task file: the same task loader (on the
//! task's table), policy, tools, planner, journal and driver; the view is quiet, and the
//! planner settings come from the command line's overrides.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use super::super::journal::RunOptions;
use super::super::loaded::load_task;
use super::super::planner::{self, PlannerArgs};
use super::super::run::{Outputs, Start, View, drive};
use super::super::{Failure, exit, load_tool};
use crate::task::{PlannerOverrides, Task};
use toolhost_engine::{Cancel, Faults};
use toolhost_eval::{GoldenTask, Ran, Runner, Suite};
use toolhost_runtime::{Runtime, Tool};

pub(super) struct CliRunner<'a> {
    rt: Arc<Runtime>,
    tools_dir: Option<PathBuf>,
    overrides: PlannerOverrides,
    planner: &'a PlannerArgs,
    journal: &'a RunOptions,
    /// Tools by path, loaded once for the whole suite.
    loaded: Mutex<HashMap<PathBuf, Arc<Tool>>>,
}

impl<'a> CliRunner<'a> {
    pub(super) fn new(
        rt: Arc<Runtime>,
        tools_dir: Option<PathBuf>,
        planner: &'a PlannerArgs,
        overrides: PlannerOverrides,
        journal: &'a RunOptions,
    ) -> Result<CliRunner<'a>, Failure> {
        // The state directory is checked before any run, like `toolhost run` does.
        super::super::journal::state_dir(journal.state_dir.clone())?;
        Ok(CliRunner {
            rt,
            tools_dir,
            overrides,
            planner,
            journal,
            loaded: Mutex::new(HashMap::new()),
        })
    }

    fn task(&self, task: &GoldenTask) -> Result<Task, Failure> {
        Task::from_table(
            task.table.clone(),
            &task.path,
            self.tools_dir.as_deref(),
            &self.overrides,
        )
        .map_err(|e| Failure::new(exit::USAGE, format!("task `{}`: {e}", task.id)))
    }

    /// Loads every task and builds its planner before any runs, so a broken task or a
    /// missing API key is a usage error rather than a suite of failures.
    pub(super) fn check(&self, suite: &Suite) -> Result<(), Failure> {
        for t in &suite.tasks {
            let task = self.task(t)?;
            planner::build(&task, self.planner, None)
                .and_then(|_| planner::extractor(&task))
                .map_err(|f| {
                    Failure::new(exit::USAGE, format!("task `{}`: {}", t.id, f.message()))
                })?;
        }
        Ok(())
    }

    fn tool(&self, path: &Path) -> Result<Arc<Tool>, Failure> {
        let mut loaded = self.loaded.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(t) = loaded.get(path) {
            return Ok(t.clone());
        }
        let tool = Arc::new(load_tool(&self.rt, path)?);
        loaded.insert(path.to_path_buf(), tool.clone());
        Ok(tool)
    }
}

impl Runner for CliRunner<'_> {
    fn run(&self, golden: &GoldenTask, faults: Faults) -> Result<Ran, String> {
        let msg = |f: Failure| f.message().to_string();
        let mut task = self.task(golden).map_err(msg)?;
        task.config.faults = faults;
        let mut loaded = load_task(task, &mut |p| self.tool(p)).map_err(msg)?;
        let tools = loaded.tools.clone();
        let mut planner = planner::build(&loaded.task, self.planner, None).map_err(msg)?;
        loaded.extractor = planner::extractor(&loaded.task).map_err(msg)?;
        let journal =
            super::super::journal::open(self.journal, &golden.path, &loaded, None).map_err(msg)?;
        let view = View::unattended();
        let (mut out, mut err) = (std::io::sink(), std::io::sink());
        let report = drive(
            self.rt.clone(),
            loaded,
            &journal,
            planner.as_mut(),
            Start::Fresh,
            &view,
            None,
            Cancel::new(),
            Outputs {
                out: &mut out,
                err: &mut err,
            },
        )
        .map_err(msg)?;
        Ok(Ran {
            report,
            journal: Some(journal.path().to_path_buf()),
            rt: self.rt.clone(),
            tools,
        })
    }
}
