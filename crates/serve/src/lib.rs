//! toolhost-serve: `toolhost serve`, runs as a service over an HTTP API.
//!
//! A client submits a task (by name from the server's task directory, or inline) and gets
//! a run id; the run is queued, executed in this process by the same code path as
//! `toolhost run` (supplied by `toolhost-app` as a [`Launcher`]), and journaled to the state
//! directory, where `toolhost journal`, `report` and `resume` work on it. Clients follow
//! the journal over Server-Sent Events, decide approvals, cancel, and fetch the report.
//!
//! # Layout
//!
//! Data flows: HTTP request → `api` (token → [`Caller`], role check) → [`Registry`]
//! ([`Embedded`]: bounded queue → worker thread → [`Launcher`]'s [`Prepared`] run →
//! journal file) → back out as [`RunView`]s, SSE records, the report, and [`Metrics`].
//!
//! - [`config`]: `serve.toml` ([`ServeConfig`], its closed defaults, the loopback rule).
//! - [`limits`]: [`RunLimits`], the most an inline task may ask for (`max_parallel`,
//!   `[budgets]`), checked before a run is prepared.
//! - [`auth`]: bearer tokens stored hashed, compared in constant time; [`Role`]s and what
//!   each allows.
//! - [`registry`]: the [`Registry`] trait a backend implements (submit, list, get,
//!   events, decide, check a draft plan, cancel, journal, report) and the API's JSON
//!   shapes.
//! - [`draft`]: a draft edit of the plan under review checked as the run would check it,
//!   its problems at their lines (the API's plan check and the console's editor).
//! - [`backend`]: the [`Backend`] trait: a registry the server warms up, asks for
//!   `/metrics`' counts and drains at shutdown ([`Embedded`]; the CLI's PostgreSQL
//!   backend, whose replicas share one database).
//! - [`launch`]: the [`Launcher`] trait: preparing and executing one run.
//! - [`head`]: what a run's first journal records say of it ([`Head`]: started, planner,
//!   mode, budgets), for both backends' views.
//! - [`embedded`]: the embedded backend: worker threads, the approver that parks a run
//!   until the API answers, following a journal file, runs found in the state directory.
//! - [`metrics`]: the Prometheus exposition.
//! - `followers`: the cap on SSE followers, in all and per token.
//! - `api`: the axum router, handlers and the OpenAPI document ([`ApiDoc`]); `api::origin`,
//!   the `Host` allow-list and the same-origin rule every request passes first (DNS
//!   rebinding, pages elsewhere).
//! - `server`: [`serve`]: bind, warm up, serve (connections under the cap and timeouts
//!   of `toolhost-listen`), drain on SIGTERM/SIGINT.

mod api;
pub mod auth;
pub mod backend;
pub mod config;
pub mod draft;
pub mod embedded;
mod followers;
pub mod head;
pub mod launch;
pub mod limits;
pub mod metrics;
pub mod registry;
mod server;

pub use self::api::ApiDoc;
pub use self::auth::{Caller, Role, TokenSpec};
pub use self::backend::Backend;
pub use self::config::{ConfigError, ServeConfig};
pub use self::embedded::{Embedded, Outcome};
pub use self::head::Head;
pub use self::launch::{Launcher, Prepared};
pub use self::limits::RunLimits;
pub use self::metrics::Metrics;
pub use self::registry::{
    Decision, DecisionKind, Overrides, Pending, RecordStream, Registry, RegistryError, RunState,
    RunView, StepCounts, SubmitRequest, Taken, TaskSource,
};
pub use self::server::{ServeError, serve, serve_backend};
