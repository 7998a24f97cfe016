//! deploy/: the Dockerfile, the compose file and the Kubernetes manifests, checked without
//! a container engine (there is none in CI). The manifests validate offline against the
//! Kubernetes schemas (`kubernetes-validate --strict`, pinned in
//! tests/service/requirements.txt); every `toolhost` command line in the three parses with
//! the real binary; the Dockerfile builds with the README's build command; and the
//! configuration the compose file and the manifests mount (tokens, tasks, policies), under
//! their command lines, serves a run on a real server whose probes answer, and the `data`
//! pool's policy passes `toolhost policy check` with its mount in place.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};
use toolhost_tests::{root, service_check};

use crate::serve::{Server, spawn};

const BIN: &str = env!("CARGO_BIN_EXE_toolhost-test-cli");

/// The Kubernetes release the manifests are held to (one of those kubernetes-validate
/// ships schemas for).
const K8S_VERSION: &str = "1.34.0";

/// The token of deploy/serve.toml and of the Secret, both examples.
const EXAMPLE_TOKEN: &str = "change-me";

/// Where the image keeps its configuration: the mounts of compose and Kubernetes.
const ETC: &str = "/etc/toolhost";

fn deploy(rel: &str) -> PathBuf {
    root().join("deploy").join(rel)
}

/// The documents of a YAML file as JSON, read by PyYAML from the checkers' venv (merge
/// keys `<<:` resolved, as compose resolves them); `None` when the checks are skipped.
fn yaml(path: &Path) -> Option<Vec<Value>> {
    let python = service_check("python")?;
    let out = Command::new(python)
        .args([
            "-c",
            "import json, sys, yaml; print(json.dumps(list(yaml.safe_load_all(open(sys.argv[1])))))",
        ])
        .arg(path)
        .output()
        .expect("run python");
    assert!(
        out.status.success(),
        "{} is not YAML: {}",
        path.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    Some(serde_json::from_slice(&out.stdout).unwrap())
}

/// The Dockerfile's instructions, `(KEYWORD, rest)`, continuation lines joined.
fn dockerfile() -> Vec<(String, String)> {
    let text = std::fs::read_to_string(deploy("Dockerfile")).unwrap();
    let mut joined = Vec::new();
    let mut current = String::new();
    for line in text.lines().filter(|l| !l.trim_start().starts_with('#')) {
        match line.strip_suffix('\\') {
            Some(head) => current.push_str(head),
            None => {
                current.push_str(line);
                if !current.trim().is_empty() {
                    joined.push(std::mem::take(&mut current));
                }
                current.clear();
            }
        }
    }
    joined
        .iter()
        .map(|l| {
            let (k, rest) = l.trim().split_once(' ').unwrap_or((l, ""));
            (k.to_uppercase(), rest.trim().to_string())
        })
        .collect()
}

fn instruction(keyword: &str) -> String {
    dockerfile()
        .into_iter()
        .find(|(k, _)| k == keyword)
        .unwrap_or_else(|| panic!("no {keyword} in deploy/Dockerfile"))
        .1
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .unwrap_or_else(|| panic!("not a list of strings: {v}"))
        .iter()
        .map(|s| s.as_str().unwrap().to_string())
        .collect()
}

/// The arguments after `toolhost` of every command line in deploy/, named by where they
/// are: the image's CMD (its ENTRYPOINT is `toolhost`), each compose service of the
/// image, each container of the image in the manifests.
fn command_lines() -> Option<Vec<(String, Vec<String>)>> {
    let mut lines = Vec::new();
    let entrypoint: Value = serde_json::from_str(&instruction("ENTRYPOINT")).unwrap();
    assert_eq!(entrypoint, json!(["toolhost"]));
    let cmd: Value = serde_json::from_str(&instruction("CMD")).unwrap();
    lines.push(("Dockerfile CMD".to_string(), strings(&cmd)));

    let compose = yaml(&deploy("compose.yaml"))?.remove(0);
    for (name, service) in compose["services"].as_object().unwrap() {
        if service["image"]
            .as_str()
            .is_some_and(|i| i.starts_with("toolhost:"))
        {
            let command = &service["command"];
            lines.push((format!("compose service {name}"), strings(command)));
        }
    }
    for file in k8s_files() {
        for doc in yaml(&file)? {
            let containers = &doc["spec"]["template"]["spec"]["containers"];
            for c in containers.as_array().into_iter().flatten() {
                if c["command"].is_null() {
                    lines.push((
                        format!("{} {}", file.display(), c["name"]),
                        strings(&c["args"]),
                    ));
                } else {
                    let mut all = strings(&c["command"]);
                    assert_eq!(all.remove(0), "toolhost", "{c}");
                    all.extend(strings(&c["args"]));
                    lines.push((format!("{} {}", file.display(), c["name"]), all));
                }
            }
        }
    }
    Some(lines)
}

fn k8s_files() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(deploy("k8s"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    files
}

/// `toolhost ARGS… --help`: clap parses every flag and value before it meets `--help`, so
/// a misspelt flag or a bad value fails (exit 2) and a good line prints the help (exit 0).
fn parses(args: &[String]) -> Result<(), String> {
    let out = Command::new(BIN).args(args).arg("--help").output().unwrap();
    match out.status.code() {
        Some(0) => Ok(()),
        _ => Err(String::from_utf8_lossy(&out.stderr).into_owned()),
    }
}

#[test]
fn every_toolhost_command_line_in_deploy_parses_with_the_real_binary() {
    let Some(lines) = command_lines() else {
        return;
    };
    assert!(lines.len() >= 6, "{lines:?}");
    for (at, args) in &lines {
        if let Err(e) = parses(args) {
            panic!("{at}: `toolhost {}` does not parse:\n{e}", args.join(" "));
        }
    }
    // The method can fail: a misspelt flag before `--help` is refused.
    let mut bad = lines[0].1.clone();
    bad.insert(1, "--listne".into());
    assert!(parses(&bad).is_err(), "{bad:?}");
}

#[test]
fn the_kubernetes_manifests_validate_offline_against_the_schemas() {
    let Some(validate) = service_check("kubernetes-validate") else {
        return;
    };
    let run = |files: &[PathBuf]| {
        Command::new(&validate)
            .args(["--strict", "--kubernetes-version", K8S_VERSION])
            .args(files)
            .output()
            .unwrap()
    };
    let files = k8s_files();
    let out = run(&files);
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{text}");
    for kind in [
        "deployment/",
        "service/",
        "configmap/",
        "secret/",
        "poddisruptionbudget/",
    ] {
        assert!(
            text.contains(&format!("passed for resource {kind}")),
            "no {kind}: {text}"
        );
    }
    // Strict: a field the schema does not know fails.
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.yaml");
    let deployment = std::fs::read_to_string(deploy("k8s/deployment.yaml")).unwrap();
    std::fs::write(&bad, deployment.replace("periodSeconds:", "periodSecond:")).unwrap();
    assert!(!run(&[bad]).status.success());
}

#[test]
fn the_dockerfile_builds_with_the_readme_s_command() {
    let build = dockerfile()
        .into_iter()
        .find(|(k, rest)| k == "RUN" && rest.contains("cargo build"))
        .expect("a RUN cargo build in deploy/Dockerfile")
        .1;
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    assert!(
        readme.contains(&format!("```sh\n{build} && ./target/release/demo\n```")),
        "the Dockerfile's build `{build}` is not the README's first command (which CI runs)"
    );
    // What the runtime stage copies out of the builder is what that command builds.
    for (k, rest) in dockerfile() {
        if k == "COPY" && rest.starts_with("--from=builder ") {
            let from = rest.split_whitespace().nth(1).unwrap();
            let rel = from.strip_prefix("/src/").expect("the builder's checkout");
            assert!(root().join(rel).exists(), "COPY {from}: nothing at {rel}");
        }
    }
    assert_eq!(
        Path::new(toolhost_tools::CALC).parent().unwrap(),
        root().join("target/tools"),
        "the components are not where the Dockerfile copies them from"
    );
    // The folder the image copies holds the tools, not the test fixtures.
    assert!(!root().join("target/tools/misbehave.wasm").exists());
}

/// The command line at `at` among [`command_lines`], with `ETC` under `etc` and the
/// listening address on loopback port 0.
fn localised(at: &str, etc: &Path) -> Vec<String> {
    let (_, mut args) = command_lines()
        .unwrap()
        .into_iter()
        .find(|(w, _)| w.contains(at))
        .unwrap_or_else(|| panic!("no command line at {at}"));
    let listen = args.iter().position(|a| a == "--listen").expect("--listen");
    args[listen + 1] = "127.0.0.1:0".into();
    for a in &mut args {
        if let Some(rest) = a.strip_prefix(ETC) {
            *a = format!("{}{rest}", etc.display());
        }
    }
    args
}

/// The image's tools directory: the components the README's build command makes (the
/// Rust tools), not the Python and JavaScript ones the test command adds to
/// `target/tools`, which a server would compile at start for minutes.
fn image_tools(dir: &Path) -> PathBuf {
    let tools = dir.join("image-tools");
    std::fs::create_dir_all(&tools).unwrap();
    let built = Path::new(toolhost_tools::CALC).parent().unwrap();
    for (name, path) in toolhost_tools::ALL {
        if Path::new(path).parent() == Some(built) {
            std::fs::copy(path, tools.join(format!("{name}.wasm"))).unwrap();
        }
    }
    tools
}

/// The value the Dockerfile's `ENV` gives `name`.
fn image_env(name: &str) -> String {
    instruction("ENV")
        .split_whitespace()
        .find_map(|kv| kv.strip_prefix(name)?.strip_prefix('=').map(str::to_string))
        .unwrap_or_else(|| panic!("no {name} in the Dockerfile's ENV"))
}

/// The image's directory `name` (from its `ENV`), re-rooted under `dir`, inside a mount
/// made as the platforms make theirs: another user's (root's in the container; nobody's
/// here, where the tests run as root) and writable by everyone (compose's tmpfs is 1777,
/// an emptyDir 0777, a volume under fsGroup group-writable). toolhost must make and use
/// its own directory inside.
fn in_mount(dir: &Path, name: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let value = image_env(name);
    let path = dir.join(value.trim_start_matches('/'));
    let mount = path.parent().expect("a directory inside its mount");
    std::fs::create_dir_all(mount).unwrap();
    std::fs::set_permissions(mount, std::fs::Permissions::from_mode(0o1777)).unwrap();
    // SAFETY: geteuid(2) cannot fail.
    if unsafe { libc::geteuid() } == 0 {
        std::os::unix::fs::lchown(mount, Some(65534), Some(65534)).unwrap();
    }
    path
}

/// Starts `toolhost ARGS` as the image would (its directories from the environment: the
/// state and cache directories the Dockerfile names, in mounts), under `dir`.
fn start_as_image(args: &[String], dir: &Path, database: Option<&str>) -> Server {
    let mut cmd = Command::new(BIN);
    cmd.args(args)
        .env("TOOLHOST_STATE_DIR", in_mount(dir, "TOOLHOST_STATE_DIR"))
        .env("TOOLHOST_CACHE_DIR", in_mount(dir, "TOOLHOST_CACHE_DIR"))
        .env("TOOLHOST_TOOLS_DIR", image_tools(dir))
        .env_remove("TOOLHOST_DATABASE_URL");
    if let Some(url) = database {
        cmd.env("TOOLHOST_DATABASE_URL", url);
    }
    spawn(cmd)
}

/// Submits the `seed` task with the example token; its answer is 53.
fn serves_seed(server: &Server) {
    let api = server.as_token(EXAMPLE_TOKEN);
    assert_eq!(server.get("/v1/runs").0, 401, "a token is required");
    let (status, run) = api.post("/v1/runs", json!({"task": {"name": "seed"}}));
    assert_eq!(status, 201, "{run}");
    let id = run["id"].as_str().unwrap();
    let done = api.wait(id, |r| r["state"] == "completed" || r["state"] == "failed");
    assert_eq!(done["answer"], json!(53), "{done}");
}

#[test]
fn the_compose_replicas_configuration_serves_a_run() {
    let dir = tempfile::tempdir().unwrap();
    let etc = dir.path().join("etc");
    // The image's layout: the example tasks at ETC/tasks, deploy/serve.toml mounted.
    copy_dir(&root().join("examples/tasks"), &etc.join("tasks"));
    std::fs::copy(deploy("serve.toml"), etc.join("serve.toml")).unwrap();
    let Some(_) = command_lines() else {
        return;
    };
    let server = start_as_image(
        &localised("compose service replica-1", &etc),
        dir.path(),
        None,
    );
    serves_seed(&server);
    // The image's HEALTHCHECK, aimed at this server.
    let probe: Vec<String> = serde_json::from_str(
        instruction("HEALTHCHECK")
            .split_once("CMD ")
            .expect("HEALTHCHECK … CMD [...]")
            .1,
    )
    .unwrap();
    let url = probe
        .last()
        .unwrap()
        .replace("http://127.0.0.1:8080", &server.url);
    let status = Command::new(&probe[0])
        .args(&probe[1..probe.len() - 1])
        .arg(&url)
        .output()
        .expect("run curl");
    assert!(status.status.success(), "HEALTHCHECK {url}: {status:?}");
}

#[test]
fn the_data_pool_s_policy_holds_with_its_mount() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(deploy("data-policy.toml")).unwrap();
    assert!(text.contains(r#"host = "/data""#), "{text}");
    let policy = dir.path().join("data-policy.toml");
    let data = dir.path().join("data");
    std::fs::create_dir(&data).unwrap();
    std::fs::write(
        &policy,
        text.replace(
            r#"host = "/data""#,
            &format!("host = {:?}", data.display().to_string()),
        ),
    )
    .unwrap();
    let out = Command::new(BIN)
        .args(["policy", "check"])
        .arg(&policy)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn the_kubernetes_deployment_serves_a_run_from_its_configmap_and_secret() {
    let Some(docs) = k8s_files()
        .iter()
        .map(|f| yaml(f))
        .collect::<Option<Vec<_>>>()
    else {
        return;
    };
    let docs: Vec<Value> = docs.into_iter().flatten().collect();
    let of = |kind: &str| docs.iter().find(|d| d["kind"] == kind).unwrap().clone();
    let dir = tempfile::tempdir().unwrap();
    let etc = dir.path().join("etc");
    std::fs::create_dir_all(etc.join("tasks")).unwrap();
    for (name, text) in of("ConfigMap")["data"].as_object().unwrap() {
        std::fs::write(etc.join("tasks").join(name), text.as_str().unwrap()).unwrap();
    }
    let secret = of("Secret")["stringData"].clone();
    std::fs::write(
        etc.join("serve.toml"),
        secret["serve.toml"].as_str().unwrap(),
    )
    .unwrap();
    // The Secret's URL names the cluster's database; a real one stands in for it here.
    let t = toolhost_tests::postgres::database("deploy_k8s");
    let server = start_as_image(
        &localised("deployment.yaml", &etc),
        dir.path(),
        t.as_ref().map(|t| t.url.as_str()),
    );
    let container = &of("Deployment")["spec"]["template"]["spec"]["containers"][0];
    for probe in ["readinessProbe", "livenessProbe"] {
        let path = container[probe]["httpGet"]["path"].as_str().unwrap();
        assert_eq!(server.get(path).0, 200, "{probe} {path}");
    }
    serves_seed(&server);
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &to.join(e.file_name()));
        } else {
            std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    }
}
