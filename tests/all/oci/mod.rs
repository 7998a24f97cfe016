//! `toolhost tool push`/`pull` and `oci://` tool references against a real registry
//! (Debian's docker-registry, CNCF distribution 2.8: `registry.rs`), through the real
//! binary: push, pull by tag and digest, the Wasm OCI layout on the wire, two tools in one
//! repository, a tampered blob and a corrupted store entry refused, a missing tag's error,
//! basic auth (right, wrong and missing credentials; environment and Docker config), and a
//! task that runs offline from the store once its tool was pulled, a registry on IPv6
//! loopback. Signatures the policy requires are `sign.rs`; `toolhost mcp` serving
//! components by reference is `mcp.rs`; pushing and pulling with `wkg`, the reference
//! client of the layout, is `interop.rs`.

mod install;
mod interop;
mod mcp;
mod registry;
mod sign;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

use base64::Engine as _;
use toolhost_tests::path;

const BIN: &str = env!("CARGO_BIN_EXE_toolhost-test-cli");

#[derive(Debug)]
struct Out {
    code: i32,
    stdout: String,
    stderr: String,
}

impl Out {
    /// The value of the `KEY VALUE` line of stdout.
    fn field(&self, key: &str) -> String {
        self.stdout
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{key} ")))
            .unwrap_or_else(|| panic!("no `{key}` line: {self:?}"))
            .to_string()
    }
}

/// Runs the binary with `args` in a clean environment: no registry credentials but
/// `env`'s, a Docker config directory under `home` (none unless a test writes one), state,
/// cache and store under `home`.
fn toolhost(home: &Path, args: &[&str], env: &[(&str, &str)]) -> Out {
    let mut cmd = Command::new(BIN);
    cmd.args(args)
        .env_remove("TOOLHOST_REGISTRY_TOKEN")
        .env_remove("TOOLHOST_REGISTRY_USERNAME")
        .env_remove("TOOLHOST_REGISTRY_PASSWORD")
        .env_remove("TOOLHOST_REGISTRY_INSECURE")
        .env_remove("COSIGN_PASSWORD")
        .env("HOME", home)
        .env("DOCKER_CONFIG", home.join("docker"))
        .env("TOOLHOST_STATE_DIR", home.join("state"))
        .env("TOOLHOST_CACHE_DIR", home.join("cache"))
        .env("TOOLHOST_STORE_DIR", home.join("store"))
        .envs(env.iter().copied());
    let out = cmd.output().unwrap();
    Out {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8(out.stdout).unwrap(),
        stderr: String::from_utf8(out.stderr).unwrap(),
    }
}

fn push(home: &Path, tool: &str, reference: &str, env: &[(&str, &str)]) -> Out {
    toolhost(home, &["tool", "push", path(tool), reference], env)
}

fn pull(home: &Path, reference: &str, output: &Path) -> Out {
    let output = output.to_str().unwrap();
    toolhost(home, &["tool", "pull", reference, "-o", output], &[])
}

/// A registry for `test`, a home for the binary, and `calc` pushed as `REPO:1.0`.
struct Pushed {
    reg: registry::Registry,
    home: tempfile::TempDir,
    tag: String,
    out: Out,
}

/// [`Pushed`]; `None` when the registry is skipped.
fn calc_pushed(test: &str, repo: &str) -> Option<Pushed> {
    let reg = registry::start(test, None)?;
    let home = tempfile::tempdir().unwrap();
    let tag = format!("{}:1.0", reg.reference(repo));
    let out = push(home.path(), "calc", &tag, &[]);
    assert_eq!(out.code, 0, "{out:?}");
    Some(Pushed {
        reg,
        home,
        tag,
        out,
    })
}

fn mode(p: &Path) -> u32 {
    std::fs::metadata(p).unwrap().permissions().mode() & 0o777
}

#[test]
fn push_then_pull_by_tag_and_by_digest() {
    let Some(reg) = registry::start("push_then_pull_by_tag_and_by_digest", None) else {
        return;
    };
    let home = tempfile::tempdir().unwrap();
    let home = home.path();
    let tag = format!("{}:1.0", reg.reference("tools/calc"));
    let pushed = push(home, "calc", &tag, &[]);
    assert_eq!(pushed.code, 0, "{pushed:?}");
    let digest = pushed.field("digest");
    let calc = std::fs::read(path("calc")).unwrap();

    let by_tag = pull(home, &tag, &home.join("calc.wasm"));
    assert_eq!(by_tag.code, 0, "{by_tag:?}");
    assert_eq!(by_tag.field("digest"), digest);
    assert_eq!(std::fs::read(home.join("calc.wasm")).unwrap(), calc);
    let stored = Path::new(&by_tag.field("stored")).to_path_buf();
    assert_eq!(std::fs::read(&stored).unwrap(), calc);
    assert!(stored.starts_with(home.join("store")));
    assert_eq!(
        (mode(&stored), mode(stored.parent().unwrap())),
        (0o600, 0o700)
    );

    let pinned = format!("{}@{digest}", reg.reference("tools/calc"));
    assert_eq!(by_tag.field("pinned"), pinned);
    let by_digest = pull(home, &pinned, &home.join("again.wasm"));
    assert_eq!(by_digest.code, 0, "{by_digest:?}");
    assert_eq!(std::fs::read(home.join("again.wasm")).unwrap(), calc);
}

/// A registry on IPv6 loopback, named with its address in brackets, is reached over plain
/// HTTP without `--insecure`, like any loopback registry; a tool loads from it by digest.
#[test]
fn an_ipv6_loopback_registry_needs_no_insecure() {
    let Some(reg) = registry::start_at("an_ipv6_loopback_registry_needs_no_insecure", None, "::1")
    else {
        return;
    };
    assert!(reg.addr.starts_with("[::1]:"), "{}", reg.addr);
    let home = tempfile::tempdir().unwrap();
    let home = home.path();
    let tag = format!("{}:1.0", reg.reference("tools/calc"));
    let pushed = push(home, "calc", &tag, &[]);
    assert_eq!(pushed.code, 0, "{pushed:?}");
    let pinned = pushed.field("pinned");
    assert!(pinned.starts_with("oci://[::1]:"), "{pinned}");
    let fresh = tempfile::tempdir().unwrap();
    let pulled = pull(fresh.path(), &tag, &fresh.path().join("calc.wasm"));
    assert_eq!(pulled.code, 0, "{pulled:?}");
    assert_eq!(
        std::fs::read(fresh.path().join("calc.wasm")).unwrap(),
        std::fs::read(path("calc")).unwrap()
    );
    let call = [
        "tool",
        "call",
        &pinned,
        "eval",
        "--args",
        r#"{"expression":"6*7"}"#,
    ];
    let out = toolhost(fresh.path(), &call, &[]);
    assert_eq!((out.code, out.stdout.trim()), (0, "42"), "{out:?}");
}

/// What is on the wire is the CNCF Wasm OCI artifact layout that wkg, Wassette and Spin
/// read: an OCI image manifest, a `application/vnd.wasm.config.v0+json` config and one
/// `application/wasm` layer that is the component's bytes.
#[test]
fn the_manifest_is_the_wasm_oci_layout() {
    let Some(reg) = registry::start("the_manifest_is_the_wasm_oci_layout", None) else {
        return;
    };
    let home = tempfile::tempdir().unwrap();
    let pushed = push(
        home.path(),
        "calc",
        &format!("{}:1", reg.reference("calc")),
        &[],
    );
    assert_eq!(pushed.code, 0, "{pushed:?}");
    let manifest: serde_json::Value = reqwest::blocking::Client::new()
        .get(format!("http://{}/v2/calc/manifests/1", reg.addr))
        .header("Accept", "application/vnd.oci.image.manifest.v1+json")
        .send()
        .unwrap()
        .json()
        .unwrap();
    assert_eq!(
        manifest["mediaType"],
        "application/vnd.oci.image.manifest.v1+json"
    );
    assert_eq!(
        manifest["config"]["mediaType"],
        "application/vnd.wasm.config.v0+json"
    );
    let layers = manifest["layers"].as_array().unwrap();
    assert_eq!(layers.len(), 1, "{manifest}");
    assert_eq!(layers[0]["mediaType"], "application/wasm");
    assert_eq!(
        layers[0]["digest"].as_str().unwrap(),
        pushed.field("component")
    );
}

#[test]
fn two_tools_in_one_repository() {
    let Some(reg) = registry::start("two_tools_in_one_repository", None) else {
        return;
    };
    let home = tempfile::tempdir().unwrap();
    let home = home.path();
    for tool in ["calc", "text"] {
        let reference = format!("{}:{tool}", reg.reference("team/tools"));
        assert_eq!(push(home, tool, &reference, &[]).code, 0);
    }
    for tool in ["calc", "text"] {
        let reference = format!("{}:{tool}", reg.reference("team/tools"));
        let file = home.join(format!("{tool}.wasm"));
        let out = pull(home, &reference, &file);
        assert_eq!(out.code, 0, "{out:?}");
        assert_eq!(
            std::fs::read(file).unwrap(),
            std::fs::read(path(tool)).unwrap()
        );
    }
}

#[test]
fn a_tampered_blob_is_refused() {
    let Some(reg) = registry::start("a_tampered_blob_is_refused", None) else {
        return;
    };
    let home = tempfile::tempdir().unwrap();
    let home = home.path();
    let tag = format!("{}:1.0", reg.reference("tools/calc"));
    let pushed = push(home, "calc", &tag, &[]);
    let component = pushed.field("component");
    let mut bytes = std::fs::read(path("calc")).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0xff;
    registry::tamper_blob(&reg, &component, &bytes);
    let out = pull(home, &tag, &home.join("calc.wasm"));
    assert_eq!(out.code, 6, "{out:?}");
    let expected = format!(
        "error: component `{component}` of `{tag}` does not match its digest: the registry sent content whose digest is `sha256:"
    );
    assert!(out.stderr.starts_with(&expected), "{}", out.stderr);
    assert!(!home.join("calc.wasm").exists());
    assert!(
        !home
            .join("store/blobs/sha256")
            .join(&component[7..])
            .exists()
    );
}

#[test]
fn a_missing_tag_is_a_clear_error() {
    let Some(reg) = registry::start("a_missing_tag_is_a_clear_error", None) else {
        return;
    };
    let home = tempfile::tempdir().unwrap();
    let tag = format!("{}:nope", reg.reference("tools/calc"));
    let out = pull(home.path(), &tag, &home.path().join("x.wasm"));
    assert_eq!(
        (out.code, out.stderr.as_str()),
        (
            6,
            format!(
                "error: `{tag}` was not found in registry `{}`: no such tag or digest\n",
                reg.addr
            )
            .as_str()
        )
    );
}

#[test]
fn basic_auth_from_the_environment_and_the_docker_config() {
    let Some(reg) = registry::start("basic_auth", Some(("ci", "s3cret"))) else {
        return;
    };
    let home = tempfile::tempdir().unwrap();
    let home = home.path();
    let tag = format!("{}:1.0", reg.reference("tools/calc"));
    let refused = |out: &Out, what: &str, credentials: &str| {
        let expected = format!(
            "error: registry `{0}` refused {what} of `{tag}`: not authorized ({credentials}); set TOOLHOST_REGISTRY_USERNAME and TOOLHOST_REGISTRY_PASSWORD, or log in with `docker login {0}`\n",
            reg.addr
        );
        assert_eq!((out.code, out.stderr.as_str()), (5, expected.as_str()));
    };
    refused(&push(home, "calc", &tag, &[]), "the push", "no credentials");
    let wrong = [
        ("TOOLHOST_REGISTRY_USERNAME", "ci"),
        ("TOOLHOST_REGISTRY_PASSWORD", "guess"),
    ];
    refused(
        &push(home, "calc", &tag, &wrong),
        "the push",
        "user `ci` of TOOLHOST_REGISTRY_USERNAME",
    );
    let right = [
        ("TOOLHOST_REGISTRY_USERNAME", "ci"),
        ("TOOLHOST_REGISTRY_PASSWORD", "s3cret"),
    ];
    let pushed = push(home, "calc", &tag, &right);
    assert_eq!(pushed.code, 0, "{pushed:?}");

    refused(
        &pull(home, &tag, &home.join("calc.wasm")),
        "the pull",
        "no credentials",
    );
    // What `docker login` writes.
    std::fs::create_dir_all(home.join("docker")).unwrap();
    let auth = base64::engine::general_purpose::STANDARD.encode("ci:s3cret");
    let config = serde_json::json!({ "auths": { &reg.addr: { "auth": auth } } });
    std::fs::write(home.join("docker/config.json"), config.to_string()).unwrap();
    let out = pull(home, &tag, &home.join("calc.wasm"));
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(out.field("digest"), pushed.field("digest"));
}

/// A task names its tool by tag; the tag is resolved once and the component pulled into
/// the store; with the registry gone the same task still runs, from the store, and a
/// digest reference loads from it too. A corrupted store entry is then refused by name.
#[test]
fn a_task_runs_from_the_store_offline() {
    let Some(reg) = registry::start("a_task_runs_from_the_store_offline", None) else {
        return;
    };
    let home = tempfile::tempdir().unwrap();
    let home = home.path();
    let tag = format!("{}:1.0", reg.reference("tools/calc"));
    let pushed = push(home, "calc", &tag, &[]);
    let pinned = pushed.field("pinned");
    let policy = toolhost_tests::root().join("examples/tasks/policy.toml");
    let task = calc_task(home, &policy.display().to_string(), &tag);
    // A loopback registry: plain HTTP without TOOLHOST_REGISTRY_INSECURE.
    let run = |home: &Path| toolhost(home, &["run", task.to_str().unwrap(), "--json"], &[]);
    let online = run(home);
    assert_eq!(online.code, 0, "{online:?}");
    let doc: serde_json::Value = serde_json::from_str(&online.stdout).unwrap();
    assert_eq!(doc["answer"], 53, "{doc}");

    drop(reg);
    let offline = run(home);
    assert_eq!(offline.code, 0, "{offline:?}");
    let call = [
        "tool",
        "call",
        &pinned,
        "eval",
        "--args",
        r#"{"expression":"2+3"}"#,
    ];
    let out = toolhost(home, &call, &[]);
    assert_eq!((out.code, out.stdout.trim()), (0, "5"), "{out:?}");

    let component = pushed.field("component");
    let entry = home.join("store/blobs/sha256").join(&component[7..]);
    let mut bytes = std::fs::read(&entry).unwrap();
    bytes[0] ^= 1;
    std::fs::write(&entry, &bytes).unwrap();
    let out = toolhost(home, &call, &[]);
    assert_eq!(out.code, 6, "{out:?}");
    assert!(
        out.stderr
            .contains(&format!("store entry `{}` is corrupted", entry.display()))
            && out.stderr.contains(&component),
        "{}",
        out.stderr
    );
}

/// A run is carried on with the component it ran, by the digest its journal recorded:
/// after the tag moved to other bytes (and with the registry gone), `replay` loads the
/// recorded component from the store, and finds no divergence.
#[test]
fn replay_uses_the_recorded_digest_not_where_the_tag_moved() {
    let Some(Pushed { reg, home, tag, .. }) =
        calc_pushed("replay_uses_the_recorded_digest", "tools/calc")
    else {
        return;
    };
    let home = home.path();
    let policy = toolhost_tests::root().join("examples/tasks/policy.toml");
    let task = calc_task(home, &policy.display().to_string(), &tag);
    let run = toolhost(home, &["run", task.to_str().unwrap(), "--json"], &[]);
    assert_eq!(run.code, 0, "{run:?}");
    let doc: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    let id = doc["journal"]["run"].as_str().unwrap().to_string();

    // The tag now names another component, and the store knows it (a pull).
    let moved = push(home, "fs", &tag, &[]);
    assert_eq!(moved.code, 0, "{moved:?}");
    let again = pull(home, &tag, &home.join("moved.wasm"));
    assert_eq!(again.code, 0, "{again:?}");
    drop(reg);

    let replay = toolhost(home, &["replay", &id], &[]);
    assert_eq!(replay.code, 0, "{replay:?}");
    assert!(
        replay.stdout.contains("replay: no divergence"),
        "{replay:?}"
    );
}

/// Writes `DIR/task.toml`: a scripted run of `calc` (`tool`: a file or a reference) that
/// computes 12 * 4 + 5 under `policy` (a path, relative to `dir` or absolute).
fn calc_task(dir: &Path, policy: &str, tool: &str) -> std::path::PathBuf {
    let task = dir.join("task.toml");
    std::fs::write(
        &task,
        format!(
            r#"goal = "What is 12 * 4 + 5?"
mode = "step-wise"
policy = "{policy}"
tools = {{ calc = "{tool}" }}

[[planner.turns]]
tool = "calc"
operation = "eval"
arguments = {{ expression = "12 * 4 + 5" }}

[[planner.turns]]
stop = true
answer = 53
"#
        ),
    )
    .unwrap();
    task
}
