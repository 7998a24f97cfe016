//! A stateless task's questions (2026-07-28, SEP-2663): what the call of a task asks that
//! its `tools/call` request did not answer waits here, the sandbox waiting with it (within
//! the call's deadline). Meanwhile `tasks/get` shows the task `input_required` with the
//! input requests still unanswered, under the tool's own keys, and `tasks/update` brings
//! answers (`answers::take`): each checked against its request as an `input_required` round's
//! answers are (a form's schema), the whole update refused (`-32602`, naming the key and
//! why) when one does not fit. An update that answers some keys keeps the task waiting for
//! the rest; keys the task does not wait for are ignored (an answer sent twice, or late).
//! Once every key is answered the call resumes with the answers.
//!
//! In memory the waiting task is `tasks::Tasks`'s; with a task database it is the
//! database's (`durable`), so any replica shows it and takes its answers, and the replica
//! running the call hears of them.

use std::collections::BTreeMap;
use std::sync::Arc;

use rmcp::model::InputRequests;
use serde_json::Value;

use crate::shared::Shared;

/// Where the questions of task `id` wait for their answers.
pub(crate) struct Inbox {
    shared: Arc<Shared>,
    id: String,
}

impl Inbox {
    pub(crate) fn new(shared: Arc<Shared>, id: String) -> Inbox {
        Inbox { shared, id }
    }

    /// Shows the task waiting for `pending` until `tasks/update` has answered all of them;
    /// the answers, or why they never came (an error value the tool sees).
    pub(crate) async fn wait(
        &self,
        pending: InputRequests,
    ) -> Result<BTreeMap<String, Value>, String> {
        match &self.shared.durable {
            Some(d) => d.wait_input(&self.id, pending).await,
            None => match self.shared.tasks.wait_input(&self.id, pending) {
                Some(answered) => answered
                    .await
                    .map_err(|_| "the task ended while its call waited for answers".to_string()),
                None => Err("the task no longer runs: nobody will answer".to_string()),
            },
        }
    }
}
