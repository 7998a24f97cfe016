//! The Runs page: every run the session may read, waiting for a person first and then
//! newest first, filtered by state, [`PAGE_SIZE`] at a time, with each run's planner, start,
//! duration and spending against its budgets; its rows kept live over Server-Sent Events
//! (`/console/runs/live`, the same query), followers capped as the API's are.

use std::convert::Infallible;
use std::fmt::Write;
use std::time::{Duration, SystemTime};

use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::Value;

use super::page::{self, esc, layout};
use super::session::Session;
use super::{html, refused};
use crate::api::AppState;
use crate::auth::Caller;
use crate::registry::{RunState, RunView};

/// The most runs the Runs page shows at once.
const PAGE_SIZE: usize = 50;
/// How often a live list looks for a change.
const LIVE_EVERY: Duration = Duration::from_secs(1);

/// `?state=…&after=…`.
#[derive(Debug, Clone, Default, Deserialize)]
pub(super) struct ListParams {
    after: Option<String>,
    state: Option<String>,
}

/// Which runs the page lists.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Filter {
    All,
    /// Waiting for approval or for input.
    Waiting,
    One(RunState),
}

impl Filter {
    fn parse(state: Option<&str>) -> Result<Filter, String> {
        match state {
            None | Some("") => Ok(Filter::All),
            Some("waiting") => Ok(Filter::Waiting),
            Some(name) => RunState::ALL
                .into_iter()
                .find(|s| s.name() == name)
                .map(Filter::One)
                .ok_or_else(|| {
                    let names: Vec<_> = RunState::ALL.iter().map(|s| s.name()).collect();
                    format!(
                        "no run state `{name}`: it is `waiting` or one of {}",
                        names.join(", ")
                    )
                }),
        }
    }

    fn keeps(self, s: RunState) -> bool {
        match self {
            Filter::All => true,
            Filter::Waiting => waiting(s),
            Filter::One(one) => s == one,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Filter::All => "",
            Filter::Waiting => "waiting",
            Filter::One(s) => s.name(),
        }
    }
}

fn waiting(s: RunState) -> bool {
    matches!(s, RunState::WaitingForApproval | RunState::WaitingForInput)
}

/// One page of the runs `caller` may read that `filter` keeps, and the id to list after
/// for the next page.
fn select(
    state: &AppState,
    caller: &Caller,
    filter: Filter,
    after: Option<&str>,
) -> (Vec<RunView>, Option<String>) {
    let mut all: Vec<_> = state
        .registry
        .list()
        .into_iter()
        .filter(|r| {
            caller.may_see(r.submitter.as_deref(), r.pending.is_some()) && filter.keeps(r.state)
        })
        .collect();
    all.reverse();
    all.sort_by_key(|r| !waiting(r.state));
    let start = match after {
        Some(a) => all
            .iter()
            .position(|r| r.id == a)
            .map_or(all.len(), |i| i + 1),
        None => 0,
    };
    let more = all.len() > start + PAGE_SIZE;
    let shown: Vec<_> = all.into_iter().skip(start).take(PAGE_SIZE).collect();
    let next = more.then(|| shown.last().map(|r| r.id.clone())).flatten();
    (shown, next)
}

/// The session, if it may list runs, and the filter the query asks for; else the page to
/// answer with.
fn lister(
    state: &AppState,
    headers: &HeaderMap,
    q: &ListParams,
) -> Result<(Session, Filter), Box<Response>> {
    let Some(session) = Session::of(state, headers) else {
        return Err(Box::new(html(StatusCode::OK, page::sign_in(None))));
    };
    if !session.caller.may_list() {
        return Err(Box::new(refused(
            StatusCode::FORBIDDEN,
            "this token may not list runs: it needs the `read` role",
        )));
    }
    match Filter::parse(q.state.as_deref()) {
        Ok(filter) => Ok((session, filter)),
        Err(why) => Err(Box::new(refused(StatusCode::BAD_REQUEST, &why))),
    }
}

/// The Runs page.
pub(super) async fn runs_page(
    State(state): State<AppState>,
    headers: HeaderMap,
    q: Query<ListParams>,
) -> Response {
    let (session, filter) = match lister(&state, &headers, &q) {
        Ok(listed) => listed,
        Err(page) => return *page,
    };
    let (shown, next) = select(&state, &session.caller, filter, q.after.as_deref());
    html(
        StatusCode::OK,
        runs(
            &session,
            filter,
            q.after.as_deref(),
            &shown,
            next.as_deref(),
        ),
    )
}

/// The rows of the Runs page for the same query, sent again whenever they change.
pub(super) async fn live(
    State(state): State<AppState>,
    headers: HeaderMap,
    q: Query<ListParams>,
) -> Response {
    if Session::of(&state, &headers).is_none() {
        return refused(StatusCode::UNAUTHORIZED, "sign in first");
    }
    let (session, filter) = match lister(&state, &headers, &q) {
        Ok(listed) => listed,
        Err(page) => return *page,
    };
    let follower = match state.followers.admit(&session.caller) {
        Ok(f) => f,
        Err(e) => return crate::api::ApiError::from(e).into_response(),
    };
    let caller = session.caller.clone();
    let after = q.0.after;
    let stream = futures_util::stream::unfold(String::new(), move |last| {
        let (state, caller, after) = (state.clone(), caller.clone(), after.clone());
        let _ = &follower;
        async move {
            loop {
                let (s, c, a) = (state.clone(), caller.clone(), after.clone());
                let made = tokio::task::spawn_blocking(move || {
                    rows(&select(&s, &c, filter, a.as_deref()).0, SystemTime::now())
                })
                .await;
                match made {
                    Ok(now) if now != last => {
                        let event = Event::default().event("rows").data(now.clone());
                        return Some((Ok::<_, Infallible>(event), now));
                    }
                    Ok(_) => {}
                    Err(_) => return None,
                }
                tokio::time::sleep(LIVE_EVERY).await;
            }
        }
    });
    Sse::new(stream)
        .keep_alive(KeepAlive::default())
        .into_response()
}

/// The Runs page's HTML.
fn runs(
    session: &Session,
    filter: Filter,
    after: Option<&str>,
    shown: &[RunView],
    next: Option<&str>,
) -> String {
    let query = |after: Option<&str>| {
        let mut q = Vec::new();
        if filter != Filter::All {
            q.push(format!("state={}", filter.name()));
        }
        if let Some(a) = after {
            q.push(format!("after={}", esc(a)));
        }
        q.join("&amp;")
    };
    let more = next.map_or(String::new(), |n| {
        format!(r#"<p><a href="/?{}">Older runs</a></p>"#, query(Some(n)))
    });
    let mut options = String::new();
    let choices = std::iter::once(("", "all"))
        .chain(std::iter::once(("waiting", "waiting for a person")))
        .chain(RunState::ALL.iter().map(|s| (s.name(), s.name())));
    for (value, label) in choices {
        let selected = if value == filter.name() {
            " selected"
        } else {
            ""
        };
        let _ = write!(
            options,
            r#"<option value="{value}"{selected}>{label}</option>"#
        );
    }
    let rows = rows(shown, SystemTime::now());
    layout(
        "Runs",
        Some(session),
        &format!(
            r#"<h1>Runs</h1><p>Waiting for a person first, then newest first. The list keeps itself up to date.</p>
<form method="get" action="/" class="filter"><label for="state-filter">State</label> <select id="state-filter" name="state">{options}</select> <button type="submit">Show</button></form>
<table id="runs" data-live="/console/runs/live?{live}"><thead><tr><th scope="col">Run</th><th scope="col">State</th><th scope="col">Goal</th><th scope="col">Planner</th><th scope="col">Started</th><th scope="col">Duration</th><th scope="col">Steps</th><th scope="col">Spending</th><th scope="col">Submitter</th><th scope="col">Stop</th></tr></thead>
<tbody id="runs-rows">{rows}</tbody></table>{more}"#,
            live = query(after),
        ),
    )
}

/// The table's rows, durations of live runs counted to `now`.
fn rows(shown: &[RunView], now: SystemTime) -> String {
    let mut rows = String::new();
    for r in shown {
        let planner = match (&r.head.planner, &r.head.mode) {
            (Some(p), Some(m)) => format!("{} ({})", esc(p), esc(m)),
            (Some(p), None) => esc(p),
            (None, Some(m)) => format!("({})", esc(m)),
            (None, None) => String::new(),
        };
        let started = r.head.started.as_deref().map_or(String::new(), |s| {
            format!(
                r#"<time datetime="{s}">{}</time>"#,
                esc(&s.replace('T', " ").chars().take(19).collect::<String>()),
                s = esc(s)
            )
        });
        let _ = write!(
            rows,
            r#"<tr><td><a href="/console/runs/{id}">{id}</a></td><td class="state {state}">{state}</td><td>{goal}</td><td>{planner}</td><td>{started}</td><td>{duration}</td><td>{ok} ok, {failed} failed, {skipped} skipped</td><td>{spending}</td><td>{who}</td><td>{stop}</td></tr>"#,
            id = esc(&r.id),
            state = r.state.name(),
            goal = esc(&r.goal),
            duration = duration_of(r, now).map_or(String::new(), duration),
            ok = r.steps.succeeded,
            failed = r.steps.failed,
            skipped = r.steps.skipped,
            spending = esc(&spending(r.usage.as_ref(), r.head.budgets.as_ref())),
            who = esc(r.submitter.as_deref().unwrap_or("")),
            stop = page::stop_reason(r),
        );
    }
    rows
}

/// How long the run took (its wall time, once over) or has taken so far.
fn duration_of(r: &RunView, now: SystemTime) -> Option<Duration> {
    if let Some(ms) = r.usage.as_ref().and_then(|u| u["wall"].as_u64()) {
        return Some(Duration::from_millis(ms));
    }
    if r.state.is_final() {
        return None;
    }
    let started = toolhost_journal::time::parse(r.head.started.as_deref()?)?;
    now.duration_since(started).ok()
}

/// `d` for a person: `7 ms`, `3.2 s`, `4 min 5 s`, `2 h 3 min`.
fn duration(d: Duration) -> String {
    let ms = d.as_millis();
    let s = d.as_secs();
    match ms {
        0..1_000 => format!("{ms} ms"),
        1_000..60_000 => format!("{:.1} s", d.as_secs_f64()),
        60_000..3_600_000 => format!("{} min {} s", s / 60, s % 60),
        _ => format!("{} h {} min", s / 3600, s % 3600 / 60),
    }
}

/// What the run spent against its budgets: steps, fuel, tokens and cost, each part only
/// where both are known.
fn spending(usage: Option<&Value>, budgets: Option<&Value>) -> String {
    let (Some(u), Some(b)) = (usage, budgets) else {
        return String::new();
    };
    let mut parts = Vec::new();
    if let (Some(n), Some(max)) = (u["steps"].as_u64(), b["max_steps"].as_u64()) {
        parts.push(format!("{n}/{max} steps"));
    }
    if let (Some(n), Some(max)) = (u["fuel"].as_u64(), b["max_fuel"].as_u64())
        && max > 0
    {
        parts.push(format!("fuel {:.1}%", n as f64 * 100.0 / max as f64));
    }
    let used = u["input_tokens"].as_u64().zip(u["output_tokens"].as_u64());
    let max = b["max_input_tokens"]
        .as_u64()
        .zip(b["max_output_tokens"].as_u64());
    if let (Some((i, o)), Some((mi, mo))) = (used, max) {
        parts.push(format!("{}/{} tokens", i + o, mi + mo));
    }
    if let (Some(c), Some(max)) = (u["cost_usd"].as_f64(), b["max_cost_usd"].as_f64()) {
        parts.push(format!("${c:.4} of ${max:.2}"));
    }
    parts.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_filter_is_a_state_or_waiting_and_anything_else_is_named() {
        assert_eq!(Filter::parse(None), Ok(Filter::All));
        assert_eq!(Filter::parse(Some("waiting")), Ok(Filter::Waiting));
        assert_eq!(
            Filter::parse(Some("failed")),
            Ok(Filter::One(RunState::Failed))
        );
        let e = Filter::parse(Some("<b>")).unwrap_err();
        assert!(
            e.contains("no run state `<b>`") && e.contains("interrupted"),
            "{e}"
        );
        assert!(Filter::Waiting.keeps(RunState::WaitingForInput));
        assert!(!Filter::Waiting.keeps(RunState::Running));
    }

    #[test]
    fn durations_read_as_a_person_says_them() {
        assert_eq!(duration(Duration::from_millis(7)), "7 ms");
        assert_eq!(duration(Duration::from_millis(3_240)), "3.2 s");
        assert_eq!(duration(Duration::from_secs(245)), "4 min 5 s");
        assert_eq!(duration(Duration::from_secs(7_380)), "2 h 3 min");
    }

    #[test]
    fn spending_sets_each_use_against_its_budget() {
        let usage = json!({"steps": 4, "fuel": 60_000, "input_tokens": 900, "output_tokens": 100, "cost_usd": 0.0123});
        let budgets = json!({"max_steps": 20, "max_fuel": 1_000_000, "max_input_tokens": 100_000, "max_output_tokens": 20_000, "max_cost_usd": 1.0});
        assert_eq!(
            spending(Some(&usage), Some(&budgets)),
            "4/20 steps, fuel 6.0%, 1000/120000 tokens, $0.0123 of $1.00"
        );
        // A run still going has spent nothing on record yet.
        assert_eq!(spending(None, Some(&budgets)), "");
    }
}
