//! The span of one sandboxed call, `tool_call`, as a `tracing` span with target
//! [`TARGET`]. The engine opens the spans around it (run → plan_revision → step →
//! tool_call) with the same target; an exporter selects them all by it.
//!
//! Spans carry only ids, names, numbers and kinds: never tool arguments, outputs or error
//! messages, which may hold secrets or personal data.

use tracing::Span;
use tracing::field::Empty;

use crate::CallOutcome;

/// The target of every toolhost span; exporters select spans by it.
pub const TARGET: &str = "toolhost::trace";

/// `n` as an `i64` (saturating): OTLP integers are signed, and `tracing-opentelemetry`
/// would export unsigned ones as text.
pub fn int<N: TryInto<i64>>(n: N) -> i64 {
    n.try_into().unwrap_or(i64::MAX)
}

/// The span of one sandboxed call.
pub(crate) fn tool_call_span(tool: &str, operation: &str) -> Span {
    tracing::info_span!(
        target: TARGET,
        "tool_call",
        toolhost.tool.name = tool,
        toolhost.tool.operation = operation,
        toolhost.call.outcome = Empty,
        toolhost.call.fuel_consumed = Empty,
        toolhost.call.memory_peak_bytes = Empty,
        error.type = Empty,
        otel.status_code = Empty,
    )
}

/// Records a call's outcome (`ok` or the error kind), fuel and memory peak.
pub(crate) fn record_call(span: &Span, outcome: &CallOutcome) {
    let kind = match &outcome.result {
        Ok(_) => "ok",
        Err(e) => e.kind().as_str(),
    };
    span.record("toolhost.call.outcome", kind);
    span.record(
        "toolhost.call.fuel_consumed",
        int(outcome.report.fuel_consumed),
    );
    span.record(
        "toolhost.call.memory_peak_bytes",
        int(outcome.report.memory_peak_bytes),
    );
    if outcome.result.is_err() {
        span.record("error.type", kind);
        span.record("otel.status_code", "error");
    }
}
