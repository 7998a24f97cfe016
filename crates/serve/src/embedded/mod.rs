//! The embedded backend: one replica, runs executed in this process by a fixed number of
//! worker threads (the rest queued, up to a bound: each queued run holds its journal
//! open), journaled as files in the state directory, where
//! `toolhost journal`, `report` and `resume` find them. At start it lists the runs the
//! state directory holds; who submitted a run, whether people review it and its
//! overrides are kept next to its journal (`STATE/serve/RUN.json`).
//!
//! At shutdown, runs still going after the grace period are suspended (journaled
//! `suspended`: nobody decided anything, a run waiting for a person included), and the
//! next start carries each on where it stopped: a run that waited waits again.

mod approver;
mod found;
mod run;
mod tail;

use std::collections::{BTreeMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use toolhost_engine::approval::Decider;
use toolhost_journal as journal;

use self::approver::ApiApprover;
use self::found::{Submitted, found_runs, submitter_file};
pub use self::run::Outcome;
use self::run::{AnswerError, EditVerdict, Run};
use crate::backend::Backend;
use crate::launch::{Launcher, Prepared};
use crate::metrics::Metrics;
use crate::registry::{
    Decision, DecisionKind, RecordStream, Registry, RegistryError, RunState, RunView, SubmitRequest,
};

struct Job {
    run: Arc<Run>,
    prepared: Box<dyn Prepared>,
    approve: bool,
}

#[derive(Default)]
struct Queue {
    jobs: VecDeque<Job>,
    /// Workers busy with a run.
    busy: usize,
    /// Submissions being prepared, counted against the bound before their journals exist.
    preparing: usize,
    /// No more jobs will come: workers exit once the queue is empty.
    closed: bool,
}

struct Shared {
    launcher: Arc<dyn Launcher>,
    workers: usize,
    max_queued: usize,
    state_dir: PathBuf,
    runs: Mutex<BTreeMap<String, Arc<Run>>>,
    queue: Mutex<Queue>,
    wake: Condvar,
    accepting: AtomicBool,
    ready: AtomicBool,
    metrics: Arc<Metrics>,
    /// Runs suspended at the last shutdown, carried on once the server is warm.
    suspended: Mutex<Vec<Submitted>>,
}

/// The embedded backend.
pub struct Embedded {
    shared: Arc<Shared>,
    workers: Mutex<Vec<JoinHandle<()>>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Embedded {
    /// A backend running at most `workers` runs at once and queueing at most
    /// `max_queued` more, with the runs `state_dir` already holds.
    pub fn new(
        launcher: Arc<dyn Launcher>,
        state_dir: &Path,
        workers: usize,
        max_queued: usize,
        metrics: Arc<Metrics>,
    ) -> Embedded {
        let workers = workers.max(1);
        let (found, suspended) = found_runs(state_dir);
        let shared = Arc::new(Shared {
            launcher,
            workers,
            max_queued,
            state_dir: state_dir.to_path_buf(),
            runs: Mutex::new(found),
            queue: Mutex::new(Queue::default()),
            wake: Condvar::new(),
            accepting: AtomicBool::new(true),
            ready: AtomicBool::new(false),
            metrics,
            suspended: Mutex::new(suspended),
        });
        let handles = (0..workers)
            .map(|i| {
                let s = shared.clone();
                std::thread::Builder::new()
                    .name(format!("serve-run-{i}"))
                    .spawn(move || work(&s))
                    .expect("spawn a run worker")
            })
            .collect();
        Embedded {
            shared,
            workers: Mutex::new(handles),
        }
    }

    /// Queues the runs suspended at the last shutdown, each carried on from its journal;
    /// one that cannot be (its task or a tool changed) stays as it stopped, with a warning.
    fn carry_on(&self) {
        let s = &self.shared;
        let suspended = std::mem::take(&mut *lock(&s.suspended));
        for sub in suspended {
            let prepared = match s.launcher.resume(&sub.id, &sub.overrides) {
                Ok(p) => p,
                Err(e) => {
                    tracing::warn!(run = %sub.id, error = %e, "the suspended run cannot be carried on");
                    continue;
                }
            };
            tracing::info!(run = %sub.id, "carrying on the run suspended at the last shutdown");
            let run = Arc::new(Run::queued(
                sub.id.clone(),
                prepared.goal().to_string(),
                sub.submitter,
                prepared.journal_path(),
            ));
            lock(&s.runs).insert(sub.id, run.clone());
            lock(&s.queue).jobs.push_back(Job {
                run,
                prepared,
                approve: sub.approve,
            });
        }
        s.wake.notify_all();
    }

    fn run(&self, id: &str) -> Result<Arc<Run>, RegistryError> {
        lock(&self.shared.runs)
            .get(id)
            .cloned()
            .ok_or_else(|| RegistryError::NotFound(id.to_string()))
    }
}

impl Backend for Embedded {
    /// Start-up work (the launcher's), after which the server is ready.
    fn warm(&self) -> Result<(), String> {
        self.shared.launcher.warm()?;
        self.carry_on();
        self.shared.ready.store(true, Ordering::SeqCst);
        Ok(())
    }

    fn is_ready(&self) -> bool {
        self.shared.ready.load(Ordering::SeqCst)
    }

    fn calls(&self) -> Option<toolhost_runtime::CallLoad> {
        self.shared.launcher.calls()
    }

    fn states(&self) -> Vec<RunState> {
        lock(&self.shared.runs)
            .values()
            .map(|r| r.state())
            .collect()
    }

    /// Stops taking submissions, lets queued and running runs finish for `grace`, then
    /// cancels what is left (each journaled `cancelled`) and waits for the workers.
    fn shut_down(&self, grace: Duration) {
        self.shared.accepting.store(false, Ordering::SeqCst);
        let deadline = Instant::now() + grace;
        {
            let mut q = lock(&self.shared.queue);
            q.closed = true;
            self.shared.wake.notify_all();
            while (!q.jobs.is_empty() || q.busy > 0) && Instant::now() < deadline {
                let left = deadline.saturating_duration_since(Instant::now());
                q = self
                    .shared
                    .wake
                    .wait_timeout(q, left.min(Duration::from_millis(100)))
                    .unwrap_or_else(|p| p.into_inner())
                    .0;
            }
        }
        // Nobody cancelled these: they stop `suspended`, to be carried on at the next start.
        for r in lock(&self.shared.runs).values() {
            if !r.state().is_final() {
                tracing::warn!(run = %r.id, state = r.state().name(), "suspended at shutdown after the grace period");
                r.cancel.suspend();
            }
        }
        for h in lock(&self.workers).drain(..) {
            let _ = h.join();
        }
    }
}

/// A worker: takes jobs until the queue is closed and empty.
fn work(s: &Shared) {
    loop {
        let job = {
            let mut q = lock(&s.queue);
            loop {
                if let Some(j) = q.jobs.pop_front() {
                    q.busy += 1;
                    break j;
                }
                if q.closed {
                    return;
                }
                q = s.wake.wait(q).unwrap_or_else(|p| p.into_inner());
            }
        };
        let Job {
            run,
            prepared,
            approve,
        } = job;
        run.started();
        // Questions always go to the API; plans and steps only when the run asked for
        // review, else the policy decides.
        let mut api = ApiApprover {
            run: run.clone(),
            reviews: if approve {
                None
            } else {
                Some(prepared.approval())
            },
            proposed: None,
            last: None,
        };
        match prepared.execute(Some(&mut api), run.cancel.clone()) {
            Ok(report) => {
                s.metrics.record(&report);
                run.finished(Outcome::of_report(&report));
            }
            Err(why) => {
                tracing::error!(run = %run.id, error = %why, "the run could not start");
                run.finished(Outcome::not_started(why));
            }
        }
        let mut q = lock(&s.queue);
        q.busy -= 1;
        s.wake.notify_all();
    }
}

/// How long a client refused for a full queue is asked to wait: about the time a short
/// run takes to free its slot.
const RETRY_AFTER_S: u64 = 5;

/// How long `decide` waits for the run to validate an edit (validation takes
/// milliseconds; this bounds a run stuck elsewhere).
const EDIT_VERDICT_WAIT: Duration = Duration::from_secs(30);

/// A submission's place among the runs not yet started, held while it is prepared (its
/// journal created) and given back once it is queued or refused: runs waiting for a
/// worker never pass `max_queued` beyond the idle workers, whatever arrives at once.
struct Place<'a>(&'a Shared);

impl<'a> Place<'a> {
    fn take(s: &'a Shared) -> Result<Place<'a>, RegistryError> {
        let mut q = lock(&s.queue);
        let idle = s.workers.saturating_sub(q.busy);
        if q.jobs.len() + q.preparing >= s.max_queued + idle {
            return Err(RegistryError::Overloaded {
                reason: format!(
                    "{} runs are running and {} are queued, the most this server queues (`max_queued_runs` {})",
                    q.busy,
                    q.jobs.len() + q.preparing,
                    s.max_queued
                ),
                retry_after_s: RETRY_AFTER_S,
            });
        }
        q.preparing += 1;
        Ok(Place(s))
    }
}

impl Drop for Place<'_> {
    fn drop(&mut self) {
        lock(&self.0.queue).preparing -= 1;
    }
}

impl Registry for Embedded {
    fn submit(
        &self,
        request: SubmitRequest,
        submitter: Option<String>,
    ) -> Result<RunView, RegistryError> {
        let s = &self.shared;
        if !s.accepting.load(Ordering::SeqCst) {
            return Err(RegistryError::Unavailable(
                "the server is shutting down and takes no new runs".into(),
            ));
        }
        if !s.ready.load(Ordering::SeqCst) {
            return Err(RegistryError::Unavailable(
                "the server is starting up: try again once /readyz answers 200".into(),
            ));
        }
        let _place = Place::take(s)?;
        let prepared = s.launcher.prepare(&request.task, &request.overrides)?;
        let id = prepared.run_id().to_string();
        let record = Submitted {
            id: id.clone(),
            submitter: submitter.clone(),
            approve: request.approve,
            overrides: request.overrides.clone(),
        };
        let file = submitter_file(&s.state_dir, &id);
        let text = serde_json::to_string(&record).expect("a submission serialises");
        if let Err(e) = toolhost_runtime::owned::write_file(&file, text.as_bytes()) {
            tracing::warn!(run = %id, error = %e, "cannot record the run's submission");
        }
        let run = Arc::new(Run::queued(
            id.clone(),
            prepared.goal().to_string(),
            submitter,
            prepared.journal_path(),
        ));
        lock(&s.runs).insert(id, run.clone());
        let mut q = lock(&s.queue);
        q.jobs.push_back(Job {
            run: run.clone(),
            prepared,
            approve: request.approve,
        });
        s.wake.notify_all();
        Ok(run.view())
    }

    fn list(&self) -> Vec<RunView> {
        lock(&self.shared.runs).values().map(|r| r.view()).collect()
    }

    fn get(&self, id: &str) -> Result<RunView, RegistryError> {
        Ok(self.run(id)?.view())
    }

    fn events(&self, id: &str, after: u64) -> Result<RecordStream, RegistryError> {
        Ok(tail::follow(self.run(id)?, after))
    }

    fn decide(&self, id: &str, decision: Decision, by: Decider) -> Result<RunView, RegistryError> {
        let run = self.run(id)?;
        let edit = decision.decision == DecisionKind::Edit;
        let answered = run.answer(by, |pending| pending.take(id, decision));
        match answered {
            // An edit is validated by the run as `plan validate` would (with what the run
            // has done so far): an invalid one is refused with every problem, and the run
            // waits again.
            Ok(()) if edit => match run.edit_verdict(EDIT_VERDICT_WAIT) {
                Some(EditVerdict::Invalid(problems)) => {
                    Err(RegistryError::InvalidEdit { problems })
                }
                Some(EditVerdict::Accepted) | None => Ok(run.view()),
            },
            Ok(()) => Ok(run.view()),
            Err(AnswerError::NothingPending) => Err(RegistryError::Conflict(format!(
                "run `{id}` is {}, not waiting for a decision or an answer",
                run.state().name()
            ))),
            Err(AnswerError::Refused(e)) => Err(e),
        }
    }

    fn check_plan(
        &self,
        id: &str,
        draft: &toolhost_engine::Plan,
    ) -> Result<Vec<toolhost_engine::Problem>, RegistryError> {
        self.run(id)?.check_draft(draft)
    }

    fn cancel(&self, id: &str, by: Decider) -> Result<RunView, RegistryError> {
        let run = self.run(id)?;
        if run.state().is_final() {
            return Err(RegistryError::Conflict(format!(
                "run `{id}` is {} already",
                run.state().name()
            )));
        }
        run.cancel.cancel_by(by);
        Ok(run.view())
    }

    fn journal(&self, id: &str) -> Result<Vec<u8>, RegistryError> {
        let run = self.run(id)?;
        toolhost_runtime::owned::open_regular(&run.path)
            .and_then(|mut f| {
                let mut bytes = Vec::new();
                std::io::Read::read_to_end(&mut f, &mut bytes)?;
                // A run still writing has preallocated zeros after its records.
                let content = toolhost_journal::written(&bytes).len();
                bytes.truncate(content);
                Ok(bytes)
            })
            .map_err(|e| {
                RegistryError::Internal(format!(
                    "cannot read the journal `{}`: {e}",
                    run.path.display()
                ))
            })
    }

    fn report(&self, id: &str) -> Result<String, RegistryError> {
        let run = self.run(id)?;
        let pending = run.view().pending;
        journal::report::load(&run.path)
            .map(|r| match pending {
                Some(p) => r.waiting(p.describe()).html(),
                None => r.html(),
            })
            .map_err(|e| RegistryError::Internal(e.to_string()))
    }
}
