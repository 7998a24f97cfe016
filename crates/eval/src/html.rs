//! `toolhost eval --html`: one self-contained page in the run report's style (its
//! stylesheet, no script, no external resource): the metrics as cards, a chart per metric
//! against the baseline (bars for the current and the baseline value, the band shaded),
//! and the task table. Everything from the suite goes through [`escape`].

use std::fmt::Write as _;

use crate::baseline::{Band, Baseline, num, shown};
use crate::result::{METRICS, SuiteResult};
use toolhost_journal::report::escape;
use toolhost_journal::report::page::STYLESHEET;

const EXTRA_CSS: &str = "svg.metric { display: block; } svg.metric .cur { fill: var(--plan); } \
svg.metric .cur.out { fill: var(--fail); } svg.metric .base { fill: var(--skip); } \
svg.metric .band { fill: var(--ok-bg); stroke: var(--ok); stroke-dasharray: 3 2; } \
svg.metric text { font-size: 11px; fill: var(--muted); } \
.charts { display: grid; grid-template-columns: repeat(auto-fit, minmax(300px, 1fr)); gap: 12px; } \
td.fail { color: var(--fail); }";

/// The page for `r`, compared with `baseline` when there is one.
pub fn render(r: &SuiteResult, baseline: Option<&Baseline>) -> String {
    let breaches = baseline.map(|b| b.breaches(&r.metrics)).unwrap_or_default();
    let passed = r.tasks.iter().filter(|t| t.passed).count();
    let mut body = String::new();
    let _ = write!(
        body,
        r#"<header class="top"><div class="inner"><div class="brand">toolhost eval</div><h1>{}</h1><div class="meta"><span>{passed} of {} tasks passed</span><span>{}</span></div></div></header><main>"#,
        escape(&r.suite),
        r.tasks.len(),
        match (baseline, breaches.len()) {
            (None, _) => "no baseline".to_string(),
            (Some(_), 0) => "every metric within its baseline band".to_string(),
            (Some(_), n) => format!("{n} metric(s) outside their baseline band"),
        }
    );
    for b in &breaches {
        let _ = write!(
            body,
            r#"<div class="verdict broken">{}</div>"#,
            escape(&b.to_string())
        );
    }
    body.push_str(r#"<h2>Metrics</h2><div class="charts">"#);
    for name in METRICS {
        let value = r.metrics.get(name).unwrap_or(0.0);
        let band = baseline.and_then(|b| b.band(name));
        let out = breaches.iter().any(|b| b.metric == name);
        let _ = write!(
            body,
            r#"<div class="card"><div class="k">{name}</div><div class="v">{}</div>{}</div>"#,
            shown(name, value),
            chart(value, band, out)
        );
    }
    body.push_str("</div>");
    tasks(&mut body, r);
    body.push_str("</main>");
    format!(
        r#"<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>toolhost eval {}</title>
<style>{STYLESHEET}
{EXTRA_CSS}</style>
</head>
<body>
{body}
</body>
</html>
"#,
        escape(&r.suite)
    )
}

/// Two bars on one scale: the current value, and the baseline's with its band shaded.
fn chart(value: f64, band: Option<&Band>, out: bool) -> String {
    const W: f64 = 280.0;
    let top = [
        Some(value),
        band.map(|b| b.value),
        band.and_then(|b| b.max),
        band.and_then(|b| b.min),
    ]
    .into_iter()
    .flatten()
    .fold(0.0_f64, f64::max);
    let scale = if top > 0.0 { W / (top * 1.1) } else { 0.0 };
    let x = |v: f64| (v.max(0.0) * scale).min(W);
    let mut s = format!(
        r#"<svg class="metric" width="{}" height="44" role="img">"#,
        W + 10.0
    );
    if let Some(b) = band {
        let lo = x(b.min.unwrap_or(0.0));
        let hi = b.max.map_or(W, x);
        let _ = write!(
            s,
            r#"<rect class="band" x="{lo:.1}" y="1" width="{:.1}" height="30"><title>band {}–{}</title></rect>"#,
            (hi - lo).max(1.0),
            b.min.map_or("".into(), num),
            b.max.map_or("".into(), num)
        );
        let _ = write!(
            s,
            r#"<rect class="base" x="0" y="18" width="{:.1}" height="10"/><text x="0" y="42">baseline {}</text>"#,
            x(b.value),
            num(b.value)
        );
    }
    let _ = write!(
        s,
        r#"<rect class="cur{}" x="0" y="4" width="{:.1}" height="10"><title>current {}</title></rect></svg>"#,
        if out { " out" } else { "" },
        x(value),
        num(value)
    );
    s
}

fn tasks(body: &mut String, r: &SuiteResult) {
    body.push_str(
        r#"<h2>Tasks</h2><div class="panel scroll"><table><tr><th>task</th><th>mode</th><th>result</th><th>outcome</th><th>steps</th><th>calls ok</th><th>planner calls</th><th>replans</th><th>faults</th><th>tokens in/out</th><th>ms</th><th>failures</th><th>journal</th></tr>"#,
    );
    for t in &r.tasks {
        let _ = write!(
            body,
            r#"<tr><td>{}</td><td>{}</td><td><span class="badge {}">{}</span></td><td>{}</td><td>{}</td><td>{}/{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}/{}</td><td>{:.1}</td><td class="fail">{}</td><td><code>{}</code></td></tr>"#,
            escape(&t.id),
            escape(&t.mode),
            if t.passed {
                "st-succeeded"
            } else {
                "st-failed"
            },
            if t.passed { "pass" } else { "fail" },
            escape(&t.outcome),
            t.steps,
            t.tool_calls_ok,
            t.tool_calls,
            t.planner_calls,
            t.replans,
            t.faults_injected,
            t.input_tokens,
            t.output_tokens,
            t.wall_ms,
            t.failures
                .iter()
                .map(|f| escape(f))
                .collect::<Vec<_>>()
                .join("<br>"),
            escape(t.journal.as_deref().unwrap_or(""))
        );
    }
    body.push_str("</table></div>");
}
