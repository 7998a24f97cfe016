//! Running a suite: for each task, its set-up copies, the run (by the [`Runner`], with the
//! task's and the suite's faults), then the checks; up to `jobs` tasks at once, each on a
//! thread of its own. Results come back in the suite's order whatever order tasks finish
//! in, so `--jobs 4` reports what `--jobs 1` does.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;

use crate::check;
use crate::judge::judge;
use crate::result::{Metrics, SuiteResult, TaskResult, outcome_name};
use crate::suite::{GoldenTask, SetupCopy, Suite};
use toolhost_engine::validate::Entry;
use toolhost_engine::{Faults, RunReport, StepStatus, ToolName};
use toolhost_runtime::Runtime;

/// A finished run, as the [`Runner`] hands it back.
pub struct Ran {
    pub report: RunReport,
    /// Where the run was journaled.
    pub journal: Option<PathBuf>,
    /// The runtime and the task's tools, for an evaluator tool's answer check.
    pub rt: Arc<Runtime>,
    pub tools: BTreeMap<ToolName, Entry>,
}

/// Why a golden task did not run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotRun {
    /// A component it names is not there (not built by the command that was run): the
    /// task is skipped, with this reason.
    Skipped(String),
    /// It could not start, for this reason: the task fails.
    Failed(String),
}

/// Runs one golden task as `toolhost run` would, with `faults` in the run's config.
pub trait Runner: Sync {
    /// The run, or why it did not run.
    fn run(&self, task: &GoldenTask, faults: Faults) -> Result<Ran, NotRun>;
}

/// Who injects the harness's faults, as the recorded errors say.
pub const FAULT_ORIGIN: &str = "eval";

/// Runs every task of `suite`, `jobs` at once (at least 1), calling `done` (on the
/// calling thread) as each finishes.
pub fn run_suite(
    suite: &Suite,
    runner: &dyn Runner,
    jobs: usize,
    done: &mut dyn FnMut(&TaskResult),
) -> SuiteResult {
    let next = AtomicUsize::new(0);
    let mut slots: Vec<Option<TaskResult>> = vec![None; suite.tasks.len()];
    std::thread::scope(|s| {
        let (send, finished) = mpsc::channel();
        for _ in 0..jobs.clamp(1, suite.tasks.len().max(1)) {
            let send = send.clone();
            let next = &next;
            s.spawn(move || {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(task) = suite.tasks.get(i) else {
                        break;
                    };
                    if send
                        .send((i, run_task(task, &suite.faults, runner)))
                        .is_err()
                    {
                        break;
                    }
                }
            });
        }
        drop(send);
        for (i, result) in finished {
            done(&result);
            slots[i] = Some(result);
        }
    });
    let tasks: Vec<TaskResult> = slots.into_iter().flatten().collect();
    let metrics = Metrics::of(&tasks, |i| expects_recovery(&suite.tasks[i]));
    SuiteResult {
        suite: suite.name.clone(),
        tasks,
        metrics,
    }
}

/// Whether a task expects its run not to escalate (it recovers from what it meets).
fn expects_recovery(task: &GoldenTask) -> bool {
    matches!(
        task.expect.outcome.as_str(),
        "completed" | "planner_stopped"
    )
}

/// Sets up, runs and checks one task.
pub fn run_task(
    task: &GoldenTask,
    suite_faults: &[toolhost_engine::Fault],
    runner: &dyn Runner,
) -> TaskResult {
    for c in &task.setup {
        if let Err(why) = copy(task.base(), c) {
            return TaskResult::not_run(&task.id, format!("setup: {why}"));
        }
    }
    let list = task.faults.iter().chain(suite_faults).cloned().collect();
    let ran = match runner.run(task, Faults::new(FAULT_ORIGIN, list)) {
        Ok(ran) => ran,
        Err(NotRun::Skipped(why)) => return TaskResult::skipped(&task.id, why),
        Err(NotRun::Failed(why)) => {
            let mut t = TaskResult::not_run(&task.id, why);
            t.known_failure.clone_from(&task.expect.known_failure);
            return t;
        }
    };
    let mut failures = checks(task, &ran);
    // Why the run escalated, where a person reads the table, not only in its journal.
    if let (false, toolhost_engine::StopReason::Escalated { why }) =
        (failures.is_empty(), &ran.report.stop)
    {
        failures.push(format!("it escalated: {why}"));
    }
    let mut result = TaskResult::of(
        &task.id,
        &ran.report,
        failures,
        expects_recovery(task),
        ran.journal.map(|p| p.display().to_string()),
    );
    result.known_failure.clone_from(&task.expect.known_failure);
    result
}

/// Every check of `task`'s `[expect]` on `ran`, the failures in order.
fn checks(task: &GoldenTask, ran: &Ran) -> Vec<String> {
    let e = &task.expect;
    let r = &ran.report;
    let mut failures = Vec::new();
    failures.extend(check::outcome(&e.outcome, &outcome_name(r)));
    if let Some(want) = &e.sequence {
        failures.extend(check::sequence(want, e.order, &e.before, &calls(r)));
    }
    match &e.answer {
        Some(crate::expect::AnswerCheck::Evaluator { evaluator }) => {
            failures.extend(judge(evaluator, r.answer.as_ref(), &ran.rt, &ran.tools));
        }
        Some(a) => failures.extend(check::answer(a, r.answer.as_ref())),
        None => {}
    }
    for f in &e.files {
        failures.extend(check::file_json(task.base(), &f.path, &f.equals_json));
    }
    failures
}

/// `tool.operation` of the steps that were called, in the order they started.
fn calls(r: &RunReport) -> Vec<String> {
    let mut ran: Vec<_> = r
        .steps
        .iter()
        .filter(|s| s.status != StepStatus::Skipped)
        .collect();
    ran.sort_by_key(|s| s.started_us);
    ran.iter()
        .map(|s| format!("{}.{}", s.tool, s.operation))
        .collect()
}

/// `[[setup.copy]]`: a file, or a directory recursively; the target is replaced.
fn copy(base: &Path, c: &SetupCopy) -> Result<(), String> {
    let (from, to) = (base.join(&c.from), base.join(&c.to));
    let fail = |e: std::io::Error| {
        format!(
            "cannot copy `{}` to `{}`: {e}",
            c.from.display(),
            c.to.display()
        )
    };
    if to.is_dir() {
        std::fs::remove_dir_all(&to).map_err(fail)?;
    }
    copy_path(&from, &to).map_err(fail)
}

fn copy_path(from: &Path, to: &Path) -> std::io::Result<()> {
    if let Some(parent) = to.parent() {
        std::fs::create_dir_all(parent)?;
    }
    if from.is_dir() {
        std::fs::create_dir_all(to)?;
        for entry in std::fs::read_dir(from)? {
            let entry = entry?;
            copy_path(&entry.path(), &to.join(entry.file_name()))?;
        }
        Ok(())
    } else {
        std::fs::copy(from, to).map(|_| ())
    }
}
