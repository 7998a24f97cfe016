//! One slot of a [`Worker`](super::Worker): claims a run, then starts it from its spec or
//! takes it over from its journal, and records how it ended.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use super::approver::DbApprover;
use super::pool::PgDispatch;
use super::{Shared, Spec, WorkerConfig};
use toolhost_app::database::status_of;
use toolhost_app::journal::JournalOptions;
use toolhost_app::load::{Loaded, load};
use toolhost_app::resume::{
    BudgetOverrides, Prepared, Resumed, Setup, mark_resumed, needs_decision, prepare,
};
use toolhost_app::session::Session;
use toolhost_app::{AppError, PlannerOptions, planner};
use toolhost_engine::{Cancel, RunReport, Unfinished};
use toolhost_journal::{Journal, Kind};
use toolhost_runtime::Runtime;
use toolhost_store_pg::{Database, Lease, LeaseEvent, PgStore, Status};

/// One of a worker's slots: claims and runs one run at a time.
pub(super) struct Slot {
    pub(super) db: Database,
    pub(super) rt: Arc<Runtime>,
    pub(super) config: WorkerConfig,
    pub(super) shared: Arc<Shared>,
}

/// How a claimed run ended for this slot.
enum Ended {
    /// Stopped: its status and stop reason.
    Stopped(Status, String),
    /// The lease was lost while it ran: nothing more is this slot's to record.
    Lost,
}

impl Slot {
    fn stopping(&self) -> bool {
        self.shared.stopping.load(Ordering::SeqCst)
    }

    pub(super) fn work(&self, listener: &toolhost_store_pg::Listener) {
        while !self.stopping() {
            match self.db.claim_next(&self.config.owner, self.config.lease) {
                Ok(Some(lease)) => self.carry(lease),
                Ok(None) => {
                    listener.wait(self.config.poll);
                }
                Err(e) => {
                    tracing::warn!(error = %e, "cannot claim a run; trying again");
                    std::thread::sleep(self.config.poll);
                }
            }
        }
    }

    /// Runs the claimed run `lease` to its end (or until its lease is lost) and records
    /// how it ended.
    fn carry(&self, lease: Lease) {
        let run = lease.run.clone();
        {
            let mut active = self.shared.active.lock().unwrap_or_else(|p| p.into_inner());
            active.insert(run.clone(), lease.clone());
        }
        let cancel = Cancel::new();
        let lost = Arc::new(AtomicBool::new(false));
        let renewer = {
            let (cancel, lost) = (cancel.clone(), lost.clone());
            self.db.keep_watching(&lease, move |event| match event {
                LeaseEvent::CancelRequested { by } => {
                    crate::approver::cancel_by(&cancel, by.as_deref());
                }
                LeaseEvent::Lost(_) => {
                    lost.store(true, Ordering::SeqCst);
                    // Stop at once: nothing of this run is ours to write any more.
                    cancel.cancel();
                }
                _ => {}
            })
        };
        let ended = match self.execute(&lease, cancel) {
            _ if lost.load(Ordering::SeqCst) => Ended::Lost,
            Ok(ended) => ended,
            Err(e) => Ended::Stopped(Status::Failed, e.to_string()),
        };
        drop(renewer);
        let still_ours = {
            let mut active = self.shared.active.lock().unwrap_or_else(|p| p.into_inner());
            // Gone when the grace period ended and the lease was handed back.
            active.remove(&run).is_some()
        };
        let counters = &self.shared.counters;
        match ended {
            Ended::Lost => {
                tracing::warn!(%run, epoch = lease.epoch, "lease lost; left to its new holder");
                counters.lost.fetch_add(1, Ordering::Relaxed);
            }
            Ended::Stopped(status, reason) if still_ours => {
                match self.db.finish(&lease, status, &reason) {
                    Ok(()) => {
                        tracing::info!(%run, %status, %reason, "run ended");
                        counters.ended(status);
                    }
                    Err(e) => {
                        tracing::warn!(%run, error = %e, "the run's end could not be recorded");
                        counters.lost.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
            Ended::Stopped(..) => {}
        }
        self.shared.changed.notify_all();
    }

    /// Starts or takes over `lease`'s run, as its journal says.
    fn execute(&self, lease: &Lease, cancel: Cancel) -> Result<Ended, AppError> {
        let pg = |e: toolhost_store_pg::PgError| AppError::Journal(e.to_string());
        let info = self.db.run_info(&lease.run).map_err(pg)?;
        let journal = self.db.verify(&lease.run, None).map_err(pg)?;
        let spec = info
            .spec
            .as_deref()
            .map(serde_json::from_str::<Spec>)
            .transpose()
            .map_err(|e| {
                AppError::Usage(format!(
                    "run {} has a spec this worker cannot read: {e}",
                    lease.run
                ))
            })?;
        if journal.records.is_empty() {
            let Some(spec) = spec else {
                return Err(AppError::Usage(format!(
                    "run {} has neither a journal nor a spec to start from",
                    lease.run
                )));
            };
            self.shared.counters.started.fetch_add(1, Ordering::Relaxed);
            return self.start(lease, &spec, cancel);
        }
        if let Some(p) = &journal.problem {
            return Err(AppError::Journal(format!(
                "the journal of run {} is broken, so it cannot be carried on: {p}",
                lease.run
            )));
        }
        // A run whose end was journaled but not recorded in its row (its worker died
        // between the two) is only recorded.
        if let Some(end) = journal.records.last().filter(|r| r.kind == Kind::Stopped) {
            let reason = end.data["reason"].as_str().unwrap_or_default();
            if reason == "completed" || reason == "planner_stopped" {
                return Ok(Ended::Stopped(Status::Completed, reason.to_string()));
            }
        }
        self.shared
            .counters
            .taken_over
            .fetch_add(1, Ordering::Relaxed);
        let unfinished = decided(info.decision.as_deref());
        self.take_over(lease, spec.as_ref(), journal, unfinished, cancel)
    }

    /// Starts run `lease` from `spec`.
    fn start(&self, lease: &Lease, spec: &Spec, cancel: Cancel) -> Result<Ended, AppError> {
        let mut loaded = load(
            &self.rt,
            &spec.task,
            self.config.tools_dir.as_deref(),
            &spec.overrides(),
        )?;
        if let Some(n) = spec.max_steps {
            loaded.task.config.budgets.max_steps = n;
        }
        let now = toolhost_app::journal::digest(&spec.task)?;
        toolhost_app::resume::same(
            "task file",
            &now.path,
            &now.sha256,
            &spec.task_sha256,
            &lease.run,
        )?;
        let planner = planner::build(&loaded.task, &spec.planner(), None)?;
        loaded.extractor = planner::extractor(&loaded.task)?;
        let options = JournalOptions {
            redact: spec.redact.clone(),
            state_dir: None,
            writer: None,
        };
        let (start, redactor) =
            toolhost_app::journal::run_start(&options, &spec.task, &loaded, None)?;
        let store = PgStore::new(&self.db, lease.clone());
        let journal = Journal::create_in(Box::new(store), &lease.run, &start, redactor)
            .map_err(|e| AppError::Journal(e.to_string()))?;
        let api = self.approver(lease, spec.approve, &loaded, &cancel);
        let session = Session::new(self.rt.clone(), loaded, planner).approver(api);
        let report = self.drive(lease, session, &journal, cancel)?;
        Ok(ended(&report, false))
    }

    /// Carries run `lease` on from its journal `first`, as `toolhost resume` does with the
    /// decisions `unfinished` on its unfinished steps (a person's, through the API).
    fn take_over(
        &self,
        lease: &Lease,
        spec: Option<&Spec>,
        first: toolhost_journal::Verified,
        unfinished: Unfinished,
        cancel: Cancel,
    ) -> Result<Ended, AppError> {
        let (options, overrides, redact) = match spec {
            Some(s) => (
                s.planner(),
                s.planner().overrides(),
                JournalOptions {
                    redact: s.redact.clone(),
                    state_dir: None,
                    writer: None,
                },
            ),
            None => {
                let options = PlannerOptions::default();
                let overrides = options.overrides();
                (options, overrides, JournalOptions::default())
            }
        };
        let Prepared {
            loaded,
            redactor,
            resumable,
        } = prepare(
            &self.rt,
            &first,
            &lease.run,
            &Setup {
                task: None,
                tools_dir: self.config.tools_dir.as_deref(),
                overrides: &overrides,
                redact: &redact,
                budgets: &BudgetOverrides::default(),
            },
        )?;
        let waiting = needs_decision(&resumable, &unfinished);
        let planner = planner::build(&loaded.task, &options, None)?;
        let store = PgStore::new(&self.db, lease.clone());
        let (journal, reopened) = Journal::reopen_in(Box::new(store), first, redactor)
            .map_err(|e| AppError::Journal(e.to_string()))?;
        let resumed = Resumed {
            resumable: &resumable,
            unfinished: &unfinished,
            budgets: &loaded.task.config.budgets,
        };
        mark_resumed(&journal, &reopened, &resumed)?;
        let approve = spec.is_some_and(|s| s.approve);
        let api = self.approver(lease, approve, &loaded, &cancel);
        let session = Session::new(self.rt.clone(), loaded, planner)
            .resume(resumable.checkpoint, unfinished)
            .approver(api);
        let report = self.drive(lease, session, &journal, cancel)?;
        Ok(ended(&report, waiting))
    }

    /// The approver of run `lease`: questions always wait for the API; with `approve`,
    /// plans and steps too, else the policy's `approval` decides them.
    fn approver(
        &self,
        lease: &Lease,
        approve: bool,
        loaded: &Loaded,
        cancel: &Cancel,
    ) -> DbApprover {
        DbApprover {
            db: self.db.clone(),
            lease: lease.clone(),
            cancel: cancel.clone(),
            poll: self.config.poll,
            reviews: if approve {
                None
            } else {
                Some(loaded.policy.approval)
            },
            last: None,
            proposed: None,
            check: None,
        }
    }

    /// Drives `session` (its approver set) to its stop, sending its pooled calls to the
    /// pools through the database.
    fn drive(
        &self,
        lease: &Lease,
        session: Session<'_>,
        journal: &Journal,
        cancel: Cancel,
    ) -> Result<RunReport, AppError> {
        let dispatch = Arc::new(PgDispatch {
            db: self.db.clone(),
            run: lease.run.clone(),
            slack: self.config.lease,
            poll: self.config.poll,
            shared: self.shared.clone(),
        });
        let report = session
            .cancel(cancel)
            .ctrl_c()
            .dispatch(dispatch)
            .drive(journal, &mut std::io::sink())?;
        if let Some(hook) = self.shared.on_report.get() {
            hook(&report);
        }
        Ok(report)
    }
}

/// The decisions on unfinished steps a person recorded (`{"rerun": [..], "abandon":
/// [..]}`), if any.
fn decided(decision: Option<&str>) -> Unfinished {
    #[derive(serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Decided {
        #[serde(default)]
        rerun: Vec<toolhost_engine::StepId>,
        #[serde(default)]
        abandon: Vec<toolhost_engine::StepId>,
    }
    let Some(text) = decision else {
        return Unfinished::default();
    };
    // A decision on a pending approval left behind by a holder that died is no decision
    // on unfinished steps: the run parks again for it.
    let Ok(d) = serde_json::from_str::<Decided>(text) else {
        return Unfinished::default();
    };
    Unfinished {
        rerun: d.rerun.into_iter().collect(),
        abandon: d.abandon.into_iter().collect(),
    }
}

/// How a run that stopped as `report` says ended (`waiting`: see [`status_of`]).
fn ended(report: &RunReport, waiting: bool) -> Ended {
    let (status, reason) = status_of(report, waiting);
    Ended::Stopped(status, reason)
}
