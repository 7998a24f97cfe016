//! People in the loop over MCP: a tool's questions (`toolhost:host/ask`) and the approval
//! of a `sensitive` tool's calls, put to the client's side.
//!
//! - A session (revisions up to 2025-11-25) asks while the call waits: `elicitation/create`
//!   (form mode, and URL mode for `open-url`: the user sent to a web page the runtime
//!   checked), `sampling/createMessage`, `roots/list`, sent to the client as requests.
//! - A stateless request (2026-07-28) cannot be called back: a call that asks something
//!   not yet answered ends, and the client gets an `input_required` result naming every
//!   input the call is waiting for, under the tool's own keys, with a `requestState`
//!   sealed by the server (HMAC, bound to the tool and its arguments, expiring) that
//!   carries the answers of earlier rounds. The client retries with `inputResponses` and
//!   the state, and the call runs again from the start, its earlier questions answered
//!   from them. A state that does not verify is refused (`-32602`).
//!
//! Either way, a question of a kind the client did not declare (`elicitation`, with its
//! `url` mode, `sampling`, `roots`) ends the call with `-32021` naming the capability, and an accepted form whose
//! content does not match the form's schema ends it with `-32602` naming the key and the
//! reason: the tool never sees an answer the server has not checked.

use std::collections::BTreeMap;
use std::time::Duration;

use rmcp::model::{
    ClientCapabilities, InputRequest, InputRequests, InputResponses, RequestStateCodec, SealOptions,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, Peer, RoleServer};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use toolhost_runtime::ask::{Input, Kind, Request};

use crate::answers;
use crate::inbox::Inbox;

/// How long a `requestState` stays valid: a person answering a form may take a while.
const STATE_TTL: Duration = Duration::from_secs(30 * 60);

/// The key of a `sensitive` tool's approval among a call's inputs.
pub(crate) const APPROVAL: &str = "toolhost.approval";

/// Why a call that asked stopped before it finished.
#[derive(Debug)]
pub(crate) enum Stop {
    /// The client did not declare the capability the question needs.
    Missing(Kind),
    /// An answer the server refuses: not the shape the request calls for, or a form's
    /// content that does not match its schema.
    Invalid(String),
    /// The call waits for the client's answers (2026-07-28).
    Input,
}

impl Stop {
    /// The journal's kind and message for a call that ended so.
    pub(crate) fn record(&self, pending: &InputRequests) -> (&'static str, String) {
        match self {
            Stop::Missing(kind) => (
                "missing_capability",
                format!(
                    "the client did not declare the `{}` capability the tool's question needs",
                    capability(*kind)
                ),
            ),
            Stop::Invalid(why) => ("invalid_answer", why.clone()),
            Stop::Input => (
                "input_required",
                format!(
                    "the call waits for the client's answers to: {}",
                    pending.keys().cloned().collect::<Vec<_>>().join(", ")
                ),
            ),
        }
    }
}

fn capability(kind: Kind) -> &'static str {
    match kind {
        Kind::Url => "elicitation.url",
        Kind::Sample => "sampling",
        Kind::Roots => "roots",
        _ => "elicitation",
    }
}

/// The capabilities a client declares to answer `kind`.
fn required(kind: Kind) -> Value {
    match kind {
        Kind::Url => json!({"elicitation": {"url": {}}}),
        other => json!({ capability(other): {} }),
    }
}

/// The kinds a client with `caps` can answer. `elicitation` with neither mode named is
/// forms (as revision 2025-06-18 declared it); with `url` alone, web pages and no forms.
pub(crate) fn offered(caps: Option<&ClientCapabilities>) -> Vec<Kind> {
    let Some(caps) = caps else {
        return Vec::new();
    };
    let mut kinds = Vec::new();
    if let Some(e) = &caps.elicitation {
        if e.form.is_some() || e.url.is_none() {
            kinds.push(Kind::Form);
        }
        if e.url.is_some() {
            kinds.push(Kind::Url);
        }
    }
    if caps.sampling.is_some() {
        kinds.push(Kind::Sample);
    }
    if caps.roots.is_some() {
        kinds.push(Kind::Roots);
    }
    kinds
}

/// The server's key for `requestState`: `shared` (read from `--state-key-file`, so that
/// replicas behind one address open each other's states), else drawn at start, so that a
/// state verifies only against the process that sealed it.
pub(crate) fn codec(shared: Option<&[u8]>) -> Result<RequestStateCodec, String> {
    if let Some(key) = shared {
        return RequestStateCodec::try_new(key.to_vec()).map_err(|e| e.to_string());
    }
    let mut key = [0u8; 32];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut key))
        .map_err(|e| format!("cannot draw a key for request state from /dev/urandom: {e}"))?;
    RequestStateCodec::try_new(key.to_vec()).map_err(|e| e.to_string())
}

/// One call's questions and answers.
pub(crate) struct Asking {
    /// The session's peer to send questions to; `None` for a stateless request.
    peer: Option<Peer<RoleServer>>,
    caps: Option<ClientCapabilities>,
    /// Stateless: the answers so far (earlier rounds' from the state, then this round's).
    answers: BTreeMap<String, Value>,
    /// Stateless: what the call asked that is not answered yet.
    pub pending: InputRequests,
    pub stop: Option<Stop>,
    /// What the state is bound to: the tool's name and a digest of its arguments.
    bound: Vec<u8>,
    /// A stateless task's: where its questions wait for `tasks/update`.
    inbox: Option<Inbox>,
}

impl Asking {
    /// The asking of a call to `name` with `args` for the request `ctx`, its earlier
    /// answers taken from the request's `inputResponses` and verified `requestState`.
    pub(crate) fn new(
        codec: &RequestStateCodec,
        name: &str,
        args: &Value,
        stateless: bool,
        responses: Option<InputResponses>,
        state: Option<&str>,
        ctx: &RequestContext<RoleServer>,
    ) -> Result<Asking, ErrorData> {
        let bound = bound(name, args);
        let mut answers = BTreeMap::new();
        if let Some(sealed) = state {
            answers = codec
                .open_json_with::<BTreeMap<String, Value>>(sealed, &bound)
                .map_err(|e| {
                    ErrorData::invalid_params(
                        format!(
                            "the requestState does not verify ({e}): it was altered, has expired, \
                             was made for another call, or by another server"
                        ),
                        None,
                    )
                })?;
        }
        answers.extend(responses.unwrap_or_default());
        Ok(Asking {
            peer: (!stateless).then(|| ctx.peer.clone()),
            caps: ctx.client_capabilities(),
            answers,
            pending: InputRequests::new(),
            stop: None,
            bound,
            inbox: None,
        })
    }

    /// The asking of a stateless task's call carried on by the replica that took the task
    /// over: no request to answer from, the calling client's capabilities `caps` as kept
    /// with the task, every question waiting in `inbox` for `tasks/update`.
    pub(crate) fn taken_over(
        name: &str,
        args: &Value,
        caps: Option<ClientCapabilities>,
        inbox: Inbox,
    ) -> Asking {
        Asking {
            peer: None,
            caps,
            answers: BTreeMap::new(),
            pending: InputRequests::new(),
            stop: None,
            bound: bound(name, args),
            inbox: Some(inbox),
        }
    }

    /// A stateless task's asking: what the call asks that the request did not answer
    /// waits in `inbox` for `tasks/update`, rather than ending the call.
    pub(crate) fn waiting_in(mut self, inbox: Option<Inbox>) -> Asking {
        if self.peer.is_none() {
            self.inbox = inbox;
        }
        self
    }

    pub(crate) fn offered(&self) -> Vec<Kind> {
        offered(self.caps.as_ref())
    }

    /// The `requestState` to send with an `input_required` result: the answers so far.
    pub(crate) fn seal(&self, codec: &RequestStateCodec) -> Result<String, ErrorData> {
        let used: BTreeMap<&String, &Value> = self
            .answers
            .iter()
            .filter(|(k, _)| !self.pending.contains_key(*k))
            .collect();
        codec
            .seal_json_with(
                &used,
                &SealOptions::new()
                    .associated_data(&self.bound)
                    .ttl(STATE_TTL),
            )
            .map_err(|e| {
                ErrorData::internal_error(format!("cannot seal the request state: {e}"), None)
            })
    }

    /// The answers to `inputs`, in order: `Some(Err)` is an error value the tool sees;
    /// `None` stops the call (the reason in [`Asking::stop`]).
    pub(crate) async fn answers(&mut self, inputs: &[Input]) -> Option<Result<Vec<Value>, String>> {
        let offered = self.offered();
        if let Some(missing) = inputs.iter().find(|i| !offered.contains(&i.request.kind())) {
            self.stop = Some(Stop::Missing(missing.request.kind()));
            return None;
        }
        if let Some(peer) = &self.peer {
            let mut out = Vec::with_capacity(inputs.len());
            for input in inputs {
                let answer = match send(peer, input).await {
                    Ok(v) => v,
                    Err(e) => return Some(Err(e)),
                };
                if let Err(why) = check(input, &answer) {
                    self.stop = Some(Stop::Invalid(why));
                    return None;
                }
                out.push(answer);
            }
            return Some(Ok(out));
        }
        // Stateless: from the answers so far; the rest asked for in an `input_required`
        // result, or, in a task, waited for (`tasks/update`, checked there).
        for input in inputs {
            match self.answers.get(&input.key) {
                Some(answer) => {
                    if let Err(why) = check(input, answer) {
                        self.stop = Some(Stop::Invalid(why));
                        return None;
                    }
                }
                None => match input_request(input) {
                    Ok(r) => {
                        self.pending.insert(input.key.clone(), r);
                    }
                    Err(e) => return Some(Err(e)),
                },
            }
        }
        if !self.pending.is_empty() {
            let Some(inbox) = &self.inbox else {
                self.stop = Some(Stop::Input);
                return None;
            };
            match inbox.wait(std::mem::take(&mut self.pending)).await {
                Ok(got) => self.answers.extend(got),
                Err(e) => return Some(Err(e)),
            }
        }
        let answers = inputs
            .iter()
            .map(|i| self.answers.get(&i.key).cloned().unwrap_or(Value::Null));
        Some(Ok(answers.collect()))
    }

    /// Why the last question stopped, cleared with what it left pending, so that the
    /// next question is asked afresh (a program asks many, one at a time).
    pub(crate) fn take_stop(&mut self) -> Option<Stop> {
        self.pending.clear();
        self.stop.take()
    }

    /// The error or result a stopped call ends with.
    pub(crate) fn error(stop: &Stop) -> Option<ErrorData> {
        match stop {
            Stop::Missing(kind) => {
                let required: ClientCapabilities =
                    serde_json::from_value(required(*kind)).unwrap_or_default();
                Some(ErrorData::missing_required_client_capability(required))
            }
            Stop::Invalid(why) => Some(ErrorData::invalid_params(why.clone(), None)),
            Stop::Input => None,
        }
    }
}

/// What a call's request state is bound to: the tool's name and a digest of its arguments.
fn bound(name: &str, args: &Value) -> Vec<u8> {
    let mut bound = name.as_bytes().to_vec();
    bound.push(0);
    bound.extend_from_slice(&Sha256::digest(args.to_string().as_bytes()));
    bound
}

/// The MCP request for `input`.
fn input_request(input: &Input) -> Result<InputRequest, String> {
    let request = match &input.request {
        Request::Form { message, schema } => json!({
            "method": "elicitation/create",
            "params": {"mode": "form", "message": message, "requestedSchema": schema},
        }),
        Request::Url { message, url } => json!({
            "method": "elicitation/create",
            "params": {"mode": "url", "message": message, "url": url, "elicitationId": elicitation_id(&input.key)},
        }),
        Request::Sample(params) => json!({"method": "sampling/createMessage", "params": params}),
        Request::Roots => json!({"method": "roots/list", "params": {}}),
        _ => {
            return Err(format!(
                "`{}` asks for something this server cannot ask",
                input.key
            ));
        }
    };
    serde_json::from_value(request)
        .map_err(|e| format!("`{}` is not a request a client can answer: {e}", input.key))
}

/// Sends `input` to a session's client and waits for its answer.
#[allow(deprecated)] // roots: deprecated by SEP-2577, still asked of 2025 clients
async fn send(peer: &Peer<RoleServer>, input: &Input) -> Result<Value, String> {
    let request = input_request(input)?;
    let failed = |e: rmcp::ServiceError| format!("the client did not answer `{}`: {e}", input.key);
    let answer = match request {
        InputRequest::Elicitation(r) => {
            serde_json::to_value(peer.create_elicitation(r.params).await.map_err(failed)?)
        }
        InputRequest::CreateMessage(r) => {
            serde_json::to_value(peer.create_message(r.params).await.map_err(failed)?)
        }
        InputRequest::ListRoots(_) => {
            serde_json::to_value(peer.list_roots().await.map_err(failed)?)
        }
        _ => {
            return Err(format!(
                "`{}` asks for something this server cannot ask",
                input.key
            ));
        }
    };
    answer.map_err(|e| format!("the client's answer to `{}` is not JSON: {e}", input.key))
}

/// A URL-mode elicitation's id: the tool's key, made unique in this process (a client
/// relates the elicitation's completion and its errors to it).
fn elicitation_id(key: &str) -> String {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    format!("{key}.{}.{n}", std::process::id())
}

/// Whether `answer` is what `input` calls for: an object; for a form, an action, and when
/// it accepts, content that matches the form's schema; for a web page, an action.
fn check(input: &Input, answer: &Value) -> Result<(), String> {
    match &input.request {
        Request::Form { schema, .. } => answers::check(&input.key, Some(schema), answer),
        Request::Url { .. } => answers::check_action(&input.key, answer),
        _ => answers::check(&input.key, None, answer),
    }
}

/// The form a `sensitive` tool's call is approved through.
pub(crate) fn approval(name: &str, args: &Value) -> Input {
    crate::answers::approval_keyed(APPROVAL, name, args)
}
