//! OpenAI Chat Completions: strict `json_schema` structured output, bearer auth, usage
//! charged, both planning modes.

use serde_json::json;
use toolhost_engine::{Mode, RunConfig, StopReason};
use toolhost_llm::ProviderKind;
use toolhost_tests::server::Server;

use super::mock::{openai, prompt};
use super::{KEY, calc, config, mode, planner, run, strict_plan, strict_step, strict_turn};

#[test]
fn a_plan_runs_end_to_end_and_the_request_has_the_real_shape() {
    let mock = Server::replying(vec![openai(
        &strict_plan(
            "arithmetic",
            vec![strict_step(
                "s1",
                "calc",
                "eval",
                json!({"expression": "12 * 4 + 5"}),
            )],
        ),
        812,
        64,
    )]);
    let mut p = planner(config(ProviderKind::OpenAi, &mock, "gpt-4o-mini"));
    let mut cfg = RunConfig::default();
    cfg.prices.insert(
        "gpt-4o-mini".into(),
        toolhost_engine::Price {
            input_per_mtok: 0.15,
            output_per_mtok: 0.6,
            cached_input_per_mtok: None,
        },
    );
    let report = run(calc(), cfg, "What is 12 * 4 + 5?", &mut p);
    assert_eq!(report.stop, StopReason::Completed, "{report:#?}");
    assert_eq!(report.answer, Some(json!(53)));
    // The usage block is what is charged, priced by the configured model name.
    assert_eq!(
        (report.spent.input_tokens, report.spent.output_tokens),
        (812, 64)
    );
    assert!(
        (report.spent.cost_usd - (812.0 * 0.15 + 64.0 * 0.6) / 1e6).abs() < 1e-12,
        "{}",
        report.spent.cost_usd
    );
    assert_eq!(report.planner_calls[0].model, "gpt-4o-mini");

    let reqs = mock.received();
    assert_eq!(reqs.len(), 1);
    let r = &reqs[0];
    assert_eq!(r.target, "/v1/chat/completions");
    assert_eq!(
        r.header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
    let b = &r.json();
    assert_eq!(b["model"], "gpt-4o-mini");
    assert_eq!(b["temperature"], 0.0);
    assert!(
        b["max_completion_tokens"].as_u64().is_some_and(|n| n > 0),
        "{b}"
    );
    assert_eq!(b["messages"][0]["role"], "system");
    assert_eq!(b["messages"][1]["role"], "user");
    let user = b["messages"][1]["content"].as_str().unwrap();
    assert!(user.contains("What is 12 * 4 + 5?"), "{user}");
    // The allowed tool, its operation's description and parameter schema are in the prompt.
    assert!(user.contains("\"name\": \"eval\""), "{user}");
    assert!(user.contains("\"expression\""), "{user}");
    assert!(user.contains("plan revision 1"), "{user}");
    assert!(user.contains("steps 20"), "{user}");
    let rf = &b["response_format"];
    assert_eq!(rf["type"], "json_schema");
    assert_eq!(rf["json_schema"]["strict"], true);
    assert_eq!(rf["json_schema"]["name"], "plan");
    let schema = &rf["json_schema"]["schema"];
    assert_eq!(schema["additionalProperties"], false);
    assert_eq!(
        schema["properties"]["steps"]["items"]["properties"]["tool"]["enum"],
        json!(["calc"])
    );
    // Strict mode: every property of every object is required.
    let step = &schema["properties"]["steps"]["items"];
    let props = step["properties"].as_object().unwrap().len();
    assert_eq!(step["required"].as_array().unwrap().len(), props);
}

#[test]
fn step_wise_turns_see_prior_results_as_data() {
    let mock = Server::replying(vec![
        openai(
            &strict_turn(
                Some(("calc", "eval", json!({"expression": "12 * 4 + 5"}))),
                false,
                None,
            ),
            500,
            40,
        ),
        openai(&strict_turn(None, true, Some("53")), 600, 20),
    ]);
    let mut p = planner(config(ProviderKind::OpenAi, &mock, "gpt-4o-mini"));
    let report = run(calc(), mode(Mode::StepWise), "What is 12 * 4 + 5?", &mut p);
    assert_eq!(report.stop, StopReason::PlannerStopped, "{report:#?}");
    assert_eq!(report.answer, Some(json!(53)));
    assert_eq!(report.steps.len(), 1);
    assert_eq!(
        (report.spent.input_tokens, report.spent.output_tokens),
        (1100, 60)
    );
    let reqs = mock.received();
    assert_eq!(reqs.len(), 2);
    assert_eq!(
        reqs[0].json()["response_format"]["json_schema"]["name"],
        "turn"
    );
    let second = prompt(&reqs[1]);
    assert!(second.contains("This is turn 2"), "{second}");
    assert!(second.contains("<untrusted-data step=\"t1\">"), "{second}");
    assert!(second.contains("\"output\":\"53\""), "{second}");
}

#[test]
fn a_model_can_hand_the_rest_of_the_task_off_to_a_plan() {
    let steps = vec![
        strict_step("a", "calc", "eval", json!({"expression": "12 * 4"})),
        strict_step(
            "b",
            "calc",
            "eval",
            json!({"expression": "${a.output} + 5"}),
        ),
    ];
    let mut turn: serde_json::Value =
        serde_json::from_str(&strict_turn(None, false, None)).unwrap();
    turn["handoff"] = json!({"goal": "arithmetic", "steps": steps});
    let mock = Server::replying(vec![openai(&turn.to_string(), 500, 80)]);
    let mut p = planner(config(ProviderKind::OpenAi, &mock, "gpt-4o-mini"));
    let report = run(calc(), mode(Mode::StepWise), "What is 12 * 4 + 5?", &mut p);
    // The handed-off plan ran as a whole and, every step succeeding, ended the run.
    assert_eq!(report.stop, StopReason::Completed, "{report:#?}");
    assert_eq!(report.answer, Some(json!(53)));
    assert_eq!(report.steps.len(), 2);
    assert_eq!(mock.received().len(), 1);

    // The turn schema offers `handoff`, nullable, in the strict shape.
    let schema = &mock.received()[0].json()["response_format"]["json_schema"]["schema"];
    let required = |o: &serde_json::Value| {
        let mut r: Vec<String> = o["required"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap().to_string())
            .collect();
        r.sort();
        let mut p: Vec<String> = o["properties"]
            .as_object()
            .unwrap()
            .keys()
            .cloned()
            .collect();
        p.sort();
        (r, p)
    };
    let (r, p) = required(schema);
    assert_eq!(r, p);
    assert!(r.contains(&"handoff".to_string()), "{r:?}");
    let handoff = &schema["properties"]["handoff"];
    assert_eq!(handoff["type"], json!(["object", "null"]));
    assert_eq!(handoff["additionalProperties"], false);
    let (r, p) = required(handoff);
    assert_eq!(
        (r.clone(), p),
        (vec!["goal".to_string(), "steps".to_string()], r)
    );
    assert_eq!(
        handoff["properties"]["steps"]["items"]["properties"]["tool"]["enum"],
        json!(["calc"])
    );
}
