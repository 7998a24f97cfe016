//! What a suite run produced: a [`TaskResult`] per task and the suite's [`Metrics`]. The
//! JSON field names are stable (`toolhost eval --json`; other tools read them).

use serde::{Deserialize, Serialize};

use toolhost_engine::{RunReport, StepStatus, Verdict};

/// One task's result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskResult {
    pub id: String,
    pub passed: bool,
    /// How the run stopped (`completed`, `escalated`, …), or `not_run`.
    pub outcome: String,
    /// The mode it ran in (`plan-then-execute`, `step-wise`, `react`; the task's, or
    /// `--mode`'s), empty when it did not run.
    #[serde(default)]
    pub mode: String,
    /// Step records (including skipped steps).
    pub steps: u32,
    /// Steps that were called (not skipped), injected faults included.
    pub tool_calls: u32,
    pub tool_calls_ok: u32,
    /// Round trips to the planner: each model call (an ensemble's fast and strong model
    /// count one each), none for a plan served from plan memory.
    #[serde(default)]
    pub planner_calls: u32,
    pub replans: u32,
    /// Calls whose error says "fault injected".
    pub faults_injected: u32,
    /// The task met an injected fault, expected a run that does not escalate, and passed.
    pub recovered: bool,
    pub escalated: bool,
    /// The step evaluator passed every step it judged but the task failed, or it failed
    /// a step but the task passed.
    pub evaluator_disagreement: bool,
    pub input_tokens: u64,
    /// Of `input_tokens`, those read from a prompt cache.
    #[serde(default)]
    pub cached_input_tokens: u64,
    pub output_tokens: u64,
    pub cost_usd: f64,
    /// The run's wall time.
    pub wall_ms: f64,
    /// Each step's wall time, in record order.
    pub step_ms: Vec<f64>,
    pub failures: Vec<String>,
    /// The run's journal.
    pub journal: Option<String>,
    /// Why the task was skipped without running (a component it names is not built):
    /// left out of the metrics, and of the gate unless `--require-all`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skipped: Option<String>,
    /// The task's `known_failure` reason: a failure the gate forgives.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub known_failure: Option<String>,
}

/// The suite's metrics.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Metrics {
    /// Tasks passed / tasks.
    pub success_rate: f64,
    /// Mean step records per task.
    pub steps_per_task: f64,
    /// Mean planner round trips per task: what separates the modes.
    #[serde(default)]
    pub planner_calls_per_task: f64,
    /// Calls that succeeded / calls (1 when nothing was called).
    pub tool_success_rate: f64,
    /// Replans, summed over tasks.
    pub replans: u64,
    /// Of the tasks that met an injected fault and expected not to escalate, the share
    /// that passed (1 when there were none).
    pub replan_recovery_rate: f64,
    /// Tasks that stopped `escalated` / tasks.
    pub escalation_rate: f64,
    /// Tasks where the step evaluator and the final check disagreed / tasks.
    pub evaluator_disagreement_rate: f64,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cost_usd: f64,
    /// The median task wall time.
    pub wall_ms_p50: f64,
    pub wall_ms_total: f64,
}

/// The metric names, in their JSON order.
pub const METRICS: [&str; 13] = [
    "success_rate",
    "steps_per_task",
    "planner_calls_per_task",
    "tool_success_rate",
    "replans",
    "replan_recovery_rate",
    "escalation_rate",
    "evaluator_disagreement_rate",
    "input_tokens",
    "output_tokens",
    "cost_usd",
    "wall_ms_p50",
    "wall_ms_total",
];

/// A suite run: `{"suite", "tasks", "metrics"}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SuiteResult {
    pub suite: String,
    pub tasks: Vec<TaskResult>,
    pub metrics: Metrics,
}

impl Metrics {
    /// The value of metric `name` (one of [`METRICS`]).
    pub fn get(&self, name: &str) -> Option<f64> {
        let v = serde_json::to_value(self).ok()?;
        v.get(name)?.as_f64()
    }

    /// The metrics of the `tasks` that ran (a skipped one counts for none);
    /// `expect_recovery(i)` says whether task `i` expected a run that does not escalate.
    pub fn of(tasks: &[TaskResult], expect_recovery: impl Fn(usize) -> bool) -> Metrics {
        let ran: Vec<(usize, &TaskResult)> = tasks
            .iter()
            .enumerate()
            .filter(|(_, t)| t.skipped.is_none())
            .collect();
        let tasks: Vec<&TaskResult> = ran.iter().map(|(_, t)| *t).collect();
        let n = tasks.len().max(1) as f64;
        let count = |f: &dyn Fn(&TaskResult) -> bool| tasks.iter().filter(|t| f(t)).count() as f64;
        let sum = |f: &dyn Fn(&TaskResult) -> f64| tasks.iter().map(|t| f(t)).sum::<f64>();
        let calls = sum(&|t| f64::from(t.tool_calls));
        let faulted: Vec<&TaskResult> = ran
            .iter()
            .filter(|(i, t)| t.faults_injected > 0 && expect_recovery(*i))
            .map(|(_, t)| *t)
            .collect();
        let mut walls: Vec<f64> = tasks.iter().map(|t| t.wall_ms).collect();
        walls.sort_by(f64::total_cmp);
        Metrics {
            success_rate: count(&|t| t.passed) / n,
            steps_per_task: sum(&|t| f64::from(t.steps)) / n,
            planner_calls_per_task: sum(&|t| f64::from(t.planner_calls)) / n,
            tool_success_rate: if calls == 0.0 {
                1.0
            } else {
                sum(&|t| f64::from(t.tool_calls_ok)) / calls
            },
            replans: tasks.iter().map(|t| u64::from(t.replans)).sum(),
            replan_recovery_rate: if faulted.is_empty() {
                1.0
            } else {
                faulted.iter().filter(|t| t.passed).count() as f64 / faulted.len() as f64
            },
            escalation_rate: count(&|t| t.escalated) / n,
            evaluator_disagreement_rate: count(&|t| t.evaluator_disagreement) / n,
            input_tokens: tasks.iter().map(|t| t.input_tokens).sum(),
            output_tokens: tasks.iter().map(|t| t.output_tokens).sum(),
            cost_usd: sum(&|t| t.cost_usd),
            wall_ms_p50: median(&walls),
            wall_ms_total: walls.iter().sum(),
        }
    }
}

fn median(sorted: &[f64]) -> f64 {
    match sorted.len() {
        0 => 0.0,
        n if n % 2 == 1 => sorted[n / 2],
        n => (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0,
    }
}

/// The stop's name as `[expect] outcome` says it: `completed`, `escalated`, ….
pub fn outcome_name(report: &RunReport) -> String {
    serde_json::to_value(&report.stop)
        .ok()
        .and_then(|v| v["reason"].as_str().map(str::to_string))
        .unwrap_or_else(|| report.stop.to_string())
}

impl TaskResult {
    /// The result of a task that did not run.
    pub fn not_run(id: &str, why: String) -> TaskResult {
        TaskResult {
            id: id.to_string(),
            passed: false,
            outcome: "not_run".into(),
            mode: String::new(),
            steps: 0,
            tool_calls: 0,
            tool_calls_ok: 0,
            planner_calls: 0,
            replans: 0,
            faults_injected: 0,
            recovered: false,
            escalated: false,
            evaluator_disagreement: false,
            input_tokens: 0,
            cached_input_tokens: 0,
            output_tokens: 0,
            cost_usd: 0.0,
            wall_ms: 0.0,
            step_ms: Vec::new(),
            failures: vec![format!("run: {why}")],
            journal: None,
            skipped: None,
            known_failure: None,
        }
    }

    /// The result of a task skipped for `why` (a component it names is not built).
    pub fn skipped(id: &str, why: String) -> TaskResult {
        let mut t = TaskResult::not_run(id, String::new());
        t.outcome = "skipped".into();
        t.failures = Vec::new();
        t.skipped = Some(why);
        t
    }

    /// Whether this result fails a suite's gate: a task that ran and failed unless known
    /// to fail, or one known to fail that passed (its mark is out of date). A skipped task
    /// fails it only under `require_all`.
    pub fn fails_gate(&self, require_all: bool) -> bool {
        match (&self.skipped, &self.known_failure) {
            (Some(_), _) => require_all,
            (None, Some(_)) => self.passed,
            (None, None) => !self.passed,
        }
    }

    /// The counts of `report`, with `failures` from the checks; `expect_recovery` says
    /// whether the task expected a run that does not escalate.
    pub fn of(
        id: &str,
        report: &RunReport,
        failures: Vec<String>,
        expect_recovery: bool,
        journal: Option<String>,
    ) -> TaskResult {
        let called = || {
            report
                .steps
                .iter()
                .filter(|s| s.status != StepStatus::Skipped)
        };
        let count = |it: &mut dyn Iterator<Item = &toolhost_engine::StepRecord>| {
            u32::try_from(it.count()).unwrap_or(u32::MAX)
        };
        let faults = count(&mut called().filter(|s| {
            s.error
                .as_ref()
                .is_some_and(|e| e.message.contains("fault injected"))
        }));
        let passed = failures.is_empty();
        let verdicts: Vec<Verdict> = report
            .steps
            .iter()
            .filter_map(|s| s.evaluation.as_ref().map(|e| e.verdict))
            .collect();
        let evaluator_passed_all =
            !verdicts.is_empty() && verdicts.iter().all(|v| *v == Verdict::Pass);
        let evaluator_failed_one = verdicts.contains(&Verdict::Fail);
        let outcome = outcome_name(report);
        TaskResult {
            id: id.to_string(),
            passed,
            steps: u32::try_from(report.steps.len()).unwrap_or(u32::MAX),
            tool_calls: count(&mut called()),
            tool_calls_ok: count(&mut called().filter(|s| s.status == StepStatus::Succeeded)),
            planner_calls: round_trips(report),
            replans: report.spent.replans,
            faults_injected: faults,
            recovered: faults > 0 && expect_recovery && passed,
            escalated: outcome == "escalated",
            evaluator_disagreement: (evaluator_passed_all && !passed)
                || (evaluator_failed_one && passed),
            input_tokens: report.spent.input_tokens,
            cached_input_tokens: report.spent.cached_input_tokens,
            output_tokens: report.spent.output_tokens,
            cost_usd: report.spent.cost_usd,
            wall_ms: report.spent.wall.as_secs_f64() * 1000.0,
            step_ms: report
                .steps
                .iter()
                .map(|s| s.finished_us.saturating_sub(s.started_us) as f64 / 1000.0)
                .collect(),
            failures,
            outcome,
            mode: report.mode.name().to_string(),
            journal,
            skipped: None,
            known_failure: None,
        }
    }
}

/// The planner round trips of `report`: every call not served from plan memory, and the
/// extra model calls an answer needed (an ensemble's).
fn round_trips(report: &RunReport) -> u32 {
    let n: usize = report
        .planner_calls
        .iter()
        .filter(|c| !c.cached)
        .map(|c| 1 + c.also.len())
        .sum();
    u32::try_from(n).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(
        passed: bool,
        calls: (u32, u32),
        faults: u32,
        escalated: bool,
        wall: f64,
    ) -> TaskResult {
        let mut t = TaskResult::not_run("t", String::new());
        t.passed = passed;
        t.steps = calls.0;
        t.tool_calls = calls.0;
        t.tool_calls_ok = calls.1;
        t.faults_injected = faults;
        t.escalated = escalated;
        t.wall_ms = wall;
        t.planner_calls = calls.0 + 1;
        t
    }

    #[test]
    fn metrics_count_recovery_only_over_faulted_tasks_expected_to_complete() {
        let tasks = [
            task(true, (2, 1), 1, false, 10.0),
            task(false, (2, 0), 2, false, 30.0),
            task(true, (1, 0), 1, true, 20.0),
            task(true, (1, 1), 0, false, 40.0),
        ];
        // Task 2 expected to escalate: not counted for recovery.
        let m = Metrics::of(&tasks, |i| i != 2);
        assert_eq!(m.success_rate, 0.75);
        assert_eq!(m.steps_per_task, 1.5);
        assert_eq!(m.planner_calls_per_task, 2.5);
        assert_eq!(m.tool_success_rate, 2.0 / 6.0);
        assert_eq!(m.replan_recovery_rate, 0.5);
        assert_eq!(m.escalation_rate, 0.25);
        assert_eq!(m.wall_ms_p50, 25.0);
        assert_eq!(m.wall_ms_total, 100.0);
        assert_eq!(m.get("escalation_rate"), Some(0.25));
        let none = Metrics::of(&[], |_| true);
        assert_eq!(
            (none.tool_success_rate, none.replan_recovery_rate),
            (1.0, 1.0)
        );
    }
}
