//! The run session: one run driven from its start (fresh, or a checkpoint) to its stop.
//! `toolhost run`, `resume` and `replay`, a worker's slot, a server's run and an eval
//! suite's task all drive their runs through a [`Session`]; the first three also hold the
//! run's journal through an [`Opened`] (a file, or a database lease), which the session
//! releases when the run is over.
//!
//! Data flows: [`open`] (the journal's first record, in the state directory or the
//! database) → [`Session::new`] with its builder's options → [`Session::run`] (drive,
//! then release the claim) → [`Ended`] (the report, the journal, the verdict).

use std::io::Write;
use std::path::Path;
use std::sync::Arc;

use crate::error::AppError;
use crate::journal::JournalOptions;
use crate::load::Loaded;
use crate::telemetry::Telemetry;
use toolhost_engine::approval::{Approver, Unattended};
use toolhost_engine::validate::Catalog;
use toolhost_engine::{Cancel, Checkpoint, Dispatch, Observer, Planner, StopReason, Unfinished};
use toolhost_engine::{Engine, Quiet, RunReport};
use toolhost_journal::{Journal, Tee};
use toolhost_runtime::Runtime;

/// How a run begins.
enum Start {
    Fresh,
    Resume(Box<Checkpoint>, Unfinished),
}

/// Who else holds a run's journal while it runs, released when the run is over.
enum Holder {
    /// Nobody: a journal file (its lock, if any, is the journal's own).
    Alone,
    /// A new run's lease in the database.
    Claim(crate::database::Claim),
    /// The lease claimed to carry a run of the database on; `waiting` when it stops at
    /// once for a decision on a step (see [`crate::resume::needs_decision`]).
    Resuming {
        claim: crate::database::Resuming,
        waiting: bool,
    },
}

/// A run's journal, open for writing, with the lease it is written under.
pub struct Opened {
    pub journal: Journal,
    holder: Holder,
}

impl Opened {
    /// A journal this process alone writes (a file, or a database lease held elsewhere).
    pub fn alone(journal: Journal) -> Opened {
        Opened {
            journal,
            holder: Holder::Alone,
        }
    }

    /// A journal of the database carried on under `claim` (`waiting`: see
    /// [`crate::resume::needs_decision`]).
    pub(crate) fn resuming(
        journal: Journal,
        claim: crate::database::Resuming,
        waiting: bool,
    ) -> Opened {
        Opened {
            journal,
            holder: Holder::Resuming { claim, waiting },
        }
    }

    /// Nothing was carried on: the run is left as it stood (a database run is given back).
    pub(crate) fn abandon(self, err: &mut dyn Write) {
        self.release(None, err);
    }

    /// The run is over (`report`), or could not go on (`None`): nobody writes it any
    /// more. A database run is left with the status its report says.
    fn release(self, report: Option<&RunReport>, err: &mut dyn Write) -> Journal {
        match self.holder {
            Holder::Alone => {}
            Holder::Claim(c) => c.release(report, err),
            Holder::Resuming { claim, waiting } => match report {
                Some(r) => claim.finish(r, waiting, err),
                None => claim.give_back(err),
            },
        }
        self.journal
    }
}

/// Creates the journal of a new run (or of a replay of `replay_of`) and writes its first
/// record: in the database at `database` under a lease this process holds, else in the
/// state directory.
pub fn open(
    database: Option<&crate::database::Place<'_>>,
    options: &JournalOptions,
    task_file: &Path,
    loaded: &Loaded,
    replay_of: Option<&str>,
) -> Result<Opened, AppError> {
    Ok(match database {
        Some(place) => {
            let (start, redactor) =
                crate::journal::run_start(options, task_file, loaded, replay_of)?;
            let (journal, claim) = crate::database::open(place, &start, redactor)?;
            Opened {
                journal,
                holder: Holder::Claim(claim),
            }
        }
        None => Opened::alone(crate::journal::open(options, task_file, loaded, replay_of)?),
    })
}

/// A run that reached its stop: its report and journal.
pub struct Ended {
    pub report: RunReport,
    pub journal: Journal,
}

/// How a run ended, for a front door to answer (an exit code).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Completed, or the planner stopped.
    Completed,
    /// Stopped for any other reason (a budget, a rejection, a cancellation, …).
    Stopped,
}

impl Ended {
    /// Whether the run completed; a journal that could not be written all the way is
    /// [`AppError::Journal`], whatever the run did.
    pub fn verdict(&self) -> Result<Verdict, AppError> {
        if let Some(e) = self.journal.error() {
            return Err(AppError::Journal(format!(
                "{e}: the run's journal ends there"
            )));
        }
        Ok(match self.report.stop {
            StopReason::Completed | StopReason::PlannerStopped => Verdict::Completed,
            _ => Verdict::Stopped,
        })
    }
}

/// One run to drive. `Session::new` starts fresh with:
/// - the policy's `approval` deciding steps, and plans run as validated (no person asked);
/// - nothing watching (no progress lines);
/// - no trace export;
/// - a cancellation of its own, which Ctrl-C triggers;
/// - no executor pools: a task whose policy routes a tool to one is refused.
pub struct Session<'s> {
    rt: Arc<Runtime>,
    loaded: Loaded,
    planner: Box<dyn Planner + 's>,
    start: Start,
    telemetry: Option<Telemetry>,
    approver: Option<Box<dyn Approver + 's>>,
    observer: Option<Box<dyn Observer + 's>>,
    cancel: Option<Cancel>,
    ctrl_c: bool,
    dispatch: Option<Arc<dyn Dispatch>>,
}

impl<'s> Session<'s> {
    pub fn new(
        rt: impl Into<Arc<Runtime>>,
        loaded: Loaded,
        planner: Box<dyn Planner + 's>,
    ) -> Session<'s> {
        Session {
            rt: rt.into(),
            loaded,
            planner,
            start: Start::Fresh,
            telemetry: None,
            approver: None,
            observer: None,
            cancel: None,
            ctrl_c: false,
            dispatch: None,
        }
    }

    /// Carries a run on from `checkpoint`, with the decisions `unfinished` on the steps
    /// it cut off.
    pub fn resume(mut self, checkpoint: Checkpoint, unfinished: Unfinished) -> Self {
        self.start = Start::Resume(Box::new(checkpoint), unfinished);
        self
    }

    /// Exports the run's spans to `telemetry` (and shuts it down when the run is over).
    pub fn telemetry(mut self, telemetry: Option<Telemetry>) -> Self {
        self.telemetry = telemetry;
        self
    }

    /// Has `approver` decide plans, steps and questions instead of the policy.
    pub fn approver(mut self, approver: impl Approver + 's) -> Self {
        self.approver = Some(Box::new(approver));
        self
    }

    /// Tells `observer` what happens (progress lines), besides the journal.
    pub fn observer(mut self, observer: impl Observer + 's) -> Self {
        self.observer = Some(Box::new(observer));
        self
    }

    /// Ends the run `cancelled` when `cancel` is triggered; Ctrl-C then no longer does,
    /// unless [`Session::ctrl_c`] says so.
    pub fn cancel(mut self, cancel: Cancel) -> Self {
        self.cancel = Some(cancel);
        self
    }

    /// Ctrl-C cancels the run as well as the cancellation given (`toolhost run`,
    /// `resume`, workers; `toolhost serve` handles its signals itself).
    pub fn ctrl_c(mut self) -> Self {
        self.ctrl_c = true;
        self
    }

    /// Sends the calls of tools routed to an executor pool to `dispatch` (a worker on
    /// PostgreSQL).
    pub fn dispatch(mut self, dispatch: Arc<dyn Dispatch>) -> Self {
        self.dispatch = Some(dispatch);
        self
    }

    /// Drives the run to its stop, then releases `opened` (a database run is left with
    /// the status its report says); warnings go to `err`.
    pub fn run(self, opened: Opened, err: &mut dyn Write) -> Result<Ended, AppError> {
        let report = self.drive(&opened.journal, err);
        let journal = opened.release(report.as_ref().ok(), err);
        Ok(Ended {
            report: report?,
            journal,
        })
    }

    /// Drives the run to its stop, journaling to `journal`; warnings go to `err`.
    pub fn drive(self, journal: &Journal, err: &mut dyn Write) -> Result<RunReport, AppError> {
        if self.dispatch.is_none() {
            self.loaded.runs_here()?;
        }
        let Session {
            rt,
            loaded,
            mut planner,
            start,
            telemetry,
            approver,
            observer,
            cancel,
            ctrl_c,
            dispatch,
        } = self;
        let Loaded {
            task,
            policy,
            tools,
            extractor,
            interpreter,
            ..
        } = loaded;
        // Ctrl-C ends the run `cancelled`, with the steps it cut off on record.
        let interrupt = ctrl_c || cancel.is_none();
        let cancel = cancel.unwrap_or_default();
        let mut approver = approver.unwrap_or_else(|| Box::new(Unattended(policy.approval)));
        let mut approvals = journal.approvals(approver.as_mut());
        let tokio = async_runtime(telemetry.as_ref())?;
        let mut observer = observer.unwrap_or_else(|| Box::new(Quiet));
        let mut journal_observer = journal.clone();
        let mut tee = Tee(&mut journal_observer, observer.as_mut());
        let mut engine = Engine::builder(rt, Arc::new(Catalog { tools }))
            .config(task.config.clone())
            .approver(&mut approvals)
            .observer(&mut tee);
        if let Some(d) = dispatch {
            engine = engine.dispatch(d);
        }
        if let Some(e) = extractor {
            engine = engine.extractor(e);
        }
        if let Some(i) = interpreter {
            engine = engine.interpreter(i);
        }
        let mut engine = engine.build();
        if interrupt {
            let on_interrupt = cancel.clone();
            tokio.spawn(async move {
                if tokio::signal::ctrl_c().await.is_ok() {
                    on_interrupt.cancel();
                }
            });
        }
        let run = || match start {
            Start::Fresh => tokio.block_on(engine.run_until(&task.goal, planner.as_mut(), &cancel)),
            Start::Resume(checkpoint, unfinished) => {
                tokio.block_on(engine.resume(*checkpoint, planner.as_mut(), &unfinished, &cancel))
            }
        };
        let report = match &telemetry {
            Some(t) => tracing::dispatcher::with_default(t.dispatch(), run),
            None => run(),
        };
        // The run's spans are closed: send them before anything else can end the process.
        if let Some(Err(e)) = telemetry.map(Telemetry::shutdown) {
            crate::warn(err, &e);
        }
        Ok(report)
    }
}

/// The async runtime a run's engine runs on; its threads export to `telemetry`.
fn async_runtime(telemetry: Option<&Telemetry>) -> Result<tokio::runtime::Runtime, AppError> {
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    if let Some(t) = telemetry {
        t.install_on(&mut builder);
    }
    builder
        .enable_all()
        .build()
        .map_err(|e| AppError::Load(format!("cannot start the async runtime: {e}")))
}
