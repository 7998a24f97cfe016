//! toolhost: a WebAssembly-sandboxed tool host for planner–executor agents.
//!
//! Every tool is a WebAssembly component. Each function it exports is an *operation* that an
//! agent can call with JSON arguments; the host derives a JSON Schema for each operation
//! from the component's WIT types and doc comments, converts JSON to typed component values
//! and back, and runs every call in a fresh instance with fuel, a wall-clock deadline, a
//! memory cap and only the capabilities it was granted.
//!
//! # Layout
//!
//! Data flows: component bytes → [`Runtime::load`] → [`Tool`] (operations + schemas) →
//! [`Runtime::call`] (JSON args → values → fresh sandboxed instance → values → JSON) →
//! [`CallOutcome`].
//!
//! - [`runtime`]: the shared engine, linker, epoch ticker and instance pool; loading
//!   components as tools.
//! - [`cache`]: the on-disk compiled-component cache (content hash + engine hash, checksummed).
//! - [`tool`]: a loaded tool, its operations and their schemas.
//! - [`types`]: [`WitType`], the host's copy of a component value type.
//! - [`schema`]: WIT type + docs → JSON Schema for models.
//! - [`convert`]: JSON ↔ component values, with JSON-path errors.
//! - [`engine`]: the planner–executor engine: the plan artifact, references between steps,
//!   and validation of a plan against the tools and the policy before anything runs; the
//!   ensemble of a fast and a strong planner; plan memory (`STATE_DIR/plans/KEY.json`);
//!   resuming a stopped run from a checkpoint; faults injected by replay.
//! - [`llm`]: LLM planners (OpenAI, Anthropic, OpenAI-compatible), retries, record/replay.
//! - [`docs`]: finding a tool's WIT docs (embedded section or sidecar `.wit`).
//! - [`grants`]: [`Capabilities`]: files, env, network origins and sockets a call may reach.
//! - [`sandbox`]: per-call store state built from the grants: captured stdio, memory
//!   limiter, the host-call meter (deadline checked, fuel and host memory charged on every
//!   host call), the `toolhost:host/log` import, the filesystem gate (single-file grants,
//!   the empty `/` that refuses paths outside every grant, symlink targets, the write
//!   budget, decisions recorded), the HTTP, socket and name-lookup gates, the environment
//!   audit, and the audit log (bounded, never dropping a decision, failing the call closed
//!   when its budget is spent).
//! - [`call`]: one call, its limits, and the classification of every way it can fail.
//! - [`policy`]: the operator's policy file: per-tool grants, limits, allowed operations,
//!   rate limits; [`policy::Gate`] applies it to calls.
//! - [`limits`]: [`Limits`], the budget of one call (defaults for untrusted code).
//! - [`error`]: [`LoadError`], [`CallError`] and the stable [`ErrorKind`]s.
//! - [`pack`]: embedding docs into a component (`toolhost tool pack`).
//! - [`journal`]: the run journal: engine events → redaction → hash-chained JSONL per run
//!   (`STATE_DIR/runs/RUN.jsonl`), written by one process at a time ([`journal::RunLock`])
//!   through a [`journal::store::Store`], durable before the effects it announces; verify,
//!   show, prune, the self-contained HTML report
//!   ([`journal::report`]: verdict, budgets, step lanes, a DAG per plan revision), the
//!   checkpoint a resume carries on from ([`journal::resume`]), and replay
//!   ([`journal::replay`]: the recorded planner answers, divergences).
//! - [`trace`]: the spans of a run (run → plan_revision → step → tool_call; planner_call
//!   under run), with ids, names, numbers and kinds only, never run content.
//! - [`telemetry`]: exporting those spans over OpenTelemetry OTLP/HTTP when an endpoint is
//!   configured (`--otlp-endpoint`); off by default.
//! - [`stderr_log`]: where `tracing` lines go: a bounded queue to one writer thread, so
//!   that logging never blocks the engine, whatever holds stderr.
//! - [`cli`]: the `toolhost` command line (`tool inspect`, `tool call`, `tool pack`, `new tool`,
//!   `report`, `resume`, `replay`, …).

pub mod cache;
pub mod call;
pub mod cli;
pub mod convert;
pub mod docs;
pub mod engine;
pub mod error;
pub mod grants;
pub mod journal;
pub mod limits;
pub mod llm;
pub mod pack;
pub mod policy;
pub mod runtime;
pub mod sandbox;
pub mod schema;
pub mod stderr_log;
pub mod telemetry;
pub mod tool;
pub mod trace;
pub mod types;

pub use call::{CallOutcome, CallReport};
pub use error::{CallError, ErrorKind, LoadError};
pub use grants::{Capabilities, FileGrant, GrantKind, NetworkGrants};
pub use limits::Limits;
pub use policy::{Gate, Policy, ToolPolicy};
pub use runtime::{Metering, Runtime, RuntimeConfig};
pub use sandbox::{AuditEvent, Decision};
pub use tool::{Operation, Tool};
pub use toolhost_wit_docs as wit_docs;
pub use types::WitType;
