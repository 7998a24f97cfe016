//! toolhost-journal: the run journal, one append-only JSONL file per run, hash-chained,
//! redacted, written by exactly one process at a time, and made durable before any effect
//! it announces; what reads it back (verify, show, resume, replay, the HTML report).
//!
//! # Layout
//!
//! Data flows: engine [`Observer`](toolhost_engine::Observer) callbacks (and the approver's
//! decisions) → [`Journal`] → [`Redactor`] → one [`Record`] per line in
//! `STATE_DIR/runs/RUN_ID.jsonl` → [`verify()`] / [`show`] / `report` / [`prune()`].
//!
//! Each line is a [`Record`] `{seq, ts, prev, kind, data}`: `seq` counts from 1 and equals
//! the line number, `prev` is the hex SHA-256 of the previous line's bytes (without its
//! newline; 64 zeros for the first), so editing, deleting or reordering any record but the
//! last breaks the chain at the next line. The last record is covered by the head hash
//! that `toolhost run` prints at the end (`journal verify --head`).
//!
//! A large value (64 KiB or more) is stored once: a `blob` record holds it, before the
//! first record that refers to it by digest, and [`verify()`] checks and resolves every
//! reference, so each reader ([`show`], [`report`], [`resume`], [`replay`]) sees full
//! values. The encoding rules, and how a user value that looks like a reference is kept
//! apart, are in `blob`.
//!
//! - [`writer`]: [`Journal`], the hash-chained appender that makes records durable (one
//!   fsync for the steps that start together, off the async workers); its `reopen` carries
//!   a stopped run's journal on.
//! - `observe`: the journal as the engine's observer: which record each event becomes.
//! - [`session`]: the journal of a `toolhost mcp` session ([`Journal::create_session`]):
//!   each MCP tool call as a `step_started` / `step_finished` pair, no plan; read by
//!   verify, show, report and prune like a run, refused by resume and replay.
//! - [`approvals`]: [`Approvals`], an approver's decisions journaled before they take
//!   effect.
//! - [`tee`]: [`Tee`], to feed the journal and another observer.
//! - [`store`]: [`Store`](store::Store), where the lines go, written only by the run's one
//!   holder; `store::FileStore`, the local file, preallocated a segment at a time (its
//!   zero tail is not content: [`written`]), its syncs shared by the callers waiting
//!   (`store::group`, group commit). The `toolhost-store-pg` crate is the
//!   other: PostgreSQL, a lease with a fencing epoch checked on every append, for writers
//!   on several machines ([`Journal::create_in`] writes a run there, and
//!   [`verify_bytes`](verify::verify_bytes) and `report::load_bytes` read its lines back).
//! - [`lock`]: [`RunLock`], the `flock` on `RUN.jsonl.lock` that `run` and `resume` hold
//!   for the life of the process; a second writer is told who holds it.
//! - [`redact`]: [`Redactor`], PII and secrets out before anything is written (secrets in
//!   their common encodings too: `redact::encodings`).
//! - `blob`: large values stored once (the writer's `Encoder`, the readers' `Resolver`).
//! - `taint`: a step's provenance written once, as its parent step and one hop, and
//!   read back whole (resume, replay).
//! - `chain`: the chain's hash (hex SHA-256 of a line; blobs are named by it too).
//! - [`verify`](mod@verify): the chain check and its [`ChainProblem`]s.
//! - [`show`]: the readable timeline.
//! - [`listing`]: the runs a state directory holds, newest first, from each journal's first
//!   and last records (`toolhost runs`).
//! - `report` (feature `report`, on by default): the self-contained HTML report
//!   (`toolhost report`).
//! - [`prune()`]: retention by age.
//! - [`refusals`]: actions the policy refused, counted from `step_finished` and
//!   `plan_rejected` records.
//! - [`resume`](mod@resume): the [`Checkpoint`](toolhost_engine::Checkpoint) a stopped run
//!   carries on from; [`Journal::reopen`] appends to its journal file (dropping a torn last
//!   line), [`Journal::reopen_in`] to its journal in another store (a database's, under a
//!   fresh claim of the run's lease).
//! - `crash`: the fault points of the crash and disk-full tests ([`FaultHooks`], which only
//!   a test harness installs: a kill after record N, a full disk at record N).
//! - [`replay`]: the journaled planner answers served back ([`replay::recorded`]) and the
//!   [`replay::compare`] of a replay with its recording.
//! - [`time`]: RFC 3339 timestamps, written and read back.

pub mod approvals;
mod blob;
mod chain;
mod crash;
pub mod listing;
pub mod lock;
mod observe;
pub mod prune;
pub mod redact;
pub mod refusals;
pub mod replay;
#[cfg(feature = "report")]
pub mod report;
pub mod resume;
pub mod session;
pub mod show;
pub mod store;
mod taint;
pub mod tee;
pub mod time;
pub mod verify;
pub mod writer;

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use self::approvals::Approvals;
pub use self::crash::{FaultHooks, install_fault_hooks};
pub use self::lock::{LockError, RunLock};
pub use self::prune::{Age, AgeError, prune};
pub use self::redact::{PatternError, Redactor};
pub use self::resume::{Resumable, ResumeError, checkpoint, refuse_session};
pub use self::session::{CallEnd, CallRecord, SessionStart};
pub use self::tee::Tee;
pub use self::verify::{ChainProblem, Verified, verify};
pub use self::writer::{Journal, RunStart, new_run_id};

/// The `mode` of an MCP session's `run_started` record (see [`session`]); here, below
/// every reader, so none imports the writer's module to recognise one.
pub(crate) const SESSION_MODE: &str = "mcp";

/// The `reason` of an MCP session's last record, its `stopped`.
pub(crate) const SESSION_ENDED: &str = "session_ended";

/// `prev` of the first record.
pub(crate) const GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// What a record is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Kind {
    /// Goal, mode, task, policy and tool digests, budgets.
    RunStarted,
    /// Model, tokens, latency and the kind of reply; never the content.
    PlannerCalled,
    /// A validated plan revision (or step-wise turn).
    PlanAccepted,
    /// The validation problems of a plan the planner must repair.
    PlanRejected,
    /// A reviewer's decision on a plan or a step.
    Approval,
    StepStarted,
    /// Arguments, output or typed error, evaluation, fuel, duration, capability decisions.
    StepFinished,
    /// The run stopped: the reason, what it spent, its answer.
    Stopped,
    /// `toolhost resume` carried the run on: a torn record dropped, decisions on steps
    /// that did not finish, budgets.
    Resumed,
    /// A large value, stored once and referred to by digest from the records after it
    /// (see `blob`).
    Blob,
    /// An MCP client introduced itself to a session: its name and version, the protocol
    /// revision (see [`session`]).
    ClientConnected,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::RunStarted => "run_started",
            Kind::PlannerCalled => "planner_called",
            Kind::PlanAccepted => "plan_accepted",
            Kind::PlanRejected => "plan_rejected",
            Kind::Approval => "approval",
            Kind::StepStarted => "step_started",
            Kind::StepFinished => "step_finished",
            Kind::Stopped => "stopped",
            Kind::Resumed => "resumed",
            Kind::Blob => "blob",
            Kind::ClientConnected => "client_connected",
        }
    }
}

/// One line of a journal.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Record {
    /// 1 for the first record; equals the line number.
    pub seq: u64,
    /// UTC, RFC 3339 with microseconds.
    pub ts: String,
    /// Hex SHA-256 of the previous line; `GENESIS` for the first.
    pub prev: String,
    pub kind: Kind,
    pub data: Value,
}

/// Why a journal cannot be written or read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum JournalError {
    #[error("cannot create the journal directory `{path}`: {reason}")]
    CreateDir { path: String, reason: String },
    /// The state directory is one others could write (journals are read back and trusted).
    #[error(transparent)]
    StateDir(#[from] toolhost_runtime::owned::Refused),
    #[error("cannot write journal `{path}`: {reason}")]
    Write { path: String, reason: String },
    #[error("cannot read journal `{path}`: {reason}")]
    Read { path: String, reason: String },
    #[error(
        "no run `{run}` in `{dir}`: give a run id printed by `toolhost run`, or a journal file's path"
    )]
    NoSuchRun { run: String, dir: String },
    #[error("journal `{path}` is broken, so the run cannot be carried on: {problem}")]
    Broken { path: String, problem: ChainProblem },
    #[error(transparent)]
    Lock(#[from] LockError),
}

/// The state directory from the environment: `TOOLHOST_STATE_DIR`, else
/// `$XDG_STATE_HOME/toolhost`, else `~/.local/state/toolhost`.
pub fn state_dir_from_env() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("TOOLHOST_STATE_DIR") {
        return Some(PathBuf::from(dir));
    }
    if let Some(dir) = std::env::var_os("XDG_STATE_HOME") {
        return Some(PathBuf::from(dir).join("toolhost"));
    }
    std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/state/toolhost"))
}

/// Where the journals of `state_dir` live.
pub(crate) fn runs_dir(state_dir: &Path) -> PathBuf {
    state_dir.join("runs")
}

/// The journal file of `run`: an existing file path as given, else `RUN.jsonl` in the runs
/// directory.
pub fn resolve(state_dir: &Path, run: &str) -> Result<PathBuf, JournalError> {
    let as_path = Path::new(run);
    if as_path.is_file() {
        return Ok(as_path.to_path_buf());
    }
    let valid_id = !run.is_empty()
        && run
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    let file = runs_dir(state_dir).join(format!("{run}.jsonl"));
    if valid_id && file.is_file() {
        return Ok(file);
    }
    Err(JournalError::NoSuchRun {
        run: run.to_string(),
        dir: runs_dir(state_dir).display().to_string(),
    })
}

/// A journal's content: `bytes` up to the first NUL byte. A journal file being written
/// (or one whose writer was killed) ends in preallocated zeros (`store`), which are not
/// records; no record holds a NUL (JSON escapes it). Zeros amid the records, where a
/// crash lost a page written before others, end the content there too: nothing after
/// them was synced (a sync covers every write before it), so nothing after them was
/// promised, as with a torn last line.
pub fn written(bytes: &[u8]) -> &[u8] {
    bytes
        .iter()
        .position(|b| *b == 0)
        .map_or(bytes, |end| &bytes[..end])
}

/// The run id of a journal file: its name without `.jsonl`.
pub fn run_id(path: &Path) -> String {
    path.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}
