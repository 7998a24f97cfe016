//! toolhost-worker: a worker of the run queue in PostgreSQL — a replica that claims queued
//! runs and runs them, and takes over the runs of replicas that died or were fenced off —
//! and the PostgreSQL backend of `toolhost serve` ([`serve::PgBackend`]), whose replicas
//! each embed a [`Worker`]. `toolhost worker` is this loop. Runs are loaded, planned and
//! driven by `toolhost_app`, as `toolhost run` drives them.
//!
//! # Layout
//!
//! - this file: [`Worker`], its [`WorkerConfig`], [`Stopper`] and [`WorkerStats`].
//! - [`spec`]: what a submitted run is started from ([`Spec`], stored as JSON in its row).
//! - `slot`: one run slot — claims a run, starts it from its spec or takes it over from
//!   its journal, records how it ended.
//! - `approver`: a run parked in the database for a person's decision (`DbApprover`).
//! - [`pool`]: executor pools — the owner's dispatch of pooled calls and the pool
//!   workers' call slots.
//! - [`serve`]: `toolhost serve --database`'s backend — the API over the run queue.
//!
//! Each of the worker's `concurrency` slots loops: claim the next claimable run
//! ([`Database::claim_next`], `FOR UPDATE SKIP LOCKED`) under a lease it renews, else wait
//! for the queue's notification ([`Database::listen`]) or the poll interval (an expired
//! lease frees a run without one). A claimed run with no journal is started from its
//! submitted [`Spec`]; one with a journal is taken over and carried on exactly as
//! `toolhost resume` does: no finished step runs again, and a step that started, did not
//! finish and is not idempotent is not run again either — the run stops
//! `waiting_for_decision`, until a person's decision (`rerun`/`abandon`, recorded through
//! `toolhost serve`'s API) makes it claimable again. A run submitted with `approve` parks
//! for each approval in the database (`approver`), answered through any replica. A slot whose lease is lost stops working on that run at once
//! (its appends are refused by the fence in any case).
//!
//! A worker may also (or only: `--pool` without `--runs`) be a worker of executor pools
//! ([`pool`]): its call slots run the calls of pooled tools that the owners of runs queue,
//! under the worker's own policy. A run slot hands the calls of its runs' pooled tools to
//! the pools (`pool::PgDispatch`) and journals what comes back.
//!
//! [`Stopper::stop`] ends claiming; [`Worker::run`] then waits up to the grace period for
//! the runs in flight and hands back the leases of those still going, for another worker
//! to take over.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use serde::Serialize;

use self::slot::Slot;
use toolhost_runtime::Runtime;
use toolhost_store_pg::{Database, Lease, Status};

mod approver;
pub mod pool;
pub mod serve;
mod slot;
pub mod spec;

pub use self::pool::Pools;
pub use self::spec::Spec;

/// How a [`Worker`] works. `Default`:
/// - tools found in `TOOLHOST_TOOLS_DIR` (none given),
/// - one run at a time,
/// - a 30 s lease, renewed every third of it,
/// - a 2 s poll when no notification comes (every wait on the database: runs to claim,
///   pool calls and their outcomes, decisions, followed runs),
/// - a 30 s grace period at shutdown,
/// - an owner name of `toolhost worker, pid P on HOST`;
/// - runs claimed (`runs`), and no executor pool's calls (`pools`: none).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct WorkerConfig {
    pub tools_dir: Option<PathBuf>,
    /// Run slots, and as many call slots when the worker serves pools.
    pub concurrency: usize,
    /// Claim whole runs (a worker of pools only may leave them to others).
    pub runs: bool,
    /// The executor pools whose calls this worker runs, and its policy for them.
    pub pools: Option<Pools>,
    pub lease: Duration,
    pub poll: Duration,
    pub grace: Duration,
    pub owner: String,
}

impl Default for WorkerConfig {
    fn default() -> WorkerConfig {
        WorkerConfig {
            tools_dir: None,
            concurrency: 1,
            runs: true,
            pools: None,
            lease: toolhost_app::database::LEASE,
            poll: Duration::from_secs(2),
            grace: Duration::from_secs(30),
            owner: format!(
                "toolhost worker, pid {} on {}",
                std::process::id(),
                toolhost_journal::lock::hostname()
            ),
        }
    }
}

/// What a worker did, counted as it goes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct WorkerStats {
    /// Runs started from their spec.
    pub started: u64,
    /// Runs taken over from their journal (a replica died, was fenced, or handed it back).
    pub taken_over: u64,
    pub completed: u64,
    pub waiting_for_decision: u64,
    /// Stopped for any other reason, or could not be started.
    pub failed: u64,
    pub cancelled: u64,
    /// Runs whose lease this worker lost while it ran them.
    pub lost: u64,
    /// Runs handed back at shutdown, unfinished.
    pub handed_back: u64,
    /// Pool calls run and their outcome written (refused ones included).
    pub calls_run: u64,
    /// Pool calls this worker's policy refused.
    pub calls_refused: u64,
    /// Pool calls withdrawn or given up while they ran: no outcome written.
    pub calls_dropped: u64,
}

#[derive(Default)]
struct Counters {
    started: AtomicU64,
    taken_over: AtomicU64,
    completed: AtomicU64,
    waiting_for_decision: AtomicU64,
    failed: AtomicU64,
    cancelled: AtomicU64,
    lost: AtomicU64,
    handed_back: AtomicU64,
    calls_run: AtomicU64,
    calls_refused: AtomicU64,
    calls_dropped: AtomicU64,
}

impl Counters {
    fn snapshot(&self) -> WorkerStats {
        let n = |c: &AtomicU64| c.load(Ordering::Relaxed);
        WorkerStats {
            started: n(&self.started),
            taken_over: n(&self.taken_over),
            completed: n(&self.completed),
            waiting_for_decision: n(&self.waiting_for_decision),
            failed: n(&self.failed),
            cancelled: n(&self.cancelled),
            lost: n(&self.lost),
            handed_back: n(&self.handed_back),
            calls_run: n(&self.calls_run),
            calls_refused: n(&self.calls_refused),
            calls_dropped: n(&self.calls_dropped),
        }
    }

    fn ended(&self, status: Status) {
        let c = match status {
            Status::Completed => &self.completed,
            Status::WaitingForDecision => &self.waiting_for_decision,
            Status::Cancelled => &self.cancelled,
            _ => &self.failed,
        };
        c.fetch_add(1, Ordering::Relaxed);
    }
}

/// State the slots share with [`Worker::run`] and the [`Stopper`].
struct Shared {
    stopping: AtomicBool,
    /// Runs in flight: their leases, to hand back if the grace period ends first.
    active: Mutex<BTreeMap<String, Lease>>,
    /// Pool calls running in the call slots.
    calls_in_flight: AtomicUsize,
    /// Signalled when a run or a pool call ends, or stopping begins.
    changed: Condvar,
    /// Wakes the run slots waiting for their pool calls' outcomes (started with the
    /// first).
    outcomes: std::sync::OnceLock<Arc<pool::Outcomes>>,
    counters: Counters,
    /// Told the report of each run a slot drove to a stop (a server's `/metrics`).
    on_report: std::sync::OnceLock<ReportHook>,
}

/// What [`Worker::on_report`] is given.
type ReportHook = Box<dyn Fn(&toolhost_engine::RunReport) + Send + Sync>;

/// Ends a [`Worker`]'s claiming (from a signal handler's thread, say). Cheap to clone.
#[derive(Clone)]
pub struct Stopper(Arc<Shared>);

impl Stopper {
    pub fn stop(&self) {
        self.0.stopping.store(true, Ordering::SeqCst);
        self.0.changed.notify_all();
    }
}

/// A replica working the run queue of one database (see the module doc).
pub struct Worker {
    db: Database,
    rt: Arc<Runtime>,
    config: WorkerConfig,
    shared: Arc<Shared>,
}

impl Worker {
    pub fn new(db: Database, rt: Arc<Runtime>, config: WorkerConfig) -> Worker {
        Worker {
            db,
            rt,
            config,
            shared: Arc::new(Shared {
                stopping: AtomicBool::new(false),
                active: Mutex::new(BTreeMap::new()),
                calls_in_flight: AtomicUsize::new(0),
                changed: Condvar::new(),
                outcomes: std::sync::OnceLock::new(),
                counters: Counters::default(),
                on_report: std::sync::OnceLock::new(),
            }),
        }
    }

    /// Has `f` told the report of each run this worker drives to a stop (once per
    /// worker: a second hook is ignored).
    pub fn on_report(&self, f: impl Fn(&toolhost_engine::RunReport) + Send + Sync + 'static) {
        let _ = self.shared.on_report.set(Box::new(f));
    }

    pub fn stopper(&self) -> Stopper {
        Stopper(self.shared.clone())
    }

    /// What the worker did so far.
    pub fn stats(&self) -> WorkerStats {
        self.shared.counters.snapshot()
    }

    /// Works the queue until [`Stopper::stop`], then waits up to the grace period for the
    /// runs in flight and hands back the leases of those still going; returns what it did.
    /// Fails only when a slot cannot listen for the queue's notifications at the start.
    pub fn run(&self) -> Result<WorkerStats, toolhost_store_pg::PgError> {
        if let Some(pools) = &self.config.pools {
            self.start_call_slots(pools)?;
        }
        let run_slots = if self.config.runs {
            self.config.concurrency.max(1)
        } else {
            0
        };
        for _ in 0..run_slots {
            let listener = self.db.listen()?;
            let slot = Slot {
                db: self.db.clone(),
                rt: self.rt.clone(),
                config: self.config.clone(),
                shared: self.shared.clone(),
            };
            // Not joined: a run still going when the grace period ends is handed back,
            // and the process exits under it.
            std::thread::Builder::new()
                .name("toolhost-worker".into())
                .spawn(move || slot.work(&listener))
                .map_err(|_| toolhost_store_pg::PgError::Stopped)?;
        }
        let shared = &self.shared;
        let mut active = shared.active.lock().unwrap_or_else(|p| p.into_inner());
        while !shared.stopping.load(Ordering::SeqCst) {
            active = shared
                .changed
                .wait(active)
                .unwrap_or_else(|p| p.into_inner());
        }
        let deadline = Instant::now() + self.config.grace;
        while !active.is_empty() || shared.calls_in_flight.load(Ordering::SeqCst) > 0 {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            active = shared
                .changed
                .wait_timeout(active, left)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
        for (run, lease) in std::mem::take(&mut *active) {
            match self.db.hand_back(&lease) {
                Ok(()) => {
                    tracing::info!(%run, "handed back at shutdown");
                    shared.counters.handed_back.fetch_add(1, Ordering::Relaxed);
                }
                Err(e) => tracing::warn!(%run, error = %e, "could not hand the run back"),
            }
        }
        Ok(shared.counters.snapshot())
    }

    /// Starts `concurrency` call slots for `pools`, each listening for queued calls.
    fn start_call_slots(&self, pools: &Pools) -> Result<(), toolhost_store_pg::PgError> {
        let slots = Arc::new(pool::CallSlots {
            db: self.db.clone(),
            rt: self.rt.clone(),
            pools: pools.clone(),
            tools_dir: self.config.tools_dir.clone(),
            owner: self.config.owner.clone(),
            lease: self.config.lease,
            poll: self.config.poll,
            shared: self.shared.clone(),
            gate: toolhost_runtime::policy::Gate::new(),
            tools: Mutex::new(BTreeMap::new()),
            secrets: pool::secrets(&pools.policy),
        });
        for _ in 0..self.config.concurrency.max(1) {
            let listener = self.db.listen_calls()?;
            let slots = slots.clone();
            // Not joined, as the run slots: a call still going at the end of the grace
            // period is left to its lease.
            std::thread::Builder::new()
                .name("toolhost-pool".into())
                .spawn(move || slots.work(&listener))
                .map_err(|_| toolhost_store_pg::PgError::Stopped)?;
        }
        Ok(())
    }
}
