//! The timeline as inline SVG: the planner's calls on one row, steps in as many parallel
//! lanes as were busy at once, and the run's other records (plan revisions, approvals,
//! rejections, the stop, kinds this version does not know) as marks on a time axis.

use std::fmt::Write as _;

use super::dag::clip;
use super::model::{StepRun, num, text};
use super::{Entry, Report, escape};

const WIDTH: f64 = 1200.0;
const LABEL: f64 = 96.0;
const RIGHT: f64 = 24.0;
const ROW: f64 = 30.0;
const BAR: f64 = 20.0;
const AXIS: f64 = 26.0;

/// Lane of each step (in the order given, sorted by start): the first lane free by then.
pub(crate) fn assign(steps: &[StepRun]) -> Vec<usize> {
    let mut ends: Vec<u64> = Vec::new();
    steps
        .iter()
        .map(|s| match ends.iter().position(|&e| e <= s.start_us) {
            Some(l) => {
                ends[l] = s.end_us;
                l
            }
            None => {
                ends.push(s.end_us);
                ends.len() - 1
            }
        })
        .collect()
}

/// A round tick interval (1, 2 or 5 × 10ⁿ µs) giving at most about eight ticks.
fn tick(span_us: u64) -> u64 {
    let mut unit = 1u64;
    loop {
        for m in [1, 2, 5] {
            if span_us / (unit * m) <= 8 {
                return unit * m;
            }
        }
        unit *= 10;
    }
}

/// `us` for an axis or a tooltip: `850 µs`, `12.5 ms`, `3.20 s`.
pub fn duration(us: u64) -> String {
    match us {
        0 => "0".into(),
        1..1_000 => format!("{us} µs"),
        1_000..1_000_000 => format!("{} ms", trim(us as f64 / 1e3)),
        _ => format!("{} s", trim(us as f64 / 1e6)),
    }
}

fn trim(x: f64) -> String {
    let s = format!("{x:.2}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// What a non-step record is called on the timeline, and its mark's class.
fn mark(e: &Entry) -> Option<(String, &'static str)> {
    Some(match e.kind.as_str() {
        "plan_accepted" => (format!("plan r{}", num(&e.data, "revision")), "m-plan"),
        "plan_rejected" => ("plan rejected".into(), "m-reject"),
        "approval" => (
            format!("approval: {}", text(&e.data, "decision")),
            "m-approval",
        ),
        "stopped" => (format!("stop: {}", text(&e.data, "reason")), "m-stop"),
        "client_connected" => (format!("client: {}", text(&e.data, "client")), "m-other"),
        "run_started" | "planner_called" | "step_started" | "step_finished" => return None,
        "" => ("unreadable line".into(), "m-other"),
        other => (other.to_string(), "m-other"),
    })
}

/// The timeline of `r` with the steps of [`super::model::steps`].
pub fn svg(r: &Report, steps: &[StepRun]) -> String {
    let calls: Vec<(u64, u64, &Entry)> = r
        .of_kind("planner_called")
        .filter_map(|e| {
            let end = e.at_us?;
            Some((end.saturating_sub(num(&e.data, "latency_us")), end, e))
        })
        .collect();
    let marks: Vec<(u64, String, &str, &Entry)> = r
        .entries
        .iter()
        .filter_map(|e| {
            let (name, class) = mark(e)?;
            Some((e.at_us?, name, class, e))
        })
        .collect();
    let span = steps
        .iter()
        .map(|s| s.end_us)
        .chain(r.entries.iter().filter_map(|e| e.at_us))
        .max()
        .unwrap_or(0)
        .max(1);
    let lanes = assign(steps);
    let n_lanes = lanes.iter().max().map_or(0, |l| l + 1);
    let plot = WIDTH - LABEL - RIGHT;
    let x = |us: u64| LABEL + us as f64 / span as f64 * plot;
    let planner_row = usize::from(!calls.is_empty());
    let rows = planner_row + n_lanes + 1;
    let height = AXIS + rows as f64 * ROW + 6.0;
    let row_y = |row: usize| AXIS + row as f64 * ROW;
    let mut s = format!(
        r#"<svg class="lanes" viewBox="0 0 {WIDTH} {height}" width="100%" role="img" aria-label="timeline">"#
    );
    for row in 0..rows {
        let _ = write!(
            s,
            r#"<rect class="row{}" x="0" y="{}" width="{WIDTH}" height="{ROW}"/>"#,
            row % 2,
            row_y(row)
        );
    }
    let step = tick(span);
    let mut t = 0;
    while t <= span {
        let _ = write!(
            s,
            r#"<line class="grid" x1="{x0}" y1="{}" x2="{x0}" y2="{height}"/><text class="tick" x="{x0}" y="16">{}</text>"#,
            AXIS - 4.0,
            duration(t),
            x0 = x(t),
        );
        t += step;
    }
    let label = |s: &mut String, row: usize, name: &str| {
        let _ = write!(
            s,
            r#"<text class="lane" x="8" y="{}">{name}</text>"#,
            row_y(row) + ROW / 2.0 + 4.0
        );
    };
    if planner_row == 1 {
        label(&mut s, 0, "planner");
        for (a, b, e) in &calls {
            let title = format!(
                "planner {} → {} · {} in / {} out tokens · {}",
                text(&e.data, "model"),
                text(&e.data, "reply"),
                num(&e.data, "input_tokens"),
                num(&e.data, "output_tokens"),
                duration(b - a)
            );
            let _ = write!(
                s,
                r#"<rect class="bar planner" x="{:.1}" y="{:.1}" width="{:.1}" height="{BAR}" rx="3"><title>{}</title></rect>"#,
                x(*a),
                row_y(0) + (ROW - BAR) / 2.0,
                (x(*b) - x(*a)).max(3.0),
                escape(&title)
            );
        }
    }
    for l in 0..n_lanes {
        label(&mut s, planner_row + l, &format!("lane {}", l + 1));
    }
    for (i, (st, &lane)) in steps.iter().zip(&lanes).enumerate() {
        let y = row_y(planner_row + lane) + (ROW - BAR) / 2.0;
        let (x0, x1) = (x(st.start_us), x(st.end_us));
        let w = (x1 - x0).max(3.0);
        let prev = steps[..i]
            .iter()
            .zip(&lanes[..i])
            .rev()
            .find(|(_, l)| **l == lane)
            .map_or(LABEL, |(p, _)| x(p.end_us));
        let next = steps[i + 1..]
            .iter()
            .zip(&lanes[i + 1..])
            .find(|(_, l)| **l == lane)
            .map_or(WIDTH - RIGHT, |(n, _)| x(n.start_us));
        let title = format!(
            "{} · {}.{}{} · {} · {} · fuel {}{}",
            st.id,
            st.tool,
            st.operation,
            st.revision_tag(),
            st.status,
            duration(st.end_us - st.start_us),
            st.fuel,
            if st.denials > 0 {
                format!(" · {} denied", st.denials)
            } else {
                String::new()
            }
        );
        let _ = write!(
            s,
            r##"<a href="#step-{line}"><g class="bar st-{status}{denied}" data-step="{id}"><title>{title}</title><rect x="{x0:.1}" y="{y:.1}" width="{w:.1}" height="{BAR}" rx="3"/>"##,
            line = st.line,
            status = escape(&st.status),
            denied = if st.denials > 0 { " has-denied" } else { "" },
            id = escape(&st.id),
            title = escape(&title),
        );
        let name = clip(&st.id, 24);
        let text_w = name.chars().count() as f64 * 7.0 + 10.0;
        let ty = y + BAR / 2.0 + 4.0;
        if text_w <= w {
            let _ = write!(
                s,
                r#"<text class="in" x="{:.1}" y="{ty:.1}">{}</text>"#,
                x0 + 5.0,
                escape(&name)
            );
        } else if x0 + w + text_w <= next {
            let _ = write!(
                s,
                r#"<text class="out" x="{:.1}" y="{ty:.1}">{}</text>"#,
                x0 + w + 4.0,
                escape(&name)
            );
        } else if x0 - text_w >= prev {
            let _ = write!(
                s,
                r#"<text class="out left" x="{:.1}" y="{ty:.1}">{}</text>"#,
                x0 - 4.0,
                escape(&name)
            );
        }
        if st.denials > 0 {
            let _ = write!(
                s,
                r#"<circle class="deny-dot" cx="{:.1}" cy="{:.1}" r="5"/>"#,
                x0 + w,
                y
            );
        }
        s.push_str("</g></a>");
    }
    let events_row = rows - 1;
    label(&mut s, events_row, "records");
    for (at, name, class, e) in &marks {
        let cx = x(*at);
        let cy = row_y(events_row) + ROW / 2.0;
        if matches!(*class, "m-plan" | "m-stop") {
            let _ = write!(
                s,
                r#"<line class="{class}" x1="{cx:.1}" y1="{AXIS}" x2="{cx:.1}" y2="{height}"/>"#
            );
        }
        let _ = write!(
            s,
            r#"<path class="mark {class}" d="M{cx:.1},{:.1} l6,6 l-6,6 l-6,-6 z"><title>line {} · {} · {}</title></path>"#,
            cy - 6.0,
            e.line,
            duration(*at),
            escape(name)
        );
    }
    s.push_str("</svg>");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_round_and_few() {
        assert_eq!(tick(1), 1);
        assert_eq!(tick(7_300), 1_000);
        assert_eq!(tick(45_000_000), 10_000_000);
        assert_eq!(duration(1_500), "1.5 ms");
        assert_eq!(duration(2_000_000), "2 s");
    }
}
