//! What the run made of a person's edit, told to the replica that took it: the run's
//! holder (any replica) validates the edited plan as `plan validate` would and journals
//! `plan_accepted` (valid: it runs) or `plan_rejected` (invalid: the run waits again on
//! the plan under review). The replica that recorded the edit reads the journal rows after
//! it, so an invalid edit gets its 422 with every problem, as on the embedded backend.

use std::time::{Duration, Instant};

use toolhost_engine::Plan;
use toolhost_engine::validate::Problem;
use toolhost_journal::{Kind, Record};
use toolhost_serve::RegistryError;

use super::{PgBackend, pg, state_of};

/// How long the replica waits for the verdict (validation takes milliseconds; this bounds
/// a run whose holder died meanwhile: the edit stays recorded, and the run's next holder
/// decides on it).
const VERDICT_WAIT: Duration = Duration::from_secs(30);

/// How often the journal is looked at meanwhile.
const VERDICT_POLL: Duration = Duration::from_millis(25);

impl PgBackend {
    /// Waits for the verdict on the edit recorded for run `id` when its journal held
    /// `after` records: `Err(InvalidEdit)` with every problem, else `Ok` (accepted, the
    /// run over, or no verdict in time).
    pub(super) fn edit_verdict(&self, id: &str, after: u64) -> Result<(), RegistryError> {
        let started = Instant::now();
        let mut seen = after;
        while started.elapsed() < VERDICT_WAIT {
            let info = self.db.run_info(id).map_err(pg)?;
            for (seq, line) in self.db.lines_after(id, seen).map_err(pg)? {
                seen = seq;
                let trimmed = line.strip_suffix(b"\n").unwrap_or(&line);
                let Ok(record) = serde_json::from_slice::<Record>(trimmed) else {
                    return Ok(());
                };
                match record.kind {
                    Kind::PlanAccepted => return Ok(()),
                    Kind::PlanRejected => {
                        return Err(RegistryError::InvalidEdit {
                            problems: problems(&record),
                        });
                    }
                    _ => {}
                }
            }
            if state_of(info.status).is_final() {
                return Ok(());
            }
            std::thread::sleep(VERDICT_POLL);
        }
        tracing::warn!(run = %id, "no verdict on the edit in time: it stays recorded for the run");
        Ok(())
    }
}

/// How long a replica waits for the holder to check a draft (it checks between two looks
/// at the decision: woken by the notification, at most half a second apart).
const CHECK_WAIT: Duration = Duration::from_secs(5);

impl PgBackend {
    /// The problems `draft` would meet as an edit of the plan run `id` waits on, as its
    /// holder (any replica) checks it.
    pub(super) fn check_draft(
        &self,
        id: &str,
        draft: &Plan,
    ) -> Result<Vec<Problem>, RegistryError> {
        toolhost_serve::draft::waiting_on_plan(self, id)?;
        let text =
            serde_json::to_string(draft).map_err(|e| RegistryError::Internal(e.to_string()))?;
        let asked = self.db.ask_check(id, &text).map_err(pg)?;
        let started = Instant::now();
        while started.elapsed() < CHECK_WAIT {
            if let Some(found) = self.db.checked(asked).map_err(pg)? {
                return serde_json::from_str(&found).map_err(|e| {
                    RegistryError::Internal(format!("the holder's check cannot be read: {e}"))
                });
            }
            std::thread::sleep(VERDICT_POLL);
        }
        let _ = self.db.forget_check(asked);
        Err(RegistryError::Unavailable(format!(
            "run `{id}`'s holder did not check the draft within {} s (it may have moved on, or be busy); an edit is still checked when it is submitted",
            CHECK_WAIT.as_secs()
        )))
    }
}

/// A `plan_rejected` record's problems, as `plan validate` prints them.
fn problems(record: &Record) -> Vec<String> {
    let listed = record.data["problems"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    listed
        .into_iter()
        .map(|p| match serde_json::from_value::<Problem>(p.clone()) {
            Ok(problem) => problem.to_string(),
            Err(_) => p.to_string(),
        })
        .collect()
}
