//! The HTTP API: the router, who is calling ([`Caller`] from the bearer token), and errors
//! as JSON. Handlers of runs are in `runs`; the service endpoints (`/healthz`, `/readyz`,
//! `/metrics`, `/openapi.json`) in `service`; the OpenAPI document in `doc`; the `Host`/`Origin`
//! check every request passes first in `origin`; the operator console's pages and forms
//! (at `/`, under the same tokens, roles and checks) in `console`.

mod console;
mod doc;
mod origin;
mod runs;
mod service;

use std::sync::Arc;

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Serialize;
use serde_json::json;
use utoipa::ToSchema;

pub(crate) use self::console::CsrfKey;
pub use self::doc::ApiDoc;
pub(crate) use self::origin::AllowedHosts;
use crate::auth::{Caller, Refused, Role, Tokens};
use crate::backend::Backend;
use crate::followers::{Followers, Refused as Crowded};
use crate::metrics::Metrics;
use crate::registry::{Registry, RegistryError};

/// What every handler shares.
#[derive(Clone)]
pub(crate) struct AppState {
    pub registry: Arc<dyn Registry>,
    pub backend: Arc<dyn Backend>,
    pub tokens: Arc<Tokens>,
    pub metrics: Arc<Metrics>,
    /// The `Host` names served besides IP addresses and `localhost`.
    pub hosts: Arc<AllowedHosts>,
    pub followers: Arc<Followers>,
    /// The key the console's CSRF tokens are derived from.
    pub csrf: Arc<CsrfKey>,
    /// Where the console's Evaluations page reads suite results.
    pub evals_dir: Option<std::path::PathBuf>,
}

/// What a client refused for want of room (429, 503) is told to wait, in seconds.
const RETRY_AFTER_S: &str = "5";

/// The routes of the API (each in the OpenAPI document: a test holds them to it), behind
/// the `Host`/`Origin` check ([`origin`]).
pub(crate) fn router(state: AppState) -> Router {
    Router::new()
        .route("/v1/runs", post(runs::submit).get(runs::list))
        .route("/v1/runs/{id}", get(runs::get_run))
        .route("/v1/runs/{id}/events", get(runs::events))
        .route("/v1/runs/{id}/approval", post(runs::approval))
        .route("/v1/runs/{id}/plan/check", post(runs::check_plan))
        .route("/v1/runs/{id}/answer", post(runs::answer))
        .route("/v1/runs/{id}/cancel", post(runs::cancel))
        .route("/v1/runs/{id}/report", get(runs::report))
        .route("/v1/runs/{id}/journal", get(runs::journal))
        .route("/healthz", get(service::healthz))
        .route("/readyz", get(service::readyz))
        .route("/metrics", get(service::metrics))
        .route("/openapi.json", get(service::openapi))
        .merge(console::routes())
        .fallback(service::not_found)
        .layer(axum::middleware::from_fn_with_state(
            state.hosts.clone(),
            origin::check,
        ))
        .with_state(state)
}

/// The body of every error.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct ErrorBody {
    /// What went wrong, naming the bad value.
    pub error: String,
    /// Every problem found (a task that cannot run).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub problems: Vec<String>,
}

/// An error response.
#[derive(Debug)]
pub(crate) struct ApiError {
    status: StatusCode,
    body: ErrorBody,
    /// Seconds for `Retry-After` (an overloaded server).
    retry_after_s: Option<u64>,
}

impl ApiError {
    pub fn new(status: StatusCode, error: impl Into<String>) -> ApiError {
        ApiError {
            status,
            body: ErrorBody {
                error: error.into(),
                problems: Vec::new(),
            },
            retry_after_s: None,
        }
    }

    pub fn forbidden(what: &str, role: Role) -> ApiError {
        ApiError::new(
            StatusCode::FORBIDDEN,
            format!(
                "this token may not {what}: it needs the `{}` role",
                role.name()
            ),
        )
    }
}

impl From<RegistryError> for ApiError {
    fn from(e: RegistryError) -> ApiError {
        let status = match &e {
            RegistryError::NotFound(_) | RegistryError::NoTask(_) => StatusCode::NOT_FOUND,
            RegistryError::BadRequest(_) => StatusCode::BAD_REQUEST,
            RegistryError::Invalid { .. } | RegistryError::InvalidEdit { .. } => {
                StatusCode::UNPROCESSABLE_ENTITY
            }
            RegistryError::Conflict(_) => StatusCode::CONFLICT,
            RegistryError::Unavailable(_) | RegistryError::Overloaded { .. } => {
                StatusCode::SERVICE_UNAVAILABLE
            }
            _ => StatusCode::INTERNAL_SERVER_ERROR,
        };
        let problems = match &e {
            RegistryError::Invalid { problems } | RegistryError::InvalidEdit { problems } => {
                problems.clone()
            }
            _ => Vec::new(),
        };
        let retry_after_s = match &e {
            RegistryError::Overloaded { retry_after_s, .. } => Some(*retry_after_s),
            _ => None,
        };
        ApiError {
            status,
            body: ErrorBody {
                error: e.to_string(),
                problems,
            },
            retry_after_s,
        }
    }
}

impl From<Crowded> for ApiError {
    fn from(c: Crowded) -> ApiError {
        match c {
            Crowded::Token { name, max } => ApiError::new(
                StatusCode::TOO_MANY_REQUESTS,
                format!(
                    "token `{name}` already follows {max} runs, its most: close one or retry later"
                ),
            ),
            Crowded::Server { max } => ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                format!("this server already has {max} followers, its most: retry later"),
            ),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut r = (self.status, Json(json!(self.body))).into_response();
        if self.status == StatusCode::UNAUTHORIZED {
            r.headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        if let Some(s) = self.retry_after_s {
            r.headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(s));
        } else if matches!(
            self.status,
            StatusCode::TOO_MANY_REQUESTS | StatusCode::SERVICE_UNAVAILABLE
        ) {
            r.headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from_static(RETRY_AFTER_S));
        }
        r
    }
}

impl FromRequestParts<AppState> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Caller, ApiError> {
        let header = parts
            .headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok());
        state.tokens.caller(header).map_err(|r| {
            ApiError::new(
                StatusCode::UNAUTHORIZED,
                match r {
                    Refused::Missing => "an `Authorization: Bearer TOKEN` header is required",
                    Refused::Unknown => "the bearer token is not one this server knows",
                },
            )
        })
    }
}
