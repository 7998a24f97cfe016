//! The top of the report page: the header with the chain's verdict, and the summary cards
//! (stop reason, steps, capabilities denied, duration, planner calls).

use std::fmt::Write as _;

use serde_json::Value;

use super::model::{self, StepRun, num, text};
use super::{Report, escape, lanes};

/// The page's header: what ran, its goal and provenance, and the chain's verdict.
pub(super) fn header(s: &mut String, r: &Report) {
    let start = r.first("run_started").cloned().unwrap_or(Value::Null);
    let v = &r.verified;
    let (class, verdict) = match &v.problem {
        None => (
            "ok",
            format!(
                "✔ Chain verified: {} records, head <code>sha256:{}</code>{}",
                v.records.len(),
                escape(v.head.as_deref().unwrap_or("")),
                match (v.stop(), &r.live) {
                    (Some(_), _) => String::new(),
                    (None, Some(live)) => format!(" — no stop record yet: {}", escape(live)),
                    (None, None) => " — no stop record, and nothing writes it now: the run crashed or was killed (<code>toolhost resume</code> carries it on)".into(),
                }
            ),
        ),
        Some(p) if p.is_torn() => (
            "torn",
            format!(
                "⚠ Journal torn: {}. The {} record(s) before it are intact.",
                escape(&p.to_string()),
                v.records.len()
            ),
        ),
        Some(p) => (
            "broken",
            format!(
                "✘ CHAIN BROKEN — this journal was changed after it was written: {}. Records from line {} on are shown but NOT verified.",
                escape(&p.to_string()),
                v.records.len() + 1
            ),
        ),
    };
    let _ = write!(
        s,
        r#"<header class="top"><div class="inner"><div class="brand">toolhost {what} report</div><h1>{id}</h1><p class="goal">{goal}</p><div class="meta"><span>mode {mode}</span><span>started {ts}</span><span>toolhost {ver}</span><span>{n} lines</span><span>{path}</span>{tools}</div><div class="verdict {class}" id="verdict">{verdict}</div></div></header>"#,
        what = if r.is_session() { "MCP session" } else { "run" },
        id = escape(&r.run_id()),
        goal = escape(text(&start, "goal")),
        mode = escape(text(&start, "mode")),
        ts = escape(r.entries.first().map_or("", |e| e.ts.as_str())),
        ver = escape(text(&start, "toolhost")),
        n = r.entries.len(),
        path = escape(&r.path().display().to_string()),
        tools = tools(&start),
    );
}

/// Each tool of `run_started` by the digest of its component, and the key that signed
/// it when its policy required a signature.
fn tools(start: &Value) -> String {
    let mut out = String::new();
    for (name, f) in start
        .get("tools")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
    {
        let signed = match f.get("signer") {
            Some(s) => format!(
                " · signed by {} (key {})",
                escape(text(s, "key")),
                escape(text(s, "key_id"))
            ),
            None => String::new(),
        };
        let _ = write!(
            out,
            r#"<span class="tool">tool {} <code>sha256:{}</code>{signed}</span>"#,
            escape(name),
            escape(text(f, "sha256"))
        );
    }
    out
}

fn card(s: &mut String, class: &str, key: &str, value: &str, detail: &str) {
    let _ = write!(
        s,
        r#"<div class="card {class}"><div class="k">{key}</div><div class="v">{value}</div><div class="d">{detail}</div></div>"#
    );
}

/// The summary cards: the stop, the steps (or an MCP session's calls), the capabilities
/// denied, the duration and, for a run, the planner calls.
pub(super) fn cards(s: &mut String, r: &Report, steps: &[StepRun]) {
    s.push_str(r#"<div class="cards">"#);
    stop_card(s, r);
    let count = |st: &str| steps.iter().filter(|x| x.status == st).count();
    let session = r.is_session();
    // The steps that ran, as the steps budget counts them (the stop's `spent.steps` when
    // there is one): a skipped step never ran and spends nothing.
    let ran = r
        .stop()
        .and_then(|d| d.pointer("/spent/steps"))
        .and_then(Value::as_u64)
        .unwrap_or((steps.len() - count("skipped")) as u64);
    card(
        s,
        "",
        if session { "calls" } else { "steps" },
        &ran.to_string(),
        &format!(
            "{} succeeded · {} failed{}{}",
            count("succeeded"),
            count("failed"),
            match count("unfinished") {
                0 => String::new(),
                n => format!(" · {n} unfinished"),
            },
            match count("skipped") {
                0 => String::new(),
                n => format!(" · {n} skipped, not run"),
            }
        ),
    );
    let denied: usize = steps.iter().map(|x| x.denials).sum();
    let denied_steps = steps.iter().filter(|x| x.denials > 0).count();
    card(
        s,
        if denied > 0 { "denied" } else { "" },
        "capabilities denied",
        &denied.to_string(),
        &format!(
            "in {denied_steps} {}(s)",
            if session { "call" } else { "step" }
        ),
    );
    let wall = r.entries.iter().filter_map(|e| e.at_us).max().unwrap_or(0);
    card(
        s,
        "",
        "duration",
        &lanes::duration(wall),
        "first to last record",
    );
    if session {
        s.push_str("</div>");
        return;
    }
    let calls: Vec<&Value> = r.of_kind("planner_called").map(|e| &e.data).collect();
    let tokens = |k: &str| calls.iter().map(|c| num(c, k)).sum::<u64>();
    card(
        s,
        "",
        "planner calls",
        &calls.len().to_string(),
        &format!(
            "{} in / {} out tokens",
            tokens("input_tokens"),
            tokens("output_tokens")
        ),
    );
    s.push_str("</div>");
}

/// How the run ended, green only when it ended well and the policy refused nothing.
fn stop_card(s: &mut String, r: &Report) {
    match r.stop() {
        Some(stop) => {
            let reason = text(stop, "reason");
            let good = matches!(reason, "completed" | "planner_stopped" | "session_ended");
            let line = model::stop_line(&without_answer(stop));
            // What the stop line adds to the reason: who cancelled, the details.
            let rest = line.strip_prefix(reason).unwrap_or_default();
            let rest = rest.strip_prefix(": ").unwrap_or(rest).trim();
            let mut detail = if rest.is_empty() {
                model::explain(reason).to_string()
            } else {
                format!("{} — {rest}", model::explain(reason))
            };
            // A run that ended well after the policy refused what it tried is not green:
            // refusals are security events (a hijacked planner, a misbehaving tool).
            let refused: u64 = r
                .entries
                .iter()
                .map(|e| crate::refusals::refused_in(&e.kind, &e.data))
                .sum();
            if refused > 0 {
                detail = format!(
                    "{detail} — but the policy refused {refused} action{} on the way (see capabilities denied)",
                    if refused == 1 { "" } else { "s" }
                );
            }
            card(
                s,
                match (good, refused) {
                    (true, 0) => "stop-good",
                    (true, _) => "stop-warn",
                    (false, _) => "stop-bad",
                },
                "stop reason",
                &escape(reason),
                &escape(&detail),
            );
        }
        None => match &r.live {
            Some(live) => card(s, "stop-warn", "state", "waiting", &escape(live)),
            None => card(s, "stop-bad", "stop reason", "none", "no stop record"),
        },
    }
}

/// The stop record without its `answer`, which the page shows apart ([`answer`]), and
/// without the empty details (an `answer` of `null` was shown as a stray "null").
fn without_answer(stop: &Value) -> Value {
    let mut v = stop.clone();
    if let Some(m) = v.as_object_mut() {
        m.remove("answer");
        m.retain(|_, x| !x.is_null());
    }
    v
}

/// The run's answer, on its own under the cards: a string as text, any other value as
/// JSON. Nothing when the run gave none.
pub(super) fn answer(s: &mut String, r: &Report) {
    let Some(a) = r
        .stop()
        .and_then(|d| d.get("answer"))
        .filter(|a| !a.is_null())
    else {
        return;
    };
    let text = match a {
        Value::String(t) => t.clone(),
        other => serde_json::to_string_pretty(other).unwrap_or_default(),
    };
    let _ = write!(
        s,
        r#"<section class="answer" id="answer"><h2>Answer</h2><pre>{}</pre></section>"#,
        escape(&text)
    );
}
