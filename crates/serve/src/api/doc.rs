//! The OpenAPI document, from the handlers' `#[utoipa::path]` and the types' schemas.

use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};

use super::runs::{self, JournalEvent, Order, RunPage};
use super::{ErrorBody, service};
use crate::draft::{DraftProblem, DraftReport, DraftRequest};
use crate::registry::{
    AnswerRequest, Decision, DecisionKind, Overrides, Pending, RunState, RunView, StepCounts,
    SubmitRequest, TaskSource,
};

/// The API's OpenAPI document.
#[derive(OpenApi)]
#[openapi(
    info(title = "toolhost serve", description = "Runs of a WebAssembly-sandboxed planner–executor agent as a service."),
    paths(
        runs::submit, runs::list, runs::get_run, runs::events, runs::approval, runs::check_plan, runs::answer, runs::cancel,
        runs::report, runs::journal,
        service::healthz, service::readyz, service::metrics, service::openapi,
    ),
    components(schemas(
        SubmitRequest, TaskSource, Overrides, RunView, RunState, Pending, StepCounts, Decision,
        DecisionKind, AnswerRequest, DraftRequest, DraftReport, DraftProblem, RunPage, Order, JournalEvent, ErrorBody,
    )),
    modifiers(&Bearer),
)]
pub struct ApiDoc;

struct Bearer;

impl Modify for Bearer {
    fn modify(&self, doc: &mut utoipa::openapi::OpenApi) {
        let components = doc.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(HttpBuilder::new().scheme(HttpAuthScheme::Bearer).build()),
        );
    }
}
