//! The console's HTML. Everything a run carries (goals, arguments, outputs, answers,
//! reasons, questions) is untrusted text: it reaches a page only through [`esc`], and the
//! page's policy runs no inline script, so markup in a tool's output stays text.

use std::fmt::Write;

use serde_json::Value;

use super::editor::{self, Draft};
use super::session::Session;
use crate::auth::Role;
use crate::registry::{Pending, RunState, RunView};
use toolhost_engine::review::Reach;

pub(crate) const CSS: &str = include_str!("console.css");
pub(crate) const JS: &str = include_str!("console.js");

/// `text` escaped for an HTML text node or a quoted attribute (the report's escaping).
pub(crate) use toolhost_journal::report::escape as esc;

/// A JSON value, pretty, escaped.
fn json(v: &Value) -> String {
    esc(&serde_json::to_string_pretty(v).unwrap_or_default())
}

pub(crate) fn layout(title: &str, session: Option<&Session>, body: &str) -> String {
    let who = match session {
        Some(s) => format!(
            r#"<span class="who">{}</span><form method="post" action="/console/sign-out"><input type="hidden" name="csrf" value="{}"><button type="submit">Sign out</button></form>"#,
            esc(s.caller.name().unwrap_or("open (no tokens)")),
            esc(&s.csrf)
        ),
        None => String::new(),
    };
    format!(
        r#"<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{} · toolhost</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="stylesheet" href="/console/console.css"><script src="/console/console.js" defer></script></head>
<body><header><nav aria-label="Console"><a href="/">Runs</a> <a href="/console/approvals">Approvals</a> <a href="/console/evaluations">Evaluations</a></nav>{who}</header>
<main>{body}</main></body></html>
"#,
        esc(title)
    )
}

/// The sign-in page, with why the last try failed.
pub(crate) fn sign_in(failed: Option<&str>) -> String {
    let error = failed.map_or(String::new(), |f| {
        format!(r#"<p class="error" role="alert">{}</p>"#, esc(f))
    });
    layout(
        "Sign in",
        None,
        &format!(
            r#"<h1>Sign in</h1>{error}
<form method="post" action="/console/sign-in"><label for="token">API token</label>
<input id="token" name="token" type="password" autocomplete="off" required>
<button type="submit">Sign in</button></form>"#
        ),
    )
}

/// A page saying why a request was refused.
pub(crate) fn message(status: axum::http::StatusCode, why: &str) -> String {
    layout(
        "Refused",
        None,
        &format!(
            r#"<h1>{}</h1><p class="error" role="alert">{}</p><p><a href="/">Back to the runs</a></p>"#,
            esc(&status.to_string()),
            esc(why)
        ),
    )
}

pub(super) fn stop_reason(run: &RunView) -> String {
    run.stop
        .as_ref()
        .and_then(|s| s["reason"].as_str())
        .map_or(String::new(), esc)
}

/// What a waiting run waits for, and the forms the session's role allows.
fn pending(session: &Session, run: &RunView, p: &Pending, draft: Option<&Draft>) -> String {
    let mut out = format!(
        r#"<section id="pending" aria-labelledby="pending-h"><h2 id="pending-h">Waiting for a person: {}</h2>"#,
        esc(&p.subject)
    );
    if let Some(why) = &p.why {
        let _ = write!(out, "<p>{}</p>", esc(why));
    }
    if let Some(q) = &p.question {
        let _ = write!(out, r#"<p class="question">{}</p>"#, esc(q));
    }
    for (label, v) in [
        ("Plan", &p.plan),
        ("Step", &p.step),
        ("Answer schema", &p.schema),
    ] {
        if let Some(v) = v {
            let _ = write!(out, "<h3>{label}</h3><pre>{}</pre>", json(v));
        }
    }
    if !p.reach.is_empty() {
        let rows: String = p
            .reach
            .iter()
            .map(|r| format!("<tr><td>{}</td>{}</tr>", esc(&r.step), reach_cells(r)))
            .collect();
        let _ = write!(
            out,
            r#"<h3>What it may do</h3><table id="reach"><thead><tr><th scope="col">Step</th><th scope="col">May use</th><th scope="col">Untrusted data in</th></tr></thead><tbody>{rows}</tbody></table>"#
        );
    }
    if session.caller.has(Role::Approve) {
        let (id, csrf) = (esc(&run.id), esc(&session.csrf));
        let _ = write!(out, r#"<div class="decide">"#);
        if p.subject == "question" {
            let fields = p.schema.as_ref().and_then(super::form::render).unwrap_or_else(|| {
                r#"<label for="answer">Answer (JSON)</label><textarea id="answer" name="answer" required></textarea>"#.to_string()
            });
            let _ = write!(
                out,
                r#"<form method="post" action="/console/runs/{id}/decide" class="answer-form"><input type="hidden" name="csrf" value="{csrf}"><input type="hidden" name="decision" value="answer">{fields}<button type="submit">Answer</button></form>"#
            );
        } else {
            let _ = write!(
                out,
                r#"<form method="post" action="/console/runs/{id}/decide"><input type="hidden" name="csrf" value="{csrf}"><input type="hidden" name="decision" value="approve"><button type="submit" id="approve">Approve</button></form>"#
            );
        }
        let _ = write!(
            out,
            r#"<form method="post" action="/console/runs/{id}/decide"><input type="hidden" name="csrf" value="{csrf}"><input type="hidden" name="decision" value="reject"><label for="reason">Reason</label><input id="reason" name="reason" required><button type="submit" id="reject">Reject</button></form></div>"#
        );
        if let (true, Some(plan)) = (p.subject == "plan", &p.plan) {
            out.push_str(&editor::render(&run.id, &session.csrf, plan, draft));
        }
    }
    out.push_str("</section>");
    out
}

/// A step's capabilities (a sensitive tool's last line says so) and the untrusted data reaching its
/// arguments, as two cells.
pub(super) fn reach_cells(r: &Reach) -> String {
    let list = |lines: &[String], none: &str| {
        if lines.is_empty() {
            return format!(r#"<span class="hint">{none}</span>"#);
        }
        let items: String = lines
            .iter()
            .map(|l| format!("<li>{}</li>", esc(l)))
            .collect();
        format!("<ul>{items}</ul>")
    };
    // A sensitive tool's last capability line says so.
    format!(
        r#"<td class="may-use">{}</td><td class="untrusted">{}</td>"#,
        list(&r.capabilities, "nothing"),
        list(&r.untrusted, "none")
    )
}

/// The journal's records, one item each.
fn timeline(journal: &str) -> (String, u64) {
    let mut items = String::new();
    let mut last = 0;
    for line in journal.lines() {
        let Ok(r) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        last = r["seq"].as_u64().unwrap_or(last);
        let _ = write!(
            items,
            r#"<li><span class="kind">{} {}</span><pre>{}</pre></li>"#,
            last,
            esc(r["kind"].as_str().unwrap_or("")),
            json(&r["data"])
        );
    }
    (items, last)
}

/// A run's page.
pub(crate) fn run(session: &Session, run: &RunView, bytes: &[u8], draft: Option<&Draft>) -> String {
    let journal = &String::from_utf8_lossy(bytes);
    let id = esc(&run.id);
    let answer = run.answer.as_ref().map_or(String::new(), |a| {
        let text = a.as_str().map_or_else(|| json(a), esc);
        format!(r#"<section aria-labelledby="answer-h"><h2 id="answer-h">Answer</h2><pre id="answer-text" class="answer">{text}</pre></section>"#)
    });
    let waiting = run
        .pending
        .as_ref()
        .map_or(String::new(), |p| pending(session, run, p, draft));
    let cancel = if !run.state.is_final() && session.caller.may_cancel(run.submitter.as_deref()) {
        format!(
            r#"<form method="post" action="/console/runs/{id}/cancel"><input type="hidden" name="csrf" value="{}"><button type="submit" id="cancel">Cancel the run</button></form>"#,
            esc(&session.csrf)
        )
    } else {
        String::new()
    };
    let (items, last) = timeline(journal);
    let live = if run.state.is_final() {
        ""
    } else {
        " data-live"
    };
    layout(
        &format!("Run {}", run.id),
        Some(session),
        &format!(
            r#"<h1>Run <code>{id}</code></h1>
<dl><dt>State</dt><dd id="state" class="state {state}">{state}</dd><dt>Goal</dt><dd>{goal}</dd><dt>Submitter</dt><dd>{who}</dd><dt>Steps</dt><dd>{ok} ok, {failed} failed, {skipped} skipped</dd><dt>Stop</dt><dd>{stop}</dd></dl>
{answer}{waiting}{cancel}
<p><a href="/console/runs/{id}/report">HTML report</a> · <a href="/console/runs/{id}/journal">JSONL journal</a></p>
{progress}
<h2>Timeline</h2><ol id="timeline" data-run="{id}" data-after="{last}"{live}>{items}</ol>"#,
            state = state_name(run.state),
            goal = esc(&run.goal),
            who = esc(run.submitter.as_deref().unwrap_or("")),
            ok = run.steps.succeeded,
            failed = run.steps.failed,
            skipped = run.steps.skipped,
            stop = stop_reason(run),
            progress = super::progress::sections(&run.id, bytes, !run.state.is_final()),
        ),
    )
}

fn state_name(s: RunState) -> &'static str {
    s.name()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markup_is_escaped() {
        assert_eq!(
            esc(r#"<script>alert("x")</script>&'"#),
            "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&amp;&#39;"
        );
    }
}
