//! `toolhost serve --database URL`'s backend: the API over the run queue of a PostgreSQL database,
//! so that any number of stateless replicas share it. A submitted run goes into the queue
//! (its [`Spec`]); every replica also works the queue ([`Worker`], as `toolhost worker`),
//! so a run may execute on any replica and is read, followed, decided and cancelled
//! through any other: runs are listed from the `runs` table, their views built from their
//! journal rows, events followed from the journal as it grows (woken by the
//! `toolhost_changes` notification, else polling), approvals parked and answered in the
//! run's row (the worker's `DbApprover`), cancellations asked for in it.
//!
//! A run taken over from a replica that died while a step that is not idempotent ran
//! stops `waiting_for_decision`; the API shows it waiting for approval, its pending
//! subject `unfinished_steps`: approving runs those steps again, rejecting records them
//! failed, and the run goes back to the queue with that decision.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use serde_json::json;
use toolhost_engine::approval::Decider;
use toolhost_serve::registry::SubmitRequest;
use toolhost_serve::{
    Backend, Decision, DecisionKind, Overrides, Pending, RecordStream, Registry, RegistryError,
    RunState, RunView, Taken,
};
use toolhost_store_pg::{Cancelled, Database, PgError, RunInfo, Status};

mod edit;
mod follow;
mod view;

use self::follow::Follow;
use self::view::{parse_lines, state_of, unfinished_ids};
use crate::spec::{SpecMode, SpecPlanner};
use crate::{Spec, Stopper, Worker};
use toolhost_app::launch::{TaskLauncher, invalid, planner_overrides};
use toolhost_app::{PlannerOptions, load, planner};

/// The PostgreSQL backend of one replica.
pub struct PgBackend {
    db: Database,
    launcher: Arc<TaskLauncher>,
    worker: Arc<Worker>,
    stopper: Stopper,
    ready: AtomicBool,
    accepting: AtomicBool,
    working: Mutex<Option<JoinHandle<()>>>,
    /// Bumped on each `toolhost_changes` notification (and each poll interval).
    changes: tokio::sync::watch::Sender<u64>,
    /// The views of runs that stopped, by id, with their journal's record count then.
    finished: Mutex<HashMap<String, (i64, RunView)>>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Runs `f`, which waits for the database, without stalling the async runtime the API
/// serves on: a runtime worker thread hands its other tasks on first.
fn blocking<T>(f: impl FnOnce() -> T) -> T {
    match tokio::runtime::Handle::try_current() {
        Ok(h) if h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
            tokio::task::block_in_place(f)
        }
        _ => f(),
    }
}

fn pg(e: PgError) -> RegistryError {
    match e {
        PgError::NoSuchRun { run, .. } => RegistryError::NotFound(run),
        e => RegistryError::Internal(e.to_string()),
    }
}

impl PgBackend {
    /// The backend of a replica serving the runs of `db`, each loaded by `launcher` and
    /// run by `worker` (or another replica's).
    pub fn new(db: Database, launcher: Arc<TaskLauncher>, worker: Worker) -> PgBackend {
        PgBackend {
            db,
            launcher,
            stopper: worker.stopper(),
            worker: Arc::new(worker),
            ready: AtomicBool::new(false),
            accepting: AtomicBool::new(true),
            working: Mutex::new(None),
            changes: tokio::sync::watch::channel(0).0,
            finished: Mutex::new(HashMap::new()),
        }
    }

    /// Relays `toolhost_changes` notifications to the followers, from a thread of its own.
    fn relay_changes(&self) -> Result<(), String> {
        let listener = self.db.listen_changes().map_err(|e| e.to_string())?;
        let tx = self.changes.clone();
        let poll = self.worker.config.poll;
        std::thread::Builder::new()
            .name("serve-changes".into())
            .spawn(move || {
                loop {
                    listener.wait(poll);
                    tx.send_modify(|n| *n = n.wrapping_add(1));
                }
            })
            .map_err(|e| e.to_string())?;
        Ok(())
    }

    /// The spec run `request` is queued with, after checking everything it needs.
    fn spec(
        &self,
        request: SubmitRequest,
        submitter: Option<String>,
    ) -> Result<Spec, RegistryError> {
        let checked = planner_overrides(&request.overrides)?;
        self.launcher.check_overrides(&request.overrides)?;
        let (planner_args, mode) = chosen(&request.overrides)?;
        let path = self.launcher.task_file(&request.task)?;
        let l = &self.launcher;
        let mut loaded = load::load(l.rt(), &path, l.tools_dir(), &checked).map_err(invalid)?;
        if let Some(n) = request.overrides.max_steps {
            loaded.task.config.budgets.max_steps = n;
        }
        planner::build(&loaded.task, &planner_args, None).map_err(invalid)?;
        planner::extractor(&loaded.task).map_err(invalid)?;
        let task = std::path::absolute(&path).unwrap_or(path);
        let digest = toolhost_app::journal::digest(&task).map_err(invalid)?;
        let task_text = std::fs::read_to_string(&task).map_err(|e| {
            RegistryError::Internal(format!("cannot read `{}`: {e}", task.display()))
        })?;
        Ok(Spec {
            task,
            task_sha256: digest.sha256,
            task_text,
            planner: SpecPlanner::from(&planner_args),
            mode,
            redact: Vec::new(),
            approve: request.approve,
            submitter,
            max_steps: request.overrides.max_steps,
        })
    }

    /// The decision on the unfinished steps of run `info` (`waiting_for_decision`).
    fn decide_unfinished(
        &self,
        info: &RunInfo,
        decision: DecisionKind,
    ) -> Result<(), RegistryError> {
        let bytes = self.db.journal(&info.run).map_err(pg)?;
        let records = parse_lines(bytes.split(|b| *b == b'\n'));
        let ids = unfinished_ids(&records);
        let recorded = match decision {
            DecisionKind::Approve => json!({ "rerun": ids }),
            DecisionKind::Reject => json!({ "abandon": ids }),
            DecisionKind::Edit | DecisionKind::Answer => {
                return Err(RegistryError::BadRequest(
                    "the pending decision is on unfinished steps: approve reruns them, reject abandons them".into(),
                ));
            }
        };
        if self
            .db
            .decide_unfinished(&info.run, &recorded.to_string())
            .map_err(pg)?
        {
            Ok(())
        } else {
            Err(RegistryError::Conflict(format!(
                "run `{}` is no longer waiting for a decision",
                info.run
            )))
        }
    }
}

/// The planner options and mode of `o`, as a submitted spec holds them.
fn chosen(o: &Overrides) -> Result<(PlannerOptions, SpecMode), RegistryError> {
    let bad = RegistryError::BadRequest;
    let mode = o.mode.as_deref().map(str::parse).transpose().map_err(bad)?;
    let kind = o
        .planner
        .as_deref()
        .map(str::parse)
        .transpose()
        .map_err(bad)?;
    Ok((
        PlannerOptions::chosen(kind, o.model.clone()).resolved(),
        SpecMode { mode },
    ))
}

impl Registry for PgBackend {
    fn submit(
        &self,
        request: SubmitRequest,
        submitter: Option<String>,
    ) -> Result<RunView, RegistryError> {
        if !self.accepting.load(Ordering::SeqCst) {
            return Err(RegistryError::Unavailable(
                "the server is shutting down and takes no new runs".into(),
            ));
        }
        if !self.ready.load(Ordering::SeqCst) {
            return Err(RegistryError::Unavailable(
                "the server is starting up: try again once /readyz answers 200".into(),
            ));
        }
        let spec = self.spec(request, submitter)?;
        let text = serde_json::to_string(&spec).expect("a spec serialises");
        let id = self.db.submit(&text).map_err(pg)?;
        self.view_of(&id)
    }

    fn list(&self) -> Vec<RunView> {
        blocking(|| self.list_now())
    }

    fn get(&self, id: &str) -> Result<RunView, RegistryError> {
        blocking(|| self.view_of(id))
    }

    fn events(&self, id: &str, after: u64) -> Result<RecordStream, RegistryError> {
        blocking(|| self.db.run_info(id)).map_err(pg)?;
        let follow = Follow {
            db: self.db.clone(),
            run: id.to_string(),
            after,
            ready: VecDeque::new(),
            changes: self.changes.subscribe(),
            poll: self.worker.config.poll,
            done: false,
        };
        Ok(Box::pin(futures_util::stream::unfold(
            follow,
            |mut f| async move {
                let r = f.next().await?;
                Some((r, f))
            },
        )))
    }

    fn decide(&self, id: &str, decision: Decision, by: Decider) -> Result<RunView, RegistryError> {
        blocking(|| self.decide_now(id, decision, by))
    }

    fn check_plan(
        &self,
        id: &str,
        draft: &toolhost_engine::Plan,
    ) -> Result<Vec<toolhost_engine::Problem>, RegistryError> {
        blocking(|| self.check_draft(id, draft))
    }

    fn cancel(&self, id: &str, by: Decider) -> Result<RunView, RegistryError> {
        blocking(|| self.cancel_now(id, &by))
    }

    fn journal(&self, id: &str) -> Result<Vec<u8>, RegistryError> {
        blocking(|| self.db.journal(id)).map_err(pg)
    }

    fn report(&self, id: &str) -> Result<String, RegistryError> {
        let bytes = blocking(|| self.db.journal(id)).map_err(pg)?;
        let report = toolhost_journal::report::load_bytes(id, self.db.location(id).into(), &bytes);
        let pending = blocking(|| self.view_of(id))?.pending;
        Ok(match pending {
            Some(p) => report.waiting(p.describe()).html(),
            None => report.html(),
        })
    }
}

/// The calls of [`Registry`] that wait for the database, run through [`blocking`].
impl PgBackend {
    fn list_now(&self) -> Vec<RunView> {
        match self.db.runs() {
            Ok(runs) => runs.iter().filter_map(|r| self.view(r).ok()).collect(),
            Err(e) => {
                tracing::warn!(error = %e, "cannot list the runs");
                Vec::new()
            }
        }
    }

    fn decide_now(
        &self,
        id: &str,
        decision: Decision,
        by: Decider,
    ) -> Result<RunView, RegistryError> {
        let info = self.db.run_info(id).map_err(pg)?;
        if info.status == Status::WaitingForDecision {
            self.decide_unfinished(&info, decision.decision)?;
            return self.view_of(id);
        }
        let not_waiting = || {
            RegistryError::Conflict(format!(
                "run `{id}` is {}, not waiting for approval",
                state_of(info.status).name()
            ))
        };
        let (Status::WaitingForApproval, Some(pending_text)) = (info.status, &info.pending) else {
            return Err(not_waiting());
        };
        let pending: Pending = serde_json::from_str(pending_text)
            .map_err(|e| RegistryError::Internal(format!("the pending decision: {e}")))?;
        let taken = pending.take(id, decision)?;
        let edit = matches!(taken, Taken::Edit(_));
        let mut recorded = match taken {
            Taken::Approve => json!({"decision": "approve"}),
            Taken::Reject(reason) => json!({"decision": "reject", "reason": reason}),
            Taken::Edit(plan) => json!({"decision": "edit", "plan": plan}),
            Taken::Answer(answer) => json!({"decision": "answer", "answer": answer}),
        };
        recorded["decider"] = json!(by);
        if !self
            .db
            .decide(id, pending_text, &recorded.to_string())
            .map_err(pg)?
        {
            return Err(not_waiting());
        }
        // An edit is validated by the run's holder: an invalid one is refused with every
        // problem, and the run waits again.
        if edit {
            self.edit_verdict(id, u64::try_from(info.records).unwrap_or(0))?;
        }
        self.view_of(id)
    }

    fn cancel_now(&self, id: &str, by: &Decider) -> Result<RunView, RegistryError> {
        let by = serde_json::to_string(by).expect("a decider serialises");
        match self.db.cancel(id, &by).map_err(pg)? {
            Cancelled::Over(status) => Err(RegistryError::Conflict(format!(
                "run `{id}` is {} already",
                state_of(status).name()
            ))),
            _ => self.view_of(id),
        }
    }
}

impl Backend for PgBackend {
    /// Loads the tools, starts following the database's changes, and starts this
    /// replica's worker.
    fn warm(&self) -> Result<(), String> {
        toolhost_serve::Launcher::warm(self.launcher.as_ref())?;
        self.relay_changes()?;
        let worker = self.worker.clone();
        let handle = std::thread::Builder::new()
            .name("serve-worker".into())
            .spawn(move || {
                if let Err(e) = worker.run() {
                    tracing::error!(error = %e, "the worker could not start");
                }
            })
            .map_err(|e| e.to_string())?;
        *self.working.lock().unwrap_or_else(|p| p.into_inner()) = Some(handle);
        self.ready.store(true, Ordering::SeqCst);
        Ok(())
    }

    fn is_ready(&self) -> bool {
        self.ready.load(Ordering::SeqCst) && self.accepting.load(Ordering::SeqCst)
    }

    fn states(&self) -> Vec<RunState> {
        match self.db.census() {
            Ok((counts, _)) => counts
                .into_iter()
                .flat_map(|(s, n)| std::iter::repeat_n(state_of(s), n as usize))
                .collect(),
            Err(e) => {
                tracing::warn!(error = %e, "cannot count the runs");
                Vec::new()
            }
        }
    }

    fn lease_takeovers(&self) -> u64 {
        self.db.census().map(|(_, t)| t).unwrap_or(0)
    }

    fn calls(&self) -> Option<toolhost_runtime::CallLoad> {
        self.launcher.rt().call_load()
    }

    /// Stops claiming; the runs in flight get the worker's grace period, then their
    /// leases are handed back for another replica to take over.
    fn shut_down(&self, _grace: Duration) {
        self.accepting.store(false, Ordering::SeqCst);
        self.stopper.stop();
        let handle = self
            .working
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        if let Some(h) = handle {
            let _ = h.join();
        }
    }
}
