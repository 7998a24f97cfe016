//! People in the loop: the built-in `human.ask` step (a question whose typed answer later
//! steps reference), and time spent waiting for a person, which is not the run's.

use std::time::Duration;

use serde_json::{Value, json};
use toolhost_engine::approval::{Answered, Question};
use toolhost_engine::{
    Approver, Budgets, Catalog, Plan, PlanDecision, RunConfig, Step, StepDecision, StepStatus,
    StopReason, ValidPlan,
};

use super::{Recording, catalog, record, run, run_with};

const CALC: &str = "version = 1\n[tools.calc]\n";

/// A person who answers questions from a list (and notes them), approves plans after
/// `think`, and may edit the first plan.
struct Person {
    answers: Vec<Value>,
    asked: Vec<(String, Value)>,
    think: Duration,
    edit: Option<Plan>,
    confirmed: usize,
}

impl Person {
    fn answering(answers: Vec<Value>) -> Person {
        Person {
            answers,
            asked: Vec::new(),
            think: Duration::ZERO,
            edit: None,
            confirmed: 0,
        }
    }
}

impl Approver for Person {
    fn review_plan(&mut self, _plan: &ValidPlan, _catalog: &Catalog) -> PlanDecision {
        std::thread::sleep(self.think);
        match self.edit.take() {
            Some(p) => PlanDecision::Edit(p),
            None => PlanDecision::Approve,
        }
    }

    fn approve_step(&mut self, _step: &Step, _why: &str, _catalog: &Catalog) -> StepDecision {
        StepDecision::Approve
    }

    fn confirm_edit(&mut self, _edited: &ValidPlan, _catalog: &Catalog) -> PlanDecision {
        self.confirmed += 1;
        PlanDecision::Approve
    }

    fn can_answer(&self) -> bool {
        true
    }

    fn answer(&mut self, q: &Question<'_>) -> Answered {
        self.asked.push((q.text.to_string(), q.schema.clone()));
        std::thread::sleep(self.think);
        if self.answers.is_empty() {
            return Answered::NoOne;
        }
        Answered::Answer(self.answers.remove(0))
    }
}

/// A run that escalates on an invalid plan instead of asking the script to repair it.
fn no_repairs() -> RunConfig {
    RunConfig {
        budgets: Budgets {
            max_plan_repairs: 0,
            ..Budgets::default()
        },
        ..RunConfig::default()
    }
}

/// Asks for a number, then evaluates it squared.
fn ask_plan(answer_schema: Value) -> Value {
    json!({"plan": {"goal": "square a number", "steps": [
        {"id": "n", "tool": "human", "operation": "ask",
         "args": {"question": "Which number?", "answer": answer_schema}},
        {"id": "sq", "tool": "calc", "operation": "eval",
         "args": {"expression": "${n.output} * ${n.output}"}}
    ]}})
}

#[test]
fn an_answer_becomes_the_steps_output_for_later_steps() {
    let mut person = Person::answering(vec![json!(12)]);
    let mut planner = Recording::new(ask_plan(json!({"type": "integer", "minimum": 1})));
    let report = run_with(
        catalog(CALC),
        RunConfig::default(),
        &mut person,
        "square",
        &mut planner,
    );
    assert_eq!(report.stop, StopReason::Completed, "{report:#?}");
    assert_eq!(record(&report, "n").output, Some(json!(12)));
    assert_eq!(report.answer.as_ref().and_then(Value::as_f64), Some(144.0));
    assert_eq!(person.asked.len(), 1);
    assert_eq!(person.asked[0].0, "Which number?");
    // The planner was told it may ask.
    let tools: Vec<&str> = planner.requests[0]
        .tools
        .iter()
        .map(|t| t.name.as_str())
        .collect();
    assert!(tools.contains(&"human"), "{tools:?}");
}

#[test]
fn a_plan_that_asks_is_refused_when_nobody_can_answer() {
    let mut planner = Recording::new(ask_plan(json!({"type": "integer"})));
    let report = run(catalog(CALC), RunConfig::default(), "square", &mut planner);
    let StopReason::Escalated { why } = &report.stop else {
        panic!("{report:#?}")
    };
    assert!(
        why.contains("step `n`: the step asks a person (`human.ask`) and nobody can answer"),
        "{why}"
    );
    assert!(report.steps.is_empty(), "nothing ran");
    let tools: Vec<&str> = planner.requests[0]
        .tools
        .iter()
        .map(|t| t.name.as_str())
        .collect();
    assert!(!tools.contains(&"human"), "{tools:?}");
}

#[test]
fn an_answer_that_breaks_the_schema_fails_the_step_and_nothing_uses_it() {
    let mut person = Person::answering(vec![json!(0), json!(0), json!(0)]);
    let mut planner = Recording::new(ask_plan(json!({"type": "integer", "minimum": 1})));
    let report = run_with(
        catalog(CALC),
        RunConfig::default(),
        &mut person,
        "square",
        &mut planner,
    );
    let n = record(&report, "n");
    assert_eq!(n.status, StepStatus::Failed);
    let e = n.error.as_ref().unwrap();
    assert_eq!(e.kind, "bad_answer");
    assert!(e.message.contains("minimum"), "{}", e.message);
    assert_eq!(record(&report, "sq").status, StepStatus::Skipped);
}

#[test]
fn nobody_answering_escalates_the_run() {
    let mut person = Person::answering(Vec::new());
    let mut planner = Recording::new(ask_plan(json!({"type": "integer"})));
    let report = run_with(
        catalog(CALC),
        RunConfig::default(),
        &mut person,
        "square",
        &mut planner,
    );
    let StopReason::Escalated { why } = &report.stop else {
        panic!("{report:#?}")
    };
    assert!(
        why.contains("step `n` asks a person and nobody answered"),
        "{why}"
    );
}

#[test]
fn references_into_an_answer_are_typed_by_its_schema() {
    let mut person = Person::answering(vec![json!(3)]);
    let mut planner = Recording::new(json!({"plan": {"goal": "g", "steps": [
        {"id": "n", "tool": "human", "operation": "ask",
         "args": {"question": "How many?", "answer": {"type": "integer"}}},
        {"id": "sq", "tool": "calc", "operation": "eval",
         "args": {"expression": {"$ref": "n.output"}}}
    ]}}));
    let report = run_with(catalog(CALC), no_repairs(), &mut person, "g", &mut planner);
    let StopReason::Escalated { why } = &report.stop else {
        panic!("{report:#?}")
    };
    assert!(why.contains("got `n.output`, which is `s64`"), "{why}");
    assert!(person.asked.is_empty(), "an invalid plan asks nothing");
}

#[test]
fn bad_questions_are_refused_at_validation() {
    let mut person = Person::answering(vec![]);
    for (args, want) in [
        (json!({"answer": {"type": "string"}}), "needs a `question`"),
        (
            json!({"question": "q", "answer": {"type": "null"}}),
            "`type` \"null\"",
        ),
        (json!({"question": "q", "schema": {}}), "not `schema`"),
    ] {
        let mut planner = Recording::new(json!({"plan": {"goal": "g", "steps": [
            {"id": "q", "tool": "human", "operation": "ask", "args": args}
        ]}}));
        let report = run_with(catalog(CALC), no_repairs(), &mut person, "g", &mut planner);
        let StopReason::Escalated { why } = &report.stop else {
            panic!("{report:#?}")
        };
        assert!(why.contains(want), "{want}: {why}");
    }
}

#[test]
fn time_spent_waiting_for_a_person_is_not_the_runs_wall_time() {
    // Reviewing the plan and answering each take longer than the whole wall budget.
    let mut person = Person::answering(vec![json!(5)]);
    person.think = Duration::from_millis(700);
    let mut planner = Recording::new(ask_plan(json!({"type": "integer"})));
    let config = RunConfig {
        budgets: Budgets {
            max_wall_ms: 600,
            ..Budgets::default()
        },
        ..RunConfig::default()
    };
    let report = run_with(catalog(CALC), config, &mut person, "square", &mut planner);
    assert_eq!(report.stop, StopReason::Completed, "{report:#?}");
    assert!(
        report.spent.wall < Duration::from_millis(600),
        "{:?}",
        report.spent.wall
    );
}

#[test]
fn a_valid_edit_is_confirmed_before_it_runs() {
    let mut person = Person::answering(vec![]);
    person.edit = Some(
        serde_json::from_value(json!({"goal": "g", "steps": [
            {"id": "e", "tool": "calc", "operation": "eval", "args": {"expression": "2 + 2"}}
        ]}))
        .unwrap(),
    );
    let mut planner = Recording::new(json!({"plan": {"goal": "g", "steps": [
        {"id": "s", "tool": "calc", "operation": "eval", "args": {"expression": "1 + 1"}}
    ]}}));
    let report = run_with(
        catalog(CALC),
        RunConfig::default(),
        &mut person,
        "g",
        &mut planner,
    );
    assert_eq!(report.stop, StopReason::Completed, "{report:#?}");
    assert_eq!(person.confirmed, 1);
    assert_eq!(report.answer.as_ref().and_then(Value::as_f64), Some(4.0));
}
