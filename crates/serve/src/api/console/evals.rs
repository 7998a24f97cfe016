//! The Evaluations page (`/console/evaluations`): the suite results in the server's
//! `evals_dir` (each `NAME.json` as `toolhost eval --json` writes it), newest first: the
//! suite's metrics against the bands of the baseline beside it (`NAME.baseline.json`, as
//! `toolhost eval --write-baseline` writes it), and each task, passed or failed, linked to
//! its run when this server knows it. Only regular files of bounded size are read; a file
//! that is not a suite result is listed with why. The files are read by their documented
//! JSON fields (`toolhost eval`'s are stable for other tools): the service does not link
//! the evaluation harness.

use std::collections::HashSet;
use std::fmt::Write;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use serde::Deserialize;
use serde_json::{Map, Value};

use super::page::{esc, layout};
use super::session::Session;
use super::{html, refused};
use crate::api::AppState;
use crate::auth::Role;

/// The most results the page reads, newest first.
const MAX_RESULTS: usize = 20;
/// The largest result file read.
const MAX_BYTES: u64 = 16 << 20;

/// What the page reads of `toolhost eval --json`'s result.
#[derive(Deserialize)]
struct SuiteResult {
    suite: String,
    tasks: Vec<TaskResult>,
    metrics: Map<String, Value>,
}

#[derive(Deserialize)]
struct TaskResult {
    id: String,
    passed: bool,
    outcome: String,
    steps: u32,
    #[serde(default)]
    failures: Vec<String>,
    journal: Option<String>,
    #[serde(default)]
    skipped: Option<String>,
    #[serde(default)]
    known_failure: Option<String>,
}

/// `toolhost eval --write-baseline`'s file: bands by metric.
#[derive(Deserialize)]
struct Baseline {
    metrics: Map<String, Value>,
}

impl Baseline {
    /// The band of `metric`: its minimum and maximum, where set.
    fn band(&self, metric: &str) -> Option<(Option<f64>, Option<f64>)> {
        let b = self.metrics.get(metric)?;
        Some((b["min"].as_f64(), b["max"].as_f64()))
    }
}

/// A metric's value as `toolhost eval` prints it: whole counts, two decimals otherwise.
fn shown(metric: &str, x: f64) -> String {
    let count = metric == "replans" || metric.ends_with("_tokens");
    if count && x.fract() == 0.0 {
        format!("{x:.0}")
    } else if x != 0.0 && x.abs() < 0.01 {
        format!("{x:.6}")
    } else {
        format!("{x:.2}")
    }
}

/// One file of the directory, read.
struct Shown {
    name: String,
    result: Result<(SuiteResult, Option<Baseline>), String>,
}

pub(super) async fn evaluations(State(state): State<AppState>, headers: HeaderMap) -> Response {
    let Some(session) = Session::of(&state, &headers) else {
        return html(StatusCode::UNAUTHORIZED, super::page::sign_in(None));
    };
    if !session.caller.has(Role::Read) {
        return refused(
            StatusCode::FORBIDDEN,
            "this token may not see evaluations: it needs the `read` role",
        );
    }
    let Some(dir) = state.evals_dir.clone() else {
        return html(StatusCode::OK, page(&session, None, &[], &|_| false));
    };
    // The files and the runs this server knows, read once, off the async threads.
    let (shown, runs) = tokio::task::spawn_blocking({
        let (dir, registry) = (dir.clone(), state.registry.clone());
        move || {
            let runs: HashSet<String> = registry.list().into_iter().map(|r| r.id).collect();
            (read_dir(&dir), runs)
        }
    })
    .await
    .unwrap_or_default();
    let known = |run: &str| runs.contains(run);
    html(StatusCode::OK, page(&session, Some(&dir), &shown, &known))
}

/// The newest [`MAX_RESULTS`] results of `dir`.
fn read_dir(dir: &Path) -> Vec<Shown> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<(SystemTime, PathBuf)> = entries
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .map(|e| e.path())
        .filter(|p| {
            let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
            name.ends_with(".json") && !name.ends_with(".baseline.json")
        })
        .map(|p| {
            let at = std::fs::metadata(&p)
                .and_then(|m| m.modified())
                .unwrap_or(SystemTime::UNIX_EPOCH);
            (at, p)
        })
        .collect();
    files.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    files
        .into_iter()
        .take(MAX_RESULTS)
        .map(|(_, p)| Shown {
            name: p
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
            result: read_result(&p),
        })
        .collect()
}

/// A suite result and the baseline beside it, or why not.
fn read_result(path: &Path) -> Result<(SuiteResult, Option<Baseline>), String> {
    let text = bounded(path)?.ok_or("it is gone")?;
    let result: SuiteResult = serde_json::from_str(&text)
        .map_err(|e| format!("not a suite result (`toolhost eval --json`): {e}"))?;
    let stem = path.to_string_lossy();
    let beside = PathBuf::from(format!(
        "{}.baseline.json",
        stem.strip_suffix(".json").unwrap_or(&stem)
    ));
    let baseline = match bounded(&beside) {
        Ok(None) => None,
        Ok(Some(text)) => Some(
            serde_json::from_str::<Baseline>(&text)
                .map_err(|e| format!("`{}` is not a baseline: {e}", beside.display()))?,
        ),
        Err(why) => return Err(format!("`{}`: {why}", beside.display())),
    };
    Ok((result, baseline))
}

/// The text of the regular file at `path`, at most [`MAX_BYTES`]; `None` when there is no
/// such file.
fn bounded(path: &Path) -> Result<Option<String>, String> {
    let file = match toolhost_runtime::owned::open_regular(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e.to_string()),
    };
    let mut text = String::new();
    file.take(MAX_BYTES + 1)
        .read_to_string(&mut text)
        .map_err(|e| format!("cannot read it: {e}"))?;
    if text.len() as u64 > MAX_BYTES {
        return Err(format!("it is larger than {MAX_BYTES} bytes"));
    }
    Ok(Some(text))
}

fn page(
    session: &Session,
    dir: Option<&Path>,
    shown: &[Shown],
    known: &dyn Fn(&str) -> bool,
) -> String {
    let body = match dir {
        None => "<p>This server shows no evaluations: start it with <code>--evals-dir DIR</code> (or <code>evals_dir</code> in its configuration), where <code>toolhost eval --json DIR/NAME.json</code> writes them.</p>".to_string(),
        Some(d) if shown.is_empty() => format!(
            "<p>No suite results in <code>{}</code> yet: <code>toolhost eval SUITE --json {}/NAME.json</code> writes one.</p>",
            esc(&d.display().to_string()),
            esc(&d.display().to_string())
        ),
        Some(_) => shown.iter().map(|s| section(s, known)).collect(),
    };
    layout(
        "Evaluations",
        Some(session),
        &format!(
            "<h1>Evaluations</h1><p>Suite results, newest first: metrics against the baseline's bands, and every task.</p>{body}"
        ),
    )
}

fn section(s: &Shown, known: &dyn Fn(&str) -> bool) -> String {
    let (result, baseline) = match &s.result {
        Ok(r) => r,
        Err(why) => {
            return format!(
                r#"<section class="suite"><h2>{}</h2><p class="error">{}</p></section>"#,
                esc(&s.name),
                esc(why)
            );
        }
    };
    let passed = result.tasks.iter().filter(|t| t.passed).count();
    let mut out = format!(
        r#"<section class="suite" data-suite="{suite}"><h2>{suite} <span class="hint">({file})</span></h2><p>{passed} of {n} tasks passed.</p>"#,
        suite = esc(&result.suite),
        file = esc(&s.name),
        n = result.tasks.len(),
    );
    out.push_str(&metrics(result, baseline.as_ref()));
    out.push_str(r#"<table class="tasks"><thead><tr><th scope="col">Task</th><th scope="col">Result</th><th scope="col">Outcome</th><th scope="col">Steps</th><th scope="col">Run</th><th scope="col">Why it failed</th></tr></thead><tbody>"#);
    for t in &result.tasks {
        let run = t
            .journal
            .as_deref()
            .and_then(|j| Path::new(j).file_stem()?.to_str().map(str::to_string));
        let run = match run {
            Some(r) if known(&r) => {
                format!(r#"<a href="/console/runs/{r}">{r}</a>"#, r = esc(&r))
            }
            Some(r) => esc(&r),
            None => String::new(),
        };
        let verdict = match (t.passed, &t.skipped, &t.known_failure) {
            (_, Some(_), _) => "skipped",
            (true, ..) => "passed",
            (false, _, Some(_)) => "known failure",
            (false, ..) => "failed",
        };
        let _ = write!(
            out,
            r#"<tr><td>{}</td><td class="verdict {cls}">{verdict}</td><td>{}</td><td>{}</td><td>{run}</td><td>{}</td></tr>"#,
            esc(&t.id),
            esc(&t.outcome),
            t.steps,
            esc(&t.failures.join("; ")),
            cls = verdict.replace(' ', "-"),
        );
    }
    out.push_str("</tbody></table></section>");
    out
}

/// The metrics table: each metric's value, its baseline band, and whether it is within.
fn metrics(result: &SuiteResult, baseline: Option<&Baseline>) -> String {
    let mut rows = String::new();
    for (name, value) in &result.metrics {
        let Some(value) = value.as_f64() else {
            continue;
        };
        let (band, verdict) = match baseline.and_then(|b| b.band(name)) {
            None => (String::new(), ""),
            Some((min, max)) => {
                let lo = min.map(|m| format!("≥ {}", shown(name, m)));
                let hi = max.map(|m| format!("≤ {}", shown(name, m)));
                let inside = min.is_none_or(|m| value >= m) && max.is_none_or(|m| value <= m);
                let text: Vec<String> = lo.into_iter().chain(hi).collect();
                (
                    text.join(", "),
                    if inside { "within" } else { "outside its band" },
                )
            }
        };
        let _ = write!(
            rows,
            r#"<tr><td>{}</td><td>{}</td><td>{}</td><td class="band {}">{verdict}</td></tr>"#,
            esc(name),
            esc(&shown(name, value)),
            esc(&band),
            if verdict == "within" { "ok" } else { "out" },
        );
    }
    let note = if baseline.is_none() {
        r#"<p class="hint">No baseline beside this result (NAME.baseline.json): no bands.</p>"#
    } else {
        ""
    };
    format!(
        r#"{note}<table class="metrics"><thead><tr><th scope="col">Metric</th><th scope="col">Value</th><th scope="col">Band</th><th scope="col">Verdict</th></tr></thead><tbody>{rows}</tbody></table>"#
    )
}
