//! The host side of `toolhost:host/ask`: a tool's questions to its caller's side, handed
//! to the embedder as an [`Ask`] over a channel while the tool waits for the answers.
//!
//! Denied by default: a call may ask only when its grants say `ask` (the policy's
//! `ask = true`); any other call that uses the import ends `denied`, with the refusal in its
//! audit. A granted call with nobody to answer (no channel: `toolhost tool call`) hears so
//! as an error value. An embedder that cannot or will not answer (the client lacks the
//! capability, the call must wait for another round) drops the [`Ask`]: the call ends, and
//! the embedder, which knows why, says so.

use serde_json::Value;
use tokio::sync::{mpsc, oneshot};

use super::HostState;
use super::audit::{AuditEvent, Decision};
use super::bindings::toolhost::host::ask as wit;

/// What a tool may ask for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// A form the user fills in (MCP `elicitation/create`).
    Form,
    /// A message from the client's model (MCP `sampling/createMessage`).
    Sample,
    /// The client's roots (MCP `roots/list`).
    Roots,
}

/// One thing asked for.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Request {
    /// What to tell the user and the JSON Schema its answer must match.
    Form {
        message: String,
        schema: Value,
    },
    /// The `sampling/createMessage` parameters.
    Sample(Value),
    Roots,
}

impl Request {
    pub fn kind(&self) -> Kind {
        match self {
            Request::Form { .. } => Kind::Form,
            Request::Sample(_) => Kind::Sample,
            Request::Roots => Kind::Roots,
        }
    }
}

/// A request under the key the tool gave it.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Input {
    pub key: String,
    pub request: Request,
}

impl Input {
    pub fn new(key: impl Into<String>, request: Request) -> Input {
        Input {
            key: key.into(),
            request,
        }
    }
}

/// A tool's questions, waiting for [`Ask::answer`]. Dropping it unanswered ends the call.
#[derive(Debug)]
#[non_exhaustive]
pub struct Ask {
    pub inputs: Vec<Input>,
    reply: oneshot::Sender<Result<Vec<Value>, String>>,
}

impl Ask {
    /// Gives the tool one answer per input, in order, or an error value it sees.
    pub fn answer(self, answers: Result<Vec<Value>, String>) {
        let _ = self.reply.send(answers);
    }
}

/// Where a call's questions go: the kinds its caller's side can answer, and the sender the
/// embedder reads [`Ask`]s from ([`channel`]).
#[derive(Debug, Clone)]
pub struct Asker {
    pub offered: Vec<Kind>,
    pub(crate) door: mpsc::Sender<Ask>,
}

/// A channel for one call's questions: give the [`Asker`] to the call, answer what arrives
/// on the receiver.
pub fn channel(offered: Vec<Kind>) -> (Asker, mpsc::Receiver<Ask>) {
    let (door, asks) = mpsc::channel(1);
    (Asker { offered, door }, asks)
}

impl crate::Runtime {
    /// [`Runtime::call`](crate::Runtime::call), with the tool's questions
    /// (`toolhost:host/ask`) going to `asker`. They reach it only when `caps` grant `ask`;
    /// without the grant, asking ends the call `denied` whoever would answer.
    pub async fn call_asking(
        &self,
        tool: &crate::Tool,
        operation: &str,
        args: &Value,
        caps: &crate::Capabilities,
        limits: &crate::Limits,
        asker: Asker,
    ) -> crate::CallOutcome {
        self.call_from(tool, operation, args, caps, limits, None, Some(asker))
            .await
    }
}

/// A call that asked without the grant: the call ends `denied`.
#[derive(Debug, thiserror::Error)]
#[error(
    "the tool may not ask its caller's side: its policy section does not grant `ask` (add `ask = true` to let it)"
)]
pub(crate) struct AskDenied;

/// The most inputs one question may carry, and the most bytes of schema or parameters each.
const MAX_INPUTS: usize = 16;

impl HostState {
    /// Ends the call `denied` unless its grants say `ask`.
    fn may_ask(&mut self) -> wasmtime::Result<()> {
        if self.ask.granted {
            return Ok(());
        }
        self.audit.record(AuditEvent::Call {
            operation: "toolhost:host/ask".into(),
            decision: Decision::Denied,
            reason: AskDenied.to_string(),
        });
        Err(AskDenied.into())
    }
}

fn kind_of(k: Kind) -> wit::Kind {
    match k {
        Kind::Form => wit::Kind::Form,
        Kind::Sample => wit::Kind::Sample,
        Kind::Roots => wit::Kind::Roots,
    }
}

fn input(i: wit::Input) -> Result<Input, String> {
    let json = |what: &str, text: &str| -> Result<Value, String> {
        match serde_json::from_str::<Value>(text) {
            Ok(v @ Value::Object(_)) => Ok(v),
            Ok(_) => Err(format!("the {what} of `{}` is not a JSON object", i.key)),
            Err(e) => Err(format!("the {what} of `{}` is not JSON: {e}", i.key)),
        }
    };
    let request = match &i.request {
        wit::Request::Form(f) => Request::Form {
            message: f.message.clone(),
            schema: json("schema", &f.schema)?,
        },
        wit::Request::Sample(p) => Request::Sample(json("sampling parameters", p)?),
        wit::Request::Roots => Request::Roots,
    };
    Ok(Input {
        key: i.key.clone(),
        request,
    })
}

impl wit::Host for HostState {
    async fn offered(&mut self) -> wasmtime::Result<Vec<wit::Kind>> {
        self.may_ask()?;
        Ok(self
            .ask
            .asker
            .as_ref()
            .map(|a| a.offered.iter().copied().map(kind_of).collect())
            .unwrap_or_default())
    }

    /// Charged a unit of fuel per byte asked; the wait for the answers is wall time.
    async fn ask(
        &mut self,
        inputs: Vec<wit::Input>,
    ) -> wasmtime::Result<Result<Vec<String>, String>> {
        self.may_ask()?;
        let bytes: usize = inputs
            .iter()
            .map(|i| {
                i.key.len()
                    + match &i.request {
                        wit::Request::Form(f) => f.message.len() + f.schema.len(),
                        wit::Request::Sample(p) => p.len(),
                        wit::Request::Roots => 0,
                    }
            })
            .sum();
        self.meter.owe(u64::try_from(bytes).unwrap_or(u64::MAX));
        if inputs.is_empty() || inputs.len() > MAX_INPUTS {
            return Ok(Err(format!(
                "ask for 1 to {MAX_INPUTS} inputs at once, not {}",
                inputs.len()
            )));
        }
        let inputs = match inputs.into_iter().map(input).collect::<Result<Vec<_>, _>>() {
            Ok(i) => i,
            Err(e) => return Ok(Err(e)),
        };
        let Some(asker) = self.ask.asker.clone() else {
            return Ok(Err(
                "nobody can answer: this call was not made on behalf of a client that answers questions".into(),
            ));
        };
        let (reply, answer) = oneshot::channel();
        if asker.door.send(Ask { inputs, reply }).await.is_err() {
            wasmtime::bail!("the caller stopped taking the tool's questions");
        }
        match answer.await {
            Ok(Ok(values)) => Ok(Ok(values.iter().map(Value::to_string).collect())),
            Ok(Err(e)) => Ok(Err(e)),
            Err(_) => wasmtime::bail!("the call ended while the tool waited for an answer"),
        }
    }
}

/// A call's side of the interface: whether it may ask, and where its questions go.
#[derive(Debug, Default)]
pub(crate) struct AskState {
    pub granted: bool,
    pub asker: Option<Asker>,
}
