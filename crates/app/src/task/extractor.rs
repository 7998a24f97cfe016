//! The `[extractor]` table: the model that makes a plan's extractions (`model.extract`,
//! [`toolhost_engine::extract`]), a model table like `[planner.fast]`. Without the table
//! the planner's model makes them (an ensemble's fast model); a scripted planner has none,
//! and a plan that extracts is refused at validation. A cassette's planner
//! (`kind = "replay"`) serves the extractions the cassette recorded, table or not.

use std::path::{Path, PathBuf};

use super::planners::{PlannerConfig, PlannerSpec, model_table};
use toolhost_llm::LlmConfig;

/// What makes a task's extractions.
#[derive(Debug, Clone, PartialEq)]
pub enum ExtractorSpec {
    /// A model with no tools.
    Llm(LlmConfig),
    /// The extractions recorded in a cassette (`--record`), served back offline.
    Replay(PathBuf),
}

/// The extractor of a task whose `[extractor]` table is `table` and whose planner is
/// `planner`; `None` when nothing can extract.
pub(super) fn resolve(
    table: Option<&PlannerConfig>,
    planner: &PlannerSpec,
    base: &Path,
) -> Result<Option<ExtractorSpec>, String> {
    let table = match (table, planner) {
        // A replayed run calls no model: its extractions come from the cassette too. The
        // table is still checked, so a broken one is not found only when recording again.
        (Some(t), PlannerSpec::Replay(_)) => {
            model_table("[extractor]", t, base)?;
            None
        }
        (table, _) => table,
    };
    if let Some(t) = table {
        return model_table("[extractor]", t, base).map(|c| Some(ExtractorSpec::Llm(c)));
    }
    Ok(match planner {
        // Scripts (the adversary too) answer from a record: no model to extract with.
        PlannerSpec::Scripted | PlannerSpec::Adversary(_) => None,
        PlannerSpec::Llm(c) => Some(ExtractorSpec::Llm(c.clone())),
        PlannerSpec::Ensemble { fast, .. } => Some(ExtractorSpec::Llm(fast.clone())),
        PlannerSpec::Replay(cassette) => Some(ExtractorSpec::Replay(cassette.clone())),
    })
}
