use serde_json::json;

use super::*;

fn calls(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

#[test]
fn outcome_names_both() {
    assert_eq!(outcome("completed", "completed"), None);
    assert_eq!(
        outcome("completed", "escalated").unwrap(),
        "outcome: expected completed, got escalated"
    );
}

#[test]
fn a_normal_finish_has_two_names_and_nothing_else_is_one() {
    // Plan-then-execute ends `completed`, the turn-taking modes `planner_stopped`.
    assert_eq!(outcome("completed", "planner_stopped"), None);
    assert_eq!(outcome("planner_stopped", "completed"), None);
    for got in ["escalated", "replan_limit", "budget_exhausted", "cancelled"] {
        assert!(outcome("completed", got).is_some(), "{got}");
        assert!(outcome("planner_stopped", got).is_some(), "{got}");
    }
    assert!(outcome("escalated", "completed").is_some());
    assert!(outcome("escalated", "planner_stopped").is_some());
}

#[test]
fn exact_set_and_partial_sequences() {
    let want = calls(&["calc.eval", "text.count"]);
    let swapped = calls(&["text.count", "calc.eval"]);
    assert_eq!(sequence(&want, Order::Exact, &[], &want), None);
    assert_eq!(
        sequence(&want, Order::Exact, &[], &swapped).unwrap(),
        "sequence: expected [calc.eval, text.count], got [text.count, calc.eval]"
    );
    assert_eq!(sequence(&want, Order::Set, &[], &swapped), None);
    assert_eq!(
        sequence(&want, Order::Set, &[], &calls(&["calc.eval"])).unwrap(),
        "sequence: expected [calc.eval, text.count] in any order, got [calc.eval]"
    );
    let edge = [["calc.eval#0".to_string(), "text.count".to_string()]];
    assert_eq!(sequence(&want, Order::Partial, &edge, &want), None);
    assert_eq!(
        sequence(&want, Order::Partial, &edge, &swapped).unwrap(),
        "sequence: expected calc.eval#0 before text.count, got [text.count, calc.eval]"
    );
    let missing = [["calc.eval#1".to_string(), "text.count".to_string()]];
    assert_eq!(
        sequence(&want, Order::Partial, &missing, &want).unwrap(),
        "sequence: `calc.eval#1` did not run, got [calc.eval, text.count]"
    );
}

#[test]
fn answers_by_each_form() {
    let eq = AnswerCheck::Equals { equals: json!(53) };
    assert_eq!(answer(&eq, Some(&json!(53.0))), None);
    assert_eq!(
        answer(&eq, Some(&json!(52))).unwrap(),
        "answer: expected 53, got 52"
    );
    assert_eq!(
        answer(&eq, None).unwrap(),
        "answer: expected 53, got no answer"
    );
    let nested = AnswerCheck::Equals {
        equals: json!({"a": [1, {"b": 2}], "c": "x"}),
    };
    assert_eq!(
        answer(&nested, Some(&json!({"c": "x", "a": [1, {"b": 2}]}))),
        None
    );
    assert_eq!(
        answer(&nested, Some(&json!({"a": [1, {"b": 3}], "c": "x"}))).unwrap(),
        r#"answer: expected 2 at /a/1/b, got 3 (whole value {"a":[1,{"b":3}],"c":"x"})"#
    );
    let contains = AnswerCheck::Contains {
        contains: "word".into(),
    };
    assert_eq!(answer(&contains, Some(&json!("a word here"))), None);
    assert_eq!(
        answer(&contains, Some(&json!(7))).unwrap(),
        r#"answer: expected a string containing "word", got 7"#
    );
    let schema = AnswerCheck::Schema {
        schema: json!({"type": "object", "required": ["n"]}),
    };
    assert_eq!(answer(&schema, Some(&json!({"n": 1}))), None);
    let why = answer(&schema, Some(&json!({"m": 1}))).unwrap();
    assert!(
        why.starts_with(r#"answer: expected a value matching the schema, got {"m":1} ("#)
            && why.contains("\"n\" is a required property"),
        "{why}"
    );
    let number = AnswerCheck::Number {
        number: 2.5,
        tolerance: 0.01,
    };
    assert_eq!(answer(&number, Some(&json!(2.505))), None);
    assert_eq!(
        answer(&number, Some(&json!(2.6))).unwrap(),
        "answer: expected 2.5 ± 0.01, got 2.6"
    );
}

#[test]
fn files_compare_as_json() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path();
    std::fs::write(base.join("want.json"), r#"{"a": 1, "b": [true]}"#).unwrap();
    std::fs::write(base.join("same.json"), r#"{"b": [true], "a": 1.0}"#).unwrap();
    std::fs::write(base.join("other.json"), r#"{"b": [false], "a": 1}"#).unwrap();
    let f = |p: &str| file_json(base, Path::new(p), Path::new("want.json"));
    assert_eq!(f("same.json"), None);
    assert_eq!(
        f("other.json").unwrap(),
        r#"files: `other.json` differs from `want.json`: expected true at /b/0, got false (whole value {"b":[false],"a":1})"#
    );
    assert!(
        f("absent.json")
            .unwrap()
            .starts_with("files: cannot read `absent.json`")
    );
}
