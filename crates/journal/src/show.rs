//! The readable timeline of a journal (`toolhost journal show`), and its JSON form.

use std::fmt::Write as _;

use serde_json::{Value, json};
use toolhost_runtime::terminal;

use super::verify::Verified;
use super::{Kind, Record, time};

/// At most this many characters of a value are shown on a timeline line.
const SHOWN: usize = 120;

/// Why a run stopped is what a person opens its journal for: its details are shown whole
/// up to this many characters (a tool's error can be megabytes; `--json` has every byte).
const STOP_SHOWN: usize = 4000;

fn short(v: &Value) -> String {
    cut_to(v, SHOWN)
}

/// `v` as text, cut to at most `limit` characters.
fn cut_to(v: &Value, limit: usize) -> String {
    let s = match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let count = s.chars().count();
    if count <= limit {
        return s;
    }
    let cut: String = s.chars().take(limit - 1).collect();
    if limit == SHOWN {
        format!("{cut}…")
    } else {
        format!(
            "{cut}… ({} more characters: `journal show --json` has them)",
            count - limit + 1
        )
    }
}

fn text<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("?")
}

fn num(v: &Value, key: &str) -> u64 {
    v.get(key).and_then(Value::as_u64).unwrap_or(0)
}

fn ms(us: u64) -> String {
    format!("{:.1} ms", us as f64 / 1000.0)
}

/// One capability decision: `denied file open-read /etc/passwd (not-permitted)`.
fn event(e: &Value) -> String {
    let Value::Object(map) = e else {
        return short(e);
    };
    let mut parts = vec![
        map.get("decision")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string(),
        map.get("event")
            .and_then(Value::as_str)
            .unwrap_or("")
            .into(),
    ];
    parts.extend(
        map.iter()
            .filter(|(k, _)| *k != "decision" && *k != "event" && *k != "reason")
            .map(|(_, v)| short(v)),
    );
    let mut s = parts
        .into_iter()
        .filter(|p| !p.is_empty())
        .collect::<Vec<_>>()
        .join(" ");
    if let Some(r) = map.get("reason").and_then(Value::as_str) {
        let _ = write!(s, " ({r})");
    }
    s
}

/// The timeline lines of one record.
fn line(r: &Record) -> Vec<String> {
    let d = &r.data;
    match r.kind {
        Kind::RunStarted => run_started(d),
        Kind::PlannerCalled => vec![format!(
            "planner   {} → {} · {} in / {} out tokens · {}",
            text(d, "model"),
            text(d, "reply"),
            num(d, "input_tokens"),
            num(d, "output_tokens"),
            ms(num(d, "latency_us"))
        )],
        Kind::PlanAccepted => plan_accepted(d),
        Kind::PlanRejected => plan_rejected(d),
        Kind::Approval => approval(d),
        Kind::StepStarted => vec![format!(
            "▶ {}  {}.{} {}",
            text(d, "id"),
            text(d, "tool"),
            text(d, "operation"),
            d.get("args").map(short).unwrap_or_default()
        )],
        Kind::StepFinished => step_finished(d),
        Kind::ClientConnected => vec![format!(
            "client    {} (protocol {})",
            text(d, "client"),
            text(d, "protocol_version")
        )],
        Kind::Blob => vec![format!(
            "blob      sha256:{:.12} · {} bytes",
            text(d, "sha256"),
            num(d, "bytes")
        )],
        Kind::Resumed => resumed(d),
        Kind::Stopped => stopped(d),
    }
}

/// The run's goal and mode, then its policy and tools by digest.
fn run_started(d: &Value) -> Vec<String> {
    let tools: Vec<String> = d
        .get("tools")
        .and_then(Value::as_object)
        .map(|t| {
            t.iter()
                .map(|(n, f)| match f.get("signer") {
                    Some(s) => format!(
                        "{n} {:.12} signed by {} (key {:.12})",
                        text(f, "sha256"),
                        text(s, "key"),
                        text(s, "key_id")
                    ),
                    None => format!("{n} {:.12}", text(f, "sha256")),
                })
                .collect()
        })
        .unwrap_or_default();
    let mut lines = vec![
        format!("start     {} ({})", text(d, "goal"), text(d, "mode")),
        format!(
            "          policy {:.12} · tools: {}",
            d.get("policy").map_or("?", |p| text(p, "sha256")),
            tools.join(", ")
        ),
    ];
    if let Some(i) = d.get("interpreter") {
        lines.push(format!(
            "          interpreter {} {:.12}",
            text(i, "path"),
            text(i, "sha256")
        ));
    }
    lines
}

/// A plan revision and its steps in order.
fn plan_accepted(d: &Value) -> Vec<String> {
    if let Some(program) = d.get("program").and_then(Value::as_str) {
        return vec![format!(
            "program r{}   {} line(s) of Python; its calls are the steps that follow",
            num(d, "revision"),
            program.trim().lines().count()
        )];
    }
    let order: Vec<String> = d
        .get("order")
        .and_then(Value::as_array)
        .map(|o| o.iter().map(short).collect())
        .unwrap_or_default();
    vec![format!(
        "plan r{}   {} step(s): {}",
        num(d, "revision"),
        order.len(),
        order.join(", ")
    )]
}

/// A rejected plan and each of its problems.
fn plan_rejected(d: &Value) -> Vec<String> {
    let problems = d.get("problems").and_then(Value::as_array);
    let mut v = vec![format!(
        "rejected  {} problem(s)",
        problems.map_or(0, Vec::len)
    )];
    v.extend(
        problems
            .into_iter()
            .flatten()
            .map(|p| format!("          - {}", text(p, "message"))),
    );
    v
}

/// An approver's decision on a step, a plan or a question, and who made it.
fn approval(d: &Value) -> Vec<String> {
    let subject = match text(d, "subject") {
        "step" => format!("step {}", text(d, "step")),
        "question" => format!("question {}", text(d, "step")),
        _ => format!("plan r{}", num(d, "revision")),
    };
    let reason = d
        .get("reason")
        .and_then(Value::as_str)
        .map_or_else(String::new, |r| format!(": {r}"));
    vec![format!(
        "approval  {subject}: {}{reason}{}",
        text(d, "decision"),
        crate::approvals::decider(d).map_or_else(String::new, |by| format!(" · by {by}"))
    )]
}

/// A finished step: its mark, cost and result, then each capability decision.
fn step_finished(d: &Value) -> Vec<String> {
    let (mark, tail) = match text(d, "status") {
        "succeeded" => (
            "✔",
            format!("→ {}", d.get("output").map(short).unwrap_or_default()),
        ),
        "skipped" => ("↷", String::new()),
        _ => (
            "✘",
            d.get("error").map_or_else(String::new, |e| {
                format!("[{}] {}", text(e, "kind"), text(e, "message"))
            }),
        ),
    };
    let mut v = vec![format!(
        "{mark} {}  {}.{} · {} · fuel {} {tail}",
        text(d, "id"),
        text(d, "tool"),
        text(d, "operation"),
        ms(num(d, "duration_us")),
        num(d, "fuel"),
    )];
    v.extend(
        d.get("events")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|e| format!("          {}", event(e))),
    );
    v
}

/// Where a resume carried on, the torn line it dropped, the steps it reran or abandoned.
fn resumed(d: &Value) -> Vec<String> {
    let mut v = vec![format!("resumed   after record {}", num(d, "after_record"))];
    if let Some(t) = d.get("torn").filter(|t| !t.is_null()) {
        v.push(format!(
            "          torn line {} dropped ({} bytes)",
            num(t, "line"),
            num(t, "bytes")
        ));
    }
    for key in ["rerun", "abandon"] {
        let ids: Vec<&str> = d
            .get(key)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        if !ids.is_empty() {
            v.push(format!("          {key}: {}", ids.join(", ")));
        }
    }
    v
}

/// Why the run stopped, with the stop record's details.
fn stopped(d: &Value) -> Vec<String> {
    let detail: Vec<String> = d
        .as_object()
        .into_iter()
        .flatten()
        .filter(|(k, _)| !matches!(k.as_str(), "reason" | "spent" | "answer" | "by" | "how"))
        .map(|(_, v)| cut_to(v, STOP_SHOWN))
        .collect();
    let detail = if detail.is_empty() {
        String::new()
    } else {
        format!(": {}", detail.join(", "))
    };
    // Who cancelled it, as decisions are shown.
    let by = crate::approvals::decider(d)
        .map(|who| format!(" · by {who}"))
        .unwrap_or_default();
    vec![format!("stop      {}{detail}{by}", text(d, "reason"))]
}

/// The timeline: a header, one or more lines per record with its offset from the start,
/// and the chain's verdict.
pub fn timeline(v: &Verified) -> String {
    let mut s = format!("run {}\n", v.run);
    let start = v.records.first().and_then(|r| time::parse(&r.ts));
    if let Some(first) = v.records.first() {
        let _ = writeln!(s, "started {}", first.ts);
    }
    for r in &v.records {
        let offset = match (start, time::parse(&r.ts)) {
            (Some(a), Some(b)) => {
                format!(
                    "+{:.3}s",
                    b.duration_since(a).unwrap_or_default().as_secs_f64()
                )
            }
            _ => r.ts.clone(),
        };
        // A record's fields hold what tools and the model said: each line is escaped
        // whole, so none of it can drive the terminal or start a line of its own.
        for (i, l) in line(r).into_iter().enumerate() {
            let l = terminal::line(&l);
            if i == 0 {
                let _ = writeln!(s, "{offset:>9}  {l}");
            } else {
                let _ = writeln!(s, "{:>9}  {l}", "");
            }
        }
    }
    s += &terminal::line(&verdict(v));
    s.push('\n');
    s
}

/// One line on the chain: valid (complete or not) or its first problem.
pub fn verdict(v: &Verified) -> String {
    match &v.problem {
        None => format!(
            "chain: valid, {} records{}, head sha256:{}",
            v.records.len(),
            if v.stop().is_some() {
                ""
            } else {
                " (no stop record: the run crashed or is still running)"
            },
            v.head.as_deref().unwrap_or("")
        ),
        Some(p) if p.is_torn() => format!("chain: torn: {p}"),
        Some(p) => format!("chain: BROKEN: {p}"),
    }
}

/// The machine form: the run, the chain's verdict, and the records.
pub fn json(v: &Verified) -> Value {
    json!({
        "run": v.run,
        "path": v.path.display().to_string(),
        "valid": v.is_valid(),
        "complete": v.stop().is_some(),
        "torn": v.problem.as_ref().is_some_and(|p| p.is_torn()),
        "problem": v.problem.as_ref().map(ToString::to_string),
        "head": v.head,
        "records": v.records,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stop_reason_is_shown_whole() {
        let why = format!("planner failed: {}", "the provider said no. ".repeat(20));
        let line = stopped(&json!({"reason": "escalated", "error": why})).remove(0);
        assert_eq!(line, format!("stop      escalated: {why}"));
        let huge = "x".repeat(STOP_SHOWN + 10);
        let line = stopped(&json!({"reason": "escalated", "error": huge})).remove(0);
        assert!(
            line.ends_with("… (11 more characters: `journal show --json` has them)"),
            "{line}"
        );
    }
}
