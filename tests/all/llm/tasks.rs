//! The `[planner]` table of task files for model planners: what each kind needs, settings
//! a kind does not use, flags that replace the file's values.

use std::path::PathBuf;

use toolhost::task::Task;
use toolhost::task::{PlannerKind, PlannerOverrides, PlannerSpec};
use toolhost_llm::{ProviderKind, Structured};

fn task(planner: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.toml");
    std::fs::write(
        &path,
        format!("goal = \"g\"\npolicy = \"p.toml\"\ntools = {{ calc = \"calc.wasm\" }}\n{planner}"),
    )
    .unwrap();
    (dir, path)
}

fn error(planner: &str) -> String {
    let (_dir, path) = task(planner);
    Task::load(&path, None).unwrap_err().to_string()
}

#[test]
fn model_planners_are_configured_in_the_task() {
    let (_dir, path) = task(
        "[planner]\nkind = \"openai-compatible\"\nmodel = \"qwen\"\nbase_url = \"http://127.0.0.1:9/v1\"\ntemperature = 0.2\nmax_retries = 1\nstructured_output = \"json-object\"\n",
    );
    let t = Task::load(&path, None).unwrap();
    let PlannerSpec::Llm(c) = t.planner else {
        panic!("{:?}", t.planner)
    };
    assert_eq!(c.kind, ProviderKind::OpenAiCompatible);
    assert_eq!(
        (c.model.as_str(), c.temperature, c.max_retries),
        ("qwen", 0.2, 1)
    );
    assert_eq!(c.structured, Structured::JsonObject);
    assert_eq!(c.api_key_env, None);

    let (_dir, path) = task("[planner]\nkind = \"anthropic\"\nmodel = \"claude\"\n");
    let t = Task::load(&path, None).unwrap();
    let PlannerSpec::Llm(c) = t.planner else {
        panic!()
    };
    assert_eq!(c.api_key_env.as_deref(), Some("ANTHROPIC_API_KEY"));
    assert_eq!(c.base_url.as_deref(), Some("https://api.anthropic.com/v1"));
    assert_eq!(c.temperature, 0.0);
}

#[test]
fn flags_replace_the_task_values() {
    let (dir, path) = task("[planner]\nkind = \"openai\"\nmodel = \"gpt-4o-mini\"\n");
    let o = PlannerOverrides {
        model: Some("gpt-4.1".into()),
        base_url: Some("http://127.0.0.1:1/v1".into()),
        ..PlannerOverrides::default()
    };
    let t = Task::load_with(&path, None, &o).unwrap();
    let PlannerSpec::Llm(c) = t.planner else {
        panic!()
    };
    assert_eq!(c.model, "gpt-4.1");
    assert_eq!(c.base_url.as_deref(), Some("http://127.0.0.1:1/v1"));
    let o = PlannerOverrides {
        kind: Some(PlannerKind::Replay),
        cassette: Some(dir.path().join("c.jsonl")),
        ..PlannerOverrides::default()
    };
    let t = Task::load_with(&path, None, &o).unwrap();
    assert_eq!(t.planner, PlannerSpec::Replay(dir.path().join("c.jsonl")));
}

#[test]
fn settings_a_kind_does_not_use_are_errors() {
    let cases = [
        (
            "[planner]\nkind = \"openai\"\n",
            "`kind = \"openai\"` needs `model`",
        ),
        (
            "[planner]\nkind = \"openai-compatible\"\nmodel = \"m\"\n",
            "needs `base_url`",
        ),
        (
            "[planner]\nmodel = \"gpt-4o\"\n",
            "sets `model`, which a scripted planner does not use",
        ),
        ("[planner]\nkind = \"replay\"\n", "needs `cassette`"),
        (
            "[planner]\nkind = \"replay\"\ncassette = \"c\"\nmodel = \"m\"\n",
            "sets `model`",
        ),
        (
            "[planner]\nkind = \"anthropic\"\nmodel = \"m\"\n[[planner.turns]]\nstop = true\n",
            "gives a script",
        ),
        (
            "[planner]\nkind = \"openai\"\nmodel = \"m\"\ntemperature = 3.0\n",
            "temperature 3",
        ),
        (
            "[planner]\nkind = \"open-ai\"\n",
            "unknown variant `open-ai`",
        ),
        (
            "[planner]\nkind = \"openai\"\nmodel = \"m\"\napi_key = \"sk-1\"\n",
            "unknown field `api_key`",
        ),
        (
            "[planner]\nkind = \"openai\"\nmodel = \"m\"\nstrong = { kind = \"openai\", model = \"n\" }\n",
            "sets `strong`, which only `kind = \"ensemble\"` uses",
        ),
        (
            "[planner]\nkind = \"ensemble\"\nescalate_after_invalid = 0\nfast = { kind = \"openai\", model = \"m\" }\nstrong = { kind = \"openai\", model = \"n\" }\n",
            "escalate_after_invalid 0",
        ),
        (
            "[planner]\nkind = \"ensemble\"\nfast = { kind = \"openai-compatible\", model = \"m\" }\nstrong = { kind = \"openai\", model = \"n\" }\n",
            "[planner.fast]: `kind = \"openai-compatible\"` needs `base_url`",
        ),
        (
            "[planner]\nkind = \"ensemble\"\nfast = { kind = \"openai\", model = \"m\", colour = 1 }\n",
            "unknown field `colour`",
        ),
        (
            "[memory]\nenabled = \"yes\"\n",
            "invalid type: string \"yes\"",
        ),
    ];
    for (planner, expected) in cases {
        let e = error(planner);
        assert!(e.contains(expected), "{planner}: {e}");
    }
}

#[test]
fn an_ensemble_names_two_models() {
    let (_dir, path) = task(
        "[memory]\nenabled = true\n[planner]\nkind = \"ensemble\"\nescalate_after_invalid = 3\n[planner.fast]\nkind = \"openai-compatible\"\nmodel = \"qwen\"\nbase_url = \"http://127.0.0.1:9/v1\"\n[planner.strong]\nkind = \"anthropic\"\nmodel = \"claude\"\ntemperature = 0.5\n",
    );
    let t = Task::load(&path, None).unwrap();
    assert!(t.memory);
    let PlannerSpec::Ensemble {
        fast,
        strong,
        escalate_after_invalid,
    } = t.planner
    else {
        panic!("{:?}", t.planner)
    };
    assert_eq!(
        (fast.kind, fast.model.as_str()),
        (ProviderKind::OpenAiCompatible, "qwen")
    );
    assert_eq!(
        (strong.kind, strong.model.as_str(), strong.temperature),
        (ProviderKind::Anthropic, "claude", 0.5)
    );
    assert_eq!(escalate_after_invalid, 3);
    let (_dir, path) = task("[planner]\nkind = \"openai\"\nmodel = \"m\"\n");
    assert!(!Task::load(&path, None).unwrap().memory);
}

#[test]
fn the_ensemble_example_loads() {
    let path =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../examples/tasks/llm-ensemble.toml");
    let t = Task::load(&path, Some(std::path::Path::new("tools"))).unwrap();
    assert!(t.memory);
    assert!(
        matches!(&t.planner, PlannerSpec::Ensemble { fast, strong, .. }
            if fast.model == "gpt-4o-mini" && strong.kind == ProviderKind::Anthropic),
        "{:?}",
        t.planner
    );
}
