//! The runs of MCP tasks (migration 0011): a program sent as a task (`toolhost mcp --code
//! --database`) is journaled as a run tied to its task, at most one per task, which
//! `toolhost worker`s never claim. The replica that takes the task over finds the run
//! ([`Database::run_of_task`]) and carries it on from its journal; one that finds none
//! (its first holder died before the run began) starts it, and the one-run-per-task rule
//! keeps two holders from starting two.

use std::time::Duration;

use super::lease::{Lease, lease, millis};
use super::{Database, PgError};

impl Database {
    /// Creates run `run` of MCP task `task`, `active`, leased to `owner` for `ttl` at
    /// epoch 1; refused when the task has a run already (or `run` exists).
    pub fn create_run_of_task(
        &self,
        run: &str,
        task: &str,
        owner: &str,
        ttl: Duration,
    ) -> Result<Lease, PgError> {
        let (db, run, task, owner) = (
            self.db.clone(),
            run.to_string(),
            task.to_string(),
            owner.to_string(),
        );
        self.block(async move {
            let c = db.client().await?;
            let row = c
                .query_opt(
                    "INSERT INTO runs (id, state, lease_owner, lease_expires, epoch, mcp_task)
                     VALUES ($1, 'active', $2, now() + $3::float8 * interval '1 millisecond', 1,
                         $4)
                     ON CONFLICT DO NOTHING
                     RETURNING epoch, lease_expires",
                    &[&run, &owner, &millis(ttl), &task],
                )
                .await
                .map_err(|e| db.query_err(&e))?;
            match row {
                Some(row) => Ok(lease(run, owner, ttl, &row)),
                None => Err(PgError::TaskHasRun { task }),
            }
        })
    }

    /// The run of MCP task `task`, if it has one.
    pub fn run_of_task(&self, task: &str) -> Result<Option<String>, PgError> {
        let (db, task) = (self.db.clone(), task.to_string());
        self.block(async move {
            let c = db.client().await?;
            let row = c
                .query_opt("SELECT id FROM runs WHERE mcp_task = $1", &[&task])
                .await
                .map_err(|e| db.query_err(&e))?;
            Ok(row.map(|r| r.get(0)))
        })
    }
}
