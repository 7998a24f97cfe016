//! `/v1/runs…`: submit, list, get, events (SSE), approval, cancel, report, journal.

use std::convert::Infallible;

use axum::Json;
use axum::extract::rejection::{JsonRejection, QueryRejection};
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures_util::StreamExt;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use toolhost_engine::approval::{Decider, How};

use super::{ApiError, AppState, ErrorBody};
use crate::auth::{Caller, Role};
use crate::draft::{self, DraftReport, DraftRequest};
use crate::registry::{AnswerRequest, Decision, DecisionKind, RunState, RunView, SubmitRequest};

/// The most runs one page lists.
const MAX_LIMIT: usize = 500;
const DEFAULT_LIMIT: usize = 50;

fn bad_json(e: JsonRejection) -> ApiError {
    ApiError::new(StatusCode::BAD_REQUEST, e.body_text())
}

/// Who decides through this request: the token's name (none on a server without tokens),
/// over the API. Never taken from the request's body.
fn decider(caller: &Caller) -> Decider {
    Decider::person(caller.name().map(str::to_string), How::Api)
}

/// The run `id`, if the caller may read it.
fn readable(state: &AppState, caller: &Caller, id: &str) -> Result<RunView, ApiError> {
    let view = state.registry.get(id)?;
    if !caller.may_read(view.submitter.as_deref()) {
        return Err(ApiError::forbidden(
            "read runs it did not submit",
            Role::Read,
        ));
    }
    Ok(view)
}

/// The run `id`, if the caller may see it: read it, or decide on it while it waits.
fn visible(state: &AppState, caller: &Caller, id: &str) -> Result<RunView, ApiError> {
    let view = state.registry.get(id)?;
    if !caller.may_see(view.submitter.as_deref(), view.pending.is_some()) {
        return Err(ApiError::forbidden(
            "read runs it did not submit (an `approve` token sees runs waiting for a person)",
            Role::Read,
        ));
    }
    Ok(view)
}

/// Submit a run.
#[utoipa::path(post, path = "/v1/runs", tag = "runs",
    request_body = SubmitRequest,
    responses(
        (status = 201, description = "Accepted; the run is queued", body = RunView,
            headers(("location" = String, description = "The run's URL"))),
        (status = 400, description = "Malformed request", body = ErrorBody),
        (status = 401, description = "No or an unknown token", body = ErrorBody),
        (status = 403, description = "The token lacks the `submit` role", body = ErrorBody),
        (status = 404, description = "No such task in the task directory", body = ErrorBody),
        (status = 422, description = "The task cannot run; `problems` lists why", body = ErrorBody),
        (status = 503, description = "Starting up, shutting down, or overloaded: as many runs are queued as the server takes (`max_queued_runs`); try again after `Retry-After`", body = ErrorBody,
            headers(("retry-after" = Option<u64>, description = "Seconds to wait before submitting again (overloaded only)"))),
    ),
    security(("bearer" = [])))]
pub(crate) async fn submit(
    State(state): State<AppState>,
    caller: Caller,
    body: Result<Json<SubmitRequest>, JsonRejection>,
) -> Result<Response, ApiError> {
    if !caller.has(Role::Submit) {
        return Err(ApiError::forbidden("submit runs", Role::Submit));
    }
    let Json(request) = body.map_err(bad_json)?;
    let registry = state.registry.clone();
    let submitter = caller.name().map(str::to_string);
    let view = tokio::task::spawn_blocking(move || registry.submit(request, submitter))
        .await
        .map_err(|e| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))??;
    Ok((
        StatusCode::CREATED,
        [(header::LOCATION, view.url.clone())],
        Json(view),
    )
        .into_response())
}

/// `GET /v1/runs` parameters.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub(crate) struct ListParams {
    /// Only runs in this state.
    state: Option<RunState>,
    /// At most this many runs (1–500; default 50).
    #[param(minimum = 1, maximum = 500)]
    limit: Option<usize>,
    /// Runs after this run id in the page order (the `next` of the previous page).
    after: Option<String>,
    /// `oldest` first (the default) or `newest` first; run ids sort by start time.
    order: Option<Order>,
}

/// The order of `GET /v1/runs`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Order {
    Oldest,
    Newest,
}

/// A page of runs.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct RunPage {
    pub runs: Vec<RunView>,
    /// Pass as `after` for the next page; absent on the last.
    pub next: Option<String>,
}

/// List runs, oldest first (or `order=newest`): with `read`, every run; with `submit` only, the caller's own; with `approve` only, those waiting for a person.
#[utoipa::path(get, path = "/v1/runs", tag = "runs", params(ListParams),
    responses(
        (status = 200, body = RunPage),
        (status = 400, description = "A bad parameter", body = ErrorBody),
        (status = 401, body = ErrorBody),
        (status = 403, description = "Neither `read`, `submit` nor `approve` (which lists only runs waiting for a person)", body = ErrorBody),
    ),
    security(("bearer" = [])))]
pub(crate) async fn list(
    State(state): State<AppState>,
    caller: Caller,
    params: Result<Query<ListParams>, QueryRejection>,
) -> Result<Json<RunPage>, ApiError> {
    let Query(p) = params.map_err(|e| ApiError::new(StatusCode::BAD_REQUEST, e.body_text()))?;
    if !caller.may_list() {
        return Err(ApiError::forbidden("list runs", Role::Read));
    }
    let limit = p.limit.unwrap_or(DEFAULT_LIMIT);
    if !(1..=MAX_LIMIT).contains(&limit) {
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            format!("limit {limit} is not between 1 and {MAX_LIMIT}"),
        ));
    }
    let newest = p.order == Some(Order::Newest);
    let mut all = state.registry.list();
    if newest {
        all.reverse();
    }
    // Past the cursor in the page's order.
    let past = |id: &str| {
        p.after
            .as_deref()
            .is_none_or(|a| if newest { id < a } else { id > a })
    };
    let mut runs: Vec<RunView> = all
        .into_iter()
        .filter(|r| caller.may_see(r.submitter.as_deref(), r.pending.is_some()))
        .filter(|r| p.state.is_none_or(|s| r.state == s))
        .filter(|r| past(&r.id))
        .take(limit + 1)
        .collect();
    let next = if runs.len() > limit {
        runs.truncate(limit);
        runs.last().map(|r| r.id.clone())
    } else {
        None
    };
    Ok(Json(RunPage { runs, next }))
}

/// A run: its state, the decision it waits for, its stop reason, answer, steps and usage.
#[utoipa::path(get, path = "/v1/runs/{id}", tag = "runs",
    params(("id" = String, Path, description = "The run id")),
    responses(
        (status = 200, body = RunView),
        (status = 401, body = ErrorBody),
        (status = 403, description = "Neither `read`, its submitter, nor `approve` while it waits for a person", body = ErrorBody),
        (status = 404, body = ErrorBody),
    ),
    security(("bearer" = [])))]
pub(crate) async fn get_run(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<RunView>, ApiError> {
    Ok(Json(visible(&state, &caller, &id)?))
}

/// One event of `GET /v1/runs/{id}/events` as it is on the wire, for the document only:
/// the events themselves are written by axum's `Event`.
#[derive(ToSchema)]
#[allow(dead_code)]
pub(crate) struct JournalEvent {
    /// The record's `seq` (send it back as `Last-Event-ID`).
    id: String,
    /// The record's `kind`.
    event: String,
    /// The record, JSON.
    data: String,
}

/// `GET /v1/runs/{id}/events` parameters.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub(crate) struct EventParams {
    /// Start after this record (as `Last-Event-ID` does; the header wins).
    after: Option<u64>,
}

/// The run's journal records as Server-Sent Events, as they are appended: event `id` is
/// the record's `seq`, `event` its kind, `data` the record. Resumable: with
/// `Last-Event-ID: N` the records after N come first. The stream ends when the run does.
/// Followers are capped, per token (429) and in all (503).
#[utoipa::path(get, path = "/v1/runs/{id}/events", tag = "runs",
    params(("id" = String, Path, description = "The run id"), EventParams,
        ("last-event-id" = Option<u64>, Header, description = "The last record seen")),
    responses(
        (status = 200, description = "text/event-stream of journal records", content_type = "text/event-stream", body = JournalEvent),
        (status = 400, body = ErrorBody),
        (status = 401, body = ErrorBody),
        (status = 403, body = ErrorBody),
        (status = 404, body = ErrorBody),
        (status = 429, description = "The token follows its most runs already; see Retry-After", body = ErrorBody),
        (status = 503, description = "The server has its most followers already; see Retry-After", body = ErrorBody),
    ),
    security(("bearer" = [])))]
pub(crate) async fn events(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    headers: HeaderMap,
    params: Result<Query<EventParams>, QueryRejection>,
) -> Result<Response, ApiError> {
    let Query(p) = params.map_err(|e| ApiError::new(StatusCode::BAD_REQUEST, e.body_text()))?;
    readable(&state, &caller, &id)?;
    let header = match headers.get("last-event-id") {
        Some(v) => {
            let text = v.to_str().unwrap_or("");
            Some(text.trim().parse::<u64>().map_err(|_| {
                ApiError::new(
                    StatusCode::BAD_REQUEST,
                    format!("Last-Event-ID `{text}` is not a record number"),
                )
            })?)
        }
        None => None,
    };
    // The document says int64 (record numbers are PostgreSQL bigints), so a larger u64 is
    // refused, in either place, rather than read as "after every record".
    if let Some(n) = [header, p.after]
        .into_iter()
        .flatten()
        .find(|n| i64::try_from(*n).is_err())
    {
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            format!("record number {n} is beyond the largest one, {}", i64::MAX),
        ));
    }
    let after = header.or(p.after).unwrap_or(0);
    let follower = state.followers.admit(&caller)?;
    let records = state.registry.events(&id, after)?;
    // The follower is counted for as long as its stream lives.
    let stream = records.map(move |r| {
        let _ = &follower;
        let event = Event::default()
            .id(r.seq.to_string())
            .event(r.kind.as_str())
            .json_data(&r)
            .unwrap_or_else(|_| Event::default().comment("unserialisable record"));
        Ok::<_, Infallible>(event)
    });
    Ok(Sse::new(stream)
        .keep_alive(KeepAlive::default())
        .into_response())
}

/// Decide the run's pending plan or step: approve, reject (with a reason), or edit (a plan
/// only; the edited plan is validated again). Journaled before it takes effect.
#[utoipa::path(post, path = "/v1/runs/{id}/approval", tag = "runs",
    params(("id" = String, Path, description = "The run id")),
    request_body = Decision,
    responses(
        (status = 200, description = "Taken; the run goes on", body = RunView),
        (status = 400, body = ErrorBody),
        (status = 401, body = ErrorBody),
        (status = 403, description = "The token lacks the `approve` role", body = ErrorBody),
        (status = 404, body = ErrorBody),
        (status = 409, description = "Nothing is waiting for approval", body = ErrorBody),
    ),
    security(("bearer" = [])))]
pub(crate) async fn approval(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    body: Result<Json<Decision>, JsonRejection>,
) -> Result<Json<RunView>, ApiError> {
    if !caller.has(Role::Approve) {
        return Err(ApiError::forbidden("approve", Role::Approve));
    }
    let Json(decision) = body.map_err(bad_json)?;
    Ok(Json(state.registry.decide(
        &id,
        decision,
        decider(&caller),
    )?))
}

/// Check a draft edit of the plan the run waits on, as the run will check the edit: the
/// same validation as `plan validate` with what the run has done so far. Given as `text`,
/// each problem carries its line. Decides and records nothing.
#[utoipa::path(post, path = "/v1/runs/{id}/plan/check", tag = "runs",
    params(("id" = String, Path, description = "The run id")),
    request_body = DraftRequest,
    responses(
        (status = 200, description = "Checked; `valid` when the edit would be accepted", body = DraftReport),
        (status = 400, body = ErrorBody),
        (status = 401, body = ErrorBody),
        (status = 403, description = "The token lacks the `approve` role", body = ErrorBody),
        (status = 404, body = ErrorBody),
        (status = 409, description = "The run waits on no plan", body = ErrorBody),
        (status = 503, description = "The run's holder did not check the draft in time", body = ErrorBody),
    ),
    security(("bearer" = [])))]
pub(crate) async fn check_plan(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    body: Result<Json<DraftRequest>, JsonRejection>,
) -> Result<Json<DraftReport>, ApiError> {
    if !caller.has(Role::Approve) {
        return Err(ApiError::forbidden("approve", Role::Approve));
    }
    let Json(draft) = body.map_err(bad_json)?;
    Ok(Json(checked_draft(&state, id, draft).await?))
}

/// [`draft::check`] off the async threads (the holder may be another replica).
pub(crate) async fn checked_draft(
    state: &AppState,
    id: String,
    draft: DraftRequest,
) -> Result<DraftReport, ApiError> {
    let registry = state.registry.clone();
    tokio::task::spawn_blocking(move || draft::check(registry.as_ref(), &id, draft))
        .await
        .map_err(|e| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))?
        .map_err(ApiError::from)
}

/// Answer the run's pending question (a `human.ask` step): the answer is checked against
/// the question's schema (422 with every problem when it does not match), journaled, and
/// becomes the step's output.
#[utoipa::path(post, path = "/v1/runs/{id}/answer", tag = "runs",
    params(("id" = String, Path, description = "The run id")),
    request_body = AnswerRequest,
    responses(
        (status = 200, description = "Taken; the run goes on", body = RunView),
        (status = 400, body = ErrorBody),
        (status = 401, body = ErrorBody),
        (status = 403, description = "The token lacks the `approve` role", body = ErrorBody),
        (status = 404, body = ErrorBody),
        (status = 409, description = "Nothing is waiting for an answer", body = ErrorBody),
        (status = 422, description = "The answer does not match the question's schema", body = ErrorBody),
    ),
    security(("bearer" = [])))]
pub(crate) async fn answer(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    body: Result<Json<AnswerRequest>, JsonRejection>,
) -> Result<Json<RunView>, ApiError> {
    if !caller.has(Role::Approve) {
        return Err(ApiError::forbidden("approve", Role::Approve));
    }
    let Json(AnswerRequest { answer }) = body.map_err(bad_json)?;
    let decision = Decision {
        decision: DecisionKind::Answer,
        reason: None,
        plan: None,
        answer: Some(answer),
    };
    Ok(Json(state.registry.decide(
        &id,
        decision,
        decider(&caller),
    )?))
}

/// Cancel a run: it stops at once, journaled `cancelled` (steps it cut off on record) with
/// who cancelled it (`by`: the token's name) and how (`api`).
#[utoipa::path(post, path = "/v1/runs/{id}/cancel", tag = "runs",
    params(("id" = String, Path, description = "The run id")),
    responses(
        (status = 202, description = "Cancelling", body = RunView),
        (status = 401, body = ErrorBody),
        (status = 403, description = "Neither `admin` nor its submitter", body = ErrorBody),
        (status = 404, body = ErrorBody),
        (status = 409, description = "The run is over", body = ErrorBody),
    ),
    security(("bearer" = [])))]
pub(crate) async fn cancel(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let view = state.registry.get(&id)?;
    if !caller.may_cancel(view.submitter.as_deref()) {
        return Err(ApiError::forbidden(
            "cancel runs it did not submit",
            Role::Admin,
        ));
    }
    let cancelled = state.registry.cancel(&id, decider(&caller))?;
    Ok((StatusCode::ACCEPTED, Json(cancelled)).into_response())
}

/// The run's HTML report, as `toolhost report RUN --html` writes it.
#[utoipa::path(get, path = "/v1/runs/{id}/report", tag = "runs",
    params(("id" = String, Path, description = "The run id")),
    responses(
        (status = 200, description = "One self-contained page", content_type = "text/html", body = String),
        (status = 401, body = ErrorBody),
        (status = 403, body = ErrorBody),
        (status = 404, body = ErrorBody),
    ),
    security(("bearer" = [])))]
pub(crate) async fn report(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    readable(&state, &caller, &id)?;
    let registry = state.registry.clone();
    let html = tokio::task::spawn_blocking(move || registry.report(&id))
        .await
        .map_err(|e| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))??;
    Ok(([(header::CONTENT_TYPE, "text/html; charset=utf-8")], html).into_response())
}

/// The run's journal: JSON lines, hash-chained, as stored.
#[utoipa::path(get, path = "/v1/runs/{id}/journal", tag = "runs",
    params(("id" = String, Path, description = "The run id")),
    responses(
        (status = 200, description = "JSON lines", content_type = "application/jsonl", body = String),
        (status = 401, body = ErrorBody),
        (status = 403, body = ErrorBody),
        (status = 404, body = ErrorBody),
    ),
    security(("bearer" = [])))]
pub(crate) async fn journal(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    readable(&state, &caller, &id)?;
    let bytes = state.registry.journal(&id)?;
    Ok(([(header::CONTENT_TYPE, "application/jsonl")], bytes).into_response())
}
