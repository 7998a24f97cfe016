//! OpenAI's Responses API, the default of `kind = "openai"`: strict `text.format`
//! structured output, the stable prompt prefix first, cached input tokens counted and
//! priced apart; and the SDK-derived request schemas every mock provider checks.

use serde_json::{Value, json};
use toolhost_engine::{Mode, Price, RunConfig, StopReason};
use toolhost_llm::{Api, LlmConfig, ProviderKind};
use toolhost_tests::server::Server;
use toolhost_tests::server::sdk::Endpoint;

use super::mock::{base_url, openai, responses};
use super::{KEY, calc, mode, planner, run, strict_plan, strict_step, strict_turn};

/// `kind = "openai"` at the mock, its API left at the default.
fn default_openai(mock: &Server) -> LlmConfig {
    let mut c = LlmConfig::new(ProviderKind::OpenAi, "gpt-4.1-mini");
    c.base_url = Some(base_url(mock));
    c.backoff_ms = 10;
    c
}

#[test]
fn kind_openai_speaks_the_responses_api_by_default() {
    let plan = strict_plan(
        "arithmetic",
        vec![strict_step(
            "s1",
            "calc",
            "eval",
            json!({"expression": "12 * 4 + 5"}),
        )],
    );
    let mock = Server::replying(vec![responses(&plan, 2_000, 1_536, 64)]);
    let mut p = planner(default_openai(&mock));
    let mut cfg = RunConfig::default();
    cfg.prices.insert(
        "gpt-4.1-mini".into(),
        Price {
            input_per_mtok: 0.4,
            output_per_mtok: 1.6,
            cached_input_per_mtok: Some(0.1),
        },
    );
    let report = run(calc(), cfg, "What is 12 * 4 + 5?", &mut p);
    assert_eq!(report.stop, StopReason::Completed, "{report:#?}");
    assert_eq!(report.answer, Some(json!(53)));
    // Cached input tokens are input tokens, counted apart and priced at the cached rate.
    assert_eq!(
        (
            report.spent.input_tokens,
            report.spent.cached_input_tokens,
            report.spent.output_tokens
        ),
        (2_000, 1_536, 64)
    );
    assert_eq!(report.planner_calls[0].cached_input_tokens, 1_536);
    let want = (464.0 * 0.4 + 1_536.0 * 0.1 + 64.0 * 1.6) / 1e6;
    assert!(
        (report.spent.cost_usd - want).abs() < 1e-12,
        "{} != {want}",
        report.spent.cost_usd
    );

    let reqs = mock.received();
    assert_eq!(reqs.len(), 1);
    let r = &reqs[0];
    assert_eq!(r.target, "/v1/responses");
    assert_eq!(
        r.header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
    let b = r.json();
    assert_eq!(b["model"], "gpt-4.1-mini");
    assert!(
        b["instructions"]
            .as_str()
            .unwrap()
            .contains("untrusted-data")
    );
    assert_eq!(b["input"][0]["role"], "user");
    assert_eq!(b["temperature"], 0.0);
    assert_eq!(b["store"], false);
    assert!(
        b["max_output_tokens"].as_u64().is_some_and(|n| n > 0),
        "{b}"
    );
    assert!(
        b.get("messages").is_none() && b.get("response_format").is_none(),
        "{b}"
    );
    let f = &b["text"]["format"];
    assert_eq!(
        (&f["type"], &f["name"], &f["strict"]),
        (&json!("json_schema"), &json!("plan"), &json!(true))
    );
    assert_eq!(
        f["schema"]["properties"]["steps"]["items"]["properties"]["tool"]["enum"],
        json!(["calc"])
    );
    // The parts that stay the same through a run come first: tools, then the goal.
    let user = b["input"][0]["content"].as_str().unwrap();
    let tools = user.find("# Tools you may use").expect("tools");
    let goal = user.find("# Goal").expect("goal");
    let budgets = user.find("# Budgets left").expect("budgets");
    assert!(tools < goal && goal < budgets, "{user}");
}

#[test]
fn step_wise_turns_share_their_prefix_and_count_what_was_cached() {
    let mock = Server::replying(vec![
        responses(
            &strict_turn(
                Some(("calc", "eval", json!({"expression": "6 * 7"}))),
                false,
                None,
            ),
            1_200,
            0,
            40,
        ),
        responses(&strict_turn(None, true, Some("42")), 1_400, 1_024, 20),
    ]);
    let mut p = planner(default_openai(&mock));
    let report = run(calc(), mode(Mode::StepWise), "6 times 7", &mut p);
    assert_eq!(report.stop, StopReason::PlannerStopped, "{report:#?}");
    assert_eq!(
        (report.spent.input_tokens, report.spent.cached_input_tokens),
        (2_600, 1_024)
    );
    let calls: Vec<u64> = report
        .planner_calls
        .iter()
        .map(|c| c.cached_input_tokens)
        .collect();
    assert_eq!(calls, [0, 1_024]);
    let reqs = mock.received();
    let user = |i: usize| {
        reqs[i].json()["input"][0]["content"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let (first, second) = (user(0), user(1));
    assert_eq!(reqs[0].json()["text"]["format"]["name"], "turn");
    // Everything up to the budgets (which change) is the same bytes in both turns.
    let head = &first[..first.find("# Budgets left").unwrap()];
    assert!(head.contains("6 times 7"), "{head}");
    assert!(second.starts_with(head), "{second}");
    assert_eq!(
        reqs[0].json()["instructions"],
        reqs[1].json()["instructions"]
    );
}

#[test]
fn a_refusal_in_the_output_is_the_model_refusing() {
    let mut refusal = responses("", 100, 0, 5);
    let mut body: Value = serde_json::from_str(&refusal.body).unwrap();
    body["output"][0]["content"] =
        json!([{"type": "refusal", "refusal": "I can't help with that."}]);
    refusal.body = body.to_string();
    let mock = Server::replying(vec![refusal]);
    let mut p = planner(default_openai(&mock));
    let report = run(calc(), RunConfig::default(), "anything", &mut p);
    let StopReason::Escalated { why } = &report.stop else {
        panic!("{report:#?}")
    };
    assert!(why.contains("I can't help with that."), "{why}");
}

#[test]
fn chat_completions_stay_an_option() {
    let mock = Server::replying(vec![openai(&strict_turn(None, true, Some("1")), 100, 5)]);
    let mut c = default_openai(&mock);
    c.api = Api::Chat;
    let report = run(calc(), mode(Mode::StepWise), "one", &mut planner(c));
    assert_eq!(report.stop, StopReason::PlannerStopped, "{report:#?}");
    assert_eq!(mock.received()[0].target, "/v1/chat/completions");
}

#[test]
fn the_mock_providers_refuse_fields_the_official_sdks_do_not_declare() {
    // The fixtures say where they come from.
    for (e, package) in [
        (Endpoint::OpenAiResponses, "openai"),
        (Endpoint::OpenAiChat, "openai"),
        (Endpoint::AnthropicMessages, "anthropic"),
    ] {
        let sdk = &e.schema()["x-sdk"];
        assert_eq!(sdk["package"], package);
        assert!(
            sdk["version"].as_str().is_some_and(|v| !v.is_empty()),
            "{sdk}"
        );
    }
    // Anthropic's current Messages API has no `temperature`: it is only sent when set.
    let messages = json!({"model": "claude-sonnet-4-5", "max_tokens": 10,
        "messages": [{"role": "user", "content": "hi"}]});
    assert_eq!(
        Endpoint::AnthropicMessages.violations(&messages),
        Vec::<String>::new()
    );
    let mut hot = messages.clone();
    hot["temperature"] = json!(0.0);
    assert!(!Endpoint::AnthropicMessages.violations(&hot).is_empty());
    // A misspelt nested field fails too: every object is closed.
    let typo = json!({"model": "gpt-4.1", "input": "hi",
        "text": {"format": {"type": "json_schema", "name": "x", "schema": {}, "strictt": true}}});
    let why = Endpoint::OpenAiResponses.violations(&typo);
    assert!(why.iter().any(|w| w.contains("strictt")), "{why:?}");

    // The mock answers such a request 400 without taking a reply off its queue.
    let mock = Server::replying(vec![responses("{}", 1, 0, 1)]);
    let client = reqwest::blocking::Client::new();
    let resp = client
        .post(format!("{}/messages", base_url(&mock)))
        .json(&hot)
        .send()
        .unwrap();
    assert_eq!(resp.status().as_u16(), 400);
    assert!(resp.text().unwrap().contains("temperature"));
    let resp = client
        .post(format!("{}/responses", base_url(&mock)))
        .json(&json!({"model": "gpt-4.1", "input": "hi"}))
        .send()
        .unwrap();
    assert_eq!(resp.status().as_u16(), 200);
}
