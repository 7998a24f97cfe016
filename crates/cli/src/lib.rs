//! toolhost: the command line of the WebAssembly-sandboxed tool host for planner–executor
//! agents, on top of its layers:
//!
//! | crate | what it is for |
//! |---|---|
//! | `toolhost-runtime` | components as tools, each call sandboxed and bounded; the policy |
//! | `toolhost-engine` | plans, validation, the executor, budgets, approval, evaluation |
//! | `toolhost-llm` | model planners over HTTP |
//! | `toolhost-journal` | the run journal, verify, resume, replay, the HTML report |
//! | `toolhost-eval` | evaluation suites, their checks and metrics, baselines and the gate |
//! | `toolhost-serve` | `toolhost serve`: runs over an HTTP API, the embedded backend |
//! | `toolhost-store-pg` | run journals and the run queue in PostgreSQL, leases and fencing |
//! | `toolhost` (this one) | the command line, task files, telemetry, scaffolds |
//!
//! # Layout
//!
//! - [`cli`]: the `toolhost` command line (`tool inspect`, `tool call`, `tool pack`, `new tool`,
//!   `run`, `report`, `resume`, `replay`, `eval`, `serve`, `submit`, `worker`, `cancel`, …);
//!   [`cli::main`] is the binary. `cli/serve/pg/` is `serve --database`'s backend:
//!   the API over the run queue, each replica also a [`worker`].
//! - [`task`]: task files (`toolhost run TASK`): goal, tools, policy, planner, budgets.
//! - [`telemetry`]: exporting the run's spans over OpenTelemetry OTLP/HTTP when an endpoint
//!   is configured (`--otlp-endpoint`); off by default.
//! - [`worker`]: a replica of the run queue in PostgreSQL (`toolhost worker`, and what a
//!   server embeds): claims queued runs under renewed leases, starts them from their
//!   submitted spec or takes them over from their journal as `toolhost resume` would.
//!   `worker::pool`: executor pools — a run slot queues the calls of pooled tools for
//!   their pool (`PgDispatch`, the engine's `Dispatch`) and journals what comes back; a
//!   `--pool` worker's call slots claim and run them under its own policy.
//! - [`stderr_log`]: where `tracing` lines go: a bounded queue to one writer thread, so
//!   that logging never blocks the engine, whatever holds stderr.

pub mod cli;
pub mod stderr_log;
pub mod task;
pub mod telemetry;
pub mod worker;
