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
//! | `toolhost-app` | running a task: task files, planners, journals, the run session, telemetry |
//! | `toolhost-worker` | the PostgreSQL worker, executor pools, `serve --database`'s backend |
//! | `toolhost` (this one) | the command line: flags in, text out; scaffolds |
//!
//! # Layout
//!
//! - [`cli`]: the `toolhost` command line (`tool inspect`, `tool call`, `tool pack`, `new tool`,
//!   `run`, `report`, `resume`, `replay`, `eval`, `serve`, `submit`, `worker`, `cancel`, …);
//!   [`cli::main`] is the binary. Each subcommand turns its flags into `toolhost_app`'s
//!   options, calls it, prints what came back and maps its errors to exit codes
//!   ([`cli::exit`]).

pub mod cli;
