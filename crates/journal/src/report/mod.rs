//! The HTML report of a run (`toolhost report RUN --html OUT`): one self-contained page
//! with the chain's verdict, the stop reason, budgets, a timeline of steps in parallel
//! lanes, each plan revision's DAG, every step's capability decisions, planner calls,
//! approvals and rejections, and the raw records. An MCP session's journal shows its
//! calls as the steps, without the plan, budget and planner sections it has nothing for.
//!
//! Data flows: journal file → [`verify()`](super::verify()) (the verdict) and a lenient
//! re-read ([`Entry`] per line, kinds as strings, blob references resolved) → [`model`] (steps, revisions, budgets)
//! → [`page`] with `summary` (the header and cards), [`dag`] and [`lanes`] (inline SVG) and
//! [`steps`], values shown by `show` → one HTML string.
//!
//! Journal content is untrusted (tool output, planner text): every piece of it goes
//! through [`escape`], no journal text ever reaches the inline scripts, and the page's
//! Content-Security-Policy allows only its own two scripts (by hash) as a second line of
//! defence. Record kinds this version does not know are shown generically, and lines
//! past a break in the chain are shown but marked as unverified rather than dropped.

pub mod dag;
pub mod lanes;
pub mod model;
pub mod page;
mod show;
pub mod steps;
mod summary;

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::blob::Resolver;
use super::verify::Verified;
use super::{JournalError, time};

/// One line of the journal, read without rejecting what this version does not know.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// 1-based line number.
    pub line: usize,
    pub seq: Option<u64>,
    pub ts: String,
    /// The record's kind as written (`step_finished`, or one this version does not know);
    /// empty for a line that is not a JSON object.
    pub kind: String,
    pub data: Value,
    /// Whether the line lies before the chain's first problem.
    pub verified: bool,
    /// Microseconds since the first record, when both timestamps parse.
    pub at_us: Option<u64>,
}

/// A journal as the report sees it: the chain's verdict and every line.
#[derive(Debug, Clone)]
pub struct Report {
    pub verified: Verified,
    pub entries: Vec<Entry>,
    /// What the server running it says the run is doing while its journal has no stop
    /// (`waiting for approval of the plan r1`, set with [`Report::waiting`]): shown
    /// instead of "crashed or still running".
    pub live: Option<String>,
}

impl Report {
    /// The run id.
    pub fn run_id(&self) -> String {
        self.verified.run.clone()
    }

    pub fn path(&self) -> &PathBuf {
        &self.verified.path
    }

    /// The entries of one kind, in file order.
    pub(crate) fn of_kind<'a>(&'a self, kind: &'a str) -> impl Iterator<Item = &'a Entry> + 'a {
        self.entries.iter().filter(move |e| e.kind == kind)
    }

    /// Whether this is an MCP session's journal (see [`session`](crate::session)): calls
    /// instead of planned steps, and no plan, budgets or planner.
    pub fn is_session(&self) -> bool {
        self.first("run_started")
            .and_then(|d| d.get("mode"))
            .and_then(Value::as_str)
            == Some(super::SESSION_MODE)
    }

    /// The data of the first entry of `kind`.
    pub fn first(&self, kind: &str) -> Option<&Value> {
        self.entries
            .iter()
            .find(|e| e.kind == kind)
            .map(|e| &e.data)
    }

    /// The data of the run's stop: the last `stopped` record, unless a `resumed` record
    /// carried the run on after it (then it has not stopped again yet).
    pub fn stop(&self) -> Option<&Value> {
        let mut stop = None;
        for e in &self.entries {
            match e.kind.as_str() {
                "stopped" => stop = Some(&e.data),
                "resumed" => stop = None,
                _ => {}
            }
        }
        stop
    }

    /// Says that the run, its journal without a stop, waits for a person: `what` (the
    /// plan under review, a step, a question).
    pub fn waiting(mut self, what: String) -> Report {
        self.live = Some(what);
        self
    }

    /// The page.
    pub fn html(&self) -> String {
        page::render(self)
    }
}

/// Verifies the journal at `path` and reads every line of it for the report.
pub fn load(path: &Path) -> Result<Report, JournalError> {
    let bytes = std::fs::read(path).map_err(|e| JournalError::Read {
        path: path.display().to_string(),
        reason: e.to_string(),
    })?;
    let report = load_bytes(&super::run_id(path), path.to_path_buf(), &bytes);
    // A journal without a stop that a process still writes is a run going on: say who.
    Ok(match report.verified.stop() {
        None => match super::RunLock::holder(path) {
            Some(who) => report.waiting(format!("the run goes on: {who} writes its journal")),
            None => report,
        },
        Some(_) => report,
    })
}

/// The report of run `run` whose journal lines are `bytes`, read from `location` (see
/// [`verify_bytes`](super::verify::verify_bytes)).
pub fn load_bytes(run: &str, location: PathBuf, bytes: &[u8]) -> Report {
    let bytes = super::written(bytes);
    let verified = super::verify::verify_bytes(run, location, bytes, None);
    let text = String::from_utf8_lossy(bytes);
    let good = verified.records.len();
    let mut entries: Vec<Entry> = text
        .lines()
        .enumerate()
        .map(|(i, l)| entry(i + 1, l, i < good))
        .collect();
    // Large values stand in the lines once, as blobs: put them back where they are
    // referred to (past a break in the chain too, where they can be).
    if let Some(first) = entries.first() {
        let mut blobs = Resolver::for_start(&first.data);
        for e in &mut entries {
            blobs.lenient(&e.kind, &mut e.data);
        }
    }
    let start = entries.first().and_then(|e| time::parse(&e.ts));
    for e in &mut entries {
        e.at_us = match (start, time::parse(&e.ts)) {
            (Some(a), Some(b)) => b
                .duration_since(a)
                .ok()
                .map(|d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX)),
            _ => None,
        };
    }
    Report {
        verified,
        entries,
        live: None,
    }
}

fn entry(line: usize, text: &str, verified: bool) -> Entry {
    let v: Value = serde_json::from_str(text).unwrap_or(Value::Null);
    let s = |k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    Entry {
        line,
        seq: v.get("seq").and_then(Value::as_u64),
        ts: s("ts"),
        kind: s("kind"),
        data: v.get("data").cloned().unwrap_or(Value::Null),
        verified,
        at_us: None,
    }
}

/// `s` with `&`, `<`, `>`, `"` and `'` replaced by character references: safe in HTML
/// and SVG text and in quoted attribute values.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_neutralises_markup_and_quotes() {
        assert_eq!(
            escape(r#"<script>"a" & 'b'</style>"#),
            "&lt;script&gt;&quot;a&quot; &amp; &#39;b&#39;&lt;/style&gt;"
        );
    }

    #[test]
    fn unknown_kinds_and_garbage_lines_are_kept() {
        let e = entry(
            3,
            r#"{"seq":3,"ts":"x","kind":"resumed","data":{"a":1}}"#,
            false,
        );
        assert_eq!(e.kind, "resumed");
        assert_eq!(e.data["a"], 1);
        let g = entry(4, "{not json", false);
        assert_eq!((g.kind.as_str(), g.seq), ("", None));
    }
}
