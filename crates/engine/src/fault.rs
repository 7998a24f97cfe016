//! Fault injection for `toolhost replay`: make a step fail or time out without calling its
//! tool, to check that the planner path escalates rather than loops.

use std::fmt;

use super::plan::StepId;
use super::record::StepError;

/// What an injected fault does to a step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultKind {
    /// The step fails as if its tool had trapped.
    Fail,
    /// The step fails with `timeout`, as if it had run past its deadline.
    Timeout,
}

/// A fault for step `step` in `revision` (every revision when `None`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fault {
    pub step: StepId,
    pub revision: Option<u32>,
    pub kind: FaultKind,
}

impl Fault {
    /// The error the faulted step records.
    pub fn error(self) -> StepError {
        let (kind, what) = match self.kind {
            FaultKind::Fail => ("trap", "fail"),
            FaultKind::Timeout => ("timeout", "time out"),
        };
        StepError {
            kind: kind.into(),
            message: format!(
                "fault injected by replay: step `{}` made to {what}",
                self.step
            ),
            value: None,
        }
    }
}

/// Why a fault could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("bad fault `{given}`: {why} (expected STEP or STEP@REVISION, e.g. `s2` or `s2@1`)")]
pub struct FaultError {
    pub given: String,
    pub why: String,
}

impl Fault {
    /// Parses `STEP` or `STEP@REVISION`.
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
            step,
            revision,
            kind,
        })
    }
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match self.kind {
            FaultKind::Fail => "fail",
            FaultKind::Timeout => "timeout",
        };
        match self.revision {
            Some(r) => write!(f, "{kind} {}@{r}", self.step),
            None => write!(f, "{kind} {}", self.step),
        }
    }
}

/// The faults of a run; none by default.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Faults(pub Vec<Fault>);

impl Faults {
    /// The fault for step `id` of `revision`, if any.
    pub fn find(&self, id: &StepId, revision: u32) -> Option<Fault> {
        self.0
            .iter()
            .find(|f| &f.step == id && f.revision.is_none_or(|r| r == revision))
            .cloned()
    }
}
