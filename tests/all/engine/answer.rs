//! A plan names its answer: a value built from step outputs by references, so every part
//! of a goal reaches the run's answer, not only the last step's output.

use serde_json::{Value, json};
use toolhost_engine::{RunConfig, StopReason, validate};

use super::{Recording, catalog, run};

const TOOLS: &str = "version = 1\n[tools.calc]\n[tools.text]\n";

fn two_parts(answer: Value) -> Value {
    json!({"plan": {"goal": "count the words and add two numbers", "steps": [
        {"id": "words", "tool": "text", "operation": "count", "args": {"text": "a b c"}},
        {"id": "sum", "tool": "calc", "operation": "eval", "args": {"expression": "2 + 3"}}
    ], "answer": answer}})
}

#[test]
fn the_answer_is_built_from_every_part() {
    let mut planner = Recording::new(two_parts(json!({
        "words": {"$ref": "words.output.words"},
        "sum": {"$ref": "sum.output"},
        "line": "${words.output.words} words, sum ${sum.output}"
    })));
    let report = run(catalog(TOOLS), RunConfig::default(), "g", &mut planner);
    assert_eq!(report.stop, StopReason::Completed, "{report:#?}");
    let answer = report.answer.unwrap();
    assert_eq!(answer["words"], 3);
    assert_eq!(answer["sum"].as_f64(), Some(5.0));
    assert_eq!(answer["line"], "3 words, sum 5");
}

#[test]
fn without_an_answer_the_last_step_answers() {
    let mut planner = Recording::new(json!({"plan": {"goal": "g", "steps": [
        {"id": "words", "tool": "text", "operation": "count", "args": {"text": "a b c"}},
        {"id": "sum", "tool": "calc", "operation": "eval",
         "args": {"expression": "${words.output.words} + 1"}}
    ]}}));
    let report = run(catalog(TOOLS), RunConfig::default(), "g", &mut planner);
    assert_eq!(report.answer.and_then(|a| a.as_f64()), Some(4.0));
}

#[test]
fn an_answer_naming_what_the_plan_does_not_have_is_refused() {
    let plan = serde_json::from_value(
        two_parts(
            json!({"a": {"$ref": "ghost.output"}, "b": "${words.output.nope}", "c": "${bad ref}"}),
        )["plan"]
            .clone(),
    )
    .unwrap();
    let problems = validate(&plan, &catalog(TOOLS), 50, &Default::default()).unwrap_err();
    let text: Vec<String> = problems.iter().map(ToString::to_string).collect();
    assert_eq!(text.len(), 3, "{text:#?}");
    assert!(
        text[0].contains("answer.a: `ghost.output` refers to `ghost`, which is not a step"),
        "{text:#?}"
    );
    assert!(
        text[1]
            .contains("answer.b: `words.output.nope`: the output of `words` has no field `nope`"),
        "{text:#?}"
    );
    assert!(text[2].starts_with("answer.c:"), "{text:#?}");
}
