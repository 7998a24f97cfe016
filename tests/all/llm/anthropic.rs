//! Anthropic Messages: native structured output (`output_config.format`), or a forced tool
//! call whose input schema is the planner schema (configured, or after a model rejects the
//! native format); only declared fields; `cache_control` on the stable parts; cache reads
//! counted apart; `x-api-key` and `anthropic-version`; both modes.

use serde_json::json;
use toolhost_engine::{Mode, StopReason, plan_schema};
use toolhost_llm::{ProviderKind, Structured};
use toolhost_tests::server::{Canned, Server};

use super::mock::{anthropic, anthropic_text, prompt};
use super::{KEY, calc, config, mode, planner, run};

#[test]
fn a_plan_comes_from_native_structured_output_with_the_stable_parts_cached() {
    let plan = json!({"goal": "arithmetic", "give_up": null, "steps": [
        {"id": "s1", "description": "", "tool": "calc", "operation": "eval",
         "args": "{\"expression\": \"2 + 3\"}", "depends_on": [], "expect": null,
         "idempotent": false, "timeout_ms": null}
    ]});
    let mock = Server::replying(vec![anthropic_text(&plan.to_string(), 100, 0, 1_800, 50)]);
    let mut p = planner(config(ProviderKind::Anthropic, &mock, "claude-sonnet-4-5"));
    let report = run(calc(), mode(Mode::PlanThenExecute), "2 + 3", &mut p);
    assert_eq!(report.stop, StopReason::Completed, "{report:#?}");
    assert_eq!(report.answer, Some(json!(5)));
    // Tokens written to the cache are input tokens; none were read from it yet.
    assert_eq!(
        (report.spent.input_tokens, report.spent.cached_input_tokens),
        (1_900, 0)
    );

    let reqs = mock.received();
    let b = reqs[0].json();
    assert_eq!(reqs[0].target, "/v1/messages");
    assert!(b.get("temperature").is_none(), "{b}");
    assert!(
        b.get("tools").is_none() && b.get("tool_choice").is_none(),
        "{b}"
    );
    let f = &b["output_config"]["format"];
    assert_eq!(f["type"], "json_schema");
    assert_eq!(f["schema"]["additionalProperties"], false);
    assert_eq!(
        f["schema"]["properties"]["steps"]["items"]["properties"]["tool"]["enum"],
        json!(["calc"])
    );
    // The system prompt and the stable head of the user message are cache breakpoints;
    // what changes each request (budgets, history) comes after them, uncached.
    assert_eq!(
        b["system"][0]["cache_control"],
        json!({"type": "ephemeral"})
    );
    let content = b["messages"][0]["content"].as_array().unwrap();
    assert_eq!(content.len(), 2, "{content:?}");
    assert_eq!(content[0]["cache_control"], json!({"type": "ephemeral"}));
    assert!(
        content[0]["text"]
            .as_str()
            .unwrap()
            .contains("# Goal\n2 + 3")
    );
    assert!(content[1].get("cache_control").is_none());
    assert!(
        content[1]["text"]
            .as_str()
            .unwrap()
            .starts_with("# Budgets left")
    );
}

#[test]
fn a_model_without_native_structured_output_gets_the_forced_tool_call() {
    let mock = Server::replying(vec![
        Canned::status(
            400,
            r#"{"type":"error","error":{"type":"invalid_request_error","message":"output_config.format: structured outputs are not supported by this model"}}"#,
        ),
        anthropic(
            "submit_turn",
            json!({"thought": "done", "stop": true, "answer": 1}),
            10,
            5,
        ),
    ]);
    let mut p = planner(config(ProviderKind::Anthropic, &mock, "claude-3-haiku"));
    let report = run(calc(), mode(Mode::StepWise), "one", &mut p);
    assert_eq!(report.stop, StopReason::PlannerStopped, "{report:#?}");
    let reqs = mock.received();
    assert_eq!(reqs.len(), 2);
    assert!(reqs[0].json().get("output_config").is_some());
    assert!(reqs[1].json().get("output_config").is_none());
    assert_eq!(reqs[1].json()["tool_choice"]["name"], "submit_turn");

    // With `structured_output = "json-schema"` the rejection is final.
    let mock = Server::replying(vec![Canned::status(400, "output_config is not supported")]);
    let mut c = config(ProviderKind::Anthropic, &mock, "claude-3-haiku");
    c.structured = Structured::JsonSchema;
    let report = run(calc(), mode(Mode::StepWise), "one", &mut planner(c));
    assert!(
        matches!(report.stop, StopReason::Escalated { .. }),
        "{report:#?}"
    );
    assert_eq!(mock.received().len(), 1);
}

#[test]
fn a_plan_comes_from_the_forced_tool_call() {
    let plan = json!({"goal": "arithmetic", "steps": [
        {"id": "s1", "tool": "calc", "operation": "eval", "args": {"expression": "2 + 3"}},
        {"id": "s2", "tool": "calc", "operation": "eval",
         "args": {"expression": "${s1.output} * 10"}}
    ]});
    let mock = Server::replying(vec![anthropic("submit_plan", plan, 900, 120)]);
    let mut c = config(ProviderKind::Anthropic, &mock, "claude-sonnet-4-5");
    c.structured = Structured::Tool;
    let mut p = planner(c);
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
    assert!(prompt(r).contains("untrusted-data"));
    assert_eq!(b["tools"][0]["cache_control"], json!({"type": "ephemeral"}));
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
    let mut c = config(ProviderKind::Anthropic, &mock, "claude-haiku-4-5");
    c.structured = Structured::Tool;
    let report = run(calc(), mode(Mode::StepWise), "6 times 7", &mut planner(c));
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
