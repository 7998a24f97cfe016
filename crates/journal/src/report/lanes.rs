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
    let calls = planner_calls(r);
    let span = steps
        .iter()
        .map(|s| s.end_us)
        .chain(r.entries.iter().filter_map(|e| e.at_us))
        .max()
        .unwrap_or(0)
        .max(1);
    let lanes = assign(steps);
    let n_lanes = lanes.iter().max().map_or(0, |l| l + 1);
    let frame = Frame::new(span, usize::from(!calls.is_empty()), n_lanes);
    let mut s = format!(
        r#"<svg class="lanes" viewBox="0 0 {WIDTH} {height}" width="100%" role="group" aria-label="timeline: each step a link to its card">"#,
        height = frame.height
    );
    frame.grid(&mut s);
    if frame.planner_row == 1 {
        frame.label(&mut s, 0, "planner");
        for call in &calls {
            planner_bar(&mut s, &frame, call);
        }
    }
    for l in 0..n_lanes {
        frame.label(&mut s, frame.planner_row + l, &format!("lane {}", l + 1));
    }
    for i in 0..steps.len() {
        step_bar(&mut s, &frame, steps, &lanes, i);
    }
    let events_row = frame.rows - 1;
    frame.label(&mut s, events_row, "records");
    for e in &r.entries {
        if let (Some((name, class)), Some(at)) = (mark(e), e.at_us) {
            record_mark(&mut s, &frame, events_row, (at, &name, class, e));
        }
    }
    s.push_str("</svg>");
    s
}

/// Each planner call as (start, end, record): it ends when it is recorded.
fn planner_calls(r: &Report) -> Vec<(u64, u64, &Entry)> {
    r.of_kind("planner_called")
        .filter_map(|e| {
            let end = e.at_us?;
            Some((end.saturating_sub(num(&e.data, "latency_us")), end, e))
        })
        .collect()
}

/// The timeline's geometry: the time scale and its rows (the planner's, when it was called;
/// one per lane; the records' last).
struct Frame {
    span: u64,
    planner_row: usize,
    rows: usize,
    height: f64,
}

impl Frame {
    fn new(span: u64, planner_row: usize, n_lanes: usize) -> Frame {
        let rows = planner_row + n_lanes + 1;
        Frame {
            span,
            planner_row,
            rows,
            height: AXIS + rows as f64 * ROW + 6.0,
        }
    }

    /// Where `us` after the start lies.
    fn x(&self, us: u64) -> f64 {
        let plot = WIDTH - LABEL - RIGHT;
        LABEL + us as f64 / self.span as f64 * plot
    }

    fn row_y(&self, row: usize) -> f64 {
        AXIS + row as f64 * ROW
    }

    /// The striped rows and the time axis with its grid lines.
    fn grid(&self, s: &mut String) {
        for row in 0..self.rows {
            let _ = write!(
                s,
                r#"<rect class="row{}" x="0" y="{}" width="{WIDTH}" height="{ROW}"/>"#,
                row % 2,
                self.row_y(row)
            );
        }
        let step = tick(self.span);
        let mut t = 0;
        while t <= self.span {
            let _ = write!(
                s,
                r#"<line class="grid" x1="{x0}" y1="{}" x2="{x0}" y2="{height}"/><text class="tick" x="{x0}" y="16">{}</text>"#,
                AXIS - 4.0,
                duration(t),
                x0 = self.x(t),
                height = self.height,
            );
            t += step;
        }
    }

    /// A row's name, left of the plot.
    fn label(&self, s: &mut String, row: usize, name: &str) {
        let _ = write!(
            s,
            r#"<text class="lane" x="8" y="{}">{name}</text>"#,
            self.row_y(row) + ROW / 2.0 + 4.0
        );
    }
}

/// One planner call on the planner's row, its model, reply, tokens and time as its title.
fn planner_bar(s: &mut String, frame: &Frame, &(a, b, e): &(u64, u64, &Entry)) {
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
        frame.x(a),
        frame.row_y(0) + (ROW - BAR) / 2.0,
        (frame.x(b) - frame.x(a)).max(3.0),
        escape(&title)
    );
}

/// Step `i` as a bar in its lane, linked to its card: its name inside the bar, or beside it
/// where the neighbours in the lane leave room, and a dot when the policy denied it something.
fn step_bar(s: &mut String, frame: &Frame, steps: &[StepRun], lanes: &[usize], i: usize) {
    let (st, lane) = (&steps[i], lanes[i]);
    let y = frame.row_y(frame.planner_row + lane) + (ROW - BAR) / 2.0;
    let (x0, x1) = (frame.x(st.start_us), frame.x(st.end_us));
    let w = (x1 - x0).max(3.0);
    let prev = steps[..i]
        .iter()
        .zip(&lanes[..i])
        .rev()
        .find(|(_, l)| **l == lane)
        .map_or(LABEL, |(p, _)| frame.x(p.end_us));
    let next = steps[i + 1..]
        .iter()
        .zip(&lanes[i + 1..])
        .find(|(_, l)| **l == lane)
        .map_or(WIDTH - RIGHT, |(n, _)| frame.x(n.start_us));
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

/// A non-step record as a diamond on the records' row; a plan revision or the stop also as
/// a line across the whole timeline.
fn record_mark(
    s: &mut String,
    frame: &Frame,
    row: usize,
    (at, name, class, e): (u64, &str, &str, &Entry),
) {
    let cx = frame.x(at);
    let cy = frame.row_y(row) + ROW / 2.0;
    if matches!(class, "m-plan" | "m-stop") {
        let _ = write!(
            s,
            r#"<line class="{class}" x1="{cx:.1}" y1="{AXIS}" x2="{cx:.1}" y2="{height}"/>"#,
            height = frame.height
        );
    }
    let _ = write!(
        s,
        r#"<path class="mark {class}" d="M{cx:.1},{:.1} l6,6 l-6,6 l-6,-6 z"><title>line {} · {} · {}</title></path>"#,
        cy - 6.0,
        e.line,
        duration(at),
        escape(name)
    );
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
