//! The `[planner]` table of task files for model planners: what each kind needs, settings
//! a kind does not use, flags that replace the file's values.

use std::path::PathBuf;

use toolhost_app::task::Task;
use toolhost_app::task::{MemberOverrides, PlannerKind, PlannerOverrides, PlannerSpec};
use toolhost_llm::{Api, LlmConfig, ProviderKind, Structured};

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
        ("qwen", Some(0.2), 1)
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
    // Anthropic's current Messages API does not declare `temperature`: unset, not sent.
    assert_eq!(c.temperature, None);
    assert_eq!(c.structured, Structured::Auto);

    // `kind = "openai"` speaks the Responses API unless `api = "chat"`.
    let (_dir, path) = task("[planner]\nkind = \"openai\"\nmodel = \"gpt-4.1\"\n");
    let PlannerSpec::Llm(c) = Task::load(&path, None).unwrap().planner else {
        panic!()
    };
    assert_eq!((c.api, c.temperature), (Api::Responses, Some(0.0)));
    let (_dir, path) = task("[planner]\nkind = \"openai\"\nmodel = \"gpt-4.1\"\napi = \"chat\"\n");
    let PlannerSpec::Llm(c) = Task::load(&path, None).unwrap().planner else {
        panic!()
    };
    assert_eq!(c.api, Api::Chat);
    let (_dir, path) =
        task("[planner]\nkind = \"anthropic\"\nmodel = \"claude\"\nstructured_output = \"tool\"\n");
    let PlannerSpec::Llm(c) = Task::load(&path, None).unwrap().planner else {
        panic!()
    };
    assert_eq!(c.structured, Structured::Tool);
}

#[test]
fn api_and_structured_output_must_fit_the_provider() {
    let e = error("[planner]\nkind = \"anthropic\"\nmodel = \"c\"\napi = \"chat\"\n");
    assert!(
        e.ends_with(
            "[planner] sets `api = \"chat\"`, which only `kind = \"openai\"` uses (`anthropic` has one wire format)"
        ),
        "{e}"
    );
    let e = error(
        "[planner]\nkind = \"openai-compatible\"\nmodel = \"q\"\nbase_url = \"http://127.0.0.1:9/v1\"\napi = \"responses\"\n",
    );
    assert!(e.contains("only `kind = \"openai\"`"), "{e}");
    let e = error(
        "[planner]\nkind = \"anthropic\"\nmodel = \"c\"\nstructured_output = \"json-object\"\n",
    );
    assert!(
        e.ends_with(
            "`structured_output = \"json-object\"` is not a way `kind = \"anthropic\"` answers (auto, json-schema or tool)"
        ),
        "{e}"
    );
    let e = error("[planner]\nkind = \"openai\"\nmodel = \"m\"\nstructured_output = \"tool\"\n");
    assert!(e.contains("auto, json-schema or json-object"), "{e}");
    let e = error("[planner]\nkind = \"openai\"\nmodel = \"m\"\napi = \"soap\"\n");
    assert!(e.contains("soap"), "{e}");
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
        (ProviderKind::Anthropic, "claude", Some(0.5))
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

const ENSEMBLE: &str = "[planner]\nkind = \"ensemble\"\n[planner.fast]\nkind = \"openai-compatible\"\nmodel = \"qwen\"\nbase_url = \"http://127.0.0.1:9/v1\"\n[planner.strong]\nkind = \"anthropic\"\nmodel = \"claude\"\n";

fn ensemble_with(o: &PlannerOverrides) -> Result<(LlmConfig, LlmConfig), String> {
    let (_dir, path) = task(ENSEMBLE);
    match Task::load_with(&path, None, o)
        .map_err(|e| e.to_string())?
        .planner
    {
        PlannerSpec::Ensemble { fast, strong, .. } => Ok((fast, strong)),
        other => panic!("{other:?}"),
    }
}

#[test]
fn flags_reach_both_models_of_an_ensemble_or_one() {
    // --base-url and --api-key-env: both models.
    let (fast, strong) = ensemble_with(&PlannerOverrides {
        base_url: Some("http://127.0.0.1:7/v1".into()),
        api_key_env: Some("MY_KEY".into()),
        ..PlannerOverrides::default()
    })
    .unwrap();
    for c in [&fast, &strong] {
        assert_eq!(c.base_url.as_deref(), Some("http://127.0.0.1:7/v1"));
        assert_eq!(c.api_key_env.as_deref(), Some("MY_KEY"));
    }
    // An exported TOOLHOST_BASE_URL does the same; a member flag beats it for its model.
    let (fast, strong) = ensemble_with(&PlannerOverrides {
        env_base_url: Some("http://127.0.0.1:8/v1".into()),
        strong: MemberOverrides {
            model: Some("claude-opus".into()),
            base_url: Some("http://127.0.0.1:6/v1".into()),
        },
        fast: MemberOverrides {
            model: Some("qwen-small".into()),
            base_url: None,
        },
        ..PlannerOverrides::default()
    })
    .unwrap();
    assert_eq!(
        (fast.model.as_str(), fast.base_url.as_deref()),
        ("qwen-small", Some("http://127.0.0.1:8/v1"))
    );
    assert_eq!(
        (strong.model.as_str(), strong.base_url.as_deref()),
        ("claude-opus", Some("http://127.0.0.1:6/v1"))
    );
    // --model names one model: refused, naming the flags to use.
    let e = ensemble_with(&PlannerOverrides {
        model: Some("m".into()),
        ..PlannerOverrides::default()
    })
    .unwrap_err();
    assert!(
        e.contains("--model names one model") && e.contains("--fast-model"),
        "{e}"
    );
}

#[test]
fn a_base_url_the_planner_cannot_use() {
    let (_dir, path) = task("mode = \"step-wise\"\n[[planner.turns]]\nstop = true\n");
    // Exported: ignored by a scripted planner (and by a cassette).
    let env = PlannerOverrides {
        env_base_url: Some("http://127.0.0.1:8/v1".into()),
        ..PlannerOverrides::default()
    };
    let t = Task::load_with(&path, None, &env).unwrap();
    assert_eq!(t.planner, PlannerSpec::Scripted);
    // Given as a flag: an error that names the flag, not the task file's table.
    let flag = PlannerOverrides {
        base_url: Some("http://127.0.0.1:8/v1".into()),
        ..PlannerOverrides::default()
    };
    let e = Task::load_with(&path, None, &flag).unwrap_err().to_string();
    assert!(
        e.contains("--base-url is for model planners, and this task's planner is scripted"),
        "{e}"
    );
    // An ensemble member's flag on a one-model planner names itself.
    let (_dir, path) = task("[planner]\nkind = \"openai\"\nmodel = \"m\"\n");
    let e = Task::load_with(
        &path,
        None,
        &PlannerOverrides {
            strong: MemberOverrides {
                model: None,
                base_url: Some("http://127.0.0.1:6/v1".into()),
            },
            ..PlannerOverrides::default()
        },
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains(
            "--strong-base-url sets one model of an ensemble, and this task's planner is openai"
        ),
        "{e}"
    );
}

#[test]
fn a_malformed_base_url_is_refused_before_the_run() {
    for (url, why) in [
        ("localhost:1234", "its scheme is `localhost`"),
        ("ftp://example.com/v1", "its scheme is `ftp`"),
        ("http://", "empty host"),
        ("/v1", "relative URL without a base"),
    ] {
        let e = error(&format!(
            "[planner]\nkind = \"openai-compatible\"\nmodel = \"m\"\nbase_url = \"{url}\"\n"
        ));
        assert!(
            e.contains(&format!(
                "base URL `{url}` is not an http:// or https:// URL"
            )) && e.contains(why),
            "{url}: {e}"
        );
    }
    // In an ensemble's table too, and from the flag.
    let e = ensemble_with(&PlannerOverrides {
        fast: MemberOverrides {
            model: None,
            base_url: Some("127.0.0.1:9".into()),
        },
        ..PlannerOverrides::default()
    })
    .unwrap_err();
    assert!(e.contains("[planner.fast]: base URL `127.0.0.1:9`"), "{e}");
}

#[test]
fn code_mode_takes_model_planners_but_not_the_adversary() {
    let (_dir, path) = task("mode = \"code\"\n[planner]\nkind = \"openai\"\nmodel = \"gpt-4.1\"\n");
    let t = Task::load(&path, None).unwrap();
    assert!(matches!(t.planner, PlannerSpec::Llm(_)), "{:?}", t.planner);
    let (dir, path) =
        task("mode = \"code\"\n[planner]\nkind = \"adversarial\"\nadversary = \"a.json\"\n");
    std::fs::write(dir.path().join("a.json"), "[]").unwrap();
    let e = Task::load(&path, None).unwrap_err().to_string();
    assert!(
        e.contains(
            "mode `code` takes a program from a scripted, model, ensemble or replay planner"
        ),
        "{e}"
    );
}
