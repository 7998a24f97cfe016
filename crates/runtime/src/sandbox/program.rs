//! The host side of `toolhost:host/tools`, the code-mode interpreter's only way out: each
//! call the program makes goes to the embedder as a [`ProgramCall`] over a channel, and
//! the program waits for its answer. Set in a call's state only for the interpreter
//! (`HostState::program`); without it the import traps.

use serde_json::Value;
use tokio::sync::{mpsc, oneshot};

use super::HostState;

pub(crate) mod bindings {
    wasmtime::component::bindgen!({
        path: "wit",
        world: "toolhost:host/interpreter",
        // A call waits for the embedder; a call with nobody to answer it ends the run.
        imports: { default: async | trappable },
        exports: { default: async },
    });
}

use self::bindings::toolhost::host::tools::{self, Failure};

/// Why a program's call gave no value: what the program's `Denied` or `ToolError`
/// carries.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct CallFailure {
    /// `true` when the host refused the call, `false` when the tool ran and failed.
    pub denied: bool,
    /// The stable error kind (`not_allowed`, `tool_error`, …).
    pub kind: String,
    pub message: String,
}

impl CallFailure {
    pub fn new(denied: bool, kind: impl Into<String>, message: impl Into<String>) -> CallFailure {
        CallFailure {
            denied,
            kind: kind.into(),
            message: message.into(),
        }
    }
}

/// One call a running program made, waiting for [`ProgramCall::answer`].
#[derive(Debug)]
#[non_exhaustive]
pub struct ProgramCall {
    pub tool: String,
    pub operation: String,
    /// A JSON value (an object, unless the program passed something else).
    pub args: Value,
    reply: oneshot::Sender<Result<Value, CallFailure>>,
}

impl ProgramCall {
    /// Gives the program its call's value or failure. A program that has stopped waiting
    /// (it was cut off) is not told.
    pub fn answer(self, result: Result<Value, CallFailure>) {
        let _ = self.reply.send(result);
    }
}

/// Where a program's calls go: the embedder's receiving end of the channel.
pub type ProgramCalls = mpsc::Receiver<ProgramCall>;

/// A channel for one program's calls: give the sender to [`crate::Runtime::run_program`], answer
/// what arrives on the receiver.
pub fn channel() -> (mpsc::Sender<ProgramCall>, ProgramCalls) {
    mpsc::channel(1)
}

impl tools::Host for HostState {
    /// Charged a unit of fuel per byte of the request; the wait for the answer is the
    /// program's wall time, not its fuel.
    async fn call(
        &mut self,
        tool: String,
        operation: String,
        args: String,
    ) -> wasmtime::Result<Result<String, Failure>> {
        self.meter
            .owe(u64::try_from(tool.len() + operation.len() + args.len()).unwrap_or(u64::MAX));
        let Some(door) = self.program.clone() else {
            wasmtime::bail!("only the code-mode interpreter may call tools");
        };
        let args: Value = match serde_json::from_str(&args) {
            Ok(v) => v,
            Err(e) => {
                return Ok(Err(Failure {
                    denied: true,
                    kind: "invalid_arguments".into(),
                    message: format!("the arguments are not JSON: {e}"),
                }));
            }
        };
        let (reply, answer) = oneshot::channel();
        let call = ProgramCall {
            tool,
            operation,
            args,
            reply,
        };
        if door.send(call).await.is_err() {
            wasmtime::bail!("the run stopped taking the program's calls");
        }
        match answer.await {
            Ok(Ok(value)) => Ok(Ok(value.to_string())),
            Ok(Err(f)) => Ok(Err(Failure {
                denied: f.denied,
                kind: f.kind,
                message: f.message,
            })),
            Err(_) => wasmtime::bail!("the run ended while the program waited for a call"),
        }
    }
}

/// Adds `toolhost:host/tools` to `linker`.
pub(crate) fn add_to_linker(
    linker: &mut wasmtime::component::Linker<HostState>,
) -> wasmtime::Result<()> {
    tools::add_to_linker::<_, wasmtime::component::HasSelf<_>>(linker, |s| s)
}
