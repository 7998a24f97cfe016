//! toolhost-runtime: WebAssembly components as tools, each call sandboxed and bounded.
//!
//! Every tool is a WebAssembly component. Each function it exports is an *operation* that
//! can be called with JSON arguments; the runtime derives a JSON Schema for each operation
//! from the component's WIT types and doc comments, converts JSON to typed component values
//! and back, and runs every call in a fresh instance with fuel, a wall-clock deadline, a
//! memory cap, host-side budgets and only the capabilities it was granted. This crate is
//! what an embedder needs to load components and call them safely, under an operator's
//! [`Policy`] or hand-made [`Capabilities`]; the engine, model planners, journal and CLI
//! are crates above it.
//!
//! ```no_run
//! use std::path::Path;
//!
//! use toolhost_runtime::{Gate, Policy, Runtime, RuntimeConfig};
//!
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! let runtime = Runtime::new(RuntimeConfig::default())?;
//! let wasm = Path::new("calc.wasm");
//! let tool = runtime.load(wasm)?;
//! let policy = Policy::load(Path::new("policy.toml"))?;
//! let section = policy.section_for(wasm).ok_or("no policy section for calc.wasm")?;
//! let args = serde_json::json!({"expression": "6 * 7"});
//! let outcome = Gate::new()
//!     .call(&runtime, section, &tool, "eval", &args, &section.limits)
//!     .await;
//! println!("{}", outcome.result?);
//! # Ok(()) }
//! ```
//!
//! The same, runnable: `crates/runtime/examples/embed.rs`.
//!
//! # Layout
//!
//! Data flows: component bytes → [`Runtime::load`] → [`Tool`] (operations + schemas) →
//! [`Runtime::call`] (JSON args → values → fresh sandboxed instance → values → JSON) →
//! [`CallOutcome`]; [`Gate`] puts a policy section's grants, limits and rules in front.
//!
//! - [`runtime`]: the shared engine, linker, epoch ticker and instance pool; loading
//!   components as tools.
//! - `metering`: [`Metering`], how calls are bounded (fuel, epochs), and the engine
//!   configuration it needs (the compiler worker compiles for the same).
//! - [`admission`]: [`CallBudget`], the host-wide budget every call is admitted against
//!   (calls running, the sum of their memory caps, a bounded queue), lock-free when there
//!   is room.
//! - [`compile`]: the limits a component must pass before it is compiled ([`compile::scan`])
//!   and compiling in a child process under a deadline and a memory cap ([`compile::worker`]).
//! - [`cache`]: the on-disk compiled-component cache (content hash + engine hash, each
//!   entry MACed under a per-cache key, in a directory only the user can write).
//! - [`owned`]: directories and files only the operator can write (the cache's, the state
//!   directory's): ownership and mode checks, opens that follow no link and block on no
//!   FIFO, 0600/0700 writes.
//! - [`tool`]: a loaded tool, its operations and their schemas.
//! - [`types`]: [`WitType`], the host's copy of a component value type.
//! - [`schema`]: WIT type + docs → JSON Schema for models.
//! - [`convert`]: JSON ↔ component values, with JSON-path errors.
//! - [`docs`]: finding a tool's WIT docs (embedded section or sidecar `.wit`).
//! - [`grants`]: [`Capabilities`]: files, env, network origins and sockets a call may reach
//!   (re-exported from `toolhost-policy`).
//! - [`sandbox`]: per-call store state built from the grants: captured stdio, memory
//!   limiter, the host-call meter (deadline checked, fuel and host memory charged on every
//!   host call), the `toolhost:host/log` import, the filesystem gate (single-file grants,
//!   the empty `/` that refuses paths outside every grant, symlink targets, the write
//!   budget, decisions recorded), the HTTP, socket and name-lookup gates, the environment
//!   audit, and the audit log (bounded, never dropping a decision, failing the call closed
//!   when its budget is spent).
//! - [`call`]: one call, its limits, and the classification of every way it can fail.
//! - [`policy`]: the operator's policy file: per-tool grants, limits, allowed operations,
//!   rate limits (the model is `toolhost-policy`'s, re-exported); [`policy::Gate`] applies
//!   it to calls.
//! - [`limits`]: [`Limits`], the budget of one call (defaults for untrusted code; from
//!   `toolhost-policy`), and the sandbox's own bounds around it (fuel per host call, the
//!   fuel slice between yields, the slack past a deadline).
//! - [`error`]: [`LoadError`], [`CallError`] and the stable [`ErrorKind`]s.
//! - [`pack`]: embedding docs into a component (`toolhost tool pack`).
//! - [`terminal`]: text from a tool or a model made safe to print for a person (control
//!   characters escaped, continuation lines marked).
//! - [`program`]: the code-mode interpreter, run like a call, its only way out the
//!   `toolhost:host/tools` import, each of its tool calls handed to the embedder as a
//!   [`program::ProgramCall`].
//! - [`ask`]: a tool's questions to its caller's side (`toolhost:host/ask`, granted by
//!   `ask = true`), each handed to the embedder as an [`ask::Ask`].
//! - [`trace`]: the `tool_call` span and the target every toolhost span shares.
//!
//! `crates/runtime/wit/host.wit` (in this crate) is the `toolhost:host` interface tools may
//! import, and the `interpreter` world of the code-mode interpreter.

pub mod admission;
/// A tool's questions to its caller's side (`toolhost:host/ask`).
pub mod ask {
    pub use crate::sandbox::ask::{Ask, Asker, Input, Kind, Request, channel};
}
pub mod cache;
pub mod call;
pub mod compile;
pub mod convert;
pub mod docs;
pub mod error;
pub mod limits;
mod metering;
pub mod owned;
pub mod pack;
pub mod policy;
pub mod program;
pub mod runtime;
pub mod sandbox;
pub mod schema;
pub mod terminal;
pub mod tool;
pub mod trace;
pub mod types;

pub use admission::{CallBudget, CallLoad};
pub use call::{CallOutcome, CallReport};
pub use compile::{CompileLimits, Compiler};
pub use error::{CallError, ErrorKind, LoadError};
pub use grants::{Capabilities, FileGrant, GrantKind, NetworkGrants};
pub use limits::Limits;
pub use policy::{Gate, Policy, ToolPolicy};
pub use runtime::{Metering, Runtime, RuntimeConfig};
pub use sandbox::{AuditEvent, Decision};
pub use tool::{Operation, Tool};
pub use toolhost_policy::grants;
pub use toolhost_wit_docs as wit_docs;
pub use types::WitType;
