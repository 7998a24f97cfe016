//! `toolhost new tool` in each language: the scaffold builds with its own `build.sh`,
//! loads in the host, answers a call, and passes its own `test.sh`.
//!
//! Builds reuse what the checkout already has: the Rust scaffold builds into
//! `target/scaffolds` with the workspace's lock file, the Python one with the venv and the
//! JavaScript one with the `node_modules` of `scripts/guest-langs.sh`.

use std::path::Path;
use std::process::Command;

use serde_json::json;
use toolhost_runtime::{Capabilities, Limits};
use toolhost_tests::{block_on, cli, guest_langs, root, runtime};

use super::built;

/// Runs `script` in `dir` with the toolchains on hand; panics with its output on failure.
fn run_script(dir: &Path, script: &str) -> String {
    let path = format!(
        "{}:{}",
        guest_langs().join("venv/bin").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = Command::new(dir.join(script))
        .current_dir(dir)
        .env("PATH", path)
        .env("TOOLHOST", env!("CARGO_BIN_EXE_toolhost-test-cli"))
        .env("TOOLHOST_CACHE_DIR", dir.join(".toolhost-cache"))
        .env("CARGO_TARGET_DIR", root().join("target").join("scaffolds"))
        // Flags for the host build must not reach the wasm build.
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_BUILD_TARGET")
        .output()
        .unwrap_or_else(|e| panic!("run {script}: {e}"));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success(),
        "{script} failed ({}):\n{text}",
        out.status
    );
    text
}

fn scaffold_builds_and_passes_its_test(lang: &str) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("tool");
    let name = format!("say-hi-{lang}");
    // Rust: the checkout's SDK, patched over the crates.io release the scaffold names.
    let sdk = root().join("tool-sdk");
    let mut args = vec![
        "new",
        "tool",
        &name,
        "--lang",
        lang,
        "--dir",
        dir.to_str().unwrap(),
    ];
    if lang == "rust" {
        args.extend(["--sdk", sdk.to_str().unwrap()]);
    }
    let out = cli(args);
    assert_eq!(out.code, 0, "{out:?}");
    for file in [
        "wit/say-hi-{lang}.wit",
        "build.sh",
        "test.sh",
        "policy.toml",
        "README.md",
    ] {
        let file = file.replace("{lang}", lang);
        assert!(dir.join(&file).is_file(), "the scaffold has no {file}");
    }
    match lang {
        // The workspace's lock file pins what the SDK needs, so nothing is resolved anew.
        "rust" => drop(std::fs::copy(
            root().join("Cargo.lock"),
            dir.join("Cargo.lock"),
        )),
        "js" => std::os::unix::fs::symlink(
            guest_langs().join("node/node_modules"),
            dir.join("node_modules"),
        )
        .unwrap(),
        _ => {}
    }
    run_script(&dir, "build.sh");

    let wasm = dir.join(format!("{name}.wasm"));
    let tool = runtime().load(&wasm).expect("the scaffold loads");
    let outcome = block_on(runtime().call(
        &tool,
        "greet",
        &json!({"name": "Ada", "times": 3}),
        &Capabilities::none(),
        &Limits::default(),
    ));
    assert_eq!(
        outcome.result,
        Ok(json!("Hello, Ada! Hello, Ada! Hello, Ada!"))
    );

    let own = run_script(&dir, "test.sh");
    assert!(own.contains("4 passed, 0 failed"), "{own}");
}

#[test]
fn rust_scaffold_builds_and_passes_its_test() {
    scaffold_builds_and_passes_its_test("rust");
}

/// The Rust scaffold depends on the SDK release of this toolhost's version and names no
/// checkout path unless `--sdk` gives one: a checkout's `tool-sdk` or the SDK's crates as
/// `cargo package` unpacks them; anything else is refused, naming the layouts it takes.
#[test]
fn the_rust_scaffold_depends_on_the_sdk_release_and_sdk_patches_it() {
    let tmp = tempfile::tempdir().unwrap();
    let new = |dir: &str, sdk: Option<&Path>| {
        let dir = tmp.path().join(dir);
        let mut args = vec![
            "new",
            "tool",
            "hello",
            "--lang",
            "rust",
            "--dir",
            dir.to_str().unwrap(),
        ];
        if let Some(sdk) = sdk {
            args.extend(["--sdk", sdk.to_str().unwrap()]);
        }
        (cli(args), dir)
    };
    let version = env!("CARGO_PKG_VERSION");
    let (out, dir) = new("plain", None);
    assert_eq!(out.code, 0, "{out:?}");
    let manifest = std::fs::read_to_string(dir.join("Cargo.toml")).unwrap();
    assert!(
        manifest.contains(&format!("toolhost-sdk = \"{version}\"")),
        "{manifest}"
    );
    let checkout = root().display().to_string();
    assert!(
        !manifest.contains("path =")
            && !manifest.contains("[patch")
            && !manifest.contains(&checkout),
        "{manifest}"
    );

    // Packages side by side, as `cargo package` unpacks them.
    let packages = tmp.path().join("packages");
    for (name, from) in [
        ("toolhost-sdk", "tool-sdk"),
        ("toolhost-sdk-macro", "tool-sdk/macro"),
        ("toolhost-wit-docs", "tool-sdk/wit-docs"),
    ] {
        let to = packages.join(format!("{name}-{version}"));
        std::fs::create_dir_all(&to).unwrap();
        std::fs::copy(root().join(from).join("Cargo.toml"), to.join("Cargo.toml")).unwrap();
    }
    let (out, dir) = new("packaged", Some(&packages));
    assert_eq!(out.code, 0, "{out:?}");
    let manifest = std::fs::read_to_string(dir.join("Cargo.toml")).unwrap();
    let packages = packages.canonicalize().unwrap();
    for name in ["toolhost-sdk", "toolhost-sdk-macro", "toolhost-wit-docs"] {
        let line = format!(
            "{name} = {{ path = \"{}\" }}",
            packages.join(format!("{name}-{version}")).display()
        );
        assert!(manifest.contains(&line), "no `{line}` in\n{manifest}");
    }
    assert!(manifest.contains("[patch.crates-io]"), "{manifest}");

    let (out, _) = new("nowhere", Some(tmp.path()));
    assert_eq!(out.code, 2, "{out:?}");
    assert!(
        out.stderr.contains("no toolhost SDK in")
            && out.stderr.contains(&format!("toolhost-sdk-{version}")),
        "{}",
        out.stderr
    );
}

#[test]
fn python_scaffold_builds_and_passes_its_test() {
    if built() {
        scaffold_builds_and_passes_its_test("python");
    }
}

#[test]
fn js_scaffold_builds_and_passes_its_test() {
    if built() {
        scaffold_builds_and_passes_its_test("js");
    }
}

#[test]
fn the_js_scaffold_pins_the_tested_toolchain() {
    let scaffold: serde_json::Value = serde_json::from_str(include_str!(
        "../../../crates/cli/templates/new/js/package.json"
    ))
    .unwrap();
    let ours: serde_json::Value =
        serde_json::from_str(include_str!("../../../tools/js/package.json")).unwrap();
    assert_eq!(scaffold["dependencies"], ours["dependencies"]);
}

#[test]
fn bad_names_and_used_directories_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let bad = cli([
        "new",
        "tool",
        "Bad_Name",
        "--lang",
        "js",
        "--dir",
        tmp.path().to_str().unwrap(),
    ]);
    assert_eq!(bad.code, 2);
    assert!(
        bad.stderr.contains("`Bad_Name` is not a valid tool name"),
        "{bad:?}"
    );
    std::fs::write(tmp.path().join("x"), "").unwrap();
    let used = cli([
        "new",
        "tool",
        "ok",
        "--lang",
        "js",
        "--dir",
        tmp.path().to_str().unwrap(),
    ]);
    assert_eq!(used.code, 2);
    assert!(used.stderr.contains("is not empty"), "{used:?}");
}

#[test]
fn the_next_hint_names_the_toolchain_and_test_sh_names_what_is_missing() {
    let tmp = tempfile::tempdir().unwrap();
    for (lang, needs) in [
        ("python", "componentize-py"),
        ("js", "Node 18+ with npm"),
        ("rust", "Rust with `rustup target add wasm32-wasip2`"),
    ] {
        let dir = tmp.path().join(lang);
        let out = cli([
            "new",
            "tool",
            "hint",
            "--lang",
            lang,
            "--dir",
            dir.to_str().unwrap(),
            "--sdk",
            root().join("tool-sdk").to_str().unwrap(),
        ]);
        assert_eq!(out.code, 0, "{out:?}");
        assert!(
            out.stdout.contains(&format!("building needs {needs}"))
                && out.stdout.contains("test.sh needs toolhost on PATH"),
            "{lang}: {}",
            out.stdout
        );
    }
    // test.sh without a toolhost to run says so, before anything else.
    let dir = tmp.path().join("rust");
    let run = |toolhost: &str| {
        Command::new(dir.join("test.sh"))
            .env("TOOLHOST", toolhost)
            .output()
            .unwrap()
    };
    let out = run("no-such-toolhost-here");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.starts_with("FAIL: `no-such-toolhost-here` not found: put toolhost on PATH"),
        "{stderr}"
    );
    // With toolhost but before ./build.sh: the missing component is named.
    let out = run(env!("CARGO_BIN_EXE_toolhost-test-cli"));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.starts_with("FAIL: hint.wasm not found: run ./build.sh first"),
        "{stderr}"
    );
}
