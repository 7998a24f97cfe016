//! Draft edits of a plan under review, checked by the run's holder (migration 0009): a
//! replica asks ([`Database::ask_check`], which notifies `toolhost_changes`) and polls for
//! the problems ([`Database::checked`]); the holder, waiting for the decision, takes the
//! open drafts of its run ([`Database::open_checks`]) and writes what it finds
//! ([`Database::answer_check`]). Rows older than a minute are dropped whenever a draft is
//! asked about, so a replica that died while it waited leaves nothing for long.

use super::lease::Lease;
use super::{Database, PgError};

impl Database {
    /// Asks run `run`'s holder to check `draft` (a plan, JSON text); the request's id.
    pub fn ask_check(&self, run: &str, draft: &str) -> Result<i64, PgError> {
        let (db, r, d) = (self.db.clone(), run.to_string(), draft.to_string());
        self.block(async move {
            let c = db.client().await?;
            c.execute(
                "DELETE FROM plan_checks WHERE created_at < now() - interval '1 minute'",
                &[],
            )
            .await
            .map_err(|e| db.query_err(&e))?;
            let row = c
                .query_one(
                    "WITH asked AS (
                         INSERT INTO plan_checks (run_id, draft) VALUES ($1, $2::text::jsonb)
                         RETURNING id, run_id)
                     SELECT id, pg_notify('toolhost_changes', run_id) FROM asked",
                    &[&r, &d],
                )
                .await
                .map_err(|e| db.query_err(&e))?;
            Ok(row.get(0))
        })
    }

    /// The problems (JSON text) the holder wrote for check `id`, deleting the request;
    /// `None` while it has not answered.
    pub fn checked(&self, id: i64) -> Result<Option<String>, PgError> {
        let db = self.db.clone();
        self.block(async move {
            let c = db.client().await?;
            let row = c
                .query_opt(
                    "DELETE FROM plan_checks WHERE id = $1 AND problems IS NOT NULL
                     RETURNING problems::text",
                    &[&id],
                )
                .await
                .map_err(|e| db.query_err(&e))?;
            Ok(row.map(|r| r.get(0)))
        })
    }

    /// Forgets check `id` (its asker stopped waiting).
    pub fn forget_check(&self, id: i64) -> Result<(), PgError> {
        let db = self.db.clone();
        self.block(async move {
            let c = db.client().await?;
            c.execute("DELETE FROM plan_checks WHERE id = $1", &[&id])
                .await
                .map_err(|e| db.query_err(&e))?;
            Ok(())
        })
    }

    /// The drafts (id, JSON text) waiting for `lease`'s holder to check them, oldest first.
    pub fn open_checks(&self, lease: &Lease) -> Result<Vec<(i64, String)>, PgError> {
        let (db, run) = (self.db.clone(), lease.run.clone());
        self.block(async move {
            let c = db.client().await?;
            let rows = c
                .query(
                    "SELECT id, draft::text FROM plan_checks
                     WHERE run_id = $1 AND problems IS NULL ORDER BY id LIMIT 16",
                    &[&run],
                )
                .await
                .map_err(|e| db.query_err(&e))?;
            Ok(rows.iter().map(|r| (r.get(0), r.get(1))).collect())
        })
    }

    /// Writes the `problems` (JSON text) the holder found in draft `id`.
    pub fn answer_check(&self, id: i64, problems: &str) -> Result<(), PgError> {
        let (db, p) = (self.db.clone(), problems.to_string());
        self.block(async move {
            let c = db.client().await?;
            c.execute(
                "UPDATE plan_checks SET problems = $2::text::jsonb WHERE id = $1",
                &[&id, &p],
            )
            .await
            .map_err(|e| db.query_err(&e))?;
            Ok(())
        })
    }
}
