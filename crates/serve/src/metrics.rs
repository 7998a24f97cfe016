//! `/metrics` in the Prometheus text format (version 0.0.4): runs by state, steps by
//! status, a tool-call latency histogram, planner tokens, lease takeovers, and the host's
//! call budget (calls running and waiting, memory reserved, their peaks, refusals). Steps,
//! latencies and tokens are counted when a run ends, from its report; the budget's gauges
//! are read when scraped.

use std::fmt::Write;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use toolhost_engine::{RunReport, StepStatus};
use toolhost_runtime::CallLoad;

use crate::registry::RunState;

/// Upper bounds of the latency buckets, in seconds.
const BUCKETS: [f64; 10] = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0, 5.0, 30.0];

#[derive(Debug, Default)]
struct Histogram {
    /// Per bucket (not cumulative); the last is +Inf.
    counts: [u64; BUCKETS.len() + 1],
    sum: f64,
}

/// The server's counters.
#[derive(Debug, Default)]
pub struct Metrics {
    succeeded: AtomicU64,
    failed: AtomicU64,
    skipped: AtomicU64,
    input_tokens: AtomicU64,
    output_tokens: AtomicU64,
    latency: Mutex<Histogram>,
}

impl Metrics {
    /// Counts a finished run's steps, tool-call latencies and planner tokens.
    pub fn record(&self, report: &RunReport) {
        let mut h = self.latency.lock().unwrap_or_else(|p| p.into_inner());
        for s in &report.steps {
            let counter = match s.status {
                StepStatus::Succeeded => &self.succeeded,
                StepStatus::Failed => &self.failed,
                StepStatus::Skipped => &self.skipped,
            };
            counter.fetch_add(1, Ordering::Relaxed);
            if s.status == StepStatus::Skipped {
                continue;
            }
            let secs = s.finished_us.saturating_sub(s.started_us) as f64 / 1e6;
            let i = BUCKETS
                .iter()
                .position(|b| secs <= *b)
                .unwrap_or(BUCKETS.len());
            h.counts[i] += 1;
            h.sum += secs;
        }
        self.input_tokens
            .fetch_add(report.spent.input_tokens, Ordering::Relaxed);
        self.output_tokens
            .fetch_add(report.spent.output_tokens, Ordering::Relaxed);
    }

    /// The exposition, with `runs` counted by state and `takeovers` (runs taken over
    /// after another replica's lease expired: always 0 for the embedded backend, which
    /// has no leases; the series exists so dashboards need not know the backend), and the
    /// call budget's use `calls` (absent without a budget).
    pub fn render(&self, runs: &[RunState], takeovers: u64, calls: Option<CallLoad>) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "# HELP toolhost_runs Runs known to this server, by state."
        );
        let _ = writeln!(out, "# TYPE toolhost_runs gauge");
        for state in RunState::ALL {
            let n = runs.iter().filter(|s| **s == state).count();
            let _ = writeln!(out, "toolhost_runs{{state=\"{}\"}} {n}", state.name());
        }
        let _ = writeln!(
            out,
            "# HELP toolhost_steps_total Steps of finished runs, by status."
        );
        let _ = writeln!(out, "# TYPE toolhost_steps_total counter");
        for (status, c) in [
            ("succeeded", &self.succeeded),
            ("failed", &self.failed),
            ("skipped", &self.skipped),
        ] {
            let _ = writeln!(
                out,
                "toolhost_steps_total{{status=\"{status}\"}} {}",
                c.load(Ordering::Relaxed)
            );
        }
        let h = self.latency.lock().unwrap_or_else(|p| p.into_inner());
        let _ = writeln!(
            out,
            "# HELP toolhost_tool_call_seconds Duration of the tool calls of finished runs."
        );
        let _ = writeln!(out, "# TYPE toolhost_tool_call_seconds histogram");
        let mut cumulative = 0;
        for (i, le) in BUCKETS.iter().enumerate() {
            cumulative += h.counts[i];
            let _ = writeln!(
                out,
                "toolhost_tool_call_seconds_bucket{{le=\"{le}\"}} {cumulative}"
            );
        }
        cumulative += h.counts[BUCKETS.len()];
        let _ = writeln!(
            out,
            "toolhost_tool_call_seconds_bucket{{le=\"+Inf\"}} {cumulative}"
        );
        let _ = writeln!(out, "toolhost_tool_call_seconds_sum {}", h.sum);
        let _ = writeln!(out, "toolhost_tool_call_seconds_count {cumulative}");
        let _ = writeln!(
            out,
            "# HELP toolhost_planner_tokens_total Planner tokens of finished runs."
        );
        let _ = writeln!(out, "# TYPE toolhost_planner_tokens_total counter");
        for (dir, c) in [
            ("input", &self.input_tokens),
            ("output", &self.output_tokens),
        ] {
            let _ = writeln!(
                out,
                "toolhost_planner_tokens_total{{direction=\"{dir}\"}} {}",
                c.load(Ordering::Relaxed)
            );
        }
        let _ = writeln!(
            out,
            "# HELP toolhost_lease_takeovers_total Runs taken over after another replica's lease expired."
        );
        let _ = writeln!(out, "# TYPE toolhost_lease_takeovers_total counter");
        let _ = writeln!(out, "toolhost_lease_takeovers_total {takeovers}");
        if let Some(c) = calls {
            render_calls(&mut out, &c);
        }
        out
    }
}

/// The call budget's gauges and its refusal counter.
fn render_calls(out: &mut String, c: &CallLoad) {
    for (name, kind, help, value) in [
        (
            "toolhost_calls_running",
            "gauge",
            "Tool calls running now.",
            c.running,
        ),
        (
            "toolhost_calls_running_peak",
            "gauge",
            "The most tool calls that ran at once.",
            c.peak_running,
        ),
        (
            "toolhost_calls_reserved_mib",
            "gauge",
            "MiB of memory caps the running calls reserve.",
            c.reserved_mib,
        ),
        (
            "toolhost_calls_reserved_mib_peak",
            "gauge",
            "The most MiB of memory caps reserved at once.",
            c.peak_reserved_mib,
        ),
        (
            "toolhost_calls_queued",
            "gauge",
            "Tool calls waiting for room in the call budget.",
            c.queued,
        ),
        (
            "toolhost_calls_queued_bytes",
            "gauge",
            "Argument bytes the waiting calls hold.",
            c.queued_bytes,
        ),
        (
            "toolhost_calls_overloaded_total",
            "counter",
            "Tool calls refused `overloaded`.",
            c.refused,
        ),
    ] {
        let _ = writeln!(out, "# HELP {name} {help}");
        let _ = writeln!(out, "# TYPE {name} {kind}");
        let _ = writeln!(out, "{name} {value}");
    }
}
