//! MCP tasks that wait for input (migration 0010): the holder of a working task records
//! the requests its call waits for ([`Database::wait_task_input`]); any replica shows them
//! ([`TaskRow::input_requests`](crate::TaskRow)) and records answers
//! ([`Database::answer_task_input`], which the caller checks first: this crate knows
//! nothing of MCP); once none is left unanswered the holder is told
//! ([`Database::on_task_input`]) and collects them ([`Database::take_task_input`]).
//!
//! Requests and answers travel as opaque JSON text (objects keyed by the tool's keys).

use super::tasks::{LIVE, ROW, TaskCancels, TaskRow, row};
use super::{Database, PgError};

/// The channel [`Database::answer_task_input`] notifies once a task has every answer
/// (payload: the task's id).
const ANSWERED: &str = "toolhost_task_input";

/// What a holder finds when it looks for a task's answers.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum TaskInput {
    /// Every request answered: the answers (JSON text), now collected.
    Answered(String),
    /// Some requests are not answered yet.
    Waiting,
    /// The task is no longer this holder's at this epoch, or no longer works.
    Gone,
}

impl Database {
    /// Records that the call of task `id`, held by `holder` at `epoch`, waits for
    /// `requests` (JSON text), with no answers yet; whether it still held the task.
    pub fn wait_task_input(
        &self,
        id: &str,
        holder: &str,
        epoch: i64,
        requests: &str,
    ) -> Result<bool, PgError> {
        let (db, id, holder, requests) = (
            self.db.clone(),
            id.to_string(),
            holder.to_string(),
            requests.to_string(),
        );
        self.block(async move {
            let c = db.client().await?;
            let n = c
                .execute(
                    "UPDATE mcp_tasks SET input_requests = $4::text::jsonb,
                         input_responses = '{}'::jsonb, updated_at = now()
                     WHERE id = $1 AND holder = $2 AND epoch = $3 AND status = 'working'",
                    &[&id, &holder, &epoch, &requests],
                )
                .await
                .map_err(|e| db.query_err(&e))?;
            Ok(n == 1)
        })
    }

    /// Task `id` of `owner` with the answers it took so far (JSON text), unless forgotten.
    pub fn task_input(
        &self,
        id: &str,
        owner: &str,
    ) -> Result<Option<(TaskRow, Option<String>)>, PgError> {
        let (db, id, owner) = (self.db.clone(), id.to_string(), owner.to_string());
        self.block(async move {
            let c = db.client().await?;
            let sql = format!(
                "SELECT {ROW}, input_responses::text FROM mcp_tasks
                 WHERE id = $1 AND owner = $2 AND {LIVE}"
            );
            let r = c
                .query_opt(&sql, &[&id, &owner])
                .await
                .map_err(|e| db.query_err(&e))?;
            Ok(r.map(|r| (row(&r), r.get(12))))
        })
    }

    /// Records the answers of task `id` of `owner` as `answered` (JSON text) and what is
    /// still unanswered as `pending` (`None`: nothing, and the holder is told), if its
    /// requests are still `expected` (compare and swap: an update that raced another one
    /// finds `false` and reads again).
    pub fn answer_task_input(
        &self,
        id: &str,
        owner: &str,
        expected: &str,
        (pending, answered): (Option<&str>, &str),
    ) -> Result<bool, PgError> {
        let (db, id, owner, expected) = (
            self.db.clone(),
            id.to_string(),
            owner.to_string(),
            expected.to_string(),
        );
        let (pending, answered) = (pending.map(str::to_string), answered.to_string());
        self.block(async move {
            let mut c = db.client().await?;
            let failed = |e: tokio_postgres::Error| db.query_err(&e);
            let tx = c.transaction().await.map_err(failed)?;
            let n = tx
                .execute(
                    "UPDATE mcp_tasks SET input_requests = $4::text::jsonb,
                         input_responses = $5::text::jsonb, updated_at = now()
                     WHERE id = $1 AND owner = $2 AND status = 'working'
                       AND input_requests = $3::text::jsonb",
                    &[&id, &owner, &expected, &pending, &answered],
                )
                .await
                .map_err(failed)?;
            if n == 1 && pending.is_none() {
                tx.execute("SELECT pg_notify($1, $2)", &[&ANSWERED, &id])
                    .await
                    .map_err(failed)?;
            }
            tx.commit().await.map_err(failed)?;
            Ok(n == 1)
        })
    }

    /// Collects the answers of task `id` for `holder` at `epoch` once every request is
    /// answered.
    pub fn take_task_input(
        &self,
        id: &str,
        holder: &str,
        epoch: i64,
    ) -> Result<TaskInput, PgError> {
        let (db, id, holder) = (self.db.clone(), id.to_string(), holder.to_string());
        self.block(async move {
            let c = db.client().await?;
            let r = c
                .query_opt(
                    "UPDATE mcp_tasks t SET input_responses = NULL
                     FROM (SELECT id, input_requests IS NULL AS all_in, input_responses AS got
                           FROM mcp_tasks
                           WHERE id = $1 AND holder = $2 AND epoch = $3 AND status = 'working'
                           FOR UPDATE) AS old
                     WHERE t.id = old.id AND old.all_in AND old.got IS NOT NULL
                     RETURNING old.got::text",
                    &[&id, &holder, &epoch],
                )
                .await
                .map_err(|e| db.query_err(&e))?;
            if let Some(r) = r {
                return Ok(TaskInput::Answered(r.get(0)));
            }
            let held = c
                .query_opt(
                    "SELECT 1 FROM mcp_tasks
                     WHERE id = $1 AND holder = $2 AND epoch = $3 AND status = 'working'",
                    &[&id, &holder, &epoch],
                )
                .await
                .map_err(|e| db.query_err(&e))?;
            Ok(match held {
                Some(_) => TaskInput::Waiting,
                None => TaskInput::Gone,
            })
        })
    }

    /// Calls `on` with the id of each task that has every answer from now on (on the
    /// database's thread: `on` must not block), until the [`TaskCancels`] is dropped. One
    /// missed while reconnecting is collected at the holder's next look.
    pub fn on_task_input(
        &self,
        on: impl Fn(&str) + Send + Sync + 'static,
    ) -> Result<TaskCancels, PgError> {
        self.on_task_notice(ANSWERED, on)
    }
}
