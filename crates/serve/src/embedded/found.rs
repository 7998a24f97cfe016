//! What the state directory holds at start: the runs its journals record (only regular
//! files of this user), what `STATE/serve/RUN.json` keeps of each submission (who
//! submitted it, whether people review it, its overrides), and the runs suspended at the
//! last shutdown, to be carried on.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use toolhost_journal::{self as journal, Kind};

use super::run::{Outcome, Run};
use crate::head::Head;
use crate::registry::Overrides;

/// What `STATE/serve/RUN.json` keeps of a submission.
#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
pub(super) struct Submitted {
    #[serde(skip)]
    pub(super) id: String,
    #[serde(default)]
    pub(super) submitter: Option<String>,
    #[serde(default)]
    pub(super) approve: bool,
    #[serde(default)]
    pub(super) overrides: Overrides,
}

/// The runs whose journals `state_dir` holds (MCP sessions are not runs), and those of
/// them suspended at the last shutdown.
pub(super) fn found_runs(state_dir: &Path) -> (BTreeMap<String, Arc<Run>>, Vec<Submitted>) {
    let mut runs = BTreeMap::new();
    let mut suspended = Vec::new();
    let Ok(dir) = std::fs::read_dir(state_dir.join("runs")) else {
        return (runs, suspended);
    };
    for e in dir.flatten() {
        let path = e.path();
        if path.extension().is_none_or(|x| x != "jsonl") {
            continue;
        }
        // Only regular files, judged without following a link: a FIFO would block the
        // read (and start-up) forever, a link would show whatever it points at as a run.
        if !e.file_type().is_ok_and(|t| t.is_file()) {
            tracing::warn!(path = %path.display(), "skipped: not a regular journal file");
            continue;
        }
        let Ok(v) = journal::verify(&path, None) else {
            continue;
        };
        let Some(first) = v.records.first().filter(|r| r.kind == Kind::RunStarted) else {
            continue;
        };
        let Some(goal) = first.data["goal"].as_str() else {
            continue;
        };
        let id = journal::run_id(&path);
        let submitted = submitted(state_dir, &id);
        let outcome = Outcome::of_records(&v.records);
        if outcome.stop_reason() == Some("suspended") {
            suspended.push(Submitted {
                id: id.clone(),
                submitter: submitted.submitter.clone(),
                approve: submitted.approve,
                overrides: submitted.overrides,
            });
        }
        let run = Run::found(
            id.clone(),
            goal.to_string(),
            submitted.submitter,
            path,
            outcome,
            Head::of_records(&v.records),
        );
        runs.insert(id, Arc::new(run));
    }
    (runs, suspended)
}

/// What `STATE/serve/RUN.json` says of run `id`: only a file this user wrote counts (it
/// says who may see the run); none, and the run has no submitter, no review, no overrides.
fn submitted(state_dir: &Path, id: &str) -> Submitted {
    toolhost_runtime::owned::open_regular(&submitter_file(state_dir, id))
        .and_then(|mut f| {
            let mut b = Vec::new();
            std::io::Read::read_to_end(&mut f, &mut b).map(|_| b)
        })
        .ok()
        .and_then(|b| serde_json::from_slice::<Submitted>(&b).ok())
        .unwrap_or_default()
}

pub(super) fn submitter_file(state_dir: &Path, id: &str) -> PathBuf {
    state_dir.join("serve").join(format!("{id}.json"))
}
