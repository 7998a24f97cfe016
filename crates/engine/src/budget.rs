//! Run budgets and stop reasons. Every budget is checked *before* the planner call or tool
//! call that would spend it, so a run stops at a budget instead of going past it.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::asked::Ask;
use super::decider::How;

/// What one run may spend. `Budgets::default()`:
/// - `max_steps`: 20 tool calls;
/// - `max_replans`: 2;
/// - `max_wall_ms`: 60,000;
/// - `max_fuel`: 10,000,000,000 across all tool calls;
/// - `max_input_tokens` / `max_output_tokens`: 100,000 / 20,000;
/// - `max_cost_usd`: 1.00 (priced by [`Prices`]);
/// - `max_plan_repairs`: 2 rounds of handing validation errors back to the planner;
/// - `max_wait_ms`: none: a person may take as long as they need to review, approve or
///   answer (the run holds no tool call open meanwhile, and the time is not the run's:
///   `max_wall_ms` does not count it); `Some(ms)`: one wait longer than that ends the run
///   `budget_exhausted (wait for a person)`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Budgets {
    pub max_steps: u32,
    pub max_replans: u32,
    pub max_wall_ms: u64,
    pub max_fuel: u64,
    pub max_input_tokens: u64,
    pub max_output_tokens: u64,
    pub max_cost_usd: f64,
    pub max_plan_repairs: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_wait_ms: Option<u64>,
}

impl Default for Budgets {
    fn default() -> Budgets {
        Budgets {
            max_steps: 20,
            max_replans: 2,
            max_wall_ms: 60_000,
            max_fuel: 10_000_000_000,
            max_input_tokens: 100_000,
            max_output_tokens: 20_000,
            max_cost_usd: 1.0,
            max_plan_repairs: 2,
            max_wait_ms: None,
        }
    }
}

/// USD per million tokens, by model name. Input tokens the provider served from its prompt
/// cache are priced at `cached_input_per_mtok` (when unset, at `input_per_mtok`: no
/// discount is assumed that the operator did not write down).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Price {
    pub input_per_mtok: f64,
    pub output_per_mtok: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_input_per_mtok: Option<f64>,
}

/// The price table of a run.
pub type Prices = BTreeMap<String, Price>;

/// What a run has spent so far.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Spent {
    pub steps: u32,
    pub replans: u32,
    pub fuel: u64,
    pub input_tokens: u64,
    /// How many of `input_tokens` were served from a provider's prompt cache.
    pub cached_input_tokens: u64,
    pub output_tokens: u64,
    pub cost_usd: f64,
    pub planner_calls: u32,
    #[serde(serialize_with = "millis")]
    pub wall: Duration,
}

fn millis<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_u64(u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// Which budget stopped a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Budget {
    Steps,
    WallTime,
    Fuel,
    InputTokens,
    OutputTokens,
    Cost,
    /// One wait for a person (a review, an approval, an answer) outlasted `max_wait_ms`.
    Wait,
}

impl std::fmt::Display for Budget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Budget::Steps => "steps",
            Budget::WallTime => "wall time",
            Budget::Fuel => "fuel",
            Budget::InputTokens => "input tokens",
            Budget::OutputTokens => "output tokens",
            Budget::Cost => "cost",
            Budget::Wait => "wait for a person",
        })
    }
}

/// Why a run ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "reason", rename_all = "snake_case")]
#[non_exhaustive]
pub enum StopReason {
    /// Every step of the final plan succeeded (plan-then-execute).
    Completed,
    /// The planner said stop (step-wise).
    PlannerStopped,
    BudgetExhausted {
        which: Budget,
    },
    /// A step failed and the replan budget is spent.
    ReplanLimit,
    /// The evaluator failed a step and the reaction is `stop`.
    EvaluatorFailed {
        step: String,
    },
    /// Something needs a person: an invalid plan after repairs, an unauthorised tool, a
    /// step needing approval without an approver, a planner failure.
    Escalated {
        why: String,
    },
    RejectedByHuman {
        what: String,
    },
    Cancelled {
        /// Who cancelled it (an API token's name, the terminal's user), when known.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        by: Option<String>,
        /// How: through the API or console, or at the terminal (Ctrl-C).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        how: Option<How>,
    },
    /// The process running it shut down (`serve`'s SIGTERM after its grace period) while
    /// it ran or waited for a person: nobody decided anything, and it carries on where it
    /// stopped (`serve` does so at its next start; `toolhost resume` too).
    Suspended,
    /// The policy refused as many of the run's actions as it allows (`max_refusals`):
    /// a planner that keeps proposing what it may not is treated as hijacked.
    RefusalLimit {
        refused: u64,
    },
    /// A journal record could not be written (a full disk, an I/O error): the journal is
    /// the run's write-ahead log, so no further step starts.
    JournalFailed {
        why: String,
    },
}

impl StopReason {
    /// `cancelled`, by nobody named (Ctrl-C unattributed, a task that stopped itself).
    pub fn cancelled() -> StopReason {
        StopReason::Cancelled {
            by: None,
            how: None,
        }
    }
}

impl std::fmt::Display for StopReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StopReason::Completed => f.write_str("completed"),
            StopReason::PlannerStopped => f.write_str("planner_stopped"),
            StopReason::BudgetExhausted { which } => write!(f, "budget_exhausted ({which})"),
            StopReason::ReplanLimit => f.write_str("replan_limit"),
            StopReason::EvaluatorFailed { step } => write!(f, "evaluator_failed (step `{step}`)"),
            StopReason::Escalated { why } => write!(f, "escalated: {why}"),
            StopReason::RejectedByHuman { what } => write!(f, "rejected_by_human: {what}"),
            StopReason::Cancelled { by, how } => {
                f.write_str("cancelled")?;
                match (by, how) {
                    (Some(by), Some(how)) => write!(f, " by {by} ({})", how.as_str()),
                    (Some(by), None) => write!(f, " by {by}"),
                    (None, Some(how)) => write!(f, " ({})", how.as_str()),
                    (None, None) => Ok(()),
                }
            }
            StopReason::Suspended => f.write_str("suspended"),
            StopReason::RefusalLimit { refused } => write!(
                f,
                "refusal_limit ({refused} action{} refused)",
                if *refused == 1 { "" } else { "s" }
            ),
            StopReason::JournalFailed { why } => write!(f, "journal_failed: {why}"),
        }
    }
}

impl Budgets {
    /// The budget a tool call would exceed, given what is spent.
    pub(crate) fn before_tool_call(&self, spent: &Spent) -> Option<Budget> {
        if spent.steps >= self.max_steps {
            Some(Budget::Steps)
        } else if spent.fuel >= self.max_fuel {
            Some(Budget::Fuel)
        } else if spent.wall >= Duration::from_millis(self.max_wall_ms) {
            Some(Budget::WallTime)
        } else {
            None
        }
    }

    /// The budget a planner call expected to use `input` tokens and at most `output`
    /// tokens (priced with `price`) would exceed.
    pub(crate) fn before_planner_call(
        &self,
        spent: &Spent,
        input: u64,
        output: u64,
        price: Option<&Price>,
    ) -> Option<Budget> {
        let cost = price.map_or(0.0, |p| cost(p, input, output));
        if spent.wall >= Duration::from_millis(self.max_wall_ms) {
            Some(Budget::WallTime)
        } else if spent.input_tokens + input > self.max_input_tokens {
            Some(Budget::InputTokens)
        } else if spent.output_tokens + output > self.max_output_tokens {
            Some(Budget::OutputTokens)
        } else if spent.cost_usd + cost > self.max_cost_usd + 1e-12 {
            Some(Budget::Cost)
        } else {
            None
        }
    }

    /// Fuel left for the next call.
    pub(crate) fn fuel_left(&self, spent: &Spent) -> u64 {
        self.max_fuel.saturating_sub(spent.fuel)
    }

    /// Wall time left.
    pub(crate) fn wall_left(&self, spent: &Spent) -> Duration {
        Duration::from_millis(self.max_wall_ms).saturating_sub(spent.wall)
    }
}

/// The cost of `input` and `output` tokens at `price`, none of them cached (an estimate's).
pub fn cost(price: &Price, input: u64, output: u64) -> f64 {
    (input as f64 * price.input_per_mtok + output as f64 * price.output_per_mtok) / 1e6
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checks_before_spending() {
        let b = Budgets {
            max_steps: 2,
            max_input_tokens: 100,
            max_cost_usd: 0.001,
            ..Budgets::default()
        };
        let mut s = Spent::default();
        assert_eq!(b.before_tool_call(&s), None);
        s.steps = 2;
        assert_eq!(b.before_tool_call(&s), Some(Budget::Steps));
        assert_eq!(b.before_planner_call(&s, 100, 0, None), None);
        assert_eq!(
            b.before_planner_call(&s, 101, 0, None),
            Some(Budget::InputTokens)
        );
        let p = Price {
            input_per_mtok: 10.0,
            output_per_mtok: 30.0,
            cached_input_per_mtok: None,
        };
        // 100 input tokens at $10/M = $0.001: exactly the budget.
        assert_eq!(b.before_planner_call(&s, 100, 0, Some(&p)), None);
        s.cost_usd = 0.0005;
        assert_eq!(
            b.before_planner_call(&s, 100, 0, Some(&p)),
            Some(Budget::Cost)
        );
    }
}

/// Tokens a planner call used.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Usage {
    #[serde(default)]
    pub model: String,
    #[serde(default)]
    pub input_tokens: u64,
    #[serde(default)]
    pub output_tokens: u64,
    /// How many of `input_tokens` the provider served from its prompt cache (a repeated
    /// prefix), which it bills at a lower price ([`Price`]).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cached_input_tokens: u64,
    /// Other model calls the same reply needed (an ensemble's fast model before the strong
    /// one answered), each charged at its own model's price.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub also: Vec<Usage>,
    /// The reply was served from a cache (plan memory), not asked of a model: the run
    /// records the call `cached`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cached: bool,
    /// What the answering model was asked, where that differs from the run's request:
    /// an ensemble's strong planner is asked afresh for a plan where the run asked the
    /// fast one for a repair. The run's own request stays the call's `ask` (resume
    /// matches answers to requests by it). Boxed: rare, and every planner result carries
    /// a `Usage`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sent_as: Option<Box<Ask>>,
}

impl Usage {
    /// This call and every call in `also`, flattened: what the run is charged for.
    pub fn calls(&self) -> Vec<&Usage> {
        let mut all = vec![self];
        for u in &self.also {
            all.extend(u.calls());
        }
        all
    }
}

impl Usage {
    /// The cost of this call's usage at `price`: its cached input tokens at the cached
    /// price.
    pub fn cost_at(&self, price: &Price) -> f64 {
        let cached = self.cached_input_tokens.min(self.input_tokens);
        let cached_price = price.cached_input_per_mtok.unwrap_or(price.input_per_mtok);
        cost(price, self.input_tokens - cached, self.output_tokens)
            + cached as f64 * cached_price / 1e6
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}
