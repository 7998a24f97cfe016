//! toolhost-mcp: toolhost's sandboxed tools for any MCP client, under the operator's policy.
//!
//! `toolhost mcp` serves every operation a [`Policy`](toolhost_runtime::Policy) allows as a
//! Model Context Protocol tool, over stdio or streamable HTTP, through the official Rust SDK
//! (`rmcp`). Each `tools/call` runs in a fresh sandboxed instance with the section's grants
//! and limits, exactly as `toolhost tool call --policy` would; nothing an MCP request says
//! can read or change grants, the policy or limits (there is no such tool, and `_meta` hints
//! are ignored).
//!
//! # Layout
//!
//! Data flows: policy sections + loaded tools → [`Catalog`] (one MCP tool per allowed
//! operation, with schemas and annotations) → [`Server`] (an `rmcp` `ServerHandler`) →
//! `call` (progress, cancellation, the [`CallSink`]) →
//! [`toolhost_runtime::Gate::call`] → a result or an `isError` result.
//!
//! - [`catalog`]: [`Catalog`]: names (`section.operation`), descriptions, input and output
//!   schemas; the lookup a call resolves through.
//! - `annotate`: tool annotations computed from the grants, so they are facts.
//! - `content`: the content convention: an operation returning `list<content>` is served
//!   as MCP content blocks (text, image, audio, embedded resources).
//! - `output`: `outputSchema` and `structuredContent` (non-object results wrapped as
//!   `{"result": …}` in every protocol version).
//! - `ask`: people in the loop: a tool's questions (`toolhost:host/ask`) and a `sensitive`
//!   call's approval put to the client: server-to-client requests in a session,
//!   `input_required` results with a sealed `requestState` on 2026-07-28.
//! - `answers`: a client's answers checked before a tool sees them (a form's schema), and
//!   taken out of what a waiting task asked (`tasks/update`).
//! - `logging`: a call's log records forwarded to the client at the level it set.
//! - `errors`: a failed call as an `isError` result, or the JSON-RPC error for protocol
//!   misuse.
//! - `shared`: what all sessions share, and [`ServerConfig`]; what each session has of
//!   its own (its log level, its sink: [`CallSink::session`]).
//! - [`sink`]: [`CallSink`], where each call is recorded (the CLI journals it).
//! - `handler`: [`Server`], the `ServerHandler`: `list_tools`, `call_tool`, `get_tool`.
//! - `call`: one call: progress ticks, cancellation; the calls in flight and the queue of
//!   those waiting are bounded by the runtime's call budget.
//! - `tasks`: the MCP tasks extension: a call of an operation the policy lists under
//!   `tasks` answers with a task id; the call runs on, its status and result polled with
//!   `tasks/get`, ended with `tasks/cancel`; each task visible to its own client only.
//!   An operation under `tasks_required` runs only as a task (`-32021` without the
//!   extension); one under `tasks_ask_first` asks its first question in the request
//!   (`input_required`), and becomes a task when called again with the answer.
//! - `inbox`: a stateless task's questions: `input_required` in `tasks/get` until
//!   `tasks/update` answers them (checked as a round's answers are), then the call resumes.
//! - `durable`: the same tasks in PostgreSQL ([`TaskDatabase`], `--database`), shared by
//!   replicas: run under a lease by one, read and cancelled through any, taken over when
//!   their replica dies (run again only when idempotent by policy, else `failed`), handed
//!   back at once by a replica that stops ([`HandedBack`]).
//! - `keep`: a replica's upkeep of its durable tasks: renewing its leases, taking over
//!   lapsed or handed back tasks (a call run again through `call`), forgetting expired ones.
//! - [`program`]: `run_program` (`--code`): a Python program over the served tools, run by
//!   the embedder's [`Programs`] (code mode: each call a checked, journaled step), their
//!   number bounded; what a program's run asks goes to the client's user
//!   ([`program::ClientUser`]).
//! - `program_call`: a `run_program` call, what its run asks answered through the
//!   request's asking; as an MCP task (in memory or durable), its questions waiting
//!   `input_required` for a stateless client.
//! - [`stdio`]: serving over stdin/stdout.
//! - [`http`]: serving streamable HTTP on hyper: `/mcp` only, `Host`/`Origin` checks,
//!   bearer tokens; connections under `toolhost-listen`'s cap and timeouts.
//! - [`sessions`]: the session cap ([`SessionLimits`]): least recently used idle sessions
//!   evicted, idle ones expired.
//! - [`watch`]: swapping in a changed policy or component, refusing a broken one.

mod annotate;
mod answers;
mod ask;
mod call;
pub mod catalog;
mod content;
mod durable;
mod errors;
mod handler;
pub mod http;
mod inbox;
mod keep;
mod logging;
mod output;
pub mod program;
mod program_call;
pub mod sessions;
mod shared;
pub mod sink;
pub mod stdio;
mod tasks;
pub mod watch;

pub use self::catalog::{Catalog, CatalogError, Offered, ToolNames};
pub use self::durable::{HandedBack, TaskDatabase};
pub use self::handler::Server;
pub use self::http::{Auth, HttpConfig, HttpError};
pub use self::program::{ProgramEnd, ProgramRun, ProgramTask, Programs};
pub use self::sessions::SessionLimits;
pub use self::shared::ServerConfig;
pub use self::sink::{CallEnd, CallSink, CallStart, NoSink};
pub use toolhost_listen::ConnLimits;

/// The shortest key `ServerConfig::state_key` takes, in bytes.
pub const STATE_KEY_MIN: usize = rmcp::model::RequestStateCodec::MIN_KEY_LENGTH;
