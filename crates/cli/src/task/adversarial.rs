//! `kind = "adversarial"` in the `[planner]` table: the adversarial planner, for measuring
//! prompt-injection defences only (`toolhost_eval::adversary`), takes its script and nothing
//! else.

use std::path::Path;

use super::planners::{PlannerConfig, PlannerKind, PlannerSpec};

/// `kind = "adversarial"`: an adversary script, and nothing else.
pub(super) fn resolve(p: &PlannerConfig, base: &Path) -> Result<PlannerSpec, String> {
    let rest = PlannerConfig {
        kind: PlannerKind::Adversarial,
        adversary: None,
        ..p.clone()
    };
    if rest
        != (PlannerConfig {
            kind: PlannerKind::Adversarial,
            ..PlannerConfig::default()
        })
    {
        return Err(
            "[planner] with `kind = \"adversarial\"` takes only `adversary` (its script: task steps, injection steps, trigger)".into(),
        );
    }
    let file = p.adversary.as_ref().ok_or(
        "`kind = \"adversarial\"` needs `adversary`, a script file: {\"task\": [steps], \"injection\": [steps], \"trigger\": \"text\"}",
    )?;
    Ok(PlannerSpec::Adversary(base.join(file)))
}
