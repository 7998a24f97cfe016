//! Programs: the code-mode interpreter, a component whose only way out is
//! `toolhost:host/tools`, run like any call (fresh instance, fuel, deadline, memory cap,
//! no grants) with each tool call it makes handed to the embedder as a [`ProgramCall`].
//!
//! The embedder (the engine's code mode) answers each call by running it as a plan step;
//! the program waits for the answer. Calls arrive in the program's order, one at a time or,
//! from a `parallel(…)`, as a batch the embedder may run concurrently.

use std::path::Path;

use crate::call::CallOutcome;
use crate::error::LoadError;
use crate::grants::Capabilities;
use crate::limits::Limits;
use crate::runtime::Runtime;
use crate::tool::Tool;
use serde_json::json;

pub use crate::sandbox::program::{
    CallFailure, MAX_BATCH, ProgramCall, ProgramCalls, ProgramDoor, channel,
};

impl Runtime {
    /// Loads the interpreter component at `path`. Every tool links `toolhost:host/tools`;
    /// only [`Runtime::run_program`] gives a call somewhere for its calls to go, so the
    /// same component called as a tool traps at its first tool call.
    pub fn load_interpreter(&self, path: &Path) -> Result<Tool, LoadError> {
        self.load(path)
    }

    /// [`Runtime::load_interpreter`] of an interpreter carried in memory (the host's
    /// built-in one), shown as `label`, whose bytes' SHA-256 is `digest` (computed when
    /// they were built into the host; not hashed again).
    pub fn load_interpreter_bytes(
        &self,
        label: &Path,
        bytes: &[u8],
        digest: &str,
    ) -> Result<Tool, LoadError> {
        self.load_known("python", label, bytes, digest)
    }

    /// Runs `program` after `prelude` in a fresh instance of `interpreter` under `limits`
    /// with no grants; each tool call it makes (each batch: one call, or one `parallel(…)`'s)
    /// arrives on the receiver of `calls`. The
    /// outcome's value is the JSON text given to `answer(…)`; a program that raised is a
    /// `tool_error` whose value is the traceback.
    pub async fn run_program(
        &self,
        interpreter: &Tool,
        prelude: &str,
        program: &str,
        limits: &Limits,
        calls: ProgramDoor,
    ) -> CallOutcome {
        let args = json!({"prelude": prelude, "program": program});
        self.call_from(
            interpreter,
            "run",
            &args,
            &Capabilities::none(),
            limits,
            Some(calls),
            None,
        )
        .await
    }
}
