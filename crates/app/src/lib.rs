//! toolhost-app: running a task, the application layer under every front door of the
//! WebAssembly-sandboxed tool host (`toolhost run`, `resume`, `replay`, `eval`, `serve`,
//! the PostgreSQL worker, tests). Options come in as plain types ([`PlannerOptions`],
//! [`JournalOptions`], [`BudgetOverrides`](resume::BudgetOverrides)), never as a command
//! line's structs; failures come out as an [`AppError`] of one kind each, which the command
//! line turns into its exit codes.
//!
//! # Layout
//!
//! Data flows: task file → [`load`] (task, policy, tools) → [`planner`] (planner and
//! extractor) → [`session::open`] (the journal, in a file or the database) →
//! [`session::Session`] (drive, release the claim) → [`session::Ended`] (report, verdict).
//!
//! - [`task`]: task files (`toolhost run TASK`): goal, tools, policy, planner, budgets;
//!   their `[planner]` and `[extractor]` tables and the overrides a front door gives.
//! - [`load`]: a task with its policy and loaded tools ([`Loaded`]).
//! - [`trust`]: the signatures a policy requires, checked before a tool is compiled.
//! - [`planner`]: the run's planner and extractor, built from the task and
//!   [`PlannerOptions`]; plan memory.
//! - [`reach`]: a model server that refuses connections, refused before the run starts.
//! - [`journal`]: the state directory, a run's journal opened, found, locked and read
//!   back, its redactor and first record.
//! - [`database`]: the database choice (`--database`, `TOOLHOST_DATABASE_URL`): journals
//!   in PostgreSQL under leases, a run's claim and its release.
//! - [`session`]: the run session, one builder for every way a run is driven.
//! - [`resume`]: carrying a journaled run on (checks, the `resumed` record, the claim).
//! - [`replay`]: replaying a run with its recorded answers: faults, their checks.
//! - [`eval`]: the runner of eval suites' golden tasks.
//! - [`launch`]: the launcher of `toolhost serve`'s runs, inline tasks' allow-list.
//! - [`telemetry`]: exporting a run's spans over OTLP/HTTP when an endpoint is
//!   configured; off by default.
//! - [`log`]: where `tracing` lines go: a bounded, lossy queue to one writer thread, so
//!   that logging never blocks the engine, whatever holds stderr.
//! - [`error`]: why running a task failed, by kind ([`AppError`]).

pub mod database;
pub mod error;
pub mod eval;
pub mod journal;
pub mod launch;
pub mod load;
pub mod log;
pub mod planner;
pub mod reach;
pub mod replay;
pub mod resume;
pub mod session;
pub mod task;
pub mod telemetry;
pub mod trust;

pub use self::error::AppError;
pub use self::journal::JournalOptions;
pub use self::load::Loaded;
pub use self::planner::PlannerOptions;

/// Writes `warning: {e}` to `err` as one line, its control characters escaped (a warning
/// may quote a tool's or a server's text).
pub(crate) fn warn(err: &mut dyn std::io::Write, e: &dyn std::fmt::Display) {
    let _ = writeln!(
        err,
        "{}",
        toolhost_runtime::terminal::line(&format!("warning: {e}"))
    );
}
