//! What the API shows of a run of the queue: its view, built from its row and journal
//! rows, with the decision it waits for (an approval parked in its row, or the unfinished
//! steps of a run taken over).

use serde_json::json;
use toolhost_journal::{Kind, Record};
use toolhost_serve::{Head, Outcome, Pending, RegistryError, RunState, RunView};
use toolhost_store_pg::{RunInfo, Status};

use super::{PgBackend, lock, pg};

/// How many stopped runs' views a replica keeps (a view is a few kilobytes).
const FINISHED_KEPT: usize = 4096;
use crate::Spec;

impl PgBackend {
    /// Run `info` as the API shows it. A run that stopped changes no more: its view is
    /// kept (up to [`FINISHED_KEPT`] of them), so listing runs reads the journals of the
    /// runs still going on only, not every run's on every look.
    pub(super) fn view(&self, info: &RunInfo) -> Result<RunView, RegistryError> {
        let finished = state_of(info.status).is_final();
        if finished {
            let kept = lock(&self.finished);
            if let Some((records, view)) = kept.get(&info.run)
                && *records == info.records
            {
                return Ok(view.clone());
            }
        }
        let view = self.view_now(info)?;
        if finished {
            let mut kept = lock(&self.finished);
            if kept.len() >= FINISHED_KEPT {
                kept.clear();
            }
            kept.insert(info.run.clone(), (info.records, view.clone()));
        }
        Ok(view)
    }

    fn view_now(&self, info: &RunInfo) -> Result<RunView, RegistryError> {
        let records = if info.records > 0 {
            let bytes = self.db.journal(&info.run).map_err(pg)?;
            parse_lines(bytes.split(|b| *b == b'\n'))
        } else {
            Vec::new()
        };
        let spec = info
            .spec
            .as_deref()
            .and_then(|s| serde_json::from_str::<Spec>(s).ok());
        let goal = records
            .first()
            .and_then(|r| r.data["goal"].as_str().map(str::to_string))
            .or_else(|| {
                let text = &spec.as_ref()?.task_text;
                let t: toml::Table = toml::from_str(text).ok()?;
                t.get("goal")?.as_str().map(str::to_string)
            })
            .unwrap_or_default();
        let outcome = Outcome::of_records(&records);
        let stop = outcome.stop.or_else(|| {
            let reason = info.stop_reason.as_deref()?;
            Some(json!({ "reason": reason }))
        });
        let pending = match info.status {
            Status::WaitingForApproval => info
                .pending
                .as_deref()
                .and_then(|p| serde_json::from_str::<Pending>(p).ok()),
            Status::WaitingForDecision => Some(unfinished_pending(&records)),
            _ => None,
        };
        // A parked question is waiting for input, not for approval.
        let state = match (state_of(info.status), &pending) {
            (RunState::WaitingForApproval, Some(p)) if p.subject == "question" => {
                RunState::WaitingForInput
            }
            (state, _) => state,
        };
        Ok(RunView {
            id: info.run.clone(),
            url: format!("/v1/runs/{}", info.run),
            state,
            goal,
            submitter: spec.and_then(|s| s.submitter),
            stop,
            answer: outcome.answer,
            steps: outcome.steps,
            usage: outcome.usage,
            pending,
            head: Head::of_records(&records),
        })
    }

    pub(super) fn view_of(&self, id: &str) -> Result<RunView, RegistryError> {
        let info = self.db.run_info(id).map_err(pg)?;
        self.view(&info)
    }
}

pub(super) fn state_of(status: Status) -> RunState {
    match status {
        Status::Queued => RunState::Queued,
        Status::Running => RunState::Running,
        Status::WaitingForApproval | Status::WaitingForDecision => RunState::WaitingForApproval,
        Status::Completed => RunState::Completed,
        Status::Cancelled => RunState::Cancelled,
        Status::Rejected => RunState::Rejected,
        _ => RunState::Failed,
    }
}

/// The records of journal lines (a line that is no record ends them).
pub(super) fn parse_lines<'a>(lines: impl Iterator<Item = &'a [u8]>) -> Vec<Record> {
    lines
        .filter(|l| !l.is_empty())
        .map_while(|l| serde_json::from_slice::<Record>(l).ok())
        .collect()
}

/// The steps that were cut off when the run was last taken over (its last `resumed`
/// record's `unfinished`).
pub(super) fn unfinished_ids(records: &[Record]) -> Vec<String> {
    records
        .iter()
        .rev()
        .find(|r| r.kind == Kind::Resumed)
        .and_then(|r| r.data["unfinished"].as_array())
        .map(|ids| {
            ids.iter()
                .filter_map(|i| i.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

fn unfinished_pending(records: &[Record]) -> Pending {
    Pending {
        subject: "unfinished_steps".into(),
        revision: None,
        plan: None,
        step: Some(json!({ "ids": unfinished_ids(records) })),
        why: Some(
            "the run was taken over from a replica that stopped while these steps ran; they are not idempotent and may have had effects: approve to run them again, reject to record them failed".into(),
        ),
        question: None,
        schema: None,
        reach: Vec::new(),
    }
}
