//! `kind = "adversarial"` in the `[planner]` table: the adversarial planner, for measuring
//! prompt-injection defences only (`toolhost_eval::adversary`), takes its script and nothing
//! else.

use std::path::{Path, PathBuf};

/// The adversary's script file, given whether the table sets anything besides `kind` and
/// `adversary` (`others`) and the `adversary` it sets.
pub(super) fn script(
    others: bool,
    adversary: Option<&str>,
    base: &Path,
) -> Result<PathBuf, String> {
    if others {
        return Err(
            "[planner] with `kind = \"adversarial\"` takes only `adversary` (its script: task steps, injection steps, trigger)".into(),
        );
    }
    let file = adversary.ok_or(
        "`kind = \"adversarial\"` needs `adversary`, a script file: {\"task\": [steps], \"injection\": [steps], \"trigger\": \"text\"}",
    )?;
    Ok(base.join(file))
}
