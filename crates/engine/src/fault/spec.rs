//! A fault as a suite writes it (`[[faults]]` in a task file), checked into a [`Fault`]:
//! exactly one of `step` and `tool`, exactly one of `nth`, `every` and `probability`.

use serde::Deserialize;

use super::{Fault, FaultKind, Target, Trigger};
use crate::plan::{OperationName, ToolName};

/// `[[faults]]` as written.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FaultSpec {
    /// `STEP` or `STEP@REVISION`.
    pub step: Option<String>,
    pub tool: Option<ToolName>,
    /// With `tool` only.
    pub operation: Option<OperationName>,
    pub kind: SpecKind,
    pub nth: Option<u32>,
    #[serde(default)]
    pub every: bool,
    pub probability: Option<f64>,
    /// With `probability`: the generator's seed (default 0).
    pub seed: Option<u64>,
}

/// The kinds a suite may inject (replay's `fail` is not one: a suite says `error`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SpecKind {
    Error,
    Timeout,
    Fuel,
    Malformed,
    Unavailable,
}

impl TryFrom<FaultSpec> for Fault {
    type Error = String;

    fn try_from(s: FaultSpec) -> Result<Fault, String> {
        let target = match (s.step, s.tool) {
            (Some(given), None) => {
                if s.operation.is_some() {
                    return Err(format!(
                        "`operation` narrows a `tool` fault; step `{given}` names one call already"
                    ));
                }
                let step = Fault::parse(&given, FaultKind::Error).map_err(|e| e.to_string())?;
                step.target
            }
            (None, Some(tool)) => Target::Tool {
                tool,
                operation: s.operation,
            },
            (Some(step), Some(tool)) => {
                return Err(format!(
                    "give `step` or `tool`, not both (step `{step}`, tool `{tool}`)"
                ));
            }
            (None, None) => {
                return Err("a fault needs `step` (a step id) or `tool` (a tool name)".into());
            }
        };
        let trigger = match (s.nth, s.every, s.probability) {
            (Some(0), false, None) => {
                return Err("`nth` counts matching calls from 1; 0 never fires".into());
            }
            (Some(n), false, None) => Trigger::Nth(n),
            (None, true, None) => Trigger::Every,
            (None, false, Some(p)) if (0.0..=1.0).contains(&p) => Trigger::Probability {
                p,
                seed: s.seed.unwrap_or(0),
            },
            (None, false, Some(p)) => {
                return Err(format!("probability {p} is not between 0 and 1"));
            }
            (None, false, None) => {
                return Err("say when the fault fires: `nth = N`, `every = true`, or `probability = P` (with `seed`)".into());
            }
            _ => {
                return Err("give exactly one of `nth`, `every = true` and `probability`".into());
            }
        };
        if s.seed.is_some() && !matches!(trigger, Trigger::Probability { .. }) {
            return Err("`seed` goes with `probability` only".into());
        }
        let kind = match s.kind {
            SpecKind::Error => FaultKind::Error,
            SpecKind::Timeout => FaultKind::Timeout,
            SpecKind::Fuel => FaultKind::Fuel,
            SpecKind::Malformed => FaultKind::Malformed,
            SpecKind::Unavailable => FaultKind::Unavailable,
        };
        Ok(Fault {
            target,
            kind,
            trigger,
        })
    }
}
