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
    /// A web page the user is sent to (MCP URL-mode `elicitation/create`).
    Url,
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
    /// Why the user is sent to `url`, an address the host checked (https, or http on
    /// loopback; no user name or password; normalised).
    Url {
        message: String,
        url: String,
    },
}

impl Request {
    pub fn kind(&self) -> Kind {
        match self {
            Request::Form { .. } => Kind::Form,
            Request::Sample(_) => Kind::Sample,
            Request::Roots => Kind::Roots,
            Request::Url { .. } => Kind::Url,
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

/// The interface's name for `k`; `None` for a URL, which `offers-url` reports instead.
fn kind_of(k: Kind) -> Option<wit::Kind> {
    match k {
        Kind::Form => Some(wit::Kind::Form),
        Kind::Sample => Some(wit::Kind::Sample),
        Kind::Roots => Some(wit::Kind::Roots),
        Kind::Url => None,
    }
}

/// The longest URL a tool may send its user to, in bytes.
pub(crate) const MAX_URL: usize = 2048;

/// The URL a tool may send its user to, as the user will see it (normalised: an
/// international name in its ASCII form, so a look-alike shows as what it is); an error
/// naming it and why otherwise. Allowed: `https`, and `http` on a loopback address (a
/// local service's own page); never a user name or password in it, which would show the
/// user a host other than the one they reach and put a secret on their screen.
pub(crate) fn check_url(text: &str) -> Result<String, String> {
    if text.len() > MAX_URL {
        return Err(format!(
            "the URL is {} bytes, over the {MAX_URL} a tool may send its user to",
            text.len()
        ));
    }
    let url = url::Url::parse(text).map_err(|e| format!("`{text}` is not a URL: {e}"))?;
    let loopback = match url.host() {
        Some(url::Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    };
    match url.scheme() {
        "https" => {}
        "http" if loopback => {}
        "http" => {
            return Err(format!(
                "`{text}` is plain http to a host that is not loopback: send the user to https"
            ));
        }
        other => {
            return Err(format!(
                "`{text}` has scheme `{other}`: a tool may send its user to https (or http on loopback) only"
            ));
        }
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(format!(
            "`{text}` carries a user name or password: the user would see a secret and a host other than the one they reach"
        ));
    }
    Ok(url.into())
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
            .map(|a| a.offered.iter().copied().filter_map(kind_of).collect())
            .unwrap_or_default())
    }

    async fn offers_url(&mut self) -> wasmtime::Result<bool> {
        self.may_ask()?;
        Ok(self
            .ask
            .asker
            .as_ref()
            .is_some_and(|a| a.offered.contains(&Kind::Url)))
    }

    /// Charged a unit of fuel per byte, as [`ask`](Self::ask); the answer is the action.
    async fn open_url(
        &mut self,
        key: String,
        message: String,
        url: String,
    ) -> wasmtime::Result<Result<String, String>> {
        self.may_ask()?;
        let bytes = key.len() + message.len() + url.len();
        self.meter.owe(u64::try_from(bytes).unwrap_or(u64::MAX));
        let url = match check_url(&url) {
            Ok(u) => u,
            Err(e) => return Ok(Err(e)),
        };
        if self
            .ask
            .asker
            .as_ref()
            .is_some_and(|a| !a.offered.contains(&Kind::Url))
        {
            return Ok(Err(
                "the caller's side cannot send its user to a web page (an MCP client declares `elicitation.url` to)".into(),
            ));
        }
        let input = Input::new(key, Request::Url { message, url });
        let answer = match self.put(vec![input]).await? {
            Ok(mut v) if v.len() == 1 => v.remove(0),
            Ok(v) => wasmtime::bail!("{} answers to one question", v.len()),
            Err(e) => return Ok(Err(e)),
        };
        match answer.get("action").and_then(Value::as_str) {
            Some(a @ ("accept" | "decline" | "cancel")) => Ok(Ok(a.to_string())),
            _ => Ok(Err(format!("the answer is no action: {answer}"))),
        }
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
        Ok(self
            .put(inputs)
            .await?
            .map(|values| values.iter().map(Value::to_string).collect()))
    }
}

impl HostState {
    /// Hands `inputs` to the embedder and waits for the answers; the inner error is the
    /// tool's to see (nobody can answer, the embedder's reason), the outer one ends the call.
    async fn put(&mut self, inputs: Vec<Input>) -> wasmtime::Result<Result<Vec<Value>, String>> {
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
            Ok(answers) => Ok(answers),
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
