//! The spans of a run, as `tracing` spans with target [`TARGET`]:
//!
//! ```text
//! run ─┬─ planner_call                  (one per planner call)
//!      └─ plan_revision ── step ── tool_call
//! ```
//!
//! `run` is opened by [`Engine::run`](crate::Engine::run), `plan_revision` around
//! the execution of each validated revision (or step-wise turn), `step` around each step's
//! task (it travels into the executor's concurrent tasks with `.instrument`), `tool_call`
//! in [`Runtime::call`](toolhost_runtime::Runtime::call) ([`toolhost_runtime::trace`]),
//! `planner_call` around each planner request.
//! Attribute names follow the OpenTelemetry conventions where there is one (`gen_ai.*` for
//! planner calls, `error.type`, `otel.kind`, `otel.status_code`), `toolhost.*` otherwise.
//! The CLI's `telemetry` module exports them over OTLP.
//!
//! Spans carry only ids, names, numbers and kinds: never a goal, tool arguments or
//! outputs, error messages or planner content, which may hold secrets or personal data
//! that only the run journal (redacted) records.

use serde::Serialize;
use tracing::Span;
use tracing::field::Empty;

use crate::budget::{Spent, StopReason};
use crate::plan::Step;
use crate::planner::{Mode, PlannerError, Reply, Usage};
use crate::record::{StepRecord, StepStatus};
use crate::validate::ValidPlan;

/// The target of every span (the runtime's): exporters select spans by it.
pub use toolhost_runtime::trace::TARGET;

/// A unit enum variant's serde name (`snake_case` here), or `""`.
fn serde_name(v: &impl Serialize) -> String {
    match serde_json::to_value(v) {
        Ok(serde_json::Value::String(s)) => s,
        Ok(serde_json::Value::Object(o)) => o
            .get("reason")
            .and_then(|r| r.as_str())
            .unwrap_or("")
            .to_string(),
        _ => String::new(),
    }
}

use toolhost_runtime::trace::int;

/// The span of a whole run; `run_id` when the caller knows one (the journal's).
pub(crate) fn run_span(mode: Mode, run_id: Option<&str>) -> Span {
    let span = tracing::info_span!(
        target: TARGET,
        "run",
        toolhost.run.id = Empty,
        toolhost.run.mode = serde_name(&mode),
        toolhost.run.stop_reason = Empty,
        toolhost.run.exhausted_budget = Empty,
        toolhost.run.steps = Empty,
        toolhost.run.replans = Empty,
        toolhost.run.planner_calls = Empty,
        toolhost.run.fuel = Empty,
        toolhost.run.input_tokens = Empty,
        toolhost.run.output_tokens = Empty,
        otel.status_code = Empty,
    );
    if let Some(id) = run_id {
        span.record("toolhost.run.id", id);
    }
    span
}

/// Records how the run ended and what it spent (only the stop's kind: an escalation's
/// reason is free text).
pub(crate) fn record_stop(span: &Span, stop: &StopReason, spent: &Spent) {
    span.record("toolhost.run.stop_reason", serde_name(stop));
    if let StopReason::BudgetExhausted { which } = stop {
        span.record("toolhost.run.exhausted_budget", serde_name(which));
    }
    span.record("toolhost.run.steps", int(spent.steps));
    span.record("toolhost.run.replans", int(spent.replans));
    span.record("toolhost.run.planner_calls", int(spent.planner_calls));
    span.record("toolhost.run.fuel", int(spent.fuel));
    span.record("toolhost.run.input_tokens", int(spent.input_tokens));
    span.record("toolhost.run.output_tokens", int(spent.output_tokens));
    if !matches!(stop, StopReason::Completed | StopReason::PlannerStopped) {
        span.record("otel.status_code", "error");
    }
}

/// The span of one validated plan revision (or step-wise turn) being executed.
pub(crate) fn revision_span(plan: &ValidPlan) -> Span {
    tracing::info_span!(
        target: TARGET,
        "plan_revision",
        toolhost.plan.revision = int(plan.plan.revision),
        toolhost.plan.steps = int(plan.plan.steps.len()),
    )
}

/// The span of one step, from its launch until its record is final.
pub(crate) fn step_span(step: &Step, revision: u32) -> Span {
    tracing::info_span!(
        target: TARGET,
        "step",
        toolhost.step.id = step.id.as_str(),
        toolhost.plan.revision = int(revision),
        toolhost.tool.name = step.tool.as_str(),
        toolhost.tool.operation = step.operation.as_str(),
        toolhost.step.status = Empty,
        toolhost.step.fuel = Empty,
        error.type = Empty,
        otel.status_code = Empty,
    )
}

/// Records a step's final status, fuel and error kind.
pub(crate) fn record_step(span: &Span, record: &StepRecord) {
    span.record("toolhost.step.status", serde_name(&record.status));
    span.record("toolhost.step.fuel", int(record.fuel));
    if let Some(e) = &record.error {
        span.record("error.type", e.kind.as_str());
    }
    if record.status != StepStatus::Succeeded {
        span.record("otel.status_code", "error");
    }
}

/// The GenAI provider of a planner, from its name (`openai:MODEL`, `anthropic:MODEL`);
/// `None` for the scripted, replayed and OpenAI-compatible planners.
fn provider(planner: &str) -> Option<&'static str> {
    match planner.split_once(':')?.0 {
        "openai" => Some("openai"),
        "anthropic" => Some("anthropic"),
        _ => None,
    }
}

/// The span of one planner call (a GenAI client span), before it is sent: `estimate` is
/// the planner's estimate, whose model is the requested one.
pub(crate) fn planner_span(planner: &str, estimate: &Usage, revision: u32) -> Span {
    let span = tracing::info_span!(
        target: TARGET,
        "planner_call",
        otel.kind = "client",
        gen_ai.operation.name = "chat",
        gen_ai.provider.name = Empty,
        gen_ai.system = Empty,
        gen_ai.request.model = estimate.model.as_str(),
        gen_ai.response.model = Empty,
        gen_ai.usage.input_tokens = Empty,
        gen_ai.usage.output_tokens = Empty,
        toolhost.planner.name = planner,
        toolhost.planner.reply = Empty,
        toolhost.plan.revision = int(revision),
        error.type = Empty,
        otel.status_code = Empty,
    );
    if let Some(p) = provider(planner) {
        span.record("gen_ai.provider.name", p);
        span.record("gen_ai.system", p);
    }
    span
}

/// Records the tokens a planner call used and the kind of its reply (never its content).
pub(crate) fn record_planner(span: &Span, result: &Result<(Reply, Usage), PlannerError>) {
    let usage = match result {
        Ok((reply, usage)) => {
            let kind = match reply {
                Reply::Plan { .. } => "plan",
                Reply::Turn { .. } => "turn",
                Reply::GiveUp { .. } => "give_up",
            };
            span.record("toolhost.planner.reply", kind);
            usage
        }
        Err(e) => {
            let kind = if e.budget.is_some() {
                "budget_exhausted"
            } else {
                "planner_error"
            };
            span.record("error.type", kind);
            span.record("otel.status_code", "error");
            &e.usage
        }
    };
    if !usage.model.is_empty() {
        span.record("gen_ai.response.model", usage.model.as_str());
    }
    span.record("gen_ai.usage.input_tokens", int(usage.input_tokens));
    span.record("gen_ai.usage.output_tokens", int(usage.output_tokens));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_the_serde_names() {
        for mode in Mode::ALL {
            assert_eq!(serde_name(&mode), mode.name());
            assert_eq!(mode.name().parse::<Mode>(), Ok(mode));
        }
        assert_eq!(serde_name(&Mode::React), "react");
        assert!("reAct".parse::<Mode>().unwrap_err().contains("`reAct`"));
        assert_eq!(serde_name(&StopReason::PlannerStopped), "planner_stopped");
        let escalated = StopReason::Escalated {
            why: "secret text".into(),
        };
        assert_eq!(serde_name(&escalated), "escalated");
        assert_eq!(serde_name(&StepStatus::Skipped), "skipped");
    }

    #[test]
    fn providers_are_known_only_for_model_planners() {
        assert_eq!(provider("openai:gpt-4o"), Some("openai"));
        assert_eq!(provider("anthropic:claude"), Some("anthropic"));
        assert_eq!(provider("openai-compatible:llama"), None);
        assert_eq!(provider("scripted"), None);
    }
}
