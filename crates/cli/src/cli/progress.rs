//! Live progress of `toolhost run`: a line per plan and step (status, duration, fuel), a
//! spinner on stderr for steps that run long (only when stderr is a terminal), and the
//! summary table at the end.

use std::collections::BTreeMap;
use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;
use toolhost_engine::budget::{Spent, StopReason};
use toolhost_engine::validate::{Problem, ValidPlan};
use toolhost_engine::{Observer, PlannerCall, RunReport};
use toolhost_engine::{Step, StepRecord, StepStatus};
use toolhost_runtime::terminal;

/// How long a step runs before the spinner shows it.
const SPIN_AFTER: Duration = Duration::from_millis(700);

type Running = Arc<Mutex<BTreeMap<String, Instant>>>;

/// How many prompts wait for a person now: while any does, the spinner draws nothing, so
/// it never runs into what the person types.
static ASKING: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// The spinner keeps still while this lives (a prompt waiting for a person).
pub(crate) struct Paused(());

/// Stops the spinner drawing until the [`Paused`] is dropped, and clears its line now.
pub(crate) fn pause() -> Paused {
    if ASKING.fetch_add(1, Ordering::SeqCst) == 0 && std::io::stderr().is_terminal() {
        let mut err = std::io::stderr();
        let _ = write!(err, "\r\x1b[2K");
        let _ = err.flush();
    }
    Paused(())
}

impl Drop for Paused {
    fn drop(&mut self) {
        ASKING.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Writes progress lines to `out`.
pub(crate) struct Progress<'a> {
    out: &'a mut dyn Write,
    running: Running,
    stop_spinner: Arc<AtomicBool>,
}

impl<'a> Progress<'a> {
    pub(crate) fn new(out: &'a mut dyn Write) -> Progress<'a> {
        let running: Running = Arc::default();
        let stop_spinner = Arc::new(AtomicBool::new(false));
        if std::io::stderr().is_terminal() {
            spawn_spinner(running.clone(), stop_spinner.clone());
        }
        Progress {
            out,
            running,
            stop_spinner,
        }
    }
}

impl Drop for Progress<'_> {
    fn drop(&mut self) {
        self.stop_spinner.store(true, Ordering::Relaxed);
    }
}

fn spawn_spinner(running: Running, stop: Arc<AtomicBool>) {
    let frames = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];
    let _ = std::thread::Builder::new()
        .name("toolhost-spinner".into())
        .spawn(move || {
            let mut i = 0;
            let mut shown = false;
            while !stop.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(100));
                let now = Instant::now();
                let long: Vec<String> = running
                    .lock()
                    .map(|r| {
                        r.iter()
                            .filter(|(_, t)| now.duration_since(**t) >= SPIN_AFTER)
                            .map(|(id, t)| {
                                format!(
                                    "{} {:.1} s",
                                    terminal::line(id),
                                    now.duration_since(*t).as_secs_f64()
                                )
                            })
                            .collect()
                    })
                    .unwrap_or_default();
                let mut err = std::io::stderr();
                if ASKING.load(Ordering::SeqCst) > 0 {
                    // The prompt cleared the line; nothing is drawn over what is typed.
                    shown = false;
                    continue;
                }
                if long.is_empty() {
                    if shown {
                        let _ = write!(err, "\r\x1b[2K");
                        shown = false;
                    }
                    continue;
                }
                i = (i + 1) % frames.len();
                let _ = write!(err, "\r\x1b[2K{} running: {}", frames[i], long.join(", "));
                let _ = err.flush();
                shown = true;
            }
            if shown {
                let _ = write!(std::io::stderr(), "\r\x1b[2K");
            }
        });
}

fn ms(us: u64) -> String {
    format!("{:.1} ms", us as f64 / 1000.0)
}

impl Observer for Progress<'_> {
    fn plan_accepted(&mut self, plan: &ValidPlan) {
        if let Some(program) = &plan.plan.program {
            let lines = program.trim().lines().count();
            let _ = say!(
                self.out,
                "program r{}: {lines} line{} of Python; each tool call it makes is a step",
                plan.plan.revision,
                if lines == 1 { "" } else { "s" }
            );
            return;
        }
        let ids: Vec<&str> = plan.order.iter().map(|s| s.as_str()).collect();
        let _ = say!(
            self.out,
            "plan r{}: {} step{} ({})",
            plan.plan.revision,
            ids.len(),
            if ids.len() == 1 { "" } else { "s" },
            ids.join(", ")
        );
    }

    fn plan_rejected(&mut self, problems: &[Problem]) {
        let _ = say!(self.out, "plan rejected: {} problem(s)", problems.len());
        for p in problems {
            let _ = say!(self.out, "  - {p}");
        }
    }

    fn planner_called(&mut self, call: &PlannerCall) {
        let _ = say!(
            self.out,
            "planner ({}): {} in {} ({} in / {} out tokens)",
            call.model,
            call.reply,
            ms(call.latency_us),
            call.input_tokens,
            call.output_tokens
        );
    }

    fn step_started(&mut self, step: &Step, _revision: u32) {
        if let Ok(mut r) = self.running.lock() {
            r.insert(step.id.to_string(), Instant::now());
        }
        let _ = say!(self.out, "▶ {}  {}.{}", step.id, step.tool, step.operation);
    }

    fn step_finished(&mut self, r: &StepRecord) {
        if let Ok(mut running) = self.running.lock() {
            running.remove(r.id.as_str());
        }
        let took = ms(r.finished_us.saturating_sub(r.started_us));
        let line = match r.status {
            StepStatus::Succeeded => format!(
                "✔ {}  {}.{}  {took}  fuel {}",
                r.id, r.tool, r.operation, r.fuel
            ),
            StepStatus::Failed => format!(
                "✘ {}  {}.{}  {took}  fuel {}  {}",
                r.id,
                r.tool,
                r.operation,
                r.fuel,
                r.error
                    .as_ref()
                    .map_or_else(String::new, |e| format!("[{}] {}", e.kind, e.message))
            ),
            StepStatus::Skipped => format!(
                "↷ {}  skipped: {}",
                r.id,
                r.error.as_ref().map_or("", |e| e.message.as_str())
            ),
        };
        let _ = say!(self.out, "{line}");
    }

    fn stopped(&mut self, reason: &StopReason, _spent: &Spent, _answer: Option<&Value>) {
        let _ = say!(self.out, "stop: {reason}");
    }
}

/// The summary table: one row per step, then totals, the stop reason and the answer.
pub(crate) fn summary(report: &RunReport) -> String {
    let mut rows = vec![[
        "step".to_string(),
        "rev".into(),
        "start".into(),
        "tool.operation".into(),
        "status".into(),
        "duration".into(),
        "fuel".into(),
    ]];
    // In start order (parallel steps finish in any order), the earliest revision first.
    let mut steps: Vec<_> = report.steps.iter().collect();
    steps.sort_by_key(|r| (r.started_us, r.revision));
    for r in steps {
        rows.push(
            [
                r.id.to_string(),
                r.revision.to_string(),
                format!("+{}", ms(r.started_us)),
                format!("{}.{}", r.tool, r.operation),
                format!("{:?}", r.status).to_lowercase(),
                ms(r.finished_us.saturating_sub(r.started_us)),
                r.fuel.to_string(),
            ]
            .map(|cell| terminal::line(&cell).into_owned()),
        );
    }
    let widths: Vec<usize> = (0..7)
        .map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0))
        .collect();
    let mut s = String::new();
    for row in &rows {
        let cells: Vec<String> = row
            .iter()
            .zip(&widths)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect();
        s += cells.join("  ").trim_end();
        s.push('\n');
    }
    if report.refused > 0 {
        s += &format!(
            "security: the policy refused {} action{} (see the steps' events: `toolhost journal show`)\n",
            report.refused,
            if report.refused == 1 { "" } else { "s" }
        );
    }
    let sp = &report.spent;
    // The table's rows are the steps run (what the steps budget counts) and those skipped.
    let skipped = report
        .steps
        .iter()
        .filter(|r| r.status == toolhost_engine::StepStatus::Skipped)
        .count();
    let steps = match skipped {
        0 => format!("{} steps", sp.steps),
        n => format!("{} steps run and {n} skipped", sp.steps),
    };
    s += &format!(
        "total: {steps}, {} replans, fuel {}, {} ms; planner: {} calls, {} in / {} out tokens, ${:.4}\n",
        sp.replans,
        sp.fuel,
        sp.wall.as_millis(),
        sp.planner_calls,
        sp.input_tokens,
        sp.output_tokens,
        sp.cost_usd
    );
    s += &format!(
        "stop reason: {}\n",
        terminal::line(&report.stop.to_string())
    );
    if let Some(a) = &report.answer {
        s += &format!("answer: {}\n", terminal::json(a));
    }
    s
}
