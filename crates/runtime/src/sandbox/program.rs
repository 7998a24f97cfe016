//! The host side of `toolhost:host/tools`, the code-mode interpreter's only way out: each
//! call the program makes goes to the embedder as a [`ProgramCall`] over a channel, and
//! the program waits for its answer. A `parallel(…)` of the program (`call-all`) arrives as
//! one batch of calls, which the embedder may run concurrently. Set in a call's state only
//! for the interpreter (`HostState::program`); without it the import traps.

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

use self::bindings::toolhost::host::tools::{self, Failure, Request};

/// The most calls one `call-all` (a program's `parallel(…)`) may ask at once.
pub const MAX_BATCH: usize = 256;

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

/// Where a program's calls go: the embedder's receiving end of the channel. Each message
/// is a batch: one call, or the calls of one `parallel(…)`, in the program's order.
pub type ProgramCalls = mpsc::Receiver<Vec<ProgramCall>>;

/// The program's end of the channel, given to [`crate::Runtime::run_program`].
pub type ProgramDoor = mpsc::Sender<Vec<ProgramCall>>;

/// A channel for one program's calls: give the sender to [`crate::Runtime::run_program`], answer
/// what arrives on the receiver.
pub fn channel() -> (ProgramDoor, ProgramCalls) {
    mpsc::channel(1)
}

/// A request's arguments as JSON, or the refusal of arguments that are not.
fn parsed(args: &str) -> Result<Value, Failure> {
    serde_json::from_str(args).map_err(|e| Failure {
        denied: true,
        kind: "invalid_arguments".into(),
        message: format!("the arguments are not JSON: {e}"),
    })
}

fn failure(f: CallFailure) -> Failure {
    Failure {
        denied: f.denied,
        kind: f.kind,
        message: f.message,
    }
}

impl HostState {
    /// Sends `requests` to the embedder as one batch and waits for every answer; a request
    /// whose arguments are not JSON is refused without being sent.
    async fn send(
        &mut self,
        requests: Vec<Request>,
    ) -> wasmtime::Result<Vec<Result<String, Failure>>> {
        let bytes: usize = requests
            .iter()
            .map(|r| r.tool.len() + r.operation.len() + r.args.len())
            .sum();
        self.meter.owe(u64::try_from(bytes).unwrap_or(u64::MAX));
        let Some(door) = self.program.clone() else {
            wasmtime::bail!("only the code-mode interpreter may call tools");
        };
        let mut results: Vec<Option<Result<String, Failure>>> = Vec::new();
        let mut batch = Vec::new();
        let mut waiting = Vec::new();
        for r in requests {
            match parsed(&r.args) {
                Err(f) => results.push(Some(Err(f))),
                Ok(args) => {
                    let (reply, answer) = oneshot::channel();
                    batch.push(ProgramCall {
                        tool: r.tool,
                        operation: r.operation,
                        args,
                        reply,
                    });
                    waiting.push((results.len(), answer));
                    results.push(None);
                }
            }
        }
        if !batch.is_empty() && door.send(batch).await.is_err() {
            wasmtime::bail!("the run stopped taking the program's calls");
        }
        for (at, answer) in waiting {
            results[at] = Some(match answer.await {
                Ok(Ok(value)) => Ok(value.to_string()),
                Ok(Err(f)) => Err(failure(f)),
                Err(_) => wasmtime::bail!("the run ended while the program waited for a call"),
            });
        }
        Ok(results.into_iter().flatten().collect())
    }
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
        let request = Request {
            tool,
            operation,
            args,
        };
        let mut results = self.send(vec![request]).await?;
        Ok(results.pop().expect("one answer for one request"))
    }

    /// As [`Self::call`] for each request, sent as one batch; more than [`MAX_BATCH`]
    /// requests are all refused, none sent.
    async fn call_all(
        &mut self,
        requests: Vec<Request>,
    ) -> wasmtime::Result<Vec<Result<String, Failure>>> {
        if requests.len() > MAX_BATCH {
            let why = format!(
                "parallel() asked {} calls at once; at most {MAX_BATCH} may run together",
                requests.len()
            );
            let refused = Failure {
                denied: true,
                kind: "bad_arguments".into(),
                message: why,
            };
            return Ok(vec![Err(refused); requests.len()]);
        }
        self.send(requests).await
    }
}

/// Adds `toolhost:host/tools` to `linker`.
pub(crate) fn add_to_linker(
    linker: &mut wasmtime::component::Linker<HostState>,
) -> wasmtime::Result<()> {
    tools::add_to_linker::<_, wasmtime::component::HasSelf<_>>(linker, |s| s)
}
