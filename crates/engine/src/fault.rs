//! Fault injection, a layer in the executor: a matching call fails as a real one would
//! (an error value, a deadline, exhausted fuel, an instance that cannot start), or runs
//! and has its output replaced by one its result type does not allow. Used by
//! `toolhost replay --fail/--timeout` and by evaluation suites (`[[faults]]`).
//!
//! A fault matches calls by step id (optionally of one revision) or by tool (optionally
//! one operation) and fires on the Nth matching call, on every one, or on each with a
//! probability drawn from a seeded generator over the matching-call counter, so a run is
//! reproducible. The recorded error has the kind the runtime gives the real failure; only
//! its message says "fault injected". With no fault configured the executor does nothing
//! more per call than check that the list is empty.

use std::fmt;

use serde_json::Value;

use super::plan::{OperationName, StepId, ToolName};
use super::record::StepError;
use toolhost_runtime::error::CallError;

mod spec;
#[cfg(test)]
mod tests;

pub use self::spec::FaultSpec;

/// What an injected fault does to a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultKind {
    /// The tool returns its error value (`tool_error`); the tool is not run.
    Error,
    /// The step traps (`trap`), as `toolhost replay --fail` makes it; not run.
    Fail,
    /// The deadline passes (`timeout`); not run.
    Timeout,
    /// The fuel runs out (`fuel_exhausted`, all of the step's fuel spent); not run.
    Fuel,
    /// The tool runs and its output is replaced by a value its result type does not
    /// allow, which the executor's output check refuses (`bad_output`).
    Malformed,
    /// The tool cannot be instantiated (`instantiate`); not run.
    Unavailable,
}

impl FaultKind {
    fn name(self) -> &'static str {
        match self {
            FaultKind::Error => "error",
            FaultKind::Fail => "fail",
            FaultKind::Timeout => "timeout",
            FaultKind::Fuel => "fuel",
            FaultKind::Malformed => "malformed",
            FaultKind::Unavailable => "unavailable",
        }
    }
}

/// Which calls a fault looks at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// Step `step`, of `revision` only when given.
    Step { step: StepId, revision: Option<u32> },
    /// Calls of `tool`, of `operation` only when given.
    Tool {
        tool: ToolName,
        operation: Option<OperationName>,
    },
}

/// Which of the matching calls a fault fires on.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Trigger {
    /// Every matching call.
    Every,
    /// The Nth matching call (from 1).
    Nth(u32),
    /// Each matching call with probability `p`, drawn from `seed` and the call's count.
    Probability { p: f64, seed: u64 },
}

/// One fault: a target, a kind and a trigger.
#[derive(Debug, Clone, PartialEq)]
pub struct Fault {
    pub target: Target,
    pub kind: FaultKind,
    pub trigger: Trigger,
}

/// A fault that fired on a call: what the executor does instead of (or after) the call.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Injected {
    pub kind: FaultKind,
    /// "fault injected by ORIGIN (FAULT)", the end of the recorded message.
    pub note: String,
}

impl Injected {
    /// The error the call records, as the runtime would report the real failure, given
    /// the limits the call had; `None` for `malformed`, whose tool runs.
    pub(crate) fn error(&self, fuel: u64, timeout_ms: u64) -> Option<StepError> {
        let real = match self.kind {
            FaultKind::Error => CallError::ToolError {
                value: Value::String(self.note.clone()),
            },
            FaultKind::Fail => CallError::Trap {
                message: "the step was made to fail".into(),
            },
            FaultKind::Timeout => CallError::Timeout { timeout_ms },
            FaultKind::Fuel => CallError::FuelExhausted { limit: fuel },
            FaultKind::Unavailable => CallError::Instantiate {
                reason: "the tool is unavailable".into(),
            },
            FaultKind::Malformed => return None,
        };
        let value = match &real {
            CallError::ToolError { value } => Some(value.clone()),
            _ => None,
        };
        let message = match self.kind {
            FaultKind::Error => real.to_string(),
            _ => format!("{real} — {}", self.note),
        };
        Some(StepError {
            kind: real.kind().as_str().to_string(),
            message,
            value,
        })
    }
}

/// The faults of a run, and who injects them (named in every injected error); none by
/// default.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Faults {
    /// Who injects them: `replay`, `eval`, … (in the recorded messages).
    pub origin: String,
    pub list: Vec<Fault>,
}

impl Faults {
    pub fn new(origin: &str, list: Vec<Fault>) -> Faults {
        Faults {
            origin: origin.to_string(),
            list,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// The fault that fires on this call, if any, counting the call in `counts` (one
    /// counter per fault, grown as needed) for every fault it matches. The first firing
    /// fault wins.
    pub(crate) fn fire(
        &self,
        counts: &mut Vec<u32>,
        call: (&StepId, u32, &ToolName, &OperationName),
    ) -> Option<Injected> {
        counts.resize(self.list.len(), 0);
        let mut fired = None;
        for (f, n) in self.list.iter().zip(counts.iter_mut()) {
            if !f.matches(call) {
                continue;
            }
            *n += 1;
            if fired.is_none() && f.fires_on(*n) {
                fired = Some(Injected {
                    kind: f.kind,
                    note: format!("fault injected by {} ({f})", self.origin),
                });
            }
        }
        fired
    }
}

impl Fault {
    fn matches(&self, (id, revision, tool, op): (&StepId, u32, &ToolName, &OperationName)) -> bool {
        match &self.target {
            Target::Step { step, revision: r } => step == id && r.is_none_or(|r| r == revision),
            Target::Tool { tool: t, operation } => {
                t == tool && operation.as_ref().is_none_or(|o| o == op)
            }
        }
    }

    /// Whether the fault fires on its `n`th matching call (from 1).
    fn fires_on(&self, n: u32) -> bool {
        match self.trigger {
            Trigger::Every => true,
            Trigger::Nth(k) => n == k,
            Trigger::Probability { p, seed } => unit(seed, n) < p,
        }
    }

    /// A step fault from `STEP` or `STEP@REVISION`, on every matching call (replay's
    /// `--fail` and `--timeout`).
    pub fn parse(given: &str, kind: FaultKind) -> Result<Fault, FaultError> {
        let err = |why: String| FaultError {
            given: given.to_string(),
            why,
        };
        let (step, revision) = match given.split_once('@') {
            None => (given, None),
            Some((step, rev)) => {
                let rev: u32 = rev
                    .parse()
                    .ok()
                    .filter(|r| *r > 0)
                    .ok_or_else(|| err(format!("revision `{rev}` is not a number from 1")))?;
                (step, Some(rev))
            }
        };
        let step = StepId::try_from(step.to_string()).map_err(err)?;
        Ok(Fault {
            target: Target::Step { step, revision },
            kind,
            trigger: Trigger::Every,
        })
    }
}

/// A number in [0, 1) from `seed` and `n`: splitmix64, enough to spread a seeded
/// sequence evenly and the same on every platform.
fn unit(seed: u64, n: u32) -> f64 {
    let mut z = seed
        .wrapping_add(u64::from(n).wrapping_mul(0x9E37_79B9_7F4A_7C15))
        .wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    // The top 53 bits, as a double's mantissa.
    (z >> 11) as f64 / (1u64 << 53) as f64
}

/// Why a fault could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("bad fault `{given}`: {why} (expected STEP or STEP@REVISION, e.g. `s2` or `s2@1`)")]
pub struct FaultError {
    pub given: String,
    pub why: String,
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Target::Step {
                step,
                revision: Some(r),
            } => write!(f, "{step}@{r}"),
            Target::Step { step, .. } => write!(f, "{step}"),
            Target::Tool {
                tool,
                operation: Some(op),
            } => write!(f, "{tool}.{op}"),
            Target::Tool { tool, .. } => write!(f, "{tool}"),
        }
    }
}

/// `KIND TARGET[ TRIGGER]`: `fail readme@2`, `error calc.eval on call 2`,
/// `timeout text with probability 0.3 (seed 7)`.
impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.kind.name(), self.target)?;
        match self.trigger {
            Trigger::Every => Ok(()),
            Trigger::Nth(n) => write!(f, " on call {n}"),
            Trigger::Probability { p, seed } => write!(f, " with probability {p} (seed {seed})"),
        }
    }
}
