//! What a run's page shows of its progress, read from its journal with the HTML report's
//! own model (`toolhost_journal::report`): what it has spent against each budget so far
//! (the stop record's figures once it stopped, else sums over its records), its steps in
//! as many lanes as ran at once on a time axis, and each plan revision's DAG, its steps
//! coloured by outcome; and the journal's verdict, as `toolhost journal verify` gives it. The figures are the report's inline SVG: classes only, no inline
//! style or script, so the console's policy holds; every text in them is escaped there.

use std::fmt::Write;
use std::path::PathBuf;

use toolhost_journal::report::{self, dag, lanes, model, page};
use toolhost_journal::verify;

use toolhost_journal::report::escape as esc;

/// The most plan revisions drawn.
const MAX_PLANS: usize = 5;

/// The sections for run `id`'s `journal` (empty when the journal says nothing yet).
pub(super) fn sections(id: &str, journal: &[u8], running: bool) -> String {
    if journal.is_empty() {
        return String::new();
    }
    let r = report::load_bytes(id, PathBuf::from(id), journal);
    let steps = model::steps(&r);
    let mut out = verdict(id, journal, running);
    out.push_str(&spending(&model::budgets(&r, &steps), running));
    if !steps.is_empty() {
        let _ = write!(
            out,
            r#"<section aria-labelledby="lanes-h"><h2 id="lanes-h">Steps over time</h2><div class="figure">{}</div></section>"#,
            // Each step's bar links to its card, which is in the report.
            lanes::svg(&r, &steps).replace(
                r##"href="#step-"##,
                &format!(r##"href="/console/runs/{}/report#step-"##, esc(id))
            )
        );
    }
    let revisions = model::revisions(&r);
    if !revisions.is_empty() {
        let _ = write!(
            out,
            r#"<section aria-labelledby="plans-h"><h2 id="plans-h">Plans</h2>"#
        );
        // A step-wise run takes a turn per step: its last few say what it is doing.
        let shown = &revisions[revisions.len().saturating_sub(MAX_PLANS)..];
        if shown.len() < revisions.len() {
            let _ = write!(
                out,
                r#"<p class="hint">The last {MAX_PLANS} of {} revisions; the report shows them all.</p>"#,
                revisions.len()
            );
        }
        for rev in shown {
            let _ = write!(
                out,
                r#"<h3>Revision {}</h3><div class="figure">{}</div>"#,
                rev.number,
                dag::svg(rev, &steps)
            );
        }
        out.push_str("</section>");
    }
    out
}

/// What `toolhost journal verify` says of the journal: its records hash-chained and in
/// order, or the first thing wrong (a torn last line of a run still writing is no
/// tampering: it is being written).
fn verdict(id: &str, journal: &[u8], running: bool) -> String {
    let v = verify::verify_bytes(id, PathBuf::from(id), journal, None);
    let (class, text) = match &v.problem {
        None => (
            "intact",
            format!(
                "Intact{}: {} records, each hash-chained to the one before, in order, none missing.",
                if running { " so far" } else { "" },
                v.records.len()
            ),
        ),
        Some(p) if p.is_torn() && running => (
            "intact",
            format!(
                "Intact so far: {} records hash-chained; the last line is being written.",
                v.records.len()
            ),
        ),
        Some(p) => ("broken", format!("Not intact: {p}")),
    };
    format!(
        r#"<section aria-labelledby="verdict-h"><h2 id="verdict-h">Journal</h2><p id="verdict" class="verdict {class}">{} <span class="hint">(as <code>toolhost journal verify {}</code> checks it)</span></p></section>"#,
        esc(&text),
        esc(id)
    )
}

/// The budgets with a limit or a figure: spent (so far, while the run goes on) against
/// the limit.
fn spending(rows: &[model::BudgetRow], running: bool) -> String {
    let body: String = rows
        .iter()
        .filter(|b| b.limit.is_some() || b.spent.is_some_and(|x| x > 0.0))
        .map(|b| {
            let show = |x: Option<f64>| x.map_or("—".into(), |x| page::amount(x, b.unit));
            let used = match (b.spent, b.limit) {
                (Some(x), Some(l)) if l > 0.0 => format!("{:.0}%", x / l * 100.0),
                _ => String::new(),
            };
            format!(
                r#"<tr{}><td>{}</td><td class="num">{}</td><td class="num">{}</td><td class="num">{used}</td></tr>"#,
                if b.stopped_here { r#" class="over""# } else { "" },
                b.name,
                show(b.spent),
                show(b.limit)
            )
        })
        .collect();
    if body.is_empty() {
        return String::new();
    }
    let title = if running { "Spent so far" } else { "Spent" };
    format!(
        r#"<section aria-labelledby="spent-h"><h2 id="spent-h">{title}</h2><table id="spent"><thead><tr><th scope="col">Budget</th><th scope="col" class="num">Spent</th><th scope="col" class="num">Limit</th><th scope="col" class="num">Used</th></tr></thead><tbody>{body}</tbody></table></section>"#
    )
}
