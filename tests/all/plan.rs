//! Plans: the published schema, references, and validation that reports every problem of a
//! plan at once, before anything runs.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::{Value, json};
use toolhost_engine::{Catalog, Plan, ProblemKind, plan_schema, validate};
use toolhost_tests::{cli, path};

fn catalog(policy: &str) -> Catalog {
    toolhost_tests::catalog_in(policy, Path::new("."))
}

const POLICY: &str = r#"
version = 1
[tools.calc]
[tools.text]
operations = ["count", "extract-lines"]
limits = { timeout_ms = 1000 }
"#;

fn plan(v: Value) -> Plan {
    serde_json::from_value(v).expect("a well-formed plan")
}

#[test]
fn a_plan_with_typed_references_is_valid() {
    let p = plan(json!({
        "goal": "take the second half of a text",
        "steps": [
            {"id": "count", "tool": "text", "operation": "count", "args": {"text": "a\nb\nc\nd"}},
            {"id": "half", "tool": "calc", "operation": "eval",
             "args": {"expression": "${count.output.lines} / 2"}},
            {"id": "tail", "tool": "text", "operation": "extract-lines",
             "args": {"text": "a\nb\nc\nd", "first": {"$ref": "count.output.words"}, "last": null},
             "depends_on": ["half"], "timeout_ms": 500}
        ]
    }));
    let v =
        validate(&p, &catalog(POLICY), 50, &BTreeMap::new()).unwrap_or_else(|e| panic!("{e:#?}"));
    assert_eq!(
        v.order.iter().map(|s| s.as_str()).collect::<Vec<_>>(),
        ["count", "half", "tail"]
    );
    let tail_deps: Vec<&str> = v.deps[&v.order[2]].iter().map(|s| s.as_str()).collect();
    assert_eq!(
        tail_deps,
        ["count", "half"],
        "references add their dependencies"
    );
}

#[test]
fn every_problem_is_reported_at_once() {
    let p = plan(json!({
        "goal": "broken on purpose",
        "steps": [
            {"id": "a", "tool": "calc", "operation": "eval", "args": {"expression": 42}},
            {"id": "a", "tool": "calc", "operation": "eval", "args": {"expression": "1"}},
            {"id": "b", "tool": "shell", "operation": "run", "args": {}},
            {"id": "c", "tool": "text", "operation": "nope", "args": {}},
            {"id": "d", "tool": "text", "operation": "search", "args": {"text": "x", "pattern": "x"}},
            {"id": "e", "tool": "text", "operation": "count", "args": {"text": {"$ref": "ghost.output"}}},
            {"id": "f", "tool": "text", "operation": "extract-lines",
             "args": {"text": "x", "first": {"$ref": "g.output.words"}}},
            {"id": "g", "tool": "text", "operation": "count",
             "args": {"text": {"$ref": "f.output"}}, "depends_on": ["missing"]},
            {"id": "h", "tool": "text", "operation": "extract-lines",
             "args": {"text": {"$ref": "g.output.nope"}, "first": 1}, "timeout_ms": 5000},
            {"id": "i", "tool": "text", "operation": "count", "args": {"text": {"$ref": "g.output"}}}
        ]
    }));
    let problems = validate(&p, &catalog(POLICY), 9, &BTreeMap::new()).unwrap_err();
    let shown: Vec<String> = problems.iter().map(ToString::to_string).collect();
    let has = |kind: ProblemKind, step: Option<&str>, text: &str| {
        assert!(
            problems.iter().any(|p| p.kind == kind
                && p.step.as_ref().map(|s| s.as_str()) == step
                && p.to_string().contains(text)),
            "no {kind:?} for {step:?} containing {text:?} in:\n{}",
            shown.join("\n")
        );
    };
    has(
        ProblemKind::TooManySteps,
        None,
        "the plan has 10 steps; at most 9",
    );
    has(ProblemKind::DuplicateId, Some("a"), "more than one step");
    has(ProblemKind::BadArguments, Some("a"), "expression");
    // Which of the two `a` steps has the bad argument is said.
    has(
        ProblemKind::BadArguments,
        Some("a"),
        "step `a` (number 1 of the 2 steps with that id): bad arguments",
    );
    assert!(
        !shown.iter().any(|p| p.starts_with("step `a` (number 2")),
        "the second `a` is fine:\n{}",
        shown.join("\n")
    );
    has(
        ProblemKind::UnknownTool,
        Some("b"),
        "tool `shell` is not available; the tools are: calc, text",
    );
    has(
        ProblemKind::UnknownOperation,
        Some("c"),
        "has no operation `nope`",
    );
    has(
        ProblemKind::NotAllowed,
        Some("d"),
        "does not allow operation `search`",
    );
    has(
        ProblemKind::BadReference,
        Some("e"),
        "`ghost.output` refers to `ghost`, which is not a step",
    );
    has(
        ProblemKind::UnknownDependency,
        Some("g"),
        "depends on `missing`",
    );
    has(
        ProblemKind::BadReference,
        Some("h"),
        "the output of `g` has no field `nope`",
    );
    has(
        ProblemKind::TimeoutAbovePolicy,
        Some("h"),
        "timeout_ms 5000",
    );
    // `i` takes a record where a string is expected.
    has(ProblemKind::BadArguments, Some("i"), "text");
    has(ProblemKind::Cycle, None, "`f`, `g`");
}

#[test]
fn the_published_schema_is_current_and_accepts_the_examples() {
    let file =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../crates/engine/schemas/plan.schema.json");
    let published: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(
        published,
        plan_schema(),
        "regenerate with `toolhost plan schema > crates/engine/schemas/plan.schema.json`"
    );
    let validator = jsonschema::validator_for(&published).unwrap();
    let good = json!({"goal": "g", "steps": [{"id": "s1", "tool": "calc", "operation": "eval",
        "args": {"expression": "1"}, "expect": {"equals": 1}}]});
    assert!(validator.is_valid(&good));
    assert!(
        !validator
            .is_valid(&json!({"goal": "g", "steps": [{"id": "1", "tool": "t", "operation": "o"}]}))
    );
    assert!(!validator.is_valid(&json!({"goal": "g", "steps": [], "extra": 1})));
}

/// The schema is derived from the Rust types: whatever a plan file may hold, the schema
/// and the parser agree on, valid or not (examples we ship, and each way to get one wrong).
#[test]
fn the_schema_and_the_parser_agree() {
    let validator = jsonschema::validator_for(&plan_schema()).unwrap();
    let step =
        json!({"id": "s1", "tool": "calc", "operation": "eval", "args": {"expression": "1"}});
    let with = |key: &str, value: Value| {
        let mut s = step.clone();
        s[key] = value;
        json!({"goal": "g", "steps": [s]})
    };
    let mut cases = vec![
        json!({"goal": "g", "steps": [step.clone()]}),
        json!({"goal": "g", "revision": 2, "steps": []}),
        json!({"goal": "g", "revision": 0, "steps": []}),
        json!({"goal": "g", "revision": -1, "steps": []}),
        json!({"goal": "g"}),
        json!({"steps": []}),
        json!({"goal": 1, "steps": []}),
        json!({"goal": "g", "steps": [], "extra": 1}),
        json!({"goal": "g", "steps": [{"id": "s1", "tool": "calc"}]}),
        with("id", json!("1st")),
        with("id", json!("a".repeat(64))),
        with("id", json!("a".repeat(65))),
        with("id", json!("a b")),
        with("args", json!([1])),
        with("args", json!("x")),
        with("depends_on", json!(["s0"])),
        with("depends_on", json!(["0"])),
        with("depends_on", json!(["s0", "s0"])),
        with(
            "expect",
            json!({"equals": [1, {"a": null}], "min": 1.5, "max": 2}),
        ),
        with(
            "expect",
            json!({"schema": {"type": "string"}, "contains": "x"}),
        ),
        with("expect", json!({"schema": "string"})),
        with("expect", json!({"nearly": 1})),
        with("expect", json!(null)),
        with("idempotent", json!(true)),
        with("idempotent", json!("yes")),
        with("timeout_ms", json!(100)),
        with("timeout_ms", json!(0)),
        with("timeout_ms", json!(1.5)),
        with("wait", json!(1)),
    ];
    // The plans of the example tasks (`[planner.plan]`, `replans`, `repairs`).
    let tasks = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/tasks");
    let mut shipped = 0;
    for entry in std::fs::read_dir(&tasks).unwrap().flatten() {
        let path = entry.path();
        if path.extension().is_none_or(|e| e != "toml") {
            continue;
        }
        let task: Value = toml::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let planner = &task["planner"];
        let replans = planner["replans"].as_array().into_iter().flatten();
        let repairs = planner["repairs"].as_array().into_iter().flatten();
        for plan in [&planner["plan"]]
            .into_iter()
            .chain(replans.map(|r| &r["plan"]))
            .chain(repairs)
            .filter(|p| p.is_object())
        {
            cases.push(plan.clone());
            shipped += 1;
        }
    }
    assert!(
        shipped >= 3,
        "the example tasks hold plans ({shipped} found)"
    );
    for case in cases {
        let parsed = serde_json::from_value::<Plan>(case.clone());
        assert_eq!(
            validator.is_valid(&case),
            parsed.is_ok(),
            "schema and parser disagree on {case}: parser says {parsed:?}"
        );
    }
}

#[test]
fn cli_validates_a_plan_file() {
    let dir = tempfile::tempdir().unwrap();
    let policy = dir.path().join("policy.toml");
    std::fs::write(&policy, POLICY).unwrap();
    let good = dir.path().join("good.json");
    std::fs::write(
        &good,
        json!({"goal": "g", "steps": [{"id": "s1", "tool": "calc", "operation": "eval", "args": {"expression": "1"}}]})
            .to_string(),
    )
    .unwrap();
    let bad = dir.path().join("bad.json");
    std::fs::write(
        &bad,
        json!({"goal": "g", "steps": [
            {"id": "s1", "tool": "calc", "operation": "eval", "args": {}},
            {"id": "s2", "tool": "text", "operation": "search", "args": {}}
        ]})
        .to_string(),
    )
    .unwrap();
    let run = |plan: &Path, json: bool| {
        let mut args = vec![
            "plan".to_string(),
            "validate".into(),
            plan.display().to_string(),
            "--policy".into(),
            policy.display().to_string(),
            "--tool".into(),
            path("calc").into(),
            "--tool".into(),
            path("text").into(),
        ];
        if json {
            args.push("--json".into());
        }
        cli(args)
    };
    let out = run(&good, false);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(
        out.stdout.contains("valid, 1 steps, revision 1; order: s1"),
        "{}",
        out.stdout
    );
    let out = run(&bad, false);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(out.stdout.contains("3 problems:"), "{}", out.stdout);
    assert!(
        out.stdout
            .contains("step `s1`: bad arguments: $: missing argument `expression` of type string"),
        "{}",
        out.stdout
    );
    let out = run(&bad, true);
    let doc: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(doc["valid"], false);
    assert_eq!(doc["problems"][1]["kind"], "not_allowed");
    assert_eq!(doc["problems"][2]["kind"], "bad_arguments");
    assert_eq!(doc["problems"][1]["step"], "s2");

    // Malformed steps (issue 42, item 10): each is a problem, not only the first.
    let malformed = dir.path().join("malformed.json");
    std::fs::write(
        &malformed,
        json!({"goal": "g", "steps": [
            {"id": "step 1", "tool": "calc", "operation": "eval", "args": {}},
            {"id": "s2", "tool": "calc", "operation": "eval", "args": {}, "depends_on": ["step 1"]},
            {"id": "3rd", "tool": "calc", "operation": "eval", "args": {}}
        ]})
        .to_string(),
    )
    .unwrap();
    let out = run(&malformed, false);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(out.stdout.contains("3 problems:"), "{}", out.stdout);
    for want in ["steps[0]: ", "step `s2`: steps[1]: ", "steps[2]: "] {
        assert!(out.stdout.contains(want), "{want}\n{}", out.stdout);
    }
    let doc: Value = serde_json::from_str(&run(&malformed, true).stdout).unwrap();
    assert_eq!(doc["problems"].as_array().map(Vec::len), Some(3), "{doc}");
    assert_eq!(doc["problems"][0]["kind"], "malformed");
}

#[test]
fn a_mismatched_reference_is_told_by_its_type_not_a_sample_value() {
    let dir = tempfile::tempdir().unwrap();
    let policy = dir.path().join("policy.toml");
    std::fs::write(&policy, POLICY).unwrap();
    let plan = dir.path().join("plan.json");
    std::fs::write(
        &plan,
        json!({"goal": "g", "steps": [
            {"id": "n", "tool": "calc", "operation": "eval", "args": {"expression": "1 + 1"}},
            {"id": "c", "tool": "text", "operation": "count", "args": {"text": "a b"}},
            // A number where a string goes; a record where a string goes.
            {"id": "s1", "tool": "text", "operation": "count", "args": {"text": {"$ref": "n.output"}}},
            {"id": "s2", "tool": "calc", "operation": "eval", "args": {"expression": {"$ref": "c.output"}}},
            // Interpolation makes text of anything: no problem.
            {"id": "s3", "tool": "calc", "operation": "eval", "args": {"expression": "${n.output} * 2"}}
        ]})
        .to_string(),
    )
    .unwrap();
    let out = cli([
        "plan",
        "validate",
        plan.to_str().unwrap(),
        "--policy",
        policy.to_str().unwrap(),
        "--tool",
        path("calc"),
        "--tool",
        path("text"),
    ]);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(out.stdout.contains("2 problems:"), "{}", out.stdout);
    for want in [
        "step `s1`: bad arguments: $.text: expected a string, got `n.output`, which is `f64`",
        "step `s2`: bad arguments: $.expression: expected a string, got `c.output`, which is `record",
    ] {
        assert!(out.stdout.contains(want), "{want}\n{}", out.stdout);
    }
    assert!(!out.stdout.contains("got 0"), "{}", out.stdout);
}
