//! What the page shows, derived from the entries: steps as they ran, plan revisions with
//! their dependency edges, and budgets against what was spent.

use serde_json::Value;

use super::{Entry, Report};
use toolhost_engine::reference;

pub fn text<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

pub fn num(v: &Value, key: &str) -> u64 {
    v.get(key).and_then(Value::as_u64).unwrap_or(0)
}

/// One step as it ran (or started and never finished).
#[derive(Debug, Clone)]
pub struct StepRun<'a> {
    pub id: String,
    pub revision: u64,
    pub tool: String,
    pub operation: String,
    /// `succeeded`, `failed`, `skipped`, or `unfinished` (started, no finish on record).
    pub status: String,
    /// Microseconds since the first record.
    pub start_us: u64,
    pub end_us: u64,
    pub fuel: u64,
    /// Capability decisions that refused something, tripped a limit or trapped.
    pub denials: usize,
    /// The `step_finished` data (the `step_started` data for an unfinished step).
    pub data: &'a Value,
    pub line: usize,
}

impl StepRun<'_> {
    /// ` · rN`, the plan revision it belongs to; empty for an MCP session's call, which
    /// belongs to none (its records have no `revision`).
    pub fn revision_tag(&self) -> String {
        self.data
            .get("revision")
            .map_or_else(String::new, |_| format!(" · r{}", self.revision))
    }
}

/// Whether a capability event (an `AuditEvent` as JSON) records a refusal, a limit or a
/// trap, like `AuditEvent::is_denial`.
pub fn is_denial(event: &Value) -> bool {
    text(event, "decision") == "denied" || matches!(text(event, "event"), "limit" | "trap")
}

/// The steps in the order they started.
pub fn steps(r: &Report) -> Vec<StepRun<'_>> {
    let finished: Vec<&Entry> = r.of_kind("step_finished").collect();
    // `started_us` counts from the engine's clock, which starts a little after the first
    // record: shift it so steps line up with the records' timestamps.
    let shift = finished
        .iter()
        .filter_map(|e| Some(e.at_us?.saturating_sub(num(&e.data, "finished_us"))))
        .min()
        .unwrap_or(0);
    let mut out: Vec<StepRun> = finished
        .iter()
        .map(|e| {
            let d = &e.data;
            let events = d.get("events").and_then(Value::as_array);
            StepRun {
                id: text(d, "id").to_string(),
                revision: num(d, "revision"),
                tool: text(d, "tool").to_string(),
                operation: text(d, "operation").to_string(),
                status: text(d, "status").to_string(),
                start_us: shift + num(d, "started_us"),
                end_us: shift + num(d, "finished_us").max(num(d, "started_us")),
                fuel: num(d, "fuel"),
                denials: events.map_or(0, |v| v.iter().filter(|e| is_denial(e)).count()),
                data: d,
                line: e.line,
            }
        })
        .collect();
    let end = r.entries.iter().filter_map(|e| e.at_us).max().unwrap_or(0);
    for s in r.of_kind("step_started") {
        let (id, rev) = (text(&s.data, "id"), num(&s.data, "revision"));
        if !out.iter().any(|f| f.id == id && f.revision == rev) {
            let start = s.at_us.unwrap_or(0);
            out.push(StepRun {
                id: id.to_string(),
                revision: rev,
                tool: text(&s.data, "tool").to_string(),
                operation: text(&s.data, "operation").to_string(),
                status: "unfinished".into(),
                start_us: start,
                end_us: end.max(start),
                fuel: 0,
                denials: 0,
                data: &s.data,
                line: s.line,
            });
        }
    }
    out.sort_by_key(|s| (s.start_us, s.line));
    out
}

/// One step of a plan revision.
#[derive(Debug, Clone, PartialEq)]
pub struct PlanStep {
    pub id: String,
    pub tool: String,
    pub operation: String,
    pub description: String,
    /// `depends_on` and the steps its arguments refer to, without repeats.
    pub deps: Vec<String>,
}

/// An accepted plan revision (or step-wise turn).
#[derive(Debug, Clone, PartialEq)]
pub struct Revision {
    pub number: u64,
    pub goal: String,
    pub steps: Vec<PlanStep>,
    pub line: usize,
}

pub fn revisions(r: &Report) -> Vec<Revision> {
    r.of_kind("plan_accepted")
        .map(|e| {
            let steps = e.data.get("steps").and_then(Value::as_array);
            Revision {
                number: num(&e.data, "revision"),
                goal: text(&e.data, "goal").to_string(),
                steps: steps.into_iter().flatten().map(plan_step).collect(),
                line: e.line,
            }
        })
        .collect()
}

fn plan_step(s: &Value) -> PlanStep {
    let mut deps: Vec<String> = s
        .get("depends_on")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(str::to_string)
        .collect();
    let args = s.get("args").cloned().unwrap_or(Value::Null);
    for found in reference::find_all(&args) {
        if let Ok(r) = found.reference {
            deps.push(r.step.as_str().to_string());
        }
    }
    let mut seen = std::collections::HashSet::new();
    deps.retain(|d| seen.insert(d.clone()));
    PlanStep {
        id: text(s, "id").to_string(),
        tool: text(s, "tool").to_string(),
        operation: text(s, "operation").to_string(),
        description: text(s, "description").to_string(),
        deps,
    }
}

/// How a budget's amounts read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    Count,
    Millis,
    Usd,
}

/// One budget: its limit, what the run spent, and whether it stopped the run.
#[derive(Debug, Clone, PartialEq)]
pub struct BudgetRow {
    pub name: &'static str,
    pub spent: Option<f64>,
    pub limit: Option<f64>,
    pub unit: Unit,
    /// The spent amount comes from the `stopped` record rather than a sum of records.
    pub from_stop: bool,
    /// The stop record names this budget as exhausted.
    pub stopped_here: bool,
}

/// Budgets from `run_started` against what was spent: the `stopped` record's `spent` where
/// it has one, else sums over the records (steps and fuel from finished steps, tokens from
/// planner calls, replans from revisions, wall time from the timestamps).
pub fn budgets(r: &Report, steps: &[StepRun]) -> Vec<BudgetRow> {
    let limits = r.first("run_started").and_then(|d| d.get("budgets"));
    let stop = r.stop();
    let recorded = stop.and_then(|s| s.get("spent"));
    let which = stop.map(|s| text(s, "which")).unwrap_or("");
    let calls: Vec<&Value> = r.of_kind("planner_called").map(|e| &e.data).collect();
    let mut revs: Vec<u64> = revisions(r).iter().map(|v| v.number).collect();
    revs.dedup();
    // Step-wise and ReAct runs take turns; a turn is not a replan.
    let step_wise = matches!(
        r.first("run_started").map(|d| text(d, "mode")),
        Some("step-wise" | "react")
    );
    let wall_us = r.entries.iter().filter_map(|e| e.at_us).max().unwrap_or(0);
    let summed = |key: &str| -> Option<f64> {
        let n = match key {
            "steps" => steps.iter().filter(|s| s.status != "skipped").count() as u64,
            "fuel" => steps.iter().map(|s| s.fuel).sum(),
            "input_tokens" | "output_tokens" => calls.iter().map(|c| num(c, key)).sum(),
            "replans" if step_wise => 0,
            "replans" => revs.len().saturating_sub(1) as u64,
            "plan_repairs" => r.of_kind("plan_rejected").count() as u64,
            "wall" => wall_us / 1000,
            _ => return None,
        };
        Some(n as f64)
    };
    // (name, limit key, spent key, stop `which`, unit)
    const ROWS: [(&str, &str, &str, &str, Unit); 8] = [
        ("steps", "max_steps", "steps", "steps", Unit::Count),
        ("replans", "max_replans", "replans", "", Unit::Count),
        (
            "plan repairs",
            "max_plan_repairs",
            "plan_repairs",
            "",
            Unit::Count,
        ),
        (
            "wall time",
            "max_wall_ms",
            "wall",
            "wall_time",
            Unit::Millis,
        ),
        ("fuel", "max_fuel", "fuel", "fuel", Unit::Count),
        (
            "input tokens",
            "max_input_tokens",
            "input_tokens",
            "input_tokens",
            Unit::Count,
        ),
        (
            "output tokens",
            "max_output_tokens",
            "output_tokens",
            "output_tokens",
            Unit::Count,
        ),
        ("cost", "max_cost_usd", "cost_usd", "cost", Unit::Usd),
    ];
    ROWS.iter()
        .map(|&(name, limit, spent, stop_name, unit)| {
            let from_record = recorded.and_then(|s| s.get(spent)).and_then(Value::as_f64);
            BudgetRow {
                name,
                spent: from_record.or_else(|| summed(spent)),
                limit: limits.and_then(|l| l.get(limit)).and_then(Value::as_f64),
                unit,
                from_stop: from_record.is_some(),
                stopped_here: !stop_name.is_empty() && which == stop_name,
            }
        })
        .collect()
}

/// The stop reason in a line: `budget_exhausted (fuel)`, `escalated: why`, ….
pub(crate) fn stop_line(stop: &Value) -> String {
    let reason = text(stop, "reason");
    let detail: Vec<String> = stop
        .as_object()
        .into_iter()
        .flatten()
        .filter(|(k, _)| !matches!(k.as_str(), "reason" | "spent" | "by" | "how"))
        .map(|(_, v)| match v {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        })
        .collect();
    let by = crate::approvals::decider(stop)
        .map(|who| format!(" by {who}"))
        .unwrap_or_default();
    if detail.is_empty() {
        format!("{reason}{by}")
    } else {
        format!("{reason}{by}: {}", detail.join(", "))
    }
}

/// What a stop reason means, in words.
pub(crate) fn explain(reason: &str) -> &'static str {
    match reason {
        "completed" => "every step of the final plan succeeded",
        "planner_stopped" => "the planner said the goal is met",
        "budget_exhausted" => "a budget ran out",
        "replan_limit" => "a step failed and the replan budget is spent",
        "evaluator_failed" => "the evaluator failed a step",
        "escalated" => "it needs a person",
        "rejected_by_human" => "a reviewer rejected it",
        "cancelled" => "the run was cancelled",
        "suspended" => {
            "the server running it shut down; it is carried on where it stopped at the next start"
        }
        "refusal_limit" => {
            "the policy refused as many of the run's actions as it allows (max_refusals)"
        }
        "session_ended" => "the MCP session ended",
        _ => "",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn deps_join_depends_on_and_references_once() {
        let s = plan_step(&json!({
            "id": "c", "tool": "calc", "operation": "eval",
            "args": {"x": {"$ref": "a.output"}, "y": "${b.output} ${a.output.n}"},
            "depends_on": ["b"],
        }));
        assert_eq!(s.deps, ["b", "a"]);
    }

    #[test]
    fn denials_include_limits_and_traps() {
        assert!(is_denial(&json!({"event": "file", "decision": "denied"})));
        assert!(is_denial(&json!({"event": "limit", "limit": "fuel"})));
        assert!(!is_denial(&json!({"event": "env_read", "names": []})));
    }
}
