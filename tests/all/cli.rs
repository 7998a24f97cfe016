//! Golden tests of user-facing CLI errors: `tests/ui/<case>.args` holds the arguments (a
//! JSON array; `{calc}`-style placeholders name built tools, `{ui}` this folder) and
//! `<case>.err` the exact exit code and stderr. A `tests/ui/<case>.toml` is a broken
//! policy: its `<case>.err` is what `toolhost policy check` says about it. `BLESS=1 cargo test` rewrites the `.err`
//! files after a deliberate change.

use std::path::{Path, PathBuf};

use toolhost_tests::{cli, path};

fn ui_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("ui")
}

fn substitutions() -> Vec<(String, String)> {
    let mut subs: Vec<(String, String)> = toolhost_tools::ALL
        .iter()
        .map(|(name, p)| (format!("{{{name}}}"), p.to_string()))
        .collect();
    subs.push(("{ui}".into(), ui_dir().display().to_string()));
    subs
}

#[test]
fn golden_errors() {
    let subs = substitutions();
    let bless = std::env::var_os("BLESS").is_some();
    let mut cases: Vec<PathBuf> = std::fs::read_dir(ui_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "args" || e == "toml"))
        .collect();
    cases.sort();
    assert!(!cases.is_empty());
    let mut failures = Vec::new();
    for case in cases {
        let raw: Vec<String> = if case.extension().is_some_and(|e| e == "toml") {
            let name = case.file_name().unwrap().to_string_lossy();
            vec!["policy".into(), "check".into(), format!("{{ui}}/{name}")]
        } else {
            serde_json::from_str(&std::fs::read_to_string(&case).unwrap())
                .unwrap_or_else(|e| panic!("{}: {e}", case.display()))
        };
        let args: Vec<String> = raw
            .iter()
            .map(|a| subs.iter().fold(a.clone(), |a, (k, v)| a.replace(k, v)))
            .collect();
        let out = cli(&args);
        let stderr = subs.iter().fold(out.stderr, |s, (k, v)| s.replace(v, k));
        let actual = format!("exit: {}\n{stderr}", out.code);
        let golden = case.with_extension("err");
        if bless {
            std::fs::write(&golden, &actual).unwrap();
            continue;
        }
        let expected = std::fs::read_to_string(&golden).unwrap_or_default();
        if expected != actual {
            failures.push(format!(
                "{}:\n--- expected\n{expected}--- actual\n{actual}",
                case.display()
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "golden mismatches (BLESS=1 to accept):\n{}",
        failures.join("\n")
    );
}

#[test]
fn help_documents_exit_codes() {
    let out = cli(["--help"]);
    assert_eq!(out.code, 0);
    assert!(
        out.stdout.contains("Exit codes:") && out.stdout.contains("3  a limit stopped the call")
    );
}

#[test]
fn limit_flags_reach_the_call() {
    let out = cli([
        "tool",
        "call",
        path("misbehave"),
        "spin",
        "--fuel",
        "1000000",
        "--json",
    ]);
    assert_eq!(out.code, 3);
    let doc: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(doc["error"]["kind"], "fuel_exhausted");
    assert_eq!(doc["report"]["fuel_consumed"], 1_000_000);

    let out = cli([
        "tool",
        "call",
        path("misbehave"),
        "sleep",
        "--args",
        r#"{"ms":60000}"#,
        "--timeout-ms",
        "100",
    ]);
    assert_eq!(
        (out.code, out.stderr.as_str()),
        (
            3,
            "error: [timeout] deadline exceeded: the call ran longer than 100 ms\n"
        )
    );

    let out = cli([
        "tool",
        "call",
        path("misbehave"),
        "alloc",
        "--args",
        r#"{"mib":8}"#,
        "--memory-mib",
        "4",
    ]);
    assert_eq!(out.code, 3, "{}", out.stderr);
    assert!(
        out.stderr.starts_with("error: [memory_limit]"),
        "{}",
        out.stderr
    );
}

/// `--args @FILE` and `--args -` carry arguments past the kernel's 128 KiB limit on one
/// command-line argument; both reach the tool whole, through the real binary.
#[test]
fn big_arguments_come_from_a_file_or_stdin() {
    use std::io::Write;
    use std::process::{Command, Stdio};

    let words = 200_000;
    let text = "word ".repeat(words);
    let doc = serde_json::json!({ "text": text }).to_string();
    assert!(doc.len() > 128 << 10);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("args.json");
    std::fs::write(&file, &doc).unwrap();
    let bin = env!("CARGO_BIN_EXE_toolhost-test-cli");
    let base = |args: &str| {
        let mut cmd = Command::new(bin);
        cmd.arg("--cache-dir")
            .arg(dir.path().join("cache"))
            .args(["tool", "call", path("text"), "count", "--args", args])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        cmd
    };

    let from_file = base(&format!("@{}", file.display())).output().unwrap();
    assert_eq!(from_file.status.code(), Some(0), "{from_file:?}");

    let mut child = base("-").stdin(Stdio::piped()).spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let feed = std::thread::spawn(move || stdin.write_all(doc.as_bytes()));
    let from_stdin = child.wait_with_output().unwrap();
    feed.join().unwrap().unwrap();
    assert_eq!(from_stdin.status.code(), Some(0), "{from_stdin:?}");

    for out in [&from_file, &from_stdin] {
        let counts: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(counts["words"], words, "{counts}");
    }
}
