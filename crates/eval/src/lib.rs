//! toolhost-eval: the evaluation harness. A suite of golden tasks (ordinary task files with
//! `[expect]`, `[[faults]]` and `[[setup.copy]]`) is run, each run checked against what the
//! task expects, and the results summed up into agent metrics, compared with a baseline's
//! tolerance bands. The format is in `docs/eval-suites.md`; `toolhost eval` is the command.
//!
//! This crate reads suites and judges runs; it does not load task files or drive runs —
//! that is a [`Runner`] (`toolhost-app`'s `SuiteRunner`), so `toolhost eval` runs a task
//! exactly as `toolhost run` does.
//!
//! # Layout
//!
//! Data flows: suite directory → [`Suite`] of [`GoldenTask`]s → set-up copies → the
//! [`Runner`] (faults in the run's config) → [`RunReport`](toolhost_engine::RunReport) →
//! checks → [`TaskResult`] → [`Metrics`] → [`baseline`] gate, table, JSON, HTML.
//!
//! - [`suite`]: loading a suite and splitting each golden task into its task-file table
//!   and the harness's parts; [`expect`]: the `[expect]` table as written.
//! - [`check`]: the checks (sequence, answer, outcome, end-state files), each failure a
//!   sentence naming what was expected and what came; `judge`: an answer judged by a
//!   sandboxed tool.
//! - [`run`]: running a suite, tasks at once up to a limit; [`result`]: a task's result
//!   and the suite's metrics.
//! - [`baseline`]: metric values with tolerance bands, written and compared.
//! - [`html`]: the page in the run report's style, a chart per metric against the baseline.
//! - [`serve`]: a suite's loopback file server (`[serve]`), for tasks with network grants.
//! - [`adversary`]: the adversarial planner, a hijacked model's worst case, for measuring
//!   prompt-injection defences (`kind = "adversarial"`; `scripts/agentdojo.sh`).

pub mod adversary;
pub mod baseline;
pub mod check;
pub mod expect;
pub mod html;
mod judge;
pub mod result;
pub mod run;
pub mod serve;
pub mod suite;

pub use self::adversary::{Adversary, AdversaryError, AdversaryScript};
pub use self::baseline::{Band, Baseline, BaselineError, Breach};
pub use self::expect::{AnswerCheck, Expect, Order};
pub use self::result::{Metrics, SuiteResult, TaskResult};
pub use self::run::{NotRun, Ran, Runner, run_suite};
pub use self::serve::{FileServer, ServeConfig};
pub use self::suite::{GoldenTask, Suite, SuiteError, is_golden};
