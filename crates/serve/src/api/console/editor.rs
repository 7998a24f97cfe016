//! The plan editor of a run waiting for review: the proposed plan as JSON text, checked as
//! the person types (`console.js` posts the text to `/console/runs/{id}/check`, which
//! answers as `POST /v1/runs/{id}/plan/check` does: every problem, at its line), the
//! problems marked at their lines, a line diff against the proposed plan, and a submit
//! that records the edit (the run checks it once more; an invalid edit is refused with
//! its problems and the run keeps waiting). Without the script the page still works: the
//! submit's answer shows the problems at their lines.

use std::fmt::Write;

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use serde::Deserialize;
use serde_json::Value;

use super::super::ApiError;
use super::session::Session;
use super::{AppState, CSP, secured};
use crate::auth::Role;
use crate::draft::{DraftProblem, DraftRequest};
use crate::registry::{Decision, DecisionKind, RegistryError};
use toolhost_engine::approval::{Decider, How};
use toolhost_journal::report::escape as esc;

/// A draft the server shows back: the text the person submitted and what is wrong with it.
#[derive(Debug, Clone, Default)]
pub(crate) struct Draft {
    pub text: String,
    pub problems: Vec<DraftProblem>,
}

/// The editor for the plan under review (`proposed`, as the run shows it), holding
/// `draft` when a submitted edit came back with problems.
pub(super) fn render(run: &str, csrf: &str, proposed: &Value, draft: Option<&Draft>) -> String {
    let pretty = serde_json::to_string_pretty(proposed).unwrap_or_default();
    let text = draft.map_or(pretty.as_str(), |d| d.text.as_str());
    let problems: String = draft.map_or(String::new(), |d| problem_items(&d.problems));
    let rows = text.lines().count().clamp(8, 40);
    let (id, csrf) = (esc(run), esc(csrf));
    let mut out = String::new();
    let _ = write!(
        out,
        r#"<details id="edit"{open}><summary>Edit the plan</summary>
<form method="post" action="/console/runs/{id}/decide" id="edit-form" data-check="/console/runs/{id}/check">
<input type="hidden" name="csrf" value="{csrf}"><input type="hidden" name="decision" value="edit">
<label for="plan-text">The plan as JSON: checked as you type, as the run will check it</label>
<div class="editor"><ol id="plan-lines" class="gutter" aria-hidden="true"></ol><textarea id="plan-text" name="plan" rows="{rows}" spellcheck="false" autocomplete="off">{text}</textarea></div>
<p id="plan-status" role="status" aria-live="polite">{status}</p>
<ul id="plan-problems">{problems}</ul>
<h3>Changes against the proposed plan</h3><pre id="plan-diff" class="diff"></pre>
<pre id="plan-proposed" hidden>{proposed}</pre>
<button type="submit" id="edit-submit">Run the edited plan</button></form></details>"#,
        open = if draft.is_some() { " open" } else { "" },
        text = esc(text),
        status = draft.map_or(String::new(), |d| status(d.problems.len())),
        proposed = esc(&pretty),
    );
    out
}

/// "N problems", or that the edit would be accepted.
fn status(problems: usize) -> String {
    match problems {
        0 => "No problems: the run would accept this edit.".into(),
        1 => "1 problem: the run would refuse this edit.".into(),
        n => format!("{n} problems: the run would refuse this edit."),
    }
}

/// One item per problem, its line first when it has one.
pub(super) fn problem_items(problems: &[DraftProblem]) -> String {
    problems
        .iter()
        .map(|p| match p.line {
            Some(line) => format!(
                r#"<li data-line="{line}"><span class="at">line {line}</span> {}</li>"#,
                esc(&p.message)
            ),
            None => format!("<li>{}</li>", esc(&p.message)),
        })
        .collect()
}

/// What the editor's script posts.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct CheckForm {
    csrf: String,
    text: String,
}

/// The editor's check of its text: the API's plan check, for a signed-in session whose
/// role may decide, its CSRF token in the body.
pub(super) async fn check(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
    body: Bytes,
) -> Response {
    // Errors as the API's JSON: the script shows their `error`.
    let refused = |status, why: &str| ApiError::new(status, why.to_string()).into_response();
    let Some(session) = Session::of(&state, &headers) else {
        return refused(StatusCode::UNAUTHORIZED, "sign in first");
    };
    let form: CheckForm = match serde_json::from_slice(&body) {
        Ok(f) => f,
        Err(e) => {
            return refused(
                StatusCode::BAD_REQUEST,
                &format!("the check wants JSON {{csrf, text}}: {e}"),
            );
        }
    };
    if !session.csrf_matches(Some(&form.csrf)) {
        return refused(
            StatusCode::FORBIDDEN,
            "this request's CSRF token is missing or not this session's: reload the page",
        );
    }
    if !session.caller.has(Role::Approve) {
        return refused(
            StatusCode::FORBIDDEN,
            "this token may not edit plans: it needs the `approve` role",
        );
    }
    let draft = DraftRequest {
        plan: None,
        text: Some(form.text),
    };
    match super::super::runs::checked_draft(&state, id, draft).await {
        Ok(report) => secured(
            (
                [(header::CONTENT_TYPE, "application/json")],
                serde_json::to_string(&report).unwrap_or_default(),
            )
                .into_response(),
            CSP,
        ),
        Err(e) => e.into_response(),
    }
}

/// Records the edit in `text` as the session's decision. Text that is not JSON, and a plan
/// the run refuses, come back on the run's page with their problems at their lines (400,
/// 422); the run keeps waiting.
pub(super) async fn edit(state: &AppState, session: &Session, id: String, text: &str) -> Response {
    let plan = match serde_json::from_str::<serde_json::Value>(text) {
        Ok(plan) => plan,
        Err(_) => return located(state, session, id, text, StatusCode::BAD_REQUEST).await,
    };
    let decision = Decision {
        decision: DecisionKind::Edit,
        reason: None,
        plan: Some(plan),
        answer: None,
    };
    let by = Decider::person(session.caller.name().map(str::to_string), How::Console);
    let registry = state.registry.clone();
    let run = id.clone();
    let decided = tokio::task::spawn_blocking(move || registry.decide(&run, decision, by)).await;
    match decided {
        Ok(Ok(_)) => Redirect::to(&format!("/console/runs/{id}")).into_response(),
        // Refused with every problem, the run waiting again: shown at their lines.
        Ok(Err(RegistryError::InvalidEdit { .. } | RegistryError::BadRequest(_))) => {
            located(state, session, id, text, StatusCode::UNPROCESSABLE_ENTITY).await
        }
        Ok(Err(e)) => {
            let why = e.to_string();
            let status = super::super::ApiError::from(e).status;
            super::refused(status, &super::why_of(state, &id, status, &why))
        }
        Err(e) => super::refused(StatusCode::INTERNAL_SERVER_ERROR, &e.to_string()),
    }
}

/// Run `id`'s page with the refused edit `text` in its editor, its problems at their lines.
async fn located(
    state: &AppState,
    session: &Session,
    id: String,
    text: &str,
    status: StatusCode,
) -> Response {
    let request = DraftRequest {
        plan: None,
        text: Some(text.to_string()),
    };
    // With replicas the run's holder parks it again a moment after it journaled its
    // verdict on the edit: until then the run is not waiting on a plan (409).
    let mut checked = super::super::runs::checked_draft(state, id.clone(), request.clone()).await;
    for _ in 0..40 {
        match &checked {
            Err(e) if e.status == StatusCode::CONFLICT => {
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                checked =
                    super::super::runs::checked_draft(state, id.clone(), request.clone()).await;
            }
            _ => break,
        }
    }
    match checked {
        Ok(report) => {
            let draft = Draft {
                text: text.to_string(),
                problems: report.problems,
            };
            super::run_html(state, session, &id, status, Some(&draft))
        }
        Err(e) => e.into_response(),
    }
}
