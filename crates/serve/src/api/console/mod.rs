//! The operator console at `/`: server-rendered pages over the same registry, tokens and
//! roles as the API (issue 39).
//!
//! - `session`: who is looking (the token kept in an HttpOnly, SameSite=Strict cookie, or
//!   nobody on a server without tokens) and the CSRF token every form carries.
//! - `form`: a question's answer form generated from its JSON Schema, and its fields read
//!   back into the answer (checked against the schema again by the registry).
//! - `editor`: the plan editor of a run waiting for review (checked as the person types,
//!   problems at their lines, a diff against the proposed plan) and its check route.
//! - `inbox`: the Approvals page, everything waiting for a person across runs.
//! - `evals`: the Evaluations page (suite results against their baselines' bands).
//! - `list`: the Runs page (filtered by state, paged, its rows live over SSE).
//! - `progress`: a run's spending so far, its steps in lanes over time and each plan
//!   revision's DAG (the HTML report's model and figures).
//! - `page`: the HTML, every untrusted text escaped, under a Content-Security-Policy that
//!   allows only this server's own script and style (`console.js`, `console.css`, embedded).
//! - here: the routes and handlers (a run's page, sign-in, decisions, cancel, the live timeline).
//!
//! The `Host`/`Origin` check of the API runs before every route here too.

mod editor;
mod evals;
mod form;
mod inbox;
mod list;
mod page;
mod progress;
mod session;

use std::convert::Infallible;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use futures_util::StreamExt;
use serde::Deserialize;

use toolhost_engine::approval::{Decider, How};

use self::editor::Draft;
use self::session::{Form, Session};
use super::AppState;
use crate::auth::Role;
use crate::registry::{Decision, DecisionKind};

pub(crate) use self::session::CsrfKey;

/// Only this server's own script and style; nothing inline, no frames, forms post here.
const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";
/// The run report is a page of its own with inline style and no script at all.
const REPORT_CSP: &str = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; frame-ancestors 'none'; base-uri 'none'";

/// The console's routes.
pub(crate) fn routes() -> Router<AppState> {
    Router::new()
        .route("/", get(list::runs_page))
        .route("/console/runs/live", get(list::live))
        .route("/console/console.css", get(css))
        .route("/console/console.js", get(js))
        .route("/console/approvals", get(inbox::approvals))
        .route("/console/evaluations", get(evals::evaluations))
        .route("/console/sign-in", post(sign_in))
        .route("/console/sign-out", post(sign_out))
        .route("/console/runs/{id}", get(run_page))
        .route("/console/runs/{id}/events", get(events))
        .route("/console/runs/{id}/state", get(run_state))
        .route("/console/runs/{id}/report", get(report))
        .route("/console/runs/{id}/journal", get(journal))
        .route("/console/runs/{id}/decide", post(decide))
        .route("/console/runs/{id}/check", post(editor::check))
        .route("/console/runs/{id}/cancel", post(cancel))
}

/// An HTML response under the console's policy.
fn html(status: StatusCode, body: String) -> Response {
    secured(
        (
            status,
            [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
            body,
        )
            .into_response(),
        CSP,
    )
}

fn secured(mut r: Response, csp: &'static str) -> Response {
    let h = r.headers_mut();
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(csp),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    // `same-origin`, not `no-referrer`: under `no-referrer` a browser sends `Origin: null`
    // with the console's own form posts, and the origin check refuses every one of them.
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("same-origin"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    r
}

/// A refusal as a page (the console's requests are a browser's, not an API client's).
fn refused(status: StatusCode, why: &str) -> Response {
    html(status, page::message(status, why))
}

async fn css() -> Response {
    secured(
        (
            [(header::CONTENT_TYPE, "text/css; charset=utf-8")],
            page::CSS,
        )
            .into_response(),
        CSP,
    )
}

async fn js() -> Response {
    secured(
        (
            [(header::CONTENT_TYPE, "text/javascript; charset=utf-8")],
            page::JS,
        )
            .into_response(),
        CSP,
    )
}

/// A run: its state, answer, what it waits for (and the buttons the role allows), and its
/// journal as a timeline the script keeps live.
async fn run_page(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Response {
    let Some(session) = Session::of(&state, &headers) else {
        return html(StatusCode::UNAUTHORIZED, page::sign_in(None));
    };
    run_html(&state, &session, &id, StatusCode::OK, None)
}

/// Run `id`'s page for `session`, with `status`; `draft`: an edit that came back refused.
fn run_html(
    state: &AppState,
    session: &Session,
    id: &str,
    status: StatusCode,
    draft: Option<&Draft>,
) -> Response {
    let view = match state.registry.get(id) {
        Ok(v) => v,
        Err(e) => return refused(StatusCode::NOT_FOUND, &e.to_string()),
    };
    if !session
        .caller
        .may_see(view.submitter.as_deref(), view.pending.is_some())
    {
        return refused(
            StatusCode::FORBIDDEN,
            "this token may not read runs it did not submit",
        );
    }
    // An approver without `read` sees what the run waits for, not its journal.
    let journal = if session.caller.may_read(view.submitter.as_deref()) {
        state.registry.journal(id).unwrap_or_default()
    } else {
        Vec::new()
    };
    html(status, page::run(session, &view, &journal, draft))
}

/// The run's state name, as text: the script reloads the page when it changes.
async fn run_state(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Response {
    let Some(session) = Session::of(&state, &headers) else {
        return refused(StatusCode::UNAUTHORIZED, "sign in first");
    };
    match state.registry.get(&id) {
        Ok(v)
            if session
                .caller
                .may_see(v.submitter.as_deref(), v.pending.is_some()) =>
        {
            secured(
                (
                    [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
                    v.state.name(),
                )
                    .into_response(),
                CSP,
            )
        }
        Ok(_) => refused(StatusCode::FORBIDDEN, "this token may not read this run"),
        Err(e) => refused(StatusCode::NOT_FOUND, &e.to_string()),
    }
}

#[derive(Deserialize)]
struct AfterParams {
    after: Option<u64>,
}

/// The run's journal records after `after`, as unnamed Server-Sent Events (the script
/// appends each to the timeline as text). Followers are capped as the API's are.
async fn events(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
    q: Query<AfterParams>,
) -> Response {
    let Some(session) = Session::of(&state, &headers) else {
        return refused(StatusCode::UNAUTHORIZED, "sign in first");
    };
    let readable = state
        .registry
        .get(&id)
        .map(|v| session.caller.may_read(v.submitter.as_deref()));
    match readable {
        Ok(true) => {}
        Ok(false) => return refused(StatusCode::FORBIDDEN, "this token may not read this run"),
        Err(e) => return refused(StatusCode::NOT_FOUND, &e.to_string()),
    }
    let follower = match state.followers.admit(&session.caller) {
        Ok(f) => f,
        Err(e) => return super::ApiError::from(e).into_response(),
    };
    let records = match state.registry.events(&id, q.after.unwrap_or(0)) {
        Ok(r) => r,
        Err(e) => return super::ApiError::from(e).into_response(),
    };
    let stream = records.map(move |r| {
        let _ = &follower;
        Ok::<_, Infallible>(
            Event::default()
                .id(r.seq.to_string())
                .json_data(&r)
                .unwrap_or_else(|_| Event::default().comment("unserialisable record")),
        )
    });
    Sse::new(stream)
        .keep_alive(KeepAlive::default())
        .into_response()
}

/// The run's report or journal, for a session that may read it.
async fn artefact(state: &AppState, headers: &HeaderMap, id: String, report: bool) -> Response {
    let Some(session) = Session::of(state, headers) else {
        return refused(StatusCode::UNAUTHORIZED, "sign in first");
    };
    match state.registry.get(&id) {
        Ok(v) if session.caller.may_read(v.submitter.as_deref()) => {}
        Ok(_) => return refused(StatusCode::FORBIDDEN, "this token may not read this run"),
        Err(e) => return refused(StatusCode::NOT_FOUND, &e.to_string()),
    }
    let registry = state.registry.clone();
    let made = tokio::task::spawn_blocking(move || {
        if report {
            registry
                .report(&id)
                .map(|h| (h.into_bytes(), "text/html; charset=utf-8"))
        } else {
            registry.journal(&id).map(|j| (j, "application/jsonl"))
        }
    })
    .await;
    match made {
        Ok(Ok((bytes, kind))) => secured(
            ([(header::CONTENT_TYPE, kind)], bytes).into_response(),
            REPORT_CSP,
        ),
        Ok(Err(e)) => refused(StatusCode::NOT_FOUND, &e.to_string()),
        Err(e) => refused(StatusCode::INTERNAL_SERVER_ERROR, &e.to_string()),
    }
}

async fn report(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Response {
    artefact(&state, &headers, id, true).await
}

async fn journal(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Response {
    artefact(&state, &headers, id, false).await
}

/// Takes a token, and keeps it in the console's cookie when this server knows it.
async fn sign_in(State(state): State<AppState>, body: Bytes) -> Response {
    let form = Form::parse(&body);
    let token = form.get("token").unwrap_or_default();
    if state.tokens.is_empty() {
        return Redirect::to("/").into_response();
    }
    if state
        .tokens
        .caller(Some(&format!("Bearer {token}")))
        .is_err()
    {
        return html(
            StatusCode::UNAUTHORIZED,
            page::sign_in(Some("that token is not one this server knows")),
        );
    }
    let mut r = Redirect::to("/").into_response();
    r.headers_mut()
        .insert(header::SET_COOKIE, session::cookie(token));
    r
}

/// The form's session, when its CSRF token is the session's: every state-changing
/// request passes here.
fn checked(state: &AppState, headers: &HeaderMap, form: &Form) -> Result<Session, Box<Response>> {
    let session = Session::of(state, headers).ok_or_else(|| {
        Box::new(refused(
            StatusCode::UNAUTHORIZED,
            "sign in first: this request carries no console session",
        ))
    })?;
    if !session.csrf_matches(form.get("csrf")) {
        return Err(Box::new(refused(
            StatusCode::FORBIDDEN,
            "this form's CSRF token is missing or not this session's: reload the page and try again",
        )));
    }
    Ok(session)
}

async fn sign_out(State(state): State<AppState>, headers: HeaderMap, body: Bytes) -> Response {
    if let Err(r) = checked(&state, &headers, &Form::parse(&body)) {
        return *r;
    }
    let mut r = Redirect::to("/").into_response();
    r.headers_mut()
        .insert(header::SET_COOKIE, session::cleared());
    r
}

/// Approve, reject (with a reason) or answer, as the session's token, journaled `console`.
async fn decide(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
    body: Bytes,
) -> Response {
    let form = Form::parse(&body);
    let session = match checked(&state, &headers, &form) {
        Ok(s) => s,
        Err(r) => return *r,
    };
    if !session.caller.has(Role::Approve) {
        return refused(
            StatusCode::FORBIDDEN,
            "this token may not decide: it needs the `approve` role",
        );
    }
    if form.get("decision") == Some("edit") {
        return editor::edit(&state, &session, id, form.get("plan").unwrap_or_default()).await;
    }
    let schema = state
        .registry
        .get(&id)
        .ok()
        .and_then(|v| v.pending)
        .and_then(|p| p.schema);
    let decision = match form_decision(&form, schema.as_ref()) {
        Ok(d) => d,
        Err(why) => return refused(StatusCode::BAD_REQUEST, &why),
    };
    let by = Decider::person(session.caller.name().map(str::to_string), How::Console);
    match state.registry.decide(&id, decision, by) {
        Ok(_) => Redirect::to(&format!("/console/runs/{id}")).into_response(),
        Err(e) => {
            let why = e.to_string();
            let status = super::ApiError::from(e).status;
            refused(status, &why_of(&state, &id, status, &why))
        }
    }
}

/// What the registry said, for the page (the API's error text is JSON).
fn why_of(state: &AppState, id: &str, status: StatusCode, why: &str) -> String {
    let waiting = state
        .registry
        .get(id)
        .map(|v| v.state.name())
        .unwrap_or("unknown");
    format!("the decision was not taken ({status}: {why}); the run is `{waiting}`")
}

/// The decision a console form asks for; an answer comes as JSON (`answer`) or as the
/// fields of the form generated from the question's `schema`.
fn form_decision(form: &Form, schema: Option<&serde_json::Value>) -> Result<Decision, String> {
    let kind = match form.get("decision") {
        Some("approve") => DecisionKind::Approve,
        Some("reject") => DecisionKind::Reject,
        Some("answer") => DecisionKind::Answer,
        other => {
            return Err(format!(
                "`decision` must be approve, reject or answer, not {other:?}"
            ));
        }
    };
    let reason = form
        .get("reason")
        .map(str::trim)
        .filter(|r| !r.is_empty())
        .map(str::to_string);
    if kind == DecisionKind::Reject && reason.is_none() {
        return Err("a rejection needs a reason".into());
    }
    let answer = match (kind, form.get("answer")) {
        (DecisionKind::Answer, Some(text)) => {
            Some(serde_json::from_str(text).map_err(|e| format!("the answer is not JSON: {e}"))?)
        }
        (DecisionKind::Answer, None) => match schema {
            Some(schema) => Some(form::answer(schema, form)?),
            None => return Err("an answer is required".into()),
        },
        _ => None,
    };
    Ok(Decision {
        decision: kind,
        reason,
        plan: None,
        answer,
    })
}

async fn cancel(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
    body: Bytes,
) -> Response {
    let session = match checked(&state, &headers, &Form::parse(&body)) {
        Ok(s) => s,
        Err(r) => return *r,
    };
    let may = state
        .registry
        .get(&id)
        .map(|v| session.caller.may_cancel(v.submitter.as_deref()));
    match may {
        Ok(true) => match state.registry.cancel(
            &id,
            Decider::person(session.caller.name().map(str::to_string), How::Console),
        ) {
            Ok(_) => Redirect::to(&format!("/console/runs/{id}")).into_response(),
            Err(e) => refused(StatusCode::CONFLICT, &e.to_string()),
        },
        Ok(false) => refused(
            StatusCode::FORBIDDEN,
            "this token may not cancel runs it did not submit",
        ),
        Err(e) => refused(StatusCode::NOT_FOUND, &e.to_string()),
    }
}
