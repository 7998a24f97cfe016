//! The steps section: one collapsible card per step as it ran, with its arguments,
//! output or error, evaluation and capability decisions (denials highlighted).

use std::fmt::Write as _;

use serde_json::Value;

use super::model::{self, StepRun, text};
use super::show::{pretty, short};
use super::{escape, lanes};

fn events_table(s: &mut String, events: &[Value]) {
    s.push_str("<table><tr><th>decision</th><th>event</th><th>detail</th><th>reason</th></tr>");
    for e in events {
        let denied = model::is_denial(e);
        let decision = match text(e, "decision") {
            "" if denied => "denied",
            "" => "allowed",
            d => d,
        };
        let detail: Vec<String> = e
            .as_object()
            .into_iter()
            .flatten()
            .filter(|(k, _)| !matches!(k.as_str(), "decision" | "event" | "reason"))
            .map(|(k, v)| format!("{k}: {}", short(v, 200)))
            .collect();
        let _ = write!(
            s,
            r#"<tr class="{}"><td><span class="badge {}">{}</span></td><td>{}</td><td class="mono">{}</td><td>{}</td></tr>"#,
            if denied { "denied" } else { "" },
            escape(decision),
            escape(decision),
            escape(text(e, "event")),
            escape(&detail.join(" · ")),
            escape(text(e, "reason")),
        );
    }
    s.push_str("</table>");
}

/// The steps' cards (an MCP session's `calls`).
pub(super) fn cards(s: &mut String, steps: &[StepRun], calls: bool) {
    let _ = write!(s, r#"<h2>{}</h2>"#, if calls { "Calls" } else { "Steps" });
    s.push_str(r#"<p class="tools"><button type="button" data-expand="all" hidden>expand all</button> <button type="button" data-expand="none" hidden>collapse all</button></p>"#);
    if steps.is_empty() {
        s.push_str(if calls {
            r#"<p class="empty">No call was made.</p>"#
        } else {
            r#"<p class="empty">No step ran.</p>"#
        });
    }
    for st in steps {
        let d = st.data;
        let open = st.status == "failed" || st.denials > 0;
        let _ = write!(
            s,
            r#"<details class="step st-{status}" id="step-{line}" data-step="{id}"{open}><summary><span class="badge st-{status}">{status}</span><span class="id">{id}</span><span class="op">{tool}.{op}{rev}</span>{denied}<span class="nums">{dur} · fuel {fuel}</span></summary><div class="body">"#,
            status = escape(&st.status),
            line = st.line,
            id = escape(&st.id),
            open = if open { " open" } else { "" },
            tool = escape(&st.tool),
            op = escape(&st.operation),
            rev = st.revision_tag(),
            denied = if st.denials > 0 {
                format!(r#"<span class="badge denied">{} denied</span>"#, st.denials)
            } else {
                String::new()
            },
            dur = lanes::duration(st.end_us - st.start_us),
            fuel = st.fuel,
        );
        let desc = text(d, "description");
        if !desc.is_empty() {
            let _ = write!(s, r#"<p class="desc">{}</p>"#, escape(desc));
        }
        s.push_str(r#"<div class="kv">"#);
        let mut row = |k: &str, v: &Value, class: &str| {
            let _ = write!(
                s,
                r#"<div>{k}</div><pre class="{class}">{}</pre>"#,
                escape(&pretty(v))
            );
        };
        if let Some(v) = d.get("args") {
            row("arguments", v, "");
        }
        if let Some(v) = d.get("output") {
            row("output", v, "");
        }
        if let Some(e) = d.get("error") {
            let line = format!("[{}] {}", text(e, "kind"), text(e, "message"));
            row("error", &Value::String(line), "err");
            if let Some(v) = e.get("value") {
                row("error value", v, "err");
            }
        }
        if let Some(e) = d.get("evaluation") {
            let line = format!("{}: {}", text(e, "verdict"), text(e, "detail"));
            row("evaluation", &Value::String(line), "");
        }
        s.push_str("</div>");
        if let Some(events) = d.get("events").and_then(Value::as_array) {
            let _ = write!(s, "<h3>Capability decisions ({})</h3>", events.len());
            events_table(s, events);
        }
        s.push_str("</div></details>");
    }
}
