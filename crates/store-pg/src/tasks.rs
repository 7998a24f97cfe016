//! MCP tasks shared by replicas (migration 0008): a task is opened by the replica a call
//! reached ([`Database::open_task`], bounded per owner), run there under a lease that
//! replica renews ([`Database::renew_tasks`]) and settled by it, fenced by the task's
//! epoch ([`Database::settle_task`]). Any replica reads it ([`Database::task`]) or
//! cancels it ([`Database::cancel_task`]; the holder hears at once through
//! [`Database::on_task_cancel`]). A task whose holder stopped renewing is taken over by
//! another replica ([`Database::take_over_tasks`]), which runs it again or fails it: that
//! choice (by policy) is the caller's. A replica that stops hands its tasks back at once
//! ([`Database::hand_back_tasks`]): their leases end now and the other replicas hear of it
//! ([`Database::on_task_handback`]). A finished task is forgotten `ttl` after it ended.
//!
//! Results, errors and arguments travel as opaque JSON text: this crate knows nothing of
//! MCP.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use tokio_postgres::Row;

use super::lease::millis;
use super::listen::{RECONNECT, listen_once};
use super::{Database, PgError};

/// The channel the `mcp_tasks_cancelled` trigger (migration 0008) notifies.
const CANCELLED: &str = "toolhost_task_cancel";

/// The channel [`Database::hand_back_tasks`] notifies (payload: the task's id).
const HANDED_BACK: &str = "toolhost_task_handback";

/// A task as the replica that a call reached opens it.
#[derive(Debug, Clone)]
pub struct NewTask {
    pub id: String,
    /// Who may see it (opaque to the database; compared as is).
    pub owner: String,
    pub operation: String,
    pub args_sha256: String,
    /// The arguments (JSON text), kept only for a call that may be run again (or a
    /// program, whose run is carried on).
    pub args: Option<String>,
    pub idempotent: bool,
    /// The calling client's capabilities (JSON text), kept for a call whose user is asked
    /// after a takeover (migration 0011).
    pub client: Option<String>,
    /// How long the task is kept once it ended.
    pub ttl: Duration,
    /// The replica opening (and running) it, and how long its lease lasts unrenewed.
    pub holder: String,
    pub lease: Duration,
    /// The most tasks `owner` holds at once: its oldest finished one is forgotten to make
    /// room; when all of them work, the task is not opened.
    pub max_per_owner: u32,
}

/// A task as it stands.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct TaskRow {
    pub id: String,
    pub owner: String,
    pub operation: String,
    /// `working`, `completed`, `failed` or `cancelled`.
    pub status: String,
    /// The result (`completed`) or error (`failed`), JSON text.
    pub outcome: Option<String>,
    pub ttl: Duration,
    pub holder: Option<String>,
    pub epoch: i64,
    pub takeovers: i32,
    pub created: SystemTime,
    pub updated: SystemTime,
    /// While its call waits for input (`working`): the requests not answered yet, JSON
    /// text (an object keyed by the tool's keys; migration 0010).
    pub input_requests: Option<String>,
}

/// A task taken over from a holder that stopped renewing its lease.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct TakenTask {
    pub id: String,
    /// Who may see it, as opened.
    pub owner: String,
    pub operation: String,
    /// The arguments (JSON text), when they were kept (the call is idempotent, or a
    /// program).
    pub args: Option<String>,
    pub idempotent: bool,
    /// The calling client's capabilities (JSON text), when they were kept.
    pub client: Option<String>,
    /// The fencing epoch the new holder settles it with.
    pub epoch: i64,
    /// The holder whose lease lapsed.
    pub was: Option<String>,
}

/// How a task ended, as its holder settles it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum TaskEnd {
    Completed,
    Failed,
}

/// Hears cancelled (or handed back) tasks while it lives (see [`Database::on_task_cancel`],
/// [`Database::on_task_handback`]).
#[derive(Debug)]
pub struct TaskCancels {
    task: tokio::task::AbortHandle,
}

impl Drop for TaskCancels {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// The columns a [`TaskRow`] is read from.
pub(crate) const ROW: &str = "id, owner, operation, status, outcome::text, ttl_ms, holder, epoch, \
                   takeovers, created_at, updated_at, input_requests::text";

/// Not yet forgotten: working, or ended less than its ttl ago.
pub(crate) const LIVE: &str =
    "(status = 'working' OR updated_at + ttl_ms * interval '1 millisecond' > now())";

pub(crate) fn row(r: &Row) -> TaskRow {
    let ttl: i64 = r.get(5);
    TaskRow {
        id: r.get(0),
        owner: r.get(1),
        operation: r.get(2),
        status: r.get(3),
        outcome: r.get(4),
        ttl: Duration::from_millis(u64::try_from(ttl).unwrap_or(0)),
        holder: r.get(6),
        epoch: r.get(7),
        takeovers: r.get(8),
        created: r.get(9),
        updated: r.get(10),
        input_requests: r.get(11),
    }
}

impl Database {
    /// Opens `t`, working, held by `t.holder` at epoch 1; `None` when its owner already
    /// holds `t.max_per_owner` tasks that all work. Opens of one owner serialise (an
    /// advisory lock on the owner), so replicas together keep the bound.
    pub fn open_task(&self, t: NewTask) -> Result<Option<TaskRow>, PgError> {
        let db = self.db.clone();
        self.block(async move {
            let mut c = db.client().await?;
            let failed = |e: tokio_postgres::Error| db.query_err(&e);
            let tx = c.transaction().await.map_err(failed)?;
            tx.execute(
                "SELECT pg_advisory_xact_lock(hashtext('toolhost mcp task owner ' || $1))",
                &[&t.owner],
            )
            .await
            .map_err(failed)?;
            let forget = format!("DELETE FROM mcp_tasks WHERE owner = $1 AND NOT {LIVE}");
            tx.execute(&forget, &[&t.owner]).await.map_err(failed)?;
            let held: i64 = tx
                .query_one(
                    "SELECT count(*) FROM mcp_tasks WHERE owner = $1",
                    &[&t.owner],
                )
                .await
                .map_err(failed)?
                .get(0);
            if held >= i64::from(t.max_per_owner) {
                let n = tx
                    .execute(
                        "DELETE FROM mcp_tasks WHERE id = (SELECT id FROM mcp_tasks
                             WHERE owner = $1 AND status <> 'working'
                             ORDER BY created_at LIMIT 1)",
                        &[&t.owner],
                    )
                    .await
                    .map_err(failed)?;
                if n == 0 {
                    return Ok(None);
                }
            }
            let ttl = i64::try_from(t.ttl.as_millis()).unwrap_or(i64::MAX).max(1);
            let insert = format!(
                "INSERT INTO mcp_tasks (id, owner, operation, args_sha256, args, idempotent,
                     ttl_ms, holder, lease_expires, client)
                 VALUES ($1, $2, $3, $4, $5::text::jsonb, $6, $7, $8,
                     now() + $9::float8 * interval '1 millisecond', $10::text::jsonb)
                 RETURNING {ROW}"
            );
            let opened = tx
                .query_one(
                    &insert,
                    &[
                        &t.id,
                        &t.owner,
                        &t.operation,
                        &t.args_sha256,
                        &t.args,
                        &t.idempotent,
                        &ttl,
                        &t.holder,
                        &millis(t.lease),
                        &t.client,
                    ],
                )
                .await
                .map_err(failed)?;
            tx.commit().await.map_err(failed)?;
            Ok(Some(row(&opened)))
        })
    }

    /// Task `id` of `owner`, unless it was forgotten; `None` for another owner's, as for
    /// an id never issued.
    pub fn task(&self, id: &str, owner: &str) -> Result<Option<TaskRow>, PgError> {
        let (db, id, owner) = (self.db.clone(), id.to_string(), owner.to_string());
        self.block(async move {
            let c = db.client().await?;
            let sql =
                format!("SELECT {ROW} FROM mcp_tasks WHERE id = $1 AND owner = $2 AND {LIVE}");
            let r = c
                .query_opt(&sql, &[&id, &owner])
                .await
                .map_err(|e| db.query_err(&e))?;
            Ok(r.as_ref().map(row))
        })
    }

    /// Ends task `id` as `end` with `outcome` (JSON text), if `holder` still holds it at
    /// `epoch` and it still works (not cancelled, not taken over); whether it did.
    pub fn settle_task(
        &self,
        id: &str,
        holder: &str,
        epoch: i64,
        end: TaskEnd,
        outcome: &str,
    ) -> Result<bool, PgError> {
        let (db, id, holder, outcome) = (
            self.db.clone(),
            id.to_string(),
            holder.to_string(),
            outcome.to_string(),
        );
        let status = match end {
            TaskEnd::Completed => "completed",
            TaskEnd::Failed => "failed",
        };
        self.block(async move {
            let c = db.client().await?;
            let n = c
                .execute(
                    "UPDATE mcp_tasks SET status = $4, outcome = $5::text::jsonb,
                         holder = NULL, lease_expires = NULL, updated_at = now(),
                         input_requests = NULL, input_responses = NULL
                     WHERE id = $1 AND holder = $2 AND epoch = $3 AND status = 'working'",
                    &[&id, &holder, &epoch, &status, &outcome],
                )
                .await
                .map_err(|e| db.query_err(&e))?;
            Ok(n == 1)
        })
    }

    /// Cancels task `id` of `owner` if it still works (its holder is notified); a task that
    /// already ended stays as it ended. `false`: no such task of `owner`.
    pub fn cancel_task(&self, id: &str, owner: &str) -> Result<bool, PgError> {
        let (db, id, owner) = (self.db.clone(), id.to_string(), owner.to_string());
        self.block(async move {
            let c = db.client().await?;
            let n = c
                .execute(
                    "UPDATE mcp_tasks SET status = 'cancelled', holder = NULL,
                         lease_expires = NULL, updated_at = now(),
                         input_requests = NULL, input_responses = NULL
                     WHERE id = $1 AND owner = $2 AND status = 'working'",
                    &[&id, &owner],
                )
                .await
                .map_err(|e| db.query_err(&e))?;
            if n == 1 {
                return Ok(true);
            }
            let sql = format!("SELECT 1 FROM mcp_tasks WHERE id = $1 AND owner = $2 AND {LIVE}");
            let known = c
                .query_opt(&sql, &[&id, &owner])
                .await
                .map_err(|e| db.query_err(&e))?;
            Ok(known.is_some())
        })
    }

    /// Extends by `lease` the leases `holder` still holds on working tasks; the ids of
    /// those tasks (one it no longer holds was cancelled or taken over).
    pub fn renew_tasks(&self, holder: &str, lease: Duration) -> Result<Vec<String>, PgError> {
        let (db, holder) = (self.db.clone(), holder.to_string());
        self.block(async move {
            let c = db.client().await?;
            let rows = c
                .query(
                    "UPDATE mcp_tasks
                     SET lease_expires = now() + $2::float8 * interval '1 millisecond'
                     WHERE holder = $1 AND status = 'working' AND lease_expires > now()
                     RETURNING id",
                    &[&holder, &millis(lease)],
                )
                .await
                .map_err(|e| db.query_err(&e))?;
            Ok(rows.iter().map(|r| r.get(0)).collect())
        })
    }

    /// Takes over for `holder`, under a lease of `lease`, at most `limit` working tasks
    /// whose lease lapsed (skipping those another replica takes at this moment); each
    /// one's epoch goes up by one, fencing off the holder that lapsed.
    pub fn take_over_tasks(
        &self,
        holder: &str,
        lease: Duration,
        limit: u32,
    ) -> Result<Vec<TakenTask>, PgError> {
        let (db, holder) = (self.db.clone(), holder.to_string());
        self.block(async move {
            let c = db.client().await?;
            let rows = c
                .query(
                    "UPDATE mcp_tasks t SET holder = $1,
                         lease_expires = now() + $2::float8 * interval '1 millisecond',
                         epoch = t.epoch + 1, takeovers = t.takeovers + 1, updated_at = now(),
                         input_requests = NULL, input_responses = NULL
                     FROM (SELECT id, holder AS was FROM mcp_tasks
                           WHERE status = 'working' AND lease_expires <= now()
                           ORDER BY lease_expires LIMIT $3
                           FOR UPDATE SKIP LOCKED) AS lapsed
                     WHERE t.id = lapsed.id
                     RETURNING t.id, t.operation, t.args::text, t.idempotent, t.epoch, lapsed.was,
                         t.owner, t.client::text",
                    &[&holder, &millis(lease), &i64::from(limit)],
                )
                .await
                .map_err(|e| db.query_err(&e))?;
            Ok(rows
                .iter()
                .map(|r| TakenTask {
                    id: r.get(0),
                    owner: r.get(6),
                    operation: r.get(1),
                    args: r.get(2),
                    idempotent: r.get(3),
                    client: r.get(7),
                    epoch: r.get(4),
                    was: r.get(5),
                })
                .collect())
        })
    }

    /// Ends now the leases `holder` holds at `epochs` (task id, epoch) on working tasks, so
    /// that another replica takes them over at once (their epochs go up by one: whatever
    /// `holder` still writes is fenced off), and tells the replicas listening
    /// ([`Database::on_task_handback`]); the ids of the tasks handed back.
    pub fn hand_back_tasks(
        &self,
        holder: &str,
        epochs: Vec<(String, i64)>,
    ) -> Result<Vec<String>, PgError> {
        let (db, holder) = (self.db.clone(), holder.to_string());
        self.block(async move {
            let mut c = db.client().await?;
            let failed = |e: tokio_postgres::Error| db.query_err(&e);
            let tx = c.transaction().await.map_err(failed)?;
            let mut handed = Vec::new();
            for (id, epoch) in epochs {
                let n = tx
                    .execute(
                        "UPDATE mcp_tasks SET lease_expires = now(), epoch = epoch + 1,
                             updated_at = now(), input_requests = NULL, input_responses = NULL
                         WHERE id = $1 AND holder = $2 AND epoch = $3 AND status = 'working'",
                        &[&id, &holder, &epoch],
                    )
                    .await
                    .map_err(failed)?;
                if n == 1 {
                    tx.execute("SELECT pg_notify($1, $2)", &[&HANDED_BACK, &id])
                        .await
                        .map_err(failed)?;
                    handed.push(id);
                }
            }
            tx.commit().await.map_err(failed)?;
            Ok(handed)
        })
    }

    /// Forgets the tasks that ended more than their ttl ago; how many.
    pub fn forget_tasks(&self) -> Result<u64, PgError> {
        let db = self.db.clone();
        self.block(async move {
            let c = db.client().await?;
            let sql = format!("DELETE FROM mcp_tasks WHERE NOT {LIVE}");
            c.execute(&sql, &[]).await.map_err(|e| db.query_err(&e))
        })
    }

    /// Calls `on` with the id of each task cancelled from now on (on the database's
    /// thread: `on` must not block), until the [`TaskCancels`] is dropped; returns once
    /// listening. A lost connection is reconnected; what was cancelled meanwhile the
    /// holder learns at its next [`renew_tasks`](Database::renew_tasks).
    pub fn on_task_cancel(
        &self,
        on: impl Fn(&str) + Send + Sync + 'static,
    ) -> Result<TaskCancels, PgError> {
        self.on_task_notice(CANCELLED, on)
    }

    /// Calls `on` with the id of each task a stopping replica hands back from now on
    /// ([`Database::hand_back_tasks`]; on the database's thread: `on` must not block), until
    /// the [`TaskCancels`] is dropped. One missed while reconnecting is taken over when its
    /// lease is next looked at, as any lapsed one.
    pub fn on_task_handback(
        &self,
        on: impl Fn(&str) + Send + Sync + 'static,
    ) -> Result<TaskCancels, PgError> {
        self.on_task_notice(HANDED_BACK, on)
    }

    pub(crate) fn on_task_notice(
        &self,
        channel: &'static str,
        on: impl Fn(&str) + Send + Sync + 'static,
    ) -> Result<TaskCancels, PgError> {
        let (ready_tx, ready_rx) = std::sync::mpsc::sync_channel(1);
        let (db, on) = (self.db.clone(), Arc::new(on));
        let task = self.bridge.spawn(async move {
            let mut ready = Some(ready_tx);
            loop {
                let sink = |id: String| {
                    on(&id);
                    true
                };
                if let Err(e) = listen_once(&db, channel, sink, &mut ready).await {
                    if let Some(r) = ready.take() {
                        let _ = r.send(Err(e));
                        return;
                    }
                    tracing::warn!(error = %e, channel, "the connection for task notifications was lost; reconnecting (until then leases tell)");
                    tokio::time::sleep(RECONNECT).await;
                }
            }
        });
        match ready_rx.recv() {
            Ok(Ok(())) => Ok(TaskCancels { task }),
            Ok(Err(e)) => {
                task.abort();
                Err(e)
            }
            Err(_) => Err(PgError::Stopped),
        }
    }
}
