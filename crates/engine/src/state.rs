//! The mutable state of one run, shared by the mode loops, the executor and resume. Below
//! all of them: a resumed run is a [`State`] filled from a checkpoint, handed to the same
//! loops.

use std::collections::{BTreeMap, VecDeque};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::budget::Spent;
use super::cancel::Cancel;
use super::flow::Provenance;
use super::plan::{OperationName, Plan, Step, StepId, ToolName};
use super::record::{StepRecord, StepStatus};
use super::report::PlannerCall;
use super::validate::ValidPlan;

/// Mutable state of a run.
pub(crate) struct State {
    pub cancel: Cancel,
    pub started: Instant,
    /// Time spent waiting for people (reviews, approvals, answers): not the run's time.
    pub waited: Duration,
    /// How long one wait for a person may last (`max_wait_ms`).
    pub wait_limit: Option<Duration>,
    /// A wait outlasted `wait_limit`: the run was cancelled to end it, and stops
    /// `budget_exhausted (wait for a person)`.
    pub wait_expired: bool,
    pub spent: Spent,
    pub outputs: BTreeMap<StepId, Value>,
    /// `(tool, operation)` of each succeeded step, for references from later revisions.
    pub done: BTreeMap<StepId, (ToolName, OperationName)>,
    pub records: Vec<StepRecord>,
    pub revisions: Vec<Plan>,
    pub calls: Vec<PlannerCall>,
    /// A resumed run's revision to carry on with, taken by the first loop iteration.
    pub resume: Option<ResumePoint>,
    /// Steps of the revision about to run that finished before a resume, taken by
    /// `execute`.
    pub prior: BTreeMap<StepId, StepStatus>,
    /// A planner answer received (and journaled, and paid for) before a resume, not yet
    /// acted on: served to the first question it answers instead of asking again.
    pub pending: Option<PlannerCall>,
    /// How many calls each configured fault has matched so far (`fault::Faults::fire`).
    pub fault_calls: Vec<u32>,
    /// Actions the policy refused so far, before a resume too.
    pub refused: u64,
    /// The taint of each succeeded step's output, and of what the planner has read.
    pub provenance: Provenance,
    /// Code mode: a resumed run's program to carry on with, taken by the first loop
    /// iteration.
    pub program: Option<Carried>,
    /// Code mode: the calls the journal holds for the running program, not yet made
    /// again by it, in the program's order (empty but in a resumed program).
    pub journaled: VecDeque<Journaled>,
}

/// Code mode: a call of the resumed program that the journal holds, in the program's
/// order (`code::durable`).
#[derive(Debug, Clone)]
pub(crate) enum Journaled {
    /// It finished (or was refused, or abandoned): its record is served.
    Done(StepRecord),
    /// It was cut off and a person said to run it again: it runs under its id.
    Rerun(Step),
}

/// The program a resumed run carries on with.
#[derive(Debug, Clone)]
pub(crate) struct Carried {
    pub plan: Plan,
    /// Its calls the journal holds, in the program's order.
    pub calls: VecDeque<Journaled>,
    /// Its failed `program` step, when it had ended before the stop: it is not run again,
    /// the planner is asked for the next revision.
    pub failed: Option<Box<StepRecord>>,
}

/// The revision a resumed run carries on with (taken by the mode's loop).
#[derive(Debug, Clone)]
pub(crate) struct ResumePoint {
    pub plan: ValidPlan,
    pub approved: bool,
    pub handoff: bool,
    pub confidence: f64,
}

impl State {
    pub fn new(cancel: &Cancel) -> State {
        State {
            cancel: cancel.clone(),
            started: Instant::now(),
            waited: Duration::ZERO,
            wait_limit: None,
            wait_expired: false,
            spent: Spent::default(),
            outputs: BTreeMap::new(),
            done: BTreeMap::new(),
            records: Vec::new(),
            revisions: Vec::new(),
            calls: Vec::new(),
            resume: None,
            prior: BTreeMap::new(),
            pending: None,
            fault_calls: Vec::new(),
            refused: 0,
            provenance: Provenance::default(),
            program: None,
            journaled: VecDeque::new(),
        }
    }

    /// Brings the wall time spent up to date: time since the start, less time spent
    /// waiting for people.
    pub fn tick(&mut self) {
        self.spent.wall = self.started.elapsed().saturating_sub(self.waited);
    }

    /// Runs `f`, which waits for a person, and counts its time as waiting, not as the
    /// run's. A wait that outlasts `wait_limit` cancels the run, which every approver
    /// heeds: `f` returns, and the run stops at the wait budget.
    pub fn waiting<T>(&mut self, f: impl FnOnce() -> T) -> T {
        let at = Instant::now();
        let watchdog = self
            .wait_limit
            .map(|limit| Watchdog::arm(limit, &self.cancel));
        let out = f();
        if let Some(w) = watchdog {
            self.wait_expired |= w.disarm();
        }
        self.waited += at.elapsed();
        self.tick();
        out
    }

    pub fn micros(&self) -> u64 {
        u64::try_from(self.started.elapsed().as_micros()).unwrap_or(u64::MAX)
    }

    /// Takes in a step that succeeded: its output for later references, its id and
    /// operation for later revisions' validation.
    pub fn remember(&mut self, r: &StepRecord) {
        if let Some(out) = &r.output {
            self.outputs.insert(r.id.clone(), out.clone());
        }
        self.done
            .insert(r.id.clone(), (r.tool.clone(), r.operation.clone()));
        self.provenance
            .steps
            .insert(r.id.clone(), r.untrusted.clone());
    }
}

/// Cancels a run when one wait for a person lasts longer than its limit. A thread per
/// wait: waits are for people, seconds to days apart, never on a hot path.
struct Watchdog {
    /// Dropped (or sent to) when the wait ends in time.
    done: std::sync::mpsc::Sender<()>,
    thread: std::thread::JoinHandle<bool>,
}

impl Watchdog {
    fn arm(limit: Duration, cancel: &Cancel) -> Watchdog {
        let (done, ended) = std::sync::mpsc::channel::<()>();
        let cancel = cancel.clone();
        let thread = std::thread::spawn(move || {
            let expired = matches!(
                ended.recv_timeout(limit),
                Err(std::sync::mpsc::RecvTimeoutError::Timeout)
            );
            if expired {
                cancel.cancel();
            }
            expired
        });
        Watchdog { done, thread }
    }

    /// Ends the watch; whether the limit was reached first.
    fn disarm(self) -> bool {
        let _ = self.done.send(());
        self.thread.join().unwrap_or(false)
    }
}
