//! Plan memory: an opt-in cache of plans that completed, so the same goal with the same
//! tools skips the planner.
//!
//! The key is the SHA-256 of the normalised goal (`normalise_goal`) and the tool-set
//! digest (`tools_digest`: each tool's name, component SHA-256 and the operations the
//! policy allows), so a changed component or a policy that allows other operations misses.
//! Entries live in `STATE_DIR/plans/KEY.json`, written atomically (temporary file, then
//! rename), 0600 in a 0700 directory. A recalled plan runs as revision 1, so an entry is
//! read only if it is a regular file of this user's that nobody else may write
//! ([`toolhost_runtime::owned::open_regular`]); any other is a miss with a warning.
//!
//! - Only plan-then-execute runs use it: a step-wise turn depends on what earlier steps
//!   returned, so a stored trajectory would replay stale decisions.
//! - A hit is served as revision 1 by [`MemoryPlanner`] and validated like any plan; the
//!   engine records its planner call with model `plan-memory`, no tokens and `cached`.
//!   Replans after a failed step, and repairs, go to the real planner.
//! - [`PlanMemory::remember`] stores a run's plan only when the run completed, and only
//!   its last revision, and only when that revision stands alone (validates without the
//!   steps of earlier revisions): a remainder plan that refers to earlier steps is not one
//!   that could run first.
//! - An unreadable or malformed entry is a miss with a [`MemoryError::Unusable`] warning,
//!   never a failed run; the next completed run overwrites it.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::json;
use sha2::{Digest, Sha256};

use super::budget::StopReason;
use super::plan::Plan;
use super::planner::{Mode, PlanFuture, PlanRequest, Planner, Reply, Usage, tool_summaries};
use super::report::RunReport;
use super::validate::{Catalog, validate};
use toolhost_runtime::owned;

/// The model name of a reply served from plan memory; its [`Usage`] is marked `cached`, so
/// the run records the call as served from memory.
pub(crate) const MODEL: &str = "plan-memory";

/// The version of the entry format; another version is a miss.
const VERSION: u32 = 1;

/// Why plan memory could not be read or written. Neither stops a run.
#[derive(Debug, thiserror::Error)]
pub enum MemoryError {
    #[error("plan memory `{path}` is unusable ({reason}): treated as a miss")]
    Unusable { path: String, reason: String },
    #[error("cannot store the plan in plan memory `{path}`: {reason}")]
    Write { path: String, reason: String },
}

/// What an entry file holds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    version: u32,
    /// The normalised goal, for whoever reads the file.
    goal: String,
    /// `tools_digest` when stored; checked again on recall.
    tools: String,
    plan: Plan,
}

/// The goal as keyed: lowercase, every run of whitespace one space, trimmed, and trailing
/// `.`, `!`, `?`, `,`, `;` and `:` removed. So "What is 12*4?  " and "what is 12*4"
/// share an entry; anything else that differs (numbers, names, word order) does not.
pub(crate) fn normalise_goal(goal: &str) -> String {
    let words: Vec<String> = goal.split_whitespace().map(str::to_lowercase).collect();
    words
        .join(" ")
        .trim_end_matches(|c: char| {
            matches!(c, '.' | '!' | '?' | ',' | ';' | ':') || c.is_whitespace()
        })
        .to_string()
}

/// The hex SHA-256 of `bytes`: the form keys are written in (file names under
/// `STATE_DIR/plans`), so it must stay the same for stored entries to be found again.
fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// SHA-256 of the tool set as the planner sees it: each tool's name, its component's
/// SHA-256, and the operations the policy allows it, in name order.
pub(crate) fn tools_digest(catalog: &Catalog) -> String {
    let tools: Vec<serde_json::Value> = tool_summaries(catalog)
        .iter()
        .map(|t| {
            let mut ops: Vec<&str> = t.operations.iter().map(|o| o.name.as_str()).collect();
            ops.sort_unstable();
            json!({
                "name": t.name,
                "sha256": catalog.tools.get(&t.name).map(|e| e.tool.digest.as_str()),
                "operations": ops,
            })
        })
        .collect();
    sha256_hex(json!(tools).to_string().as_bytes())
}

/// The plan memory of one goal and tool set.
#[derive(Debug, Clone)]
pub struct PlanMemory {
    path: PathBuf,
    goal: String,
    tools: String,
}

impl PlanMemory {
    /// The entry for `goal` with `catalog`'s tools, under `state_dir/plans`.
    pub fn new(state_dir: &Path, goal: &str, catalog: &Catalog) -> PlanMemory {
        let goal = normalise_goal(goal);
        let tools = tools_digest(catalog);
        let key =
            sha256_hex(format!("toolhost plan memory v{VERSION}\n{goal}\n{tools}").as_bytes());
        PlanMemory {
            path: state_dir.join("plans").join(format!("{key}.json")),
            goal,
            tools,
        }
    }

    /// The entry's file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn unusable(&self, reason: impl ToString) -> MemoryError {
        MemoryError::Unusable {
            path: self.path.display().to_string(),
            reason: reason.to_string(),
        }
    }

    /// The stored plan: `Ok(None)` when there is none, `Err` when the file is unusable
    /// (the caller warns and goes on without it).
    pub fn recall(&self) -> Result<Option<Plan>, MemoryError> {
        let read = owned::open_regular(&self.path).and_then(|mut f| {
            let mut text = String::new();
            f.read_to_string(&mut text).map(|_| text)
        });
        let text = match read {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(self.unusable(e)),
        };
        let entry: Entry = serde_json::from_str(&text).map_err(|e| self.unusable(e))?;
        if entry.version != VERSION {
            return Err(self.unusable(format!("version {} is not {VERSION}", entry.version)));
        }
        if entry.tools != self.tools {
            return Err(self.unusable("it was stored for another tool set"));
        }
        Ok(Some(entry.plan))
    }

    /// Stores the plan of `report` if the run completed in plan-then-execute mode and its
    /// last revision stands alone; returns whether it did.
    pub fn remember(
        &self,
        report: &RunReport,
        catalog: &Catalog,
        max_plan_steps: usize,
    ) -> Result<bool, MemoryError> {
        if report.stop != StopReason::Completed || report.mode != Mode::PlanThenExecute {
            return Ok(false);
        }
        let Some(last) = report.revisions.last() else {
            return Ok(false);
        };
        let plan = Plan {
            revision: 1,
            ..last.clone()
        };
        if validate(&plan, catalog, max_plan_steps, &BTreeMap::new()).is_err() {
            return Ok(false);
        }
        let entry = Entry {
            version: VERSION,
            goal: self.goal.clone(),
            tools: self.tools.clone(),
            plan,
        };
        self.write(&entry).map_err(|e| MemoryError::Write {
            path: self.path.display().to_string(),
            reason: e.to_string(),
        })?;
        Ok(true)
    }

    /// A temporary file in the same directory, renamed over the entry: a reader sees the
    /// old entry or the new one, never half of one.
    fn write(&self, entry: &Entry) -> std::io::Result<()> {
        let text = serde_json::to_string_pretty(entry).expect("an entry serialises");
        owned::write_file(&self.path, text.as_bytes())
    }
}

/// A planner that answers the first plan request from plan memory, and everything else
/// (and everything, on a miss) with `inner`.
pub struct MemoryPlanner {
    inner: Box<dyn Planner>,
    recalled: Option<Plan>,
    /// The recalled plan was served: `inner` never saw it, so a repair of it is asked of
    /// `inner` afresh.
    served: bool,
}

impl MemoryPlanner {
    pub fn new(inner: Box<dyn Planner>, recalled: Option<Plan>) -> MemoryPlanner {
        MemoryPlanner {
            inner,
            recalled,
            served: false,
        }
    }

    fn serves(&self, req: &PlanRequest) -> bool {
        self.recalled.is_some()
            && req.mode == Mode::PlanThenExecute
            && req.revision == 1
            && req.problems.is_empty()
            && req.failure.is_none()
    }
}

impl Planner for MemoryPlanner {
    fn name(&self) -> String {
        self.inner.name()
    }

    fn estimate(&self, req: &PlanRequest) -> Usage {
        if self.serves(req) {
            Usage {
                model: MODEL.into(),
                cached: true,
                ..Usage::default()
            }
        } else {
            self.inner.estimate(req)
        }
    }

    fn plan<'a>(&'a mut self, req: &'a PlanRequest) -> PlanFuture<'a> {
        Box::pin(async move {
            if self.serves(req)
                && let Some(plan) = self.recalled.take()
            {
                self.served = true;
                let usage = Usage {
                    model: MODEL.into(),
                    cached: true,
                    ..Usage::default()
                };
                return Ok((Reply::Plan { plan }, usage));
            }
            if std::mem::take(&mut self.served) && !req.problems.is_empty() {
                let fresh = PlanRequest {
                    problems: Vec::new(),
                    ..req.clone()
                };
                return self.inner.plan(&fresh).await;
            }
            self.inner.plan(req).await
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn goals_normalise_case_space_and_trailing_punctuation() {
        assert_eq!(
            normalise_goal("  What is\t12 * 4\n+ 5?! "),
            "what is 12 * 4 + 5"
        );
        assert_eq!(normalise_goal("Sum 1, 2."), "sum 1, 2");
        assert_ne!(normalise_goal("sum 1 2"), normalise_goal("sum 1 3"));
    }
}
