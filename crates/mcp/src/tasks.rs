//! The MCP tasks extension (`io.modelcontextprotocol/tasks`, SEP-2663, on revision
//! 2026-07-28): a call of an operation the policy lists under `tasks`, from a client that
//! declares the extension (at `initialize` or in the request's `_meta`), answers at once
//! with a task; the call runs on, and the client polls `tasks/get` for its status and, once
//! it ended, its result inlined, or ends it with `tasks/cancel`. An operation listed under
//! `tasks_required` runs only so: a client without the extension is refused (`-32021`).
//!
//! A task belongs to the client that started it: the session that started it, or, for a
//! stateless 2026-07-28 request, whoever holds its id (128 random bits, like a bearer
//! token). Any other session's `tasks/get` or `tasks/cancel` gets the same `-32602`
//! "unknown task" an id never issued gets, so ids cannot be probed. Each client holds at
//! most [`ServerConfig::max_tasks`](crate::ServerConfig) tasks: the oldest finished one is
//! forgotten to make room, and a call past that many unfinished ones is an `isError`
//! result of kind `overloaded`. A finished task is kept [`ServerConfig::task_ttl`].
//!
//! A stateless request's task whose call asks waits `input_required` until `tasks/update`
//! answers (`inbox`); a session's task asks its session's client, as any call does.
//!
//! Without a database tasks live in this process's memory: another replica does not know
//! them, and they end with the process. With one (`durable`) they live in PostgreSQL,
//! under the same rules.

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use rmcp::ErrorData;
use rmcp::RoleServer;
use rmcp::model::{
    CallToolResponse, CallToolResult, ClientCapabilities, CreateTaskResult, DetailedTask,
    ErrorCode, GetTaskResult, InputRequests, InputResponses, JsonObject, Task, TaskPayload,
    TaskStatus,
};
use rmcp::service::RequestContext;
use serde_json::{Value, json};
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use crate::answers;
use crate::catalog::TaskSupport;

/// How often a client is asked to poll a task that is still working.
const POLL_MS: u64 = 500;

/// Who may see a task: the session that started it, or any stateless request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Owner {
    Session(u64),
    Stateless,
}

/// What happened to the call so far.
#[derive(Clone)]
pub(crate) enum State {
    Working,
    /// The call waits for the answers to these (`inbox`).
    InputRequired(InputRequests),
    Completed(JsonObject),
    Failed(JsonObject),
    Cancelled,
}

struct Slot {
    owner: Owner,
    created: String,
    updated: String,
    state: State,
    /// Cancels the call (`tasks/cancel`).
    ct: CancellationToken,
    /// When it was created; a finished task is forgotten `ttl` after.
    born: Instant,
    /// While the call waits for input: the answers so far, and where to send them all.
    waiting: Option<Waiting>,
}

struct Waiting {
    answered: BTreeMap<String, Value>,
    done: oneshot::Sender<BTreeMap<String, Value>>,
}

/// The tasks of every client of a server.
#[derive(Default)]
pub(crate) struct Tasks {
    slots: Mutex<HashMap<String, Slot>>,
}

/// Whether the call of the tool `name` runs as a task: its operation is listed under `tasks`
/// or `tasks_required` and the request's client declared the extension. A task-only
/// operation's call from a client that did not is refused: `-32021`, the extension named in
/// `data.requiredCapabilities` (SEP-2663, "Required Capabilities").
pub(crate) fn wanted(
    name: &str,
    support: TaskSupport,
    ctx: &RequestContext<RoleServer>,
) -> Result<bool, ErrorData> {
    let declared = ctx
        .client_capabilities()
        .is_some_and(|caps| caps.supports_tasks());
    match support {
        TaskSupport::Never => Ok(false),
        TaskSupport::Optional => Ok(declared),
        TaskSupport::Required if declared => Ok(true),
        TaskSupport::Required => {
            let required = ClientCapabilities::builder().enable_tasks().build();
            Err(ErrorData::new(
                ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY,
                format!(
                    "`{name}` runs only as an MCP task: declare the `{TASKS_EXTENSION}` extension to call it"
                ),
                Some(json!({"requiredCapabilities": required})),
            ))
        }
    }
}

/// The tasks extension's identifier.
const TASKS_EXTENSION: &str = "io.modelcontextprotocol/tasks";

/// The owner of what `ctx` starts or asks about, in the session `session`.
pub(crate) fn owner(session: u64, ctx: &RequestContext<RoleServer>) -> Owner {
    if ctx.meta.protocol_version().is_some() || ctx.peer.peer_info().is_none() {
        Owner::Stateless
    } else {
        Owner::Session(session)
    }
}

/// The seed a `tools/call` answers with: the task `id`, working since `created`.
pub(crate) fn seed(id: String, created: &str, ttl: Duration) -> CallToolResponse {
    let mut task =
        Task::new(id, TaskStatus::Working, created, created).with_poll_interval_ms(POLL_MS);
    task.ttl_ms = Some(u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX));
    CallToolResponse::Task(CreateTaskResult::new(task))
}

/// How a task's call ended, from what the call returned; `cancelled` when `tasks/cancel`
/// stopped it.
pub(crate) fn ended(
    name: &str,
    returned: Result<CallToolResponse, ErrorData>,
    cancelled: bool,
) -> State {
    match returned {
        _ if cancelled => State::Cancelled,
        Ok(CallToolResponse::Complete(result)) => match trapped(&result) {
            Some(error) => State::Failed(error),
            None => State::Completed(object(serde_json::to_value(result))),
        },
        Ok(_) => State::Failed(object(serde_json::to_value(ErrorData::internal_error(
            format!(
                "the call of `{name}` asked for input, which a task cannot put to a stateless client"
            ),
            None,
        )))),
        Err(e) => State::Failed(object(serde_json::to_value(e))),
    }
}

/// The error kinds of a call that crashed rather than answered: a trap, a panic, a stack
/// overflow, or a sandbox that could not be instantiated.
const CRASHES: &[&str] = &["trap", "panic", "stack_overflow", "instantiate"];

/// A crash (a trap, [`CRASHES`]) is no answer of the tool's: its task ends `failed` with a
/// JSON-RPC error (SEP-2663 reserves `failed` for protocol-level errors), the call's error
/// in its `data`; any other `isError` result (the tool's own error, a limit, a denial)
/// completes the task.
fn trapped(result: &CallToolResult) -> Option<JsonObject> {
    let error = result
        .structured_content
        .as_ref()
        .filter(|_| result.is_error == Some(true))?
        .get("error")
        .filter(|e| e["kind"].as_str().is_some_and(|k| CRASHES.contains(&k)))?;
    let message = error["message"].as_str().unwrap_or("the tool trapped");
    Some(object(Ok(json!({
        "code": -32603,
        "message": message,
        "data": error,
    }))))
}

pub(crate) fn now() -> String {
    jiff::Timestamp::now().to_string()
}

/// A fresh task id: 128 bits from the system's random source, in hex.
pub(crate) fn fresh_id() -> Result<String, ErrorData> {
    let mut bytes = [0u8; 16];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut bytes))
        .map_err(|e| {
            ErrorData::internal_error(
                format!("cannot draw a task id from /dev/urandom: {e}"),
                None,
            )
        })?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

pub(crate) fn unknown(id: &str) -> ErrorData {
    ErrorData::invalid_params(
        format!("unknown task `{id}`: no task of this client has that id"),
        Some(json!({"kind": "unknown_task", "taskId": id})),
    )
}

/// A result or error as the JSON object a task inlines.
pub(crate) fn object(v: serde_json::Result<Value>) -> JsonObject {
    match v {
        Ok(Value::Object(o)) => o,
        Ok(other) => json!({ "value": other })
            .as_object()
            .cloned()
            .unwrap_or_default(),
        Err(e) => json!({"code": -32603, "message": format!("cannot encode the result: {e}")})
            .as_object()
            .cloned()
            .unwrap_or_default(),
    }
}

impl State {
    /// Whether the call still runs (working, or waiting for input).
    pub(crate) fn unfinished(&self) -> bool {
        matches!(self, State::Working | State::InputRequired(_))
    }

    /// The status `tasks/get` shows.
    pub(crate) fn status(&self) -> &'static str {
        match self {
            State::Working => "working",
            State::InputRequired(_) => "input_required",
            State::Completed(_) => "completed",
            State::Failed(_) => "failed",
            State::Cancelled => "cancelled",
        }
    }
}

impl Tasks {
    /// Makes room for and records a new working task of `owner`: its id, its creation
    /// time and the token that cancels its call; the `overloaded` result when `owner`
    /// holds `max` tasks that all still work.
    pub(crate) fn open(
        &self,
        owner: Owner,
        max: usize,
        ttl: Duration,
    ) -> Result<Result<(String, String, CancellationToken), CallToolResult>, ErrorData> {
        let id = fresh_id()?;
        let created = now();
        let ct = CancellationToken::new();
        let mut slots = self.slots.lock().expect("tasks lock");
        expire(&mut slots, ttl);
        if let Some(full) = make_room(&mut slots, owner, max) {
            return Ok(Err(full));
        }
        slots.insert(
            id.clone(),
            Slot {
                owner,
                created: created.clone(),
                updated: created.clone(),
                state: State::Working,
                ct: ct.clone(),
                born: Instant::now(),
                waiting: None,
            },
        );
        Ok(Ok((id, created, ct)))
    }

    /// Records how the call ended, unless the task was cancelled first.
    pub(crate) fn settle(&self, id: &str, state: State) {
        let mut slots = self.slots.lock().expect("tasks lock");
        if let Some(slot) = slots.get_mut(id)
            && slot.state.unfinished()
        {
            slot.state = state;
            slot.updated = now();
            slot.waiting = None;
        }
    }

    /// `tasks/get`: the task's status, with its result or error once it ended.
    pub(crate) fn get(
        &self,
        id: &str,
        owner: Owner,
        ttl: Duration,
    ) -> Result<GetTaskResult, ErrorData> {
        let mut slots = self.slots.lock().expect("tasks lock");
        expire(&mut slots, ttl);
        let slot = slots
            .get(id)
            .filter(|s| s.owner == owner)
            .ok_or_else(|| unknown(id))?;
        Ok(detailed(
            id,
            &slot.state,
            (&slot.created, &slot.updated),
            ttl,
        ))
    }

    /// `tasks/cancel`: stops the call (its sandbox is dropped at once) and marks the task
    /// cancelled; a task that already ended stays as it ended.
    pub(crate) fn cancel(&self, id: &str, owner: Owner) -> Result<(), ErrorData> {
        let mut slots = self.slots.lock().expect("tasks lock");
        let slot = slots
            .get_mut(id)
            .filter(|s| s.owner == owner)
            .ok_or_else(|| unknown(id))?;
        if slot.state.unfinished() {
            slot.state = State::Cancelled;
            slot.updated = now();
            slot.waiting = None;
            slot.ct.cancel();
        }
        Ok(())
    }

    /// Shows task `id` waiting for `pending` (`inbox`); what receives the answers once
    /// `tasks/update` brought them all. `None`: the task no longer runs.
    pub(crate) fn wait_input(
        &self,
        id: &str,
        pending: InputRequests,
    ) -> Option<oneshot::Receiver<BTreeMap<String, Value>>> {
        let mut slots = self.slots.lock().expect("tasks lock");
        let slot = slots.get_mut(id).filter(|s| s.state.unfinished())?;
        let (done, answered) = oneshot::channel();
        slot.state = State::InputRequired(pending);
        slot.updated = now();
        slot.waiting = Some(Waiting {
            answered: BTreeMap::new(),
            done,
        });
        Some(answered)
    }

    /// `tasks/update`: the answers to what the task waits for (`answers::take`); once all
    /// are in, the call resumes with them and the task works again.
    pub(crate) fn update(
        &self,
        id: &str,
        owner: Owner,
        responses: InputResponses,
    ) -> Result<(), ErrorData> {
        let mut slots = self.slots.lock().expect("tasks lock");
        let slot = slots
            .get_mut(id)
            .filter(|s| s.owner == owner)
            .ok_or_else(|| unknown(id))?;
        let State::InputRequired(pending) = &mut slot.state else {
            return Err(answers::not_waiting(id, slot.state.status()));
        };
        let got = answers::take(id, pending, responses)?;
        let all = pending.is_empty();
        let Some(waiting) = slot.waiting.as_mut() else {
            return Err(answers::not_waiting(id, "ending"));
        };
        waiting.answered.extend(got);
        slot.updated = now();
        if all && let Some(w) = slot.waiting.take() {
            slot.state = State::Working;
            let _ = w.done.send(w.answered);
        }
        Ok(())
    }
}

/// The `tasks/get` answer for task `id` in `state`, created and last updated at `times`.
pub(crate) fn detailed(
    id: &str,
    state: &State,
    (created, updated): (&str, &str),
    ttl: Duration,
) -> GetTaskResult {
    let payload = match state {
        State::Working => TaskPayload::Working,
        State::InputRequired(pending) => TaskPayload::InputRequired {
            input_requests: pending.clone(),
        },
        State::Completed(result) => TaskPayload::Completed {
            result: result.clone(),
        },
        State::Failed(error) => TaskPayload::Failed {
            error: error.clone(),
        },
        State::Cancelled => TaskPayload::Cancelled,
    };
    let mut task = Task::new(id, payload.status(), created, updated);
    task.ttl_ms = Some(u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX));
    if state.unfinished() {
        task = task.with_poll_interval_ms(POLL_MS);
    }
    GetTaskResult::new(DetailedTask::new(task, payload))
}

/// The `isError` result of a call past `--max-tasks`.
pub(crate) fn overloaded(max: usize) -> CallToolResult {
    CallToolResult::structured_error(json!({"error": {
        "kind": "overloaded",
        "message": format!(
            "this client has {max} tasks working, the most it may (`--max-tasks {max}`): wait for one to finish, or cancel one"
        ),
    }}))
}

/// Forgets the finished tasks older than `ttl`.
fn expire(slots: &mut HashMap<String, Slot>, ttl: Duration) {
    slots.retain(|_, s| s.state.unfinished() || s.born.elapsed() < ttl);
}

/// Makes room for one more task of `owner`: forgets its oldest finished task when it holds
/// `max`; the `overloaded` result when all of them are still working.
fn make_room(
    slots: &mut HashMap<String, Slot>,
    owner: Owner,
    max: usize,
) -> Option<CallToolResult> {
    let mine = || slots.iter().filter(|(_, s)| s.owner == owner);
    if mine().count() < max {
        return None;
    }
    let oldest = mine()
        .filter(|(_, s)| !s.state.unfinished())
        .min_by_key(|(_, s)| s.born)
        .map(|(id, _)| id.clone());
    match oldest {
        Some(id) => {
            slots.remove(&id);
            None
        }
        None => Some(overloaded(max)),
    }
}
