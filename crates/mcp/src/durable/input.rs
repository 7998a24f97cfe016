//! Durable tasks that wait for input (`inbox`, in PostgreSQL): the replica running the
//! call records what it waits for; `tasks/get` on any replica shows it; `tasks/update` on
//! any replica checks the answers against the stored requests and records them; the
//! holder, told once every answer is in (or finding them at its next look, a third of the
//! lease later, should the notification be lost), collects them and the call resumes.

use std::collections::BTreeMap;

use rmcp::ErrorData;
use rmcp::model::{InputRequests, InputResponses};
use serde_json::Value;
use toolhost_store_pg::TaskInput;

use super::{Durable, blocking};
use crate::answers;
use crate::tasks::{self, Owner};

/// How many times `tasks/update` reads again when another update changed the task first.
const RACES: usize = 8;

impl Durable {
    /// Records that task `id`'s call waits for `pending` and waits for every answer.
    pub async fn wait_input(
        &self,
        id: &str,
        pending: InputRequests,
    ) -> Result<BTreeMap<String, Value>, String> {
        let gone = || "the task is no longer this replica's to run: nobody will answer".to_string();
        let (epoch, woken) = {
            let running = self.running.lock().expect("running lock");
            let h = running.held.get(id).ok_or_else(gone)?;
            (h.epoch, h.input.clone())
        };
        let text = serde_json::to_string(&pending)
            .map_err(|e| format!("cannot record the task's input requests: {e}"))?;
        let (db, key, me) = (self.db.clone(), id.to_string(), self.replica.clone());
        let waits = blocking(move || db.wait_task_input(&key, &me, epoch, &text)).await;
        if !waits.map_err(|e| e.message.to_string())? {
            return Err(gone());
        }
        loop {
            tokio::select! {
                () = woken.notified() => {}
                () = tokio::time::sleep(self.every()) => {}
            }
            let (db, key, me) = (self.db.clone(), id.to_string(), self.replica.clone());
            match blocking(move || db.take_task_input(&key, &me, epoch)).await {
                Ok(TaskInput::Answered(text)) => {
                    return serde_json::from_str(&text)
                        .map_err(|e| format!("the task's recorded answers are not JSON: {e}"));
                }
                Ok(TaskInput::Gone) => return Err(gone()),
                Ok(_) => {}
                Err(e) => tracing::warn!(error = %e.message, "cannot look for a task's answers"),
            }
        }
    }

    /// `tasks/update`: the answers to what task `id` waits for, checked against its
    /// requests as stored (`answers::take`) and recorded; once all are in, its holder hears.
    pub async fn update(
        &self,
        id: &str,
        owner: Owner,
        responses: InputResponses,
    ) -> Result<(), ErrorData> {
        for _ in 0..RACES {
            let (db, key, owner_key) = (self.db.clone(), id.to_string(), self.owner(owner));
            let (row, answered) = blocking(move || db.task_input(&key, &owner_key))
                .await?
                .ok_or_else(|| tasks::unknown(id))?;
            let (Some(expected), "working") = (row.input_requests, row.status.as_str()) else {
                return Err(answers::not_waiting(id, &row.status));
            };
            let mut pending: InputRequests = serde_json::from_str(&expected).map_err(|e| {
                ErrorData::internal_error(
                    format!("task `{id}`'s input requests are not JSON: {e}"),
                    None,
                )
            })?;
            let mut all: BTreeMap<String, Value> = answered
                .as_deref()
                .and_then(|a| serde_json::from_str(a).ok())
                .unwrap_or_default();
            all.extend(answers::take(id, &mut pending, responses.clone())?);
            let left = (!pending.is_empty())
                .then(|| serde_json::to_string(&pending))
                .transpose();
            let (left, all) = match (left, serde_json::to_string(&all)) {
                (Ok(left), Ok(all)) => (left, all),
                (Err(e), _) | (_, Err(e)) => {
                    return Err(ErrorData::internal_error(
                        format!("cannot record the answers: {e}"),
                        None,
                    ));
                }
            };
            let (db, key, owner_key) = (self.db.clone(), id.to_string(), self.owner(owner));
            let recorded = blocking(move || {
                db.answer_task_input(&key, &owner_key, &expected, (left.as_deref(), &all))
            })
            .await?;
            if recorded {
                return Ok(());
            }
        }
        Err(ErrorData::internal_error(
            format!("task `{id}` kept changing while its answers were recorded: send them again"),
            None,
        ))
    }
}
