//! Faults between the host and a provider: rate limits with `Retry-After`, server errors,
//! answers slower than the timeout, retries capped and bounded by the run's wall time,
//! malformed answers re-asked with the parse error, plans naming unknown tools, arguments
//! failing validation (a repair round), budgets checked before sending, keys kept secret.

use std::time::{Duration, Instant};

use serde_json::json;
use toolhost_engine::{Budget, Budgets, Mode, RunConfig, StopReason};
use toolhost_llm::ProviderKind;
use toolhost_tests::server::{Canned, Server};

use super::mock::{openai, prompt};
use super::{KEY, calc, config, mode, planner, run, strict_plan, strict_step};

fn good() -> Canned {
    openai(
        &strict_plan(
            "g",
            vec![strict_step(
                "s1",
                "calc",
                "eval",
                json!({"expression": "40 + 2"}),
            )],
        ),
        100,
        10,
    )
}

fn escalation(stop: &StopReason) -> &str {
    match stop {
        StopReason::Escalated { why } => why,
        other => panic!("expected an escalation, got {other:?}"),
    }
}

/// Runs a plan whose first request is answered `refusal` with `Retry-After: value`:
/// the run completes, after at least a second (backoff alone would wait 10 ms).
fn waits_at_least_a_second(refusal: Canned, value: &str) -> toolhost_engine::RunReport {
    let mock = Server::replying(vec![refusal.header("retry-after", value), good()]);
    let mut p = planner(config(ProviderKind::OpenAi, &mock, "m"));
    let t = Instant::now();
    let report = run(calc(), RunConfig::default(), "g", &mut p);
    assert_eq!(report.stop, StopReason::Completed, "{report:#?}");
    assert!(t.elapsed() >= Duration::from_secs(1), "{:?}", t.elapsed());
    assert_eq!(mock.received().len(), 2);
    report
}

#[test]
fn a_rate_limit_waits_as_long_as_retry_after_says() {
    let limited = Canned::status(429, r#"{"error": {"message": "Rate limit reached"}}"#);
    let report = waits_at_least_a_second(limited, "1");
    // Only the answered request is charged.
    assert_eq!(report.spent.input_tokens, 100);
}

#[test]
fn a_retry_after_date_is_waited_for() {
    // Dates have whole seconds: two seconds from now is more than one from now.
    let at = httpdate::fmt_http_date(std::time::SystemTime::now() + Duration::from_secs(2));
    let overloaded = Canned::status(503, r#"{"error": {"message": "overloaded"}}"#);
    waits_at_least_a_second(overloaded, &at);
}

#[test]
fn server_errors_are_retried() {
    let mock = Server::replying(vec![
        Canned::status(500, "{}"),
        Canned::status(503, "overloaded"),
        good(),
    ]);
    let mut p = planner(config(ProviderKind::OpenAi, &mock, "m"));
    let report = run(calc(), RunConfig::default(), "g", &mut p);
    assert_eq!(report.stop, StopReason::Completed, "{report:#?}");
    assert_eq!(mock.received().len(), 3);
}

#[test]
fn an_answer_slower_than_the_timeout_is_abandoned_and_retried() {
    let mock = Server::replying(vec![good().after(3_000), good()]);
    let mut c = config(ProviderKind::OpenAi, &mock, "m");
    c.timeout_ms = 300;
    let mut p = planner(c);
    let t = Instant::now();
    let report = run(calc(), RunConfig::default(), "g", &mut p);
    assert_eq!(report.stop, StopReason::Completed, "{report:#?}");
    assert!(
        t.elapsed() < Duration::from_millis(2_500),
        "{:?}",
        t.elapsed()
    );
    assert_eq!(mock.received().len(), 2);
}

#[test]
fn retries_are_capped() {
    let mock = Server::replying(vec![Canned::status(500, "{}"); 5]);
    let mut c = config(ProviderKind::OpenAi, &mock, "m");
    c.max_retries = 2;
    let mut p = planner(c);
    let report = run(calc(), RunConfig::default(), "g", &mut p);
    let why = escalation(&report.stop);
    assert!(why.contains("gave up after 3 attempts"), "{why}");
    assert_eq!(mock.received().len(), 3);
    assert!(report.steps.is_empty());
}

#[test]
fn waiting_to_retry_counts_against_the_wall_time_budget() {
    let mock = Server::replying(vec![
        Canned::status(429, "{}").header("retry-after", "20"),
        good(),
    ]);
    let mut p = planner(config(ProviderKind::OpenAi, &mock, "m"));
    let cfg = RunConfig {
        budgets: Budgets {
            max_wall_ms: 2_000,
            ..Budgets::default()
        },
        ..RunConfig::default()
    };
    let t = Instant::now();
    let report = run(calc(), cfg, "g", &mut p);
    // Running out of wall time while waiting is a budget stop, not an escalation.
    assert_eq!(
        report.stop,
        StopReason::BudgetExhausted {
            which: Budget::WallTime
        },
        "{report:#?}"
    );
    assert!(t.elapsed() < Duration::from_secs(2), "{:?}", t.elapsed());
    assert_eq!(mock.received().len(), 1);
}

#[test]
fn malformed_json_is_re_asked_with_the_parse_error() {
    let mock = Server::replying(vec![
        openai("{\"goal\": \"g\", \"steps\": [", 70, 7),
        good(),
    ]);
    let mut p = planner(config(ProviderKind::OpenAi, &mock, "m"));
    let report = run(calc(), RunConfig::default(), "g", &mut p);
    assert_eq!(report.stop, StopReason::Completed, "{report:#?}");
    let reqs = mock.received();
    assert_eq!(reqs.len(), 2);
    let again = prompt(&reqs[1]);
    assert!(again.contains("the answer is not valid JSON"), "{again}");
    assert!(again.contains("{\"goal\": \"g\", \"steps\": ["), "{again}");
    // Both responses' usage is charged.
    assert_eq!(
        (report.spent.input_tokens, report.spent.output_tokens),
        (170, 17)
    );
}

#[test]
fn answers_still_unusable_after_the_repairs_escalate() {
    let mock = Server::replying(vec![
        openai("not json", 1, 1),
        openai("{\"goal\": 3}", 1, 1),
    ]);
    let mut c = config(ProviderKind::OpenAi, &mock, "m");
    c.max_repairs = 1;
    let mut p = planner(c);
    let report = run(calc(), RunConfig::default(), "g", &mut p);
    let why = escalation(&report.stop);
    assert!(why.contains("no usable answer after 2 attempts"), "{why}");
    assert!(why.contains("/goal"), "{why}");
    assert_eq!(mock.received().len(), 2);
}

#[test]
fn a_plan_naming_an_unknown_tool_escalates_without_running_anything() {
    let mock = Server::replying(vec![openai(
        &strict_plan(
            "g",
            vec![
                strict_step("s1", "calc", "eval", json!({"expression": "1"})),
                strict_step("s2", "shell", "exec", json!({"cmd": "rm -rf /"})),
            ],
        ),
        10,
        10,
    )]);
    let mut p = planner(config(ProviderKind::OpenAi, &mock, "m"));
    let report = run(calc(), RunConfig::default(), "g", &mut p);
    let why = escalation(&report.stop);
    assert!(
        why.contains("may not use") && why.contains("shell"),
        "{why}"
    );
    assert!(report.steps.is_empty(), "{:?}", report.steps);
    assert_eq!(mock.received().len(), 1);
}

#[test]
fn arguments_failing_the_schema_get_a_repair_round_with_the_exact_problem() {
    let bad = strict_plan(
        "g",
        vec![strict_step("s1", "calc", "eval", json!({"expr": "40 + 2"}))],
    );
    let mock = Server::replying(vec![openai(&bad, 100, 10), good()]);
    let mut p = planner(config(ProviderKind::OpenAi, &mock, "m"));
    let report = run(calc(), mode(Mode::PlanThenExecute), "g", &mut p);
    assert_eq!(report.stop, StopReason::Completed, "{report:#?}");
    assert_eq!(report.answer, Some(json!(42)));
    let reqs = mock.received();
    assert_eq!(reqs.len(), 2);
    let repair = prompt(&reqs[1]);
    assert!(
        repair.contains("Your previous answer was rejected"),
        "{repair}"
    );
    assert!(repair.contains("step `s1`"), "{repair}");
    assert!(repair.contains("expression"), "{repair}");
    // The previous answer is shown back.
    assert!(repair.contains(r#"{\"expr\":\"40 + 2\"}"#), "{repair}");
    assert_eq!(report.planner_calls.len(), 2);
}

#[test]
fn a_request_that_would_exceed_the_token_budget_is_not_sent() {
    let mock = Server::replying(vec![good()]);
    let mut p = planner(config(ProviderKind::OpenAi, &mock, "m"));
    let cfg = RunConfig {
        budgets: Budgets {
            max_input_tokens: 200,
            ..Budgets::default()
        },
        ..RunConfig::default()
    };
    let report = run(calc(), cfg, "g", &mut p);
    assert_eq!(
        report.stop,
        StopReason::BudgetExhausted {
            which: Budget::InputTokens
        }
    );
    assert!(mock.received().is_empty());
}

#[test]
fn the_response_cap_never_exceeds_the_output_tokens_left() {
    let mock = Server::replying(vec![good()]);
    let mut p = planner(config(ProviderKind::OpenAi, &mock, "m"));
    let cfg = RunConfig {
        budgets: Budgets {
            max_output_tokens: 700,
            ..Budgets::default()
        },
        ..RunConfig::default()
    };
    let report = run(calc(), cfg, "g", &mut p);
    assert_eq!(report.stop, StopReason::Completed, "{report:#?}");
    assert_eq!(mock.received()[0].json()["max_completion_tokens"], 700);
}

#[test]
fn the_key_never_appears_in_errors_reports_or_debug_output() {
    // Providers echo (parts of) a bad key in 401 bodies; the host must not pass it on.
    let body = format!(r#"{{"error": {{"message": "Incorrect API key provided: {KEY}."}}}}"#);
    let mock = Server::replying(vec![Canned::status(401, &body)]);
    let mut p = planner(config(ProviderKind::OpenAi, &mock, "m"));
    assert!(!format!("{p:?}").contains(KEY));
    let report = run(calc(), RunConfig::default(), "g", &mut p);
    let why = escalation(&report.stop);
    assert!(
        why.contains("status 401") && why.contains("[redacted]"),
        "{why}"
    );
    assert!(!why.contains(KEY), "{why}");
    let doc = serde_json::to_string(&report).unwrap();
    assert!(!doc.contains(KEY));
    assert!(!format!("{report:?}").contains(KEY));
    // It was sent, though: only in the header.
    assert_eq!(
        mock.received()[0].header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
}

#[test]
fn the_cli_shows_a_retry_wait_without_debug_logging() {
    let plan = json!({"goal": "g", "give_up": null, "steps": [
        {"id": "mul", "description": "", "tool": "calc", "operation": "eval",
         "args": "{\"expression\": \"12 * 4 + 5\"}", "depends_on": [], "expect": null,
         "idempotent": false, "timeout_ms": null}]});
    let limited = Canned::status(429, r#"{"error": {"message": "Rate limit reached"}}"#)
        .header("retry-after", "1");
    let mock = Server::replying(vec![limited, openai(&plan.to_string(), 100, 10)]);
    let task = format!(
        "{}/../examples/tasks/llm-local.toml",
        env!("CARGO_MANIFEST_DIR")
    );
    // A child process: the wait goes to its stderr through the log's writer thread.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_toolhost-test-cli"))
        .args(["run", &task, "--tools-dir", &toolhost_tests::tools_dir()])
        .args(["--base-url", &super::mock::base_url(&mock)])
        .env_remove("TOOLHOST_LOG")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{out:?}");
    assert!(
        stderr.contains(
            "planner llama3.1:8b: attempt 1 of 4 failed (429 Too Many Requests: {\"error\": {\"message\": \"Rate limit reached\"}}); attempt 2 in 1.0 s (as the server's Retry-After asks)"
        ),
        "{stderr}"
    );
}

#[test]
fn a_slow_answer_is_reported_while_it_is_awaited() {
    let mock = Server::replying(vec![good().after(5_600)]);
    let mut c = config(ProviderKind::OpenAi, &mock, "m");
    c.timeout_ms = 20_000;
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let log = seen.clone();
    let on_wait: toolhost_llm::OnWait = std::sync::Arc::new(move |w: &toolhost_llm::Waiting| {
        log.lock().unwrap().push(w.to_string());
    });
    let mut p =
        toolhost_llm::LlmPlanner::watched(c, Some(toolhost_llm::ApiKey::new(KEY)), Some(on_wait))
            .unwrap();
    let report = run(calc(), RunConfig::default(), "g", &mut p);
    assert_eq!(report.stop, StopReason::Completed, "{report:#?}");
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert!(
        seen[0].starts_with("attempt 1: no answer yet after 5.")
            && seen[0].ends_with("(gives up at 20.0 s)"),
        "{seen:?}"
    );
}

/// A model server that refuses connections is a configuration error said at once, with its
/// URL and exit code 2, before the run opens a journal (it used to take three retries and
/// end `escalated`, leaving a two-record journal behind).
#[test]
fn an_unreachable_model_server_is_refused_before_the_run_starts() {
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("policy.toml"),
        "version = 1\n[tools.calc]\n",
    )
    .unwrap();
    let url = format!("http://127.0.0.1:{port}/v1");
    let task = dir.path().join("task.toml");
    std::fs::write(
        &task,
        format!(
            "goal = \"g\"\npolicy = \"policy.toml\"\ntools = [\"calc\"]\n[planner]\nkind = \"openai-compatible\"\nmodel = \"m\"\nbase_url = \"{url}\"\n"
        ),
    )
    .unwrap();
    let state = dir.path().join("state");
    let out = toolhost_tests::cli([
        "--state-dir",
        state.to_str().unwrap(),
        "run",
        task.to_str().unwrap(),
        "--tools-dir",
        &toolhost_tests::tools_dir(),
    ]);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(
        out.stderr.contains(&format!(
            "the model server at `{url}` cannot be reached: nothing accepts connections at 127.0.0.1:{port}"
        )),
        "{}",
        out.stderr
    );
    let journals = std::fs::read_dir(state.join("runs"))
        .map(|d| d.count())
        .unwrap_or(0);
    assert_eq!(journals, 0, "a run that cannot start left a journal");
}
