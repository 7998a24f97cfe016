//! The ensemble planner against two mock providers: the fast model answers while it is
//! good enough; two invalid plans in a row, or a low-confidence turn, hand the run to the
//! strong model, which keeps it; every call is charged at its own model's price.

use serde_json::{Value, json};
use toolhost_engine::planner::Ask;
use toolhost_engine::{
    Ensemble, EnsembleConfig, Mode, Planner, Price, RunConfig, RunReport, StopReason,
};
use toolhost_llm::ProviderKind;
use toolhost_tests::server::Server;

use super::mock::{openai, prompt};
use super::{calc, config, mode, planner, run, strict_plan, strict_step, strict_turn};

const FAST: Price = Price {
    input_per_mtok: 0.15,
    output_per_mtok: 0.6,
    cached_input_per_mtok: None,
};
const STRONG: Price = Price {
    input_per_mtok: 3.0,
    output_per_mtok: 15.0,
    cached_input_per_mtok: None,
};

fn ensemble(fast: &Server, strong: &Server) -> Ensemble {
    let fast: Box<dyn Planner> = Box::new(planner(config(ProviderKind::OpenAi, fast, "fast")));
    let strong: Box<dyn Planner> =
        Box::new(planner(config(ProviderKind::OpenAi, strong, "strong")));
    let mut c = EnsembleConfig::new(RunConfig::default().confidence_threshold);
    c.prices = priced(RunConfig::default()).prices;
    Ensemble::new(fast, strong, c)
}

fn priced(mut cfg: RunConfig) -> RunConfig {
    cfg.prices.insert("fast".into(), FAST);
    cfg.prices.insert("strong".into(), STRONG);
    cfg
}

fn cost(p: &Price, input: u64, output: u64) -> f64 {
    (input as f64 * p.input_per_mtok + output as f64 * p.output_per_mtok) / 1e6
}

/// The run spent `tokens` (in, out) and `usd`.
fn spent(report: &RunReport, tokens: (u64, u64), usd: f64) {
    let s = &report.spent;
    assert_eq!((s.input_tokens, s.output_tokens), tokens);
    assert!((s.cost_usd - usd).abs() < 1e-12, "{} != {usd}", s.cost_usd);
}

fn plan(args: Value) -> String {
    strict_plan("g", vec![strict_step("s1", "calc", "eval", args)])
}

fn models(report: &RunReport) -> Vec<&str> {
    report
        .planner_calls
        .iter()
        .map(|c| c.model.as_str())
        .collect()
}

/// A step-wise turn calling calc with `confidence`.
fn turn(expression: &str, confidence: f64) -> String {
    let mut t: Value = serde_json::from_str(&strict_turn(
        Some(("calc", "eval", json!({"expression": expression}))),
        false,
        None,
    ))
    .unwrap();
    t["confidence"] = json!(confidence);
    t.to_string()
}

#[test]
fn two_invalid_fast_plans_escalate_to_the_strong_model() {
    let bad = plan(json!({"expr": "40 + 2"}));
    let fast = Server::replying(vec![openai(&bad, 100, 10), openai(&bad, 110, 11)]);
    let strong = Server::replying(vec![openai(
        &plan(json!({"expression": "40 + 2"})),
        300,
        30,
    )]);
    let mut p = ensemble(&fast, &strong);
    let report = run(calc(), priced(mode(Mode::PlanThenExecute)), "g", &mut p);
    assert_eq!(report.stop, StopReason::Completed, "{report:#?}");
    assert_eq!(report.answer, Some(json!(42)));
    assert_eq!(fast.received().len(), 2);
    assert_eq!(strong.received().len(), 1);
    assert_eq!(models(&report), ["fast", "fast", "strong"]);
    assert_eq!(
        p.escalated(),
        Some("validation failed 2 times in a row"),
        "{report:#?}"
    );
    // The strong model is asked afresh: the problems were about an answer it never gave.
    let asked = prompt(&strong.received()[0]);
    assert!(!asked.contains("previous answer was rejected"), "{asked}");
    // The record says so: the run asked for a repair, the strong model for a first plan.
    let calls = &report.planner_calls;
    assert_eq!((&calls[1].ask, &calls[1].sent_as), (&Ask::Repair, &None));
    assert_eq!(
        (&calls[2].ask, &calls[2].sent_as),
        (&Ask::Repair, &Some(Ask::Plan))
    );
    let journaled = serde_json::to_value(&calls[2]).unwrap();
    assert_eq!(journaled["sent_as"], json!({"kind": "plan"}), "{journaled}");
    assert!(
        serde_json::to_value(&calls[0])
            .unwrap()
            .get("sent_as")
            .is_none()
    );
    spent(
        &report,
        (510, 51),
        cost(&FAST, 210, 21) + cost(&STRONG, 300, 30),
    );
}

#[test]
fn a_low_confidence_turn_is_asked_again_of_the_strong_model_which_keeps_the_run() {
    let fast = Server::replying(vec![openai(&turn("40 + 2", 0.3), 100, 10)]);
    let strong = Server::replying(vec![
        openai(&turn("6 * 7", 0.9), 300, 30),
        openai(&strict_turn(None, true, Some("42")), 320, 5),
    ]);
    let mut p = ensemble(&fast, &strong);
    let report = run(calc(), priced(mode(Mode::StepWise)), "g", &mut p);
    assert_eq!(report.stop, StopReason::PlannerStopped, "{report:#?}");
    assert_eq!(report.answer, Some(json!(42)));
    // Only the strong model's step ran; the second turn went straight to it.
    assert_eq!(report.steps.len(), 1);
    assert_eq!(report.steps[0].args, json!({"expression": "6 * 7"}));
    assert_eq!((fast.received().len(), strong.received().len()), (1, 2));
    assert_eq!(models(&report), ["strong", "strong"]);
    let first = &report.planner_calls[0];
    assert_eq!(first.input_tokens, 300);
    assert_eq!(first.also.len(), 1, "{first:?}");
    assert_eq!(
        (first.also[0].model.as_str(), first.also[0].input_tokens),
        ("fast", 100)
    );
    assert!(
        p.escalated().is_some_and(|w| w.contains("confidence 0.3")),
        "{:?}",
        p.escalated()
    );
    // Both calls of the first turn are charged, each at its own price.
    spent(
        &report,
        (720, 45),
        cost(&FAST, 100, 10) + cost(&STRONG, 620, 35),
    );
}

#[test]
fn a_fast_model_that_is_good_enough_answers_alone() {
    let fast = Server::replying(vec![
        openai(&turn("40 + 2", 0.9), 100, 10),
        openai(&strict_turn(None, true, Some("42")), 120, 5),
    ]);
    let strong = Server::replying(Vec::new());
    let mut p = ensemble(&fast, &strong);
    let report = run(calc(), priced(mode(Mode::StepWise)), "g", &mut p);
    assert_eq!(report.stop, StopReason::PlannerStopped, "{report:#?}");
    assert_eq!(report.answer, Some(json!(42)));
    assert_eq!(models(&report), ["fast", "fast"]);
    assert!(report.planner_calls.iter().all(|c| c.also.is_empty()));
    assert_eq!(strong.received().len(), 0);
    assert_eq!(p.escalated(), None);
    spent(&report, (220, 15), cost(&FAST, 220, 15));
}
