//! Anthropic Messages: structured output through a forced tool call whose input schema is
//! the planner schema; `x-api-key` and `anthropic-version`; usage charged; both modes.

use serde_json::json;
use toolhost_engine::{Mode, StopReason, plan_schema};
use toolhost_llm::ProviderKind;
use toolhost_tests::server::Server;

use super::mock::{anthropic, prompt};
use super::{KEY, calc, config, mode, planner, run};

#[test]
fn a_plan_comes_from_the_forced_tool_call() {
    let plan = json!({"goal": "arithmetic", "steps": [
        {"id": "s1", "tool": "calc", "operation": "eval", "args": {"expression": "2 + 3"}},
        {"id": "s2", "tool": "calc", "operation": "eval",
         "args": {"expression": "${s1.output} * 10"}}
    ]});
    let mock = Server::replying(vec![anthropic("submit_plan", plan, 900, 120)]);
    let mut p = planner(config(ProviderKind::Anthropic, &mock, "claude-sonnet-4-5"));
    let report = run(calc(), mode(Mode::PlanThenExecute), "(2 + 3) * 10", &mut p);
    assert_eq!(report.stop, StopReason::Completed, "{report:#?}");
    assert_eq!(report.answer, Some(json!(50)));
    assert_eq!(
        (report.spent.input_tokens, report.spent.output_tokens),
        (900, 120)
    );

    let reqs = mock.received();
    assert_eq!(reqs.len(), 1);
    let r = &reqs[0];
    assert_eq!(r.target, "/v1/messages");
    assert_eq!(r.header("x-api-key"), Some(KEY));
    assert_eq!(r.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(r.header("authorization"), None);
    let b = &r.json();
    assert_eq!(b["model"], "claude-sonnet-4-5");
    assert!(b["max_tokens"].as_u64().is_some_and(|n| n > 0));
    assert!(b["system"].as_str().unwrap().contains("untrusted-data"));
    assert_eq!(b["messages"][0]["role"], "user");
    assert_eq!(
        b["tool_choice"],
        json!({"type": "tool", "name": "submit_plan"})
    );
    assert_eq!(b["tools"][0]["name"], "submit_plan");
    // The input schema is the published plan schema (plus `give_up`, tools narrowed).
    let schema = &b["tools"][0]["input_schema"];
    assert_eq!(schema["required"], plan_schema()["required"]);
    assert_eq!(
        schema["properties"]["steps"]["items"]["required"],
        plan_schema()["properties"]["steps"]["items"]["required"]
    );
    assert_eq!(
        schema["properties"]["steps"]["items"]["properties"]["tool"]["enum"],
        json!(["calc"])
    );
}

#[test]
fn step_wise_turns_through_tool_calls() {
    let mock = Server::replying(vec![
        anthropic(
            "submit_turn",
            json!({"thought": "use calc", "tool": "calc", "operation": "eval",
                   "arguments": {"expression": "6 * 7"}, "stop": false, "confidence": 0.9}),
            300,
            30,
        ),
        anthropic(
            "submit_turn",
            json!({"thought": "done", "stop": true, "answer": {"value": 42}}),
            400,
            10,
        ),
    ]);
    let mut p = planner(config(ProviderKind::Anthropic, &mock, "claude-haiku-4-5"));
    let report = run(calc(), mode(Mode::StepWise), "6 times 7", &mut p);
    assert_eq!(report.stop, StopReason::PlannerStopped, "{report:#?}");
    assert_eq!(report.answer, Some(json!({"value": 42})));
    assert_eq!(report.steps[0].output, Some(json!(42)));
    let reqs = mock.received();
    assert_eq!(reqs[1].json()["tool_choice"]["name"], "submit_turn");
    assert!(
        prompt(&reqs[1]).contains("\"output\":\"42\""),
        "{}",
        prompt(&reqs[1])
    );
    assert_eq!(
        (report.spent.input_tokens, report.spent.output_tokens),
        (700, 40)
    );
}
