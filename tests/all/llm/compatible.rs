//! OpenAI-compatible servers (Ollama, vLLM, llama.cpp): any base URL, no key needed, and
//! the fall-back to `json_object` when a server rejects `json_schema`.

use serde_json::json;
use toolhost_engine::{Mode, StopReason};
use toolhost_llm::{LlmPlanner, ProviderKind};
use toolhost_tests::server::{Canned, Server};

use super::mock::openai;
use super::{calc, config, mode, run, strict_turn};

#[test]
fn a_server_without_json_schema_gets_json_object_from_then_on() {
    // llama.cpp-style rejection, then answers in a Markdown fence, as small models do.
    let fenced = format!(
        "```json\n{}\n```",
        json!({"goal": "g", "steps": [{"id": "a", "tool": "calc", "operation": "eval",
               "args": {"expression": "1 + 1"}}]})
    );
    let mock = Server::replying(vec![
        Canned::status(
            400,
            r#"{"error": {"message": "response_format type json_schema is not supported"}}"#,
        ),
        openai(&fenced, 100, 10),
    ]);
    let c = config(ProviderKind::OpenAiCompatible, &mock, "llama3.1:8b");
    let mut p = LlmPlanner::new(c, None).expect("planner");
    let report = run(calc(), mode(Mode::PlanThenExecute), "one plus one", &mut p);
    assert_eq!(report.stop, StopReason::Completed, "{report:#?}");
    assert_eq!(report.answer, Some(json!(2)));
    let reqs = mock.received();
    assert_eq!(reqs.len(), 2);
    assert_eq!(reqs[0].json()["response_format"]["type"], "json_schema");
    let second = reqs[1].json();
    assert_eq!(second["response_format"], json!({"type": "json_object"}));
    // The schema moves into the prompt; compatible servers take `max_tokens`.
    let system = second["messages"][0]["content"].as_str().unwrap();
    assert!(system.contains("matches this JSON Schema"), "{system}");
    assert!(second["max_tokens"].as_u64().is_some());
    assert!(second.get("max_completion_tokens").is_none());
    // No key configured: no credentials sent.
    assert!(reqs.iter().all(|r| r.header("authorization").is_none()));
}

#[test]
fn step_wise_against_a_local_server() {
    let mock = Server::replying(vec![
        openai(
            &strict_turn(
                Some(("calc", "eval", json!({"expression": "2 ^ 10"}))),
                false,
                None,
            ),
            50,
            5,
        ),
        openai(&strict_turn(None, true, Some("1024")), 60, 5),
    ]);
    let c = config(ProviderKind::OpenAiCompatible, &mock, "qwen2.5:7b");
    let mut p = LlmPlanner::new(c, None).expect("planner");
    let report = run(calc(), mode(Mode::StepWise), "two to the tenth", &mut p);
    assert_eq!(report.stop, StopReason::PlannerStopped, "{report:#?}");
    assert_eq!(report.answer, Some(json!(1024)));
    assert!(
        mock.received()
            .iter()
            .all(|r| r.target == "/v1/chat/completions")
    );
}
