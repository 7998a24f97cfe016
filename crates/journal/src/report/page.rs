//! The page: header with the chain's verdict, summary cards, budgets, timeline, plan
//! revisions, steps with their capability decisions, planner calls, approvals, and every
//! record. Everything from the journal goes through [`escape`].

use std::fmt::Write as _;

use serde_json::Value;
use sha2::{Digest, Sha256};

use super::model::{self, BudgetRow, StepRun, Unit, num, text};
use super::show::short;
use super::{Report, dag, escape, lanes, steps, summary};

const CSS: &str = include_str!("report.css");
/// The report's stylesheet, for other pages in its style (`toolhost eval --html`).
pub const STYLESHEET: &str = CSS;
const SCRIPT: &str = include_str!("report.js");
/// Runs first, so any error in the page's script (or a browser's) is left in the DOM,
/// where a headless browser's `--dump-dom` shows it.
const ON_ERROR: &str = r#"window.onerror = function (message, source, line) {
  var root = document.documentElement;
  var seen = root.getAttribute("data-script-errors") || "";
  root.setAttribute("data-script-errors", seen + message + " (line " + line + ")\n");
  return false;
};"#;

/// `'sha256-…'` of an inline script, for the Content-Security-Policy.
fn csp_hash(script: &str) -> String {
    use base64::Engine as _;
    let digest = Sha256::digest(script.as_bytes());
    let b64 = base64::engine::general_purpose::STANDARD.encode(digest);
    format!("'sha256-{b64}'")
}

/// `x` in its unit, as the report shows it: `$0.0123`, `1.2 s`, `104 748`, `1.25 M`.
pub fn amount(x: f64, unit: Unit) -> String {
    match unit {
        Unit::Usd => format!("${x:.4}"),
        Unit::Millis => lanes::duration((x * 1000.0) as u64),
        Unit::Count if x >= 1e9 => format!("{:.2} G", x / 1e9),
        Unit::Count if x >= 1e6 => format!("{:.2} M", x / 1e6),
        Unit::Count => {
            // Thousands separated by thin spaces: 104 748.
            let digits = format!("{x:.0}");
            let mut out = String::new();
            for (i, c) in digits.chars().enumerate() {
                if i > 0 && (digits.len() - i) % 3 == 0 {
                    out.push('\u{2009}');
                }
                out.push(c);
            }
            out
        }
    }
}

pub fn render(r: &Report) -> String {
    let steps = model::steps(r);
    let session = r.is_session();
    let mut body = String::new();
    summary::header(&mut body, r);
    body.push_str("<main>");
    summary::cards(&mut body, r, &steps);
    summary::answer(&mut body, r);
    if !session {
        budgets(&mut body, &model::budgets(r, &steps));
    }
    let _ = write!(
        body,
        r#"<h2>Timeline</h2><div class="panel"><div class="legend"><span><i class="sw-succeeded"></i>succeeded</span><span><i class="sw-failed"></i>failed</span><span><i class="sw-skipped"></i>skipped</span><span><i class="sw-unfinished"></i>unfinished</span><span><i class="sw-planner"></i>planner call</span><span><i class="sw-denied"></i>capability denied</span><span><i class="sw-plan"></i>plan revision</span></div>{}</div>"#,
        lanes::svg(r, &steps)
    );
    if session {
        clients(&mut body, r);
    } else {
        revisions(&mut body, r, &steps);
    }
    steps::cards(&mut body, &steps, session);
    if !session {
        planner(&mut body, r);
    }
    approvals(&mut body, r);
    records(&mut body, r);
    body.push_str("</main>");
    let csp = format!(
        "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'; script-src {} {}",
        csp_hash(ON_ERROR),
        csp_hash(SCRIPT)
    );
    format!(
        r##"<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{csp}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>toolhost {what} {id}</title>
<style>{CSS}</style>
<script>{ON_ERROR}</script>
</head>
<body>
<svg width="0" height="0" style="position:absolute" aria-hidden="true"><defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto"><path d="M0,0 L10,5 L0,10 z" fill="#8795a5"/></marker></defs></svg>
{body}
<script>{SCRIPT}</script>
</body>
</html>
"##,
        id = escape(&r.run_id()),
        what = if session { "MCP session" } else { "run" },
    )
}

fn budgets(s: &mut String, rows: &[BudgetRow]) {
    s.push_str(r#"<h2>Budgets</h2><table class="budgets"><tr><th>budget</th><th class="num">spent</th><th class="num">limit</th><th>used</th><th>source</th></tr>"#);
    for b in rows {
        let spent = b.spent.map_or("—".into(), |x| amount(x, b.unit));
        let limit = b.limit.map_or("—".into(), |x| amount(x, b.unit));
        let frac = match (b.spent, b.limit) {
            (Some(x), Some(l)) if l > 0.0 => Some(x / l),
            _ => None,
        };
        let meter = frac.map_or_else(String::new, |f| {
            let class = if f > 1.0 || b.stopped_here {
                "over"
            } else if f >= 0.8 {
                "high"
            } else {
                ""
            };
            format!(
                r#"<div class="meter {class}" title="{:.1}%"><span style="width:{:.1}%"></span></div>"#,
                f * 100.0,
                (f * 100.0).clamp(0.0, 100.0)
            )
        });
        let source = match (b.from_stop, b.spent.is_some()) {
            (true, _) => "stop record",
            (false, true) => "summed from records",
            (false, false) => "not recorded",
        };
        let _ = write!(
            s,
            r#"<tr class="{}"><td>{}{}</td><td class="num">{spent}</td><td class="num">{limit}</td><td>{meter}</td><td class="note">{source}</td></tr>"#,
            if b.stopped_here { "stopped-here" } else { "" },
            b.name,
            if b.stopped_here {
                " — exhausted, stopped the run"
            } else {
                ""
            },
        );
    }
    s.push_str("</table>");
}

fn revisions(s: &mut String, r: &Report, steps: &[StepRun]) {
    s.push_str("<h2>Plans</h2>");
    let revs = model::revisions(r);
    if revs.is_empty() {
        s.push_str(r#"<p class="empty">No plan was accepted.</p>"#);
    }
    let mut after = 0;
    for rev in &revs {
        let _ = write!(
            s,
            r#"<div class="rev panel"><div class="head"><h3>Revision {}</h3><span class="g">{}</span><span class="note">{} step(s) · line {}</span></div>"#,
            rev.number,
            escape(&rev.goal),
            rev.steps.len(),
            rev.line
        );
        let rejected: Vec<&Value> = r
            .of_kind("plan_rejected")
            .filter(|e| e.line > after && e.line < rev.line)
            .flat_map(|e| {
                e.data
                    .get("problems")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
            })
            .collect();
        if !rejected.is_empty() {
            s.push_str(
                r#"<div class="problems"><strong>Rejected before this revision:</strong><ul>"#,
            );
            for p in rejected {
                let step = text(p, "step");
                let _ = write!(
                    s,
                    "<li>{}{}<code>{}</code></li>",
                    escape(text(p, "message")),
                    if step.is_empty() { "" } else { " — step " },
                    escape(step)
                );
            }
            s.push_str("</ul></div>");
        }
        let _ = write!(
            s,
            r#"<div class="scroll">{}</div></div>"#,
            dag::svg(rev, steps)
        );
        after = rev.line;
    }
    let late: Vec<_> = r
        .of_kind("plan_rejected")
        .filter(|e| e.line > after)
        .collect();
    for e in late {
        let problems = e.data.get("problems").and_then(Value::as_array);
        let _ = write!(
            s,
            r#"<div class="problems"><strong>Rejected plan (line {}), never replaced:</strong><ul>"#,
            e.line
        );
        for p in problems.into_iter().flatten() {
            let _ = write!(s, "<li>{}</li>", escape(text(p, "message")));
        }
        s.push_str("</ul></div>");
    }
}

fn planner(s: &mut String, r: &Report) {
    s.push_str("<h2>Planner calls</h2>");
    let calls: Vec<_> = r.of_kind("planner_called").collect();
    if calls.is_empty() {
        s.push_str(r#"<p class="empty">None.</p>"#);
        return;
    }
    s.push_str(r#"<table><tr><th>line</th><th>revision</th><th>model</th><th>reply</th><th class="num">input tokens</th><th class="num">output tokens</th><th class="num">latency</th></tr>"#);
    for e in calls {
        let d = &e.data;
        let _ = write!(
            s,
            r#"<tr><td>{}</td><td>r{}</td><td class="mono">{}</td><td class="data">{}</td><td class="num">{}</td><td class="num">{}</td><td class="num">{}</td></tr>"#,
            e.line,
            num(d, "revision"),
            escape(text(d, "model")),
            escape(&d.get("reply").map(|v| short(v, 300)).unwrap_or_default()),
            num(d, "input_tokens"),
            num(d, "output_tokens"),
            lanes::duration(num(d, "latency_us")),
        );
    }
    s.push_str("</table>");
}

/// The MCP clients that introduced themselves to a session.
fn clients(s: &mut String, r: &Report) {
    s.push_str("<h2>Clients</h2>");
    let all: Vec<_> = r.of_kind("client_connected").collect();
    if all.is_empty() {
        s.push_str(r#"<p class="empty">No client introduced itself.</p>"#);
        return;
    }
    s.push_str("<table><tr><th>line</th><th>client</th><th>protocol</th></tr>");
    for e in all {
        let _ = write!(
            s,
            r#"<tr><td>{}</td><td class="mono">{}</td><td class="mono">{}</td></tr>"#,
            e.line,
            escape(text(&e.data, "client")),
            escape(text(&e.data, "protocol_version")),
        );
    }
    s.push_str("</table>");
}

fn approvals(s: &mut String, r: &Report) {
    let all: Vec<_> = r.of_kind("approval").collect();
    if all.is_empty() {
        return;
    }
    s.push_str(r#"<h2>Approvals</h2><table><tr><th>line</th><th>subject</th><th>decision</th><th>by</th><th class="num">waited</th><th>why / reason</th></tr>"#);
    for e in all {
        let d = &e.data;
        let subject = match text(d, "subject") {
            "step" => format!(
                "step {} ({}.{})",
                text(d, "step"),
                text(d, "tool"),
                text(d, "operation")
            ),
            "question" => format!("question {}", text(d, "step")),
            _ => format!("plan r{}", num(d, "revision")),
        };
        let why: Vec<&str> = [text(d, "why"), text(d, "reason")]
            .into_iter()
            .filter(|t| !t.is_empty())
            .collect();
        let decision = text(d, "decision");
        let waited = d.get("waited_ms").and_then(Value::as_u64).map_or_else(
            || "—".to_string(),
            |ms| lanes::duration(ms.saturating_mul(1000)),
        );
        let _ = write!(
            s,
            r#"<tr><td>{}</td><td>{}</td><td><span class="badge {}">{}</span></td><td>{}</td><td class="num">{}</td><td>{}</td></tr>"#,
            e.line,
            escape(&subject),
            escape(decision),
            escape(decision),
            escape(&crate::approvals::decider(d).unwrap_or_else(|| "—".into())),
            escape(&waited),
            escape(&why.join(" — ")),
        );
    }
    s.push_str("</table>");
}

fn records(s: &mut String, r: &Report) {
    const KNOWN: [&str; 11] = [
        "run_started",
        "planner_called",
        "plan_accepted",
        "plan_rejected",
        "approval",
        "step_started",
        "step_finished",
        "stopped",
        "resumed",
        "blob",
        "client_connected",
    ];
    // Open when something needs a look: lines past a break, or kinds this version does not
    // know.
    let notable = r
        .entries
        .iter()
        .any(|e| !e.verified || !KNOWN.contains(&e.kind.as_str()));
    let _ = write!(
        s,
        r#"<h2>Records</h2><details class="panel"{}><summary>All {} records as written (unverified lines and kinds this version does not know are highlighted)</summary><table><tr><th>line</th><th>time</th><th>kind</th><th>data</th></tr>"#,
        if notable { " open" } else { "" },
        r.entries.len()
    );
    for e in &r.entries {
        let class = match (e.verified, KNOWN.contains(&e.kind.as_str())) {
            (false, _) => "unverified",
            (true, false) => "unknown",
            (true, true) => "",
        };
        let _ = write!(
            s,
            r#"<tr class="{class}"><td>{}{}</td><td class="mono">{}</td><td class="kind mono">{}</td><td class="data mono">{}</td></tr>"#,
            e.line,
            if e.verified {
                ""
            } else {
                r#" <span class="badge unverified">unverified</span>"#
            },
            e.at_us
                .map_or_else(|| escape(&e.ts), |us| format!("+{}", lanes::duration(us))),
            escape(if e.kind.is_empty() {
                "(unreadable)"
            } else {
                &e.kind
            }),
            escape(&short(&e.data, 400)),
        );
    }
    s.push_str("</table></details>");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csp_hash_is_base64_sha256() {
        // `printf 'abc' | openssl dgst -sha256 -binary | base64`
        assert_eq!(
            csp_hash("abc"),
            "'sha256-ungWv48Bz+pBQUDeXa4iI7ADYaOWF3qctBD/YfIAFa0='"
        );
    }
}
