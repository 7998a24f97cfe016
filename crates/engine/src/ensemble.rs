//! [`Ensemble`]: a fast planner first, escalating to a strong one.
//!
//! The fast planner answers until one of these happens, and then the strong planner takes
//! over for the rest of the run:
//! - `escalate_after_invalid` requests in a row carry validation problems (the engine's
//!   repair rounds: the fast planner's answers failed validation that many times);
//! - a step-wise turn that runs a step (a tool call or a handoff) has a confidence below
//!   the run's threshold: the same request is asked of the strong planner before anything
//!   runs, and the strong planner's turn is the reply;
//! - the fast planner gives up, or fails for a reason other than a run budget (answers
//!   that never decode, a provider that keeps failing).
//!
//! Escalation is one-way. A goal that tripped the fast planner once is likely to trip it
//! again, and a run whose planner changes back and forth is harder to follow in the
//! journal; the strong planner also has no memory of the fast one's answers, so the first
//! request it sees is asked afresh (its `problems`, which are about the fast planner's
//! answer, are dropped).
//!
//! When both planners were called for one reply, the reply's [`Usage`] is the strong
//! planner's with the fast call in [`Usage::also`], so the engine charges each call at its
//! own model's price, and the journal's `planner_called` record names the model that
//! answered. A re-ask that the run's token, cost or wall-time budgets left after the fast
//! call cannot cover is not sent: the fast planner's answer stands.

use std::time::Instant;

use super::budget::{Prices, cost};
use super::planner::{Ask, PlanFuture, PlanRequest, Planner, PlannerError, Reply, Usage};

/// How an [`Ensemble`] decides. `EnsembleConfig::new(threshold)`:
/// - `escalate_after_invalid`: 2 validation failures in a row;
/// - `confidence_threshold`: `threshold` (pass the run's, `RunConfig::confidence_threshold`);
/// - `prices`: empty (re-asks are checked against the token budgets only).
#[derive(Debug, Clone, PartialEq)]
pub struct EnsembleConfig {
    pub escalate_after_invalid: u32,
    pub confidence_threshold: f64,
    /// The run's prices, to check that a re-ask fits the cost budget left.
    pub prices: Prices,
}

impl EnsembleConfig {
    pub fn new(confidence_threshold: f64) -> EnsembleConfig {
        EnsembleConfig {
            escalate_after_invalid: 2,
            confidence_threshold,
            prices: Prices::new(),
        }
    }
}

/// A fast planner backed by a strong one.
pub struct Ensemble {
    fast: Box<dyn Planner>,
    strong: Box<dyn Planner>,
    config: EnsembleConfig,
    /// Why the strong planner took over, once it has.
    escalated: Option<String>,
    /// Requests in a row that carried validation problems.
    invalid: u32,
}

impl Ensemble {
    pub fn new(fast: Box<dyn Planner>, strong: Box<dyn Planner>, config: EnsembleConfig) -> Self {
        Ensemble {
            fast,
            strong,
            config,
            escalated: None,
            invalid: 0,
        }
    }

    /// Why the strong planner took over, if it has.
    pub fn escalated(&self) -> Option<&str> {
        self.escalated.as_deref()
    }

    /// Whether `req` goes to the strong planner without asking the fast one.
    fn strong_first(&self, req: &PlanRequest) -> bool {
        self.escalated.is_some()
            || (!req.problems.is_empty() && self.invalid + 1 >= self.config.escalate_after_invalid)
    }

    /// Why the fast planner's outcome is not good enough, if it is not.
    fn not_good_enough(&self, outcome: &Result<(Reply, Usage), PlannerError>) -> Option<String> {
        match outcome {
            Ok((Reply::Turn { turn }, _))
                if !turn.stop && turn.confidence < self.config.confidence_threshold =>
            {
                Some(format!(
                    "the fast planner's confidence {} is below the threshold {}",
                    turn.confidence, self.config.confidence_threshold
                ))
            }
            Ok((Reply::GiveUp { why }, _)) => Some(format!("the fast planner gave up: {why}")),
            Err(e) if e.budget.is_none() => Some(format!("the fast planner failed: {e}")),
            _ => None,
        }
    }

    /// `req` with what `spent` and `since` used taken off its budgets, or `None` when the
    /// strong planner's estimate for it does not fit what is left.
    fn affordable(&self, req: &PlanRequest, spent: &Usage, since: Instant) -> Option<PlanRequest> {
        let mut next = PlanRequest {
            problems: Vec::new(),
            ..req.clone()
        };
        let r = &mut next.remaining;
        for u in spent.calls() {
            r.input_tokens = r.input_tokens.saturating_sub(u.input_tokens);
            r.output_tokens = r.output_tokens.saturating_sub(u.output_tokens);
            if let Some(p) = self.config.prices.get(&u.model) {
                r.cost_usd = (r.cost_usd - u.cost_at(p)).max(0.0);
            }
        }
        let elapsed = u64::try_from(since.elapsed().as_millis()).unwrap_or(u64::MAX);
        r.wall_ms = r.wall_ms.saturating_sub(elapsed);
        let est = self.strong.estimate(&next);
        let est_cost = self
            .config
            .prices
            .get(&est.model)
            .map_or(0.0, |p| cost(p, est.input_tokens, est.output_tokens));
        let r = &next.remaining;
        let fits = r.wall_ms > 0
            && est.input_tokens <= r.input_tokens
            && est.output_tokens <= r.output_tokens
            && est_cost <= r.cost_usd + 1e-12;
        fits.then_some(next)
    }

    fn escalate(&mut self, why: String) {
        tracing::info!(
            why = %why,
            strong = %self.strong.name(),
            "the ensemble escalates to the strong planner"
        );
        self.escalated = Some(why);
    }
}

impl Planner for Ensemble {
    fn name(&self) -> String {
        format!("ensemble({}, {})", self.fast.name(), self.strong.name())
    }

    fn estimate(&self, req: &PlanRequest) -> Usage {
        if self.strong_first(req) {
            self.strong.estimate(req)
        } else {
            self.fast.estimate(req)
        }
    }

    fn plan<'a>(&'a mut self, req: &'a PlanRequest) -> PlanFuture<'a> {
        Box::pin(async move {
            let strong_first = self.strong_first(req);
            self.invalid = if req.problems.is_empty() {
                0
            } else {
                self.invalid + 1
            };
            if strong_first {
                if self.escalated.is_some() {
                    return self.strong.plan(req).await;
                }
                self.escalate(format!("validation failed {} times in a row", self.invalid));
                let fresh = PlanRequest {
                    problems: Vec::new(),
                    ..req.clone()
                };
                let mut answer = self.strong.plan(&fresh).await;
                note_sent_as(&mut answer, req, &fresh);
                return answer;
            }
            let asked = Instant::now();
            let first = self.fast.plan(req).await;
            let Some(why) = self.not_good_enough(&first) else {
                return first;
            };
            let fast_usage = match &first {
                Ok((_, u)) => u.clone(),
                Err(e) => e.usage.clone(),
            };
            let Some(next) = self.affordable(req, &fast_usage, asked) else {
                tracing::info!(why = %why, "the budgets left cannot cover asking the strong planner");
                return first;
            };
            self.escalate(why);
            let mut answer = self.strong.plan(&next).await;
            note_sent_as(&mut answer, req, &next);
            match answer {
                Ok((reply, mut usage)) => {
                    usage.also.push(fast_usage);
                    Ok((reply, usage))
                }
                Err(mut e) => {
                    e.usage.also.push(fast_usage);
                    Err(e)
                }
            }
        })
    }
}

/// Notes on the strong planner's answer to `sent` what it was asked, when that is not
/// what the run asked (`req`): the journal must not show a fresh plan as a repair.
fn note_sent_as(
    answer: &mut Result<(Reply, Usage), PlannerError>,
    req: &PlanRequest,
    sent: &PlanRequest,
) {
    let (asked, got) = (Ask::of(req), Ask::of(sent));
    if asked != got {
        let usage = match answer {
            Ok((_, u)) => u,
            Err(e) => &mut e.usage,
        };
        usage.sent_as = Some(Box::new(got));
    }
}
