//! Durable tasks (`toolhost mcp --http --database URL`): the MCP tasks of `tasks`, kept in
//! PostgreSQL ([`toolhost_store_pg::tasks`]) so that every replica given the same database
//! answers `tasks/get`, `tasks/cancel` and `tasks/update` for any of them, under the same
//! ownership rules and `--max-tasks` bound as in memory.
//!
//! The replica a call reached runs it under a lease it renews every third of
//! [`TaskDatabase::lease`] (`keep`). A cancel that reaches another replica marks the task
//! cancelled in the database, whose notification stops the call on the holder at once (a
//! lost notification is caught at the next renewal, which no longer finds the task
//! working). A replica whose lease lapses (it died, or lost the database) loses its tasks
//! to the first replica that sees them: that one runs the call again only when the
//! operation is idempotent by policy (and not `sensitive`: nobody would approve it again),
//! or carries a stateless task's program on from its run's journal (`program_call`, whose
//! finished calls are never made again); otherwise it ends the task `failed`, naming the
//! replica and why, so no call ever runs twice unnoticed. A replica stopped with SIGTERM does not wait for that: it hands the
//! tasks that may run again back at once (their leases end, the other replicas hear it and
//! take them over) and ends the others `failed`, saying it was stopped
//! ([`Durable::hand_back`]). A task whose call waits for input waits in the database
//! (`input`), shown and answered through any replica. Every settle is fenced by the
//! task's epoch: a holder that lost a task cannot overwrite what its successor wrote.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::ErrorData;
use rmcp::model::{CallToolResult, ClientCapabilities, GetTaskResult};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use tokio_util::sync::CancellationToken;
use toolhost_store_pg::{Database, NewTask, PgError, TakenTask, TaskCancels, TaskEnd, TaskRow};

use crate::catalog::Entry;
use crate::tasks::{self, Owner, State};

mod input;

/// Tasks taken over per look: the rest wait for the next one (or another replica).
const TAKE_AT_ONCE: u32 = 8;

/// Where a server keeps its MCP tasks when they outlive it: a database shared by the
/// replicas, and how long a replica's hold on a task lasts unrenewed (a replica that dies
/// leaves its tasks to others after this).
#[derive(Debug, Clone)]
pub struct TaskDatabase {
    pub db: Database,
    pub lease: Duration,
}

/// A call this replica runs for a task: what stops it, the epoch it settles with, and
/// whether another replica may run it again (idempotent by policy, arguments kept).
struct Held {
    ct: CancellationToken,
    epoch: i64,
    again: bool,
    operation: String,
    /// Woken when the task's answers are all in (`input`).
    input: Arc<tokio::sync::Notify>,
}

/// The calls this replica runs for its tasks, by task id; `stopping` once it hands them
/// back (it holds no more after that).
#[derive(Default)]
struct Calls {
    held: HashMap<String, Held>,
    stopping: bool,
}

type Running = Arc<Mutex<Calls>>;

pub(crate) struct Durable {
    db: Database,
    lease: Duration,
    /// This replica's name in the database: its process id and 64 random bits.
    replica: String,
    running: Running,
    /// Woken when another replica hands tasks back: take them over now.
    handed: Arc<tokio::sync::Notify>,
    /// Held for the notifications of cancelled, handed back and answered tasks.
    _heard: (TaskCancels, TaskCancels, TaskCancels),
}

/// What a stopping replica did with its tasks (`Durable::hand_back`).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct HandedBack {
    /// Handed to the other replicas, to be run again at once.
    pub handed: usize,
    /// Ended `failed`: not idempotent by policy, so not run again anywhere.
    pub ended: usize,
}

impl Durable {
    pub fn start(config: TaskDatabase) -> Result<Durable, String> {
        let id = tasks::fresh_id().map_err(|e| e.message.to_string())?;
        let replica = format!("mcp-{}-{}", std::process::id(), &id[..16]);
        let running: Running = Arc::default();
        let hears = running.clone();
        let cancels = config
            .db
            .on_task_cancel(move |id| {
                if let Some(h) = hears.lock().expect("running lock").held.get(id) {
                    h.ct.cancel();
                }
            })
            .map_err(|e| e.to_string())?;
        let hears = running.clone();
        let answered = config
            .db
            .on_task_input(move |id| {
                if let Some(h) = hears.lock().expect("running lock").held.get(id) {
                    h.input.notify_one();
                }
            })
            .map_err(|e| e.to_string())?;
        let handed = Arc::new(tokio::sync::Notify::new());
        let wake = handed.clone();
        let handbacks = config
            .db
            .on_task_handback(move |_| wake.notify_one())
            .map_err(|e| e.to_string())?;
        Ok(Durable {
            db: config.db,
            lease: config.lease,
            replica,
            running,
            handed,
            _heard: (cancels, handbacks, answered),
        })
    }

    /// Resolves when another replica hands tasks back (one wake-up stands for any number).
    pub async fn handed_back(&self) {
        self.handed.notified().await;
    }

    /// Holds `id` here unless this replica is stopping, when `held` comes back to be
    /// released.
    fn hold(&self, id: &str, held: Held) -> Option<Held> {
        let mut calls = self.running.lock().expect("running lock");
        if calls.stopping {
            return Some(held);
        }
        calls.held.insert(id.to_string(), held);
        None
    }

    fn stopping(&self) -> bool {
        self.running.lock().expect("running lock").stopping
    }

    /// `owner` as the database knows it: a session's tasks are its replica's session's.
    pub(crate) fn owner(&self, owner: Owner) -> String {
        match owner {
            Owner::Stateless => "stateless".into(),
            Owner::Session(n) => format!("session:{}:{n}", self.replica),
        }
    }

    /// Opens a working task of `owner` for the call of the tool `name` with `args` by a
    /// client with capabilities `client`, held by this replica, which another may run again
    /// when `again` (an idempotent call) or carry on (a stateless task's program, whose
    /// arguments and client are kept); the `overloaded` result when `owner` holds `max`
    /// working tasks (on any replica).
    pub async fn open(
        &self,
        owner: Owner,
        (name, again, args, client): (&str, bool, &Value, Option<&ClientCapabilities>),
        max: usize,
        ttl: Duration,
    ) -> Result<Result<(String, String, CancellationToken), CallToolResult>, ErrorData> {
        if self.stopping() {
            return Err(ErrorData::internal_error(
                "this replica is stopping: send the call again (another replica takes it)",
                None,
            ));
        }
        let text = args.to_string();
        let carried = name == crate::catalog::PROGRAM && owner == Owner::Stateless;
        let client = match client.filter(|_| carried).map(serde_json::to_string) {
            Some(Ok(c)) => Some(c),
            Some(Err(e)) => {
                return Err(ErrorData::internal_error(
                    format!("cannot keep the client's capabilities with the task: {e}"),
                    None,
                ));
            }
            None => None,
        };
        let new = NewTask {
            id: tasks::fresh_id()?,
            owner: self.owner(owner),
            operation: name.to_string(),
            args_sha256: format!("{:x}", Sha256::digest(text.as_bytes())),
            args: (again || carried).then_some(text),
            idempotent: again,
            client,
            ttl,
            holder: self.replica.clone(),
            lease: self.lease,
            max_per_owner: u32::try_from(max).unwrap_or(u32::MAX),
        };
        let db = self.db.clone();
        let Some(row) = blocking(move || db.open_task(new)).await? else {
            return Ok(Err(tasks::overloaded(max)));
        };
        let ct = CancellationToken::new();
        let held = Held {
            ct: ct.clone(),
            epoch: row.epoch,
            again: again || carried,
            operation: name.to_string(),
            input: Arc::default(),
        };
        // Stopping since the check above: the task is released like the others were.
        if let Some(held) = self.hold(&row.id, held) {
            self.release(vec![(row.id.clone(), held)]).await;
        }
        Ok(Ok((row.id, stamp(row.created), ct)))
    }

    /// Records how the call of task `id` ended, unless it was cancelled or taken over.
    pub async fn settle(&self, id: &str, state: State) {
        let Some(Held { epoch, .. }) = self.running.lock().expect("running lock").held.remove(id)
        else {
            return;
        };
        let (end, outcome) = match state {
            State::Completed(r) => (TaskEnd::Completed, Value::Object(r)),
            State::Failed(e) => (TaskEnd::Failed, Value::Object(e)),
            // Marked in the database by whoever cancelled it.
            State::Working | State::InputRequired(_) | State::Cancelled => return,
        };
        let (db, id, holder) = (self.db.clone(), id.to_string(), self.replica.clone());
        let settled =
            blocking(move || db.settle_task(&id, &holder, epoch, end, &outcome.to_string())).await;
        if let Err(e) = settled {
            tracing::error!(error = %e.message, "cannot record how a task ended");
        }
    }

    /// `tasks/get` from the database.
    pub async fn get(&self, id: &str, owner: Owner) -> Result<GetTaskResult, ErrorData> {
        let row = self.row(id, owner).await?;
        let state = match (row.status.as_str(), &row.outcome) {
            ("completed", Some(r)) => State::Completed(outcome(r)),
            ("failed", Some(e)) => State::Failed(outcome(e)),
            ("cancelled", _) => State::Cancelled,
            _ => match row.input_requests.as_deref().map(serde_json::from_str) {
                Some(Ok(pending)) => State::InputRequired(pending),
                _ => State::Working,
            },
        };
        let times = (stamp(row.created), stamp(row.updated));
        Ok(tasks::detailed(id, &state, (&times.0, &times.1), row.ttl))
    }

    /// `tasks/cancel`: marks the task cancelled; its holder (this replica or another)
    /// stops the call.
    pub async fn cancel(&self, id: &str, owner: Owner) -> Result<(), ErrorData> {
        let (db, key, owner_key) = (self.db.clone(), id.to_string(), self.owner(owner));
        if !blocking(move || db.cancel_task(&key, &owner_key)).await? {
            return Err(tasks::unknown(id));
        }
        if let Some(h) = self.running.lock().expect("running lock").held.get(id) {
            h.ct.cancel();
        }
        Ok(())
    }

    pub(crate) async fn row(&self, id: &str, owner: Owner) -> Result<TaskRow, ErrorData> {
        let (db, key, owner_key) = (self.db.clone(), id.to_string(), self.owner(owner));
        blocking(move || db.task(&key, &owner_key))
            .await?
            .ok_or_else(|| tasks::unknown(id))
    }

    /// Renews this replica's leases and stops the calls of tasks it no longer holds
    /// (cancelled, or taken over after a lapse).
    pub async fn renew(&self) -> Result<(), ErrorData> {
        let ours: Vec<String> = self
            .running
            .lock()
            .expect("running lock")
            .held
            .keys()
            .cloned()
            .collect();
        if ours.is_empty() {
            return Ok(());
        }
        let (db, me, lease) = (self.db.clone(), self.replica.clone(), self.lease);
        let held: HashSet<String> = blocking(move || db.renew_tasks(&me, lease))
            .await?
            .into_iter()
            .collect();
        let mut running = self.running.lock().expect("running lock");
        for id in ours.iter().filter(|id| !held.contains(*id)) {
            if let Some(h) = running.held.remove(id) {
                h.ct.cancel();
            }
        }
        Ok(())
    }
}

/// Whether a task's call may run again on another replica: idempotent by policy, and not
/// `sensitive` (its approval cannot be asked again of anyone).
pub(crate) fn runs_again(entry: &Entry) -> bool {
    entry.section.idempotent && !entry.section.sensitive
}

impl Durable {
    /// Takes over the tasks whose holders' leases lapsed (at most [`TAKE_AT_ONCE`]), holding
    /// each here: the caller runs each again ([`Durable::may_run_again`]) or fails it
    /// ([`Durable::fail_lost`]).
    pub async fn take_over(&self) -> Result<Vec<(TakenTask, CancellationToken)>, ErrorData> {
        if self.stopping() {
            return Ok(Vec::new());
        }
        let (db, me, lease) = (self.db.clone(), self.replica.clone(), self.lease);
        let taken = blocking(move || db.take_over_tasks(&me, lease, TAKE_AT_ONCE)).await?;
        let (mut kept, mut released) = (Vec::new(), Vec::new());
        for t in taken {
            tracing::warn!(task = %t.id, replica = ?t.was, operation = %t.operation, "took over a task whose replica's lease lapsed or was handed back");
            let ct = CancellationToken::new();
            let held = Held {
                ct: ct.clone(),
                epoch: t.epoch,
                again: (t.idempotent || Durable::carries_on(&t)) && t.args.is_some(),
                operation: t.operation.clone(),
                input: Arc::default(),
            };
            match self.hold(&t.id, held) {
                None => kept.push((t, ct)),
                Some(held) => released.push((t.id.clone(), held)),
            }
        }
        self.release(released).await;
        Ok(kept)
    }

    /// Whether the call of task `t`, taken over, runs again here as the tool `entry` (this
    /// replica's view of it): stored as one that may, and this policy agrees.
    pub fn may_run_again(t: &TakenTask, entry: Option<&Entry>) -> bool {
        t.idempotent && t.args.is_some() && entry.is_some_and(runs_again)
    }

    /// Whether task `t`, taken over, is a program whose run is carried on here: a
    /// stateless task's (a session's ended with its replica), its arguments kept.
    pub fn carries_on(t: &TakenTask) -> bool {
        t.operation == crate::catalog::PROGRAM && t.owner == "stateless" && t.args.is_some()
    }

    /// Ends task `t`, taken over, `failed`: its replica lapsed and it is not run again
    /// (`served`: this replica serves its operation, which is not idempotent by policy).
    pub async fn fail_lost(&self, t: &TakenTask, served: bool) {
        let was = t.was.as_deref().unwrap_or("unknown");
        let why = lost(&t.operation, was, &self.replica, served);
        self.settle(&t.id, State::Failed(why)).await;
    }

    /// Stops holding tasks (SIGTERM): every call running here is stopped, each task that may
    /// run again is handed to the other replicas at once (its lease ends now; they hear of
    /// it), and each that may not is ended `failed`, saying so. Calls opened or taken over
    /// after this are released the same way.
    pub async fn hand_back(&self) -> HandedBack {
        let held: Vec<(String, Held)> = {
            let mut calls = self.running.lock().expect("running lock");
            calls.stopping = true;
            calls.held.drain().collect()
        };
        self.release(held).await
    }

    /// Stops the calls of `held` and hands their tasks back, or ends them `failed`.
    async fn release(&self, held: Vec<(String, Held)>) -> HandedBack {
        let mut done = HandedBack::default();
        if held.is_empty() {
            return done;
        }
        for (_, h) in &held {
            h.ct.cancel();
        }
        let (again, not): (Vec<_>, Vec<_>) = held.into_iter().partition(|(_, h)| h.again);
        let epochs = again.iter().map(|(id, h)| (id.clone(), h.epoch)).collect();
        let (db, me) = (self.db.clone(), self.replica.clone());
        match blocking(move || db.hand_back_tasks(&me, epochs)).await {
            Ok(ids) => done.handed = ids.len(),
            Err(e) => {
                tracing::error!(error = %e.message, "cannot hand tasks back: they are taken over when their leases lapse");
            }
        }
        for (id, h) in not {
            let why = stopped(&h.operation, &self.replica);
            let (db, me, outcome) = (self.db.clone(), self.replica.clone(), Value::Object(why));
            let end = TaskEnd::Failed;
            let settled =
                blocking(move || db.settle_task(&id, &me, h.epoch, end, &outcome.to_string()))
                    .await;
            match settled {
                Ok(true) => done.ended += 1,
                Ok(false) => {}
                Err(e) => {
                    tracing::error!(error = %e.message, "cannot end a task this replica stops")
                }
            }
        }
        done
    }

    /// Forgets the tasks that ended more than their ttl ago.
    pub async fn forget(&self) -> Result<(), ErrorData> {
        let db = self.db.clone();
        blocking(move || db.forget_tasks()).await.map(drop)
    }

    /// How often the leases are renewed: a third of their length.
    pub fn every(&self) -> Duration {
        (self.lease / 3).max(Duration::from_millis(10))
    }
}

/// Why a program's task is not carried on elsewhere.
const PROGRAM_NOT_AGAIN: &str = "a program of a session is not carried on by another replica (the session ended with its replica; the calls the program made are journaled in its run, which `toolhost resume` carries on)";

/// The error of a task whose replica `was` lapsed while running `operation`, which `me`
/// does not run again (`served`: `me` serves it, but it is not idempotent by policy).
fn lost(operation: &str, was: &str, me: &str, served: bool) -> serde_json::Map<String, Value> {
    let why = match served {
        true if operation == crate::catalog::PROGRAM => PROGRAM_NOT_AGAIN.to_string(),
        true => format!(
            "`{operation}` is not idempotent by policy (its section does not say `idempotent = true`, or it is `sensitive`)"
        ),
        false => format!("replica `{me}`, which took the task over, does not serve `{operation}`"),
    };
    let message = format!(
        "replica `{was}` stopped renewing its hold on this task (it died, was stopped, or lost the database) while running `{operation}`, and the task was not run again: {why}; the call may have taken effect once, or not at all"
    );
    tasks::object(Ok(json!({
        "code": -32603,
        "message": message,
        "data": {"kind": "replica_lost", "replica": was, "operation": operation},
    })))
}

/// The error of a task whose replica `me` stopped (SIGTERM) while running `operation`,
/// which is not idempotent by policy, so no replica runs it again.
fn stopped(operation: &str, me: &str) -> serde_json::Map<String, Value> {
    let message = if operation == crate::catalog::PROGRAM {
        format!(
            "replica `{me}` was stopped while running a program, and the task was not handed to another replica: {PROGRAM_NOT_AGAIN}"
        )
    } else {
        format!(
            "replica `{me}` was stopped while running `{operation}`, and the task was not handed to another replica: `{operation}` is not idempotent by policy (its section does not say `idempotent = true`, or it is `sensitive`); the call may have taken effect once, or not at all"
        )
    };
    tasks::object(Ok(json!({
        "code": -32603,
        "message": message,
        "data": {"kind": "replica_stopped", "replica": me, "operation": operation},
    })))
}

/// A stored result or error (JSON text) as the object a task inlines.
fn outcome(text: &str) -> serde_json::Map<String, Value> {
    tasks::object(serde_json::from_str(text))
}

fn stamp(t: std::time::SystemTime) -> String {
    jiff::Timestamp::try_from(t).map_or_else(|_| tasks::now(), |t| t.to_string())
}

/// Runs a blocking database call off the async workers.
pub(crate) async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, PgError> + Send + 'static,
) -> Result<T, ErrorData> {
    match tokio::task::spawn_blocking(f).await {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => Err(ErrorData::internal_error(
            format!("the task database failed: {e}"),
            None,
        )),
        Err(e) => Err(ErrorData::internal_error(
            format!("the task database call did not finish: {e}"),
            None,
        )),
    }
}
