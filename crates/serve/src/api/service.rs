//! `/healthz`, `/readyz`, `/metrics`, `/openapi.json`, and the answer to unknown paths.

use axum::Json;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::json;
use utoipa::OpenApi;

use super::{ApiDoc, ApiError, AppState, ErrorBody};
use crate::auth::{Caller, Role};

/// Alive: the process answers. No token needed.
#[utoipa::path(get, path = "/healthz", tag = "service",
    responses((status = 200, description = "Alive", body = Object)))]
pub(crate) async fn healthz() -> Json<serde_json::Value> {
    Json(json!({"status": "ok"}))
}

/// Ready: start-up is done (tools loaded and compiled, the state directory writable) and
/// the server is not shutting down. No token needed.
#[utoipa::path(get, path = "/readyz", tag = "service",
    responses(
        (status = 200, description = "Ready", body = Object),
        (status = 503, description = "Starting up or shutting down", body = ErrorBody),
    ))]
pub(crate) async fn readyz(State(state): State<AppState>) -> Response {
    if state.backend.is_ready() {
        Json(json!({"status": "ready"})).into_response()
    } else {
        ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "not ready").into_response()
    }
}

/// Prometheus metrics (text format 0.0.4). Needs `read`.
#[utoipa::path(get, path = "/metrics", tag = "service",
    responses(
        (status = 200, description = "Prometheus text", content_type = "text/plain", body = String),
        (status = 401, body = ErrorBody),
        (status = 403, body = ErrorBody),
    ),
    security(("bearer" = [])))]
pub(crate) async fn metrics(
    State(state): State<AppState>,
    caller: Caller,
) -> Result<Response, ApiError> {
    if !caller.has(Role::Read) {
        return Err(ApiError::forbidden("read metrics", Role::Read));
    }
    let backend = state.backend.clone();
    let (states, takeovers, calls) = tokio::task::spawn_blocking(move || {
        (backend.states(), backend.lease_takeovers(), backend.calls())
    })
    .await
    .map_err(|e| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))?;
    let text = state.metrics.render(&states, takeovers, calls);
    Ok(([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], text).into_response())
}

/// This document. Any valid token may read it.
#[utoipa::path(get, path = "/openapi.json", tag = "service",
    responses(
        (status = 200, description = "The OpenAPI 3.1 document", body = Object),
        (status = 401, body = ErrorBody),
    ),
    security(("bearer" = [])))]
pub(crate) async fn openapi(_caller: Caller) -> Json<utoipa::openapi::OpenApi> {
    Json(ApiDoc::openapi())
}

pub(crate) async fn not_found(uri: axum::http::Uri) -> ApiError {
    ApiError::new(
        StatusCode::NOT_FOUND,
        format!("no route `{}`: see /openapi.json", uri.path()),
    )
}
