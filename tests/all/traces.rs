//! Traces: `toolhost run --otlp-endpoint` against a local OTLP/HTTP receiver (the loopback
//! test server's `/v1/traces`), decoding what arrives with the OTLP protobuf types: span
//! names, their hierarchy across the executor's concurrent tasks, GenAI attributes, and
//! that planted secrets never leave in a span. Also: no endpoint, no export; an
//! unreachable collector does not fail the run.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value as Any;
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue};
use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message;
use serde_json::Value;
use toolhost_tests::server::{Received, Server, closed_origin};
use toolhost_tests::{CliOutput, cli, tools_dir};

const EMAIL: &str = "ada.lovelace@example.com";
const API_KEY: &str = "sk-proj-PLANTEDplanted1234567890";
const GOAL_WORDS: &str = "Tally the quarterly ledger";

/// A plan of three calc/text steps (two independent, one joining them) whose arguments
/// and goal carry an e-mail address and an API key; the scripted planner reports tokens.
fn task(dir: &Path, third: &str, max_replans: u32) -> String {
    let policy = format!(
        "{}/../examples/tasks/policy.toml",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = format!(
        r#"
goal = "{GOAL_WORDS} for {EMAIL}"
policy = "{policy}"
tools = ["calc", "text"]

[budgets]
max_replans = {max_replans}

[planner]
usage_per_call = {{ model = "gpt-trace-test", input_tokens = 321, output_tokens = 45 }}

[planner.plan]
goal = "Count, add, combine"
steps = [
  {{ id = "words", tool = "text", operation = "count", args = {{ text = "mail {EMAIL} key {API_KEY}" }} }},
  {{ id = "sum", tool = "calc", operation = "eval", args = {{ expression = "20 + 22" }} }},
  {{ id = "total", tool = "calc", operation = "eval", args = {{ expression = "{third}" }} }},
]
"#
    );
    let path = dir.join("task.toml");
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

/// Every span in the OTLP exports `received`, by span id; panics on anything but a
/// protobuf `POST /v1/traces` for service `toolhost`.
fn spans(received: &[Received]) -> BTreeMap<Vec<u8>, Span> {
    let mut all = BTreeMap::new();
    for r in received {
        assert_eq!(
            (r.method.as_str(), r.target.as_str()),
            ("POST", "/v1/traces")
        );
        assert_eq!(r.header("content-type"), Some("application/x-protobuf"));
        let export = ExportTraceServiceRequest::decode(r.body.as_slice()).expect("OTLP protobuf");
        for rs in export.resource_spans {
            let resource = rs.resource.expect("a resource");
            assert_eq!(
                attr(&resource.attributes, "service.name"),
                Some(text("toolhost"))
            );
            for ss in rs.scope_spans {
                for s in ss.spans {
                    all.insert(s.span_id.clone(), s);
                }
            }
        }
    }
    all
}

fn text(s: &str) -> Any {
    Any::StringValue(s.into())
}

fn attr(attrs: &[KeyValue], key: &str) -> Option<Any> {
    attrs
        .iter()
        .find(|kv| kv.key == key)
        .and_then(|kv| kv.value.clone())
        .and_then(|AnyValue { value }| value)
}

fn get(span: &Span, key: &str) -> Option<Any> {
    attr(&span.attributes, key)
}

fn named<'a>(spans: &'a BTreeMap<Vec<u8>, Span>, name: &str) -> Vec<&'a Span> {
    spans.values().filter(|s| s.name == name).collect()
}

fn parent<'a>(spans: &'a BTreeMap<Vec<u8>, Span>, span: &Span) -> &'a Span {
    spans
        .get(&span.parent_span_id)
        .unwrap_or_else(|| panic!("the parent of `{}` was not exported", span.name))
}

/// `toolhost run` of [`task`] (`third`, `max_replans`) with `--otlp-endpoint origin` and
/// `extra` arguments, in process.
fn run_traced(origin: &str, third: &str, max_replans: u32, extra: &[&str]) -> CliOutput {
    let dir = tempfile::tempdir().unwrap();
    let task = task(dir.path(), third, max_replans);
    let tools = tools_dir();
    let mut args = vec![
        "run",
        &task,
        "--tools-dir",
        &tools,
        "--otlp-endpoint",
        origin,
    ];
    args.extend_from_slice(extra);
    cli(args)
}

#[test]
fn a_run_exports_its_span_tree_without_content() {
    let server = Server::start();
    let third = "${words.output.words} + ${sum.output}";
    let out = run_traced(&server.origin(), third, 2, &["--json"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(out.stderr, "");
    let report: Value = serde_json::from_str(&out.stdout).unwrap();
    let received = server.received();
    let spans = spans(&received);

    let [run] = named(&spans, "run")[..] else {
        panic!("one run span: {spans:?}")
    };
    assert!(run.parent_span_id.is_empty());
    let run_id = report["journal"]["run"].as_str().unwrap();
    assert_eq!(get(run, "toolhost.run.id"), Some(text(run_id)));
    assert_eq!(
        get(run, "toolhost.run.mode"),
        Some(text("plan-then-execute"))
    );
    assert_eq!(
        get(run, "toolhost.run.stop_reason"),
        Some(text("completed"))
    );
    assert_eq!(get(run, "toolhost.run.steps"), Some(Any::IntValue(3)));
    assert!(
        spans.values().all(|s| s.trace_id == run.trace_id),
        "one trace"
    );

    let [planner] = named(&spans, "planner_call")[..] else {
        panic!("one planner call: {spans:?}")
    };
    assert_eq!(parent(&spans, planner).name, "run");
    assert_eq!(get(planner, "gen_ai.operation.name"), Some(text("chat")));
    assert_eq!(
        get(planner, "gen_ai.request.model"),
        Some(text("gpt-trace-test"))
    );
    assert_eq!(
        get(planner, "gen_ai.usage.input_tokens"),
        Some(Any::IntValue(321))
    );
    assert_eq!(
        get(planner, "gen_ai.usage.output_tokens"),
        Some(Any::IntValue(45))
    );
    assert_eq!(get(planner, "toolhost.planner.reply"), Some(text("plan")));
    // A client span (SpanKind::Client is 3 in OTLP).
    assert_eq!(planner.kind, 3);

    let [revision] = named(&spans, "plan_revision")[..] else {
        panic!("one revision: {spans:?}")
    };
    assert_eq!(parent(&spans, revision).name, "run");
    assert_eq!(
        get(revision, "toolhost.plan.revision"),
        Some(Any::IntValue(1))
    );
    assert_eq!(get(revision, "toolhost.plan.steps"), Some(Any::IntValue(3)));

    let steps = named(&spans, "step");
    let mut ids: Vec<Any> = steps
        .iter()
        .map(|s| get(s, "toolhost.step.id").unwrap())
        .collect();
    ids.sort_by_key(|a| format!("{a:?}"));
    assert_eq!(ids, [text("sum"), text("total"), text("words")]);
    for step in &steps {
        assert_eq!(parent(&spans, step).span_id, revision.span_id);
        assert_eq!(get(step, "toolhost.step.status"), Some(text("succeeded")));
        assert!(matches!(get(step, "toolhost.step.fuel"), Some(Any::IntValue(f)) if f > 0));
    }

    // Each call ran in its step's task and is that step's child, however the executor's
    // concurrent tasks interleaved.
    let calls = named(&spans, "tool_call");
    assert_eq!(calls.len(), 3, "{calls:?}");
    for call in &calls {
        let step = parent(&spans, call);
        assert_eq!(step.name, "step");
        for key in ["toolhost.tool.name", "toolhost.tool.operation"] {
            assert_eq!(get(call, key), get(step, key));
        }
        assert_eq!(get(call, "toolhost.call.outcome"), Some(text("ok")));
        assert_eq!(
            get(call, "toolhost.call.fuel_consumed"),
            get(step, "toolhost.step.fuel")
        );
        assert!(
            matches!(get(call, "toolhost.call.memory_peak_bytes"), Some(Any::IntValue(m)) if m > 0)
        );
    }
    let mut parents: Vec<&[u8]> = calls.iter().map(|c| &c.parent_span_id[..]).collect();
    parents.sort();
    parents.dedup();
    assert_eq!(parents.len(), 3, "one call per step");

    // Nothing of the goal, the arguments or the outputs left the host (while the scan does
    // see the strings that were exported).
    let bodies: Vec<String> = received
        .iter()
        .map(|r| String::from_utf8_lossy(&r.body).into_owned())
        .collect();
    assert!(bodies.iter().any(|b| b.contains("gpt-trace-test")));
    for body in &bodies {
        for planted in [EMAIL, API_KEY, GOAL_WORDS, "20 + 22", "Count, add, combine"] {
            assert!(!body.contains(planted), "`{planted}` was exported");
        }
    }
}

#[test]
fn a_run_that_stops_early_still_exports_its_spans() {
    let server = Server::start();
    // `1 +` is not an expression: the last step fails and there are no replans left.
    let out = run_traced(&server.origin(), "1 +", 0, &[]);
    assert_eq!(out.code, 7, "{out:?}");
    let spans = spans(&server.received());
    let [run] = named(&spans, "run")[..] else {
        panic!("one run span: {spans:?}")
    };
    assert_eq!(
        get(run, "toolhost.run.stop_reason"),
        Some(text("replan_limit"))
    );
    // STATUS_CODE_ERROR is 2 in OTLP.
    assert_eq!(run.status.as_ref().map(|s| s.code), Some(2));
    let failed: Vec<&Span> = named(&spans, "step")
        .into_iter()
        .filter(|s| get(s, "toolhost.step.id") == Some(text("total")))
        .collect();
    let [failed] = failed[..] else {
        panic!("step `total`: {spans:?}")
    };
    assert_eq!(get(failed, "toolhost.step.status"), Some(text("failed")));
    assert_eq!(get(failed, "error.type"), Some(text("tool_error")));
    let call = named(&spans, "tool_call")
        .into_iter()
        .find(|c| c.parent_span_id == failed.span_id)
        .expect("the failed step's call");
    assert_eq!(get(call, "toolhost.call.outcome"), Some(text("tool_error")));
}

#[test]
fn an_unreachable_collector_does_not_fail_the_run() {
    let origin = closed_origin();
    let started = Instant::now();
    let out = run_traced(&origin, "${sum.output} * 2", 2, &[]);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(out.stdout.ends_with("answer: 84\n"), "{}", out.stdout);
    assert!(
        out.stderr.starts_with(&format!(
            "warning: traces were not all exported to `{origin}/v1/traces`: "
        )),
        "{}",
        out.stderr
    );
    assert!(started.elapsed() < Duration::from_secs(30));
}

/// The `toolhost` binary with `env`, the OTLP variables of this process removed.
fn binary(args: &[&str], env: &[(&str, &str)], dir: &Path) -> std::process::Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_toolhost-test-cli"));
    cmd.arg("--cache-dir")
        .arg(dir.join("cache"))
        .arg("--state-dir")
        .arg(dir.join("state"))
        .args(args);
    for (name, _) in std::env::vars() {
        if name.starts_with("OTEL_") {
            cmd.env_remove(name);
        }
    }
    cmd.envs(env.iter().copied())
        .output()
        .expect("run toolhost")
}

#[test]
fn the_binary_exports_to_the_standard_variables_and_only_then() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start();
    let task = task(dir.path(), "${sum.output} * 2", 2);
    let tools = tools_dir();
    let args = ["run", &task, "--tools-dir", &tools];
    let origin = server.origin();

    let out = binary(&args, &[], dir.path());
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert_eq!(String::from_utf8_lossy(&out.stderr), "");
    let disabled = [
        ("OTEL_EXPORTER_OTLP_ENDPOINT", origin.as_str()),
        ("OTEL_SDK_DISABLED", "true"),
    ];
    let out = binary(&args, &disabled, dir.path());
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(server.received().is_empty(), "exported while disabled");

    let out = binary(&args, &disabled[..1], dir.path());
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert_eq!(String::from_utf8_lossy(&out.stderr), "");
    let spans = spans(&server.received());
    for name in ["run", "planner_call", "plan_revision", "step", "tool_call"] {
        assert!(!named(&spans, name).is_empty(), "no `{name}` span");
    }
}
