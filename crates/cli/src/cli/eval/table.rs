//! What `toolhost eval` prints: a progress line per finished task (stderr), and the table
//! of tasks with the suite's metrics (stdout).

use std::fmt::Write as _;

use toolhost_eval::baseline::shown;
use toolhost_eval::result::METRICS;
use toolhost_eval::{Baseline, SuiteResult, TaskResult};
use toolhost_runtime::terminal;

/// `[3/41] ✔ calc-chain  completed  12.3 ms`: the `done`-th of `total` tasks to finish.
pub(super) fn progress_line(done: usize, total: usize, t: &TaskResult) -> String {
    format!(
        "[{done}/{total}] {} {}  {}  {:.1} ms",
        mark(t),
        t.id,
        t.outcome,
        t.wall_ms
    )
}

/// `✔` passed, `✘` failed, `-` skipped.
fn mark(t: &TaskResult) -> &'static str {
    match (t.passed, &t.skipped) {
        (_, Some(_)) => "-",
        (true, None) => "✔",
        (false, None) => "✘",
    }
}

/// The task table (each failure under its task), then the metrics, each with its
/// baseline band when there is one.
pub(super) fn render(r: &SuiteResult, baseline: Option<&Baseline>) -> String {
    let width = r
        .tasks
        .iter()
        .map(|t| t.id.chars().count())
        .max()
        .unwrap_or(4)
        .max(4);
    let mut modes: Vec<&str> = r
        .tasks
        .iter()
        .map(|t| t.mode.as_str())
        .filter(|m| !m.is_empty())
        .collect();
    modes.sort_unstable();
    modes.dedup();
    let mut s = format!("suite {} (mode {})\n\n", r.suite, modes.join(", "));
    let _ = writeln!(
        s,
        "   {:width$}  {:17} {:>5} {:>8} {:>7} {:>7} {:>6} {:>9} {:>9}  journal",
        "task", "outcome", "steps", "calls ok", "planner", "replans", "faults", "tokens in", "ms"
    );
    for t in &r.tasks {
        let _ = writeln!(
            s,
            "{}  {:width$}  {:17} {:>5} {:>8} {:>7} {:>7} {:>6} {:>9} {:>9.1}  {}",
            mark(t),
            terminal::line(&t.id),
            t.outcome,
            t.steps,
            format!("{}/{}", t.tool_calls_ok, t.tool_calls),
            t.planner_calls,
            t.replans,
            t.faults_injected,
            t.input_tokens,
            t.wall_ms,
            terminal::line(t.journal.as_deref().unwrap_or("-"))
        );
        for f in &t.failures {
            let _ = writeln!(s, "      {}", terminal::line(f));
        }
        if let Some(why) = &t.skipped {
            let _ = writeln!(s, "      skipped: {}", terminal::line(why));
        }
        if let Some(why) = &t.known_failure {
            let _ = writeln!(s, "      known failure: {}", terminal::line(why));
        }
    }
    let passed = r.tasks.iter().filter(|t| t.passed).count();
    let skipped = r.tasks.iter().filter(|t| t.skipped.is_some()).count();
    let _ = write!(s, "\n{passed} of {} task(s) passed", r.tasks.len());
    if skipped > 0 {
        let _ = write!(
            s,
            ", {skipped} skipped (a component they name is not built: the test command builds every one)"
        );
    }
    s.push_str("\n\n");
    for name in METRICS {
        let value = r.metrics.get(name).unwrap_or(0.0);
        let _ = write!(s, "  {name:28} {:>12}", shown(name, value));
        if let Some(b) = baseline.and_then(|b| b.band(name)) {
            let _ = write!(
                s,
                "   baseline {} band [{}, {}]",
                shown(name, b.value),
                b.min.map_or("-".into(), |x| shown(name, x)),
                b.max.map_or("-".into(), |x| shown(name, x))
            );
        }
        s.push('\n');
    }
    s
}
