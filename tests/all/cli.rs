//! Golden tests of user-facing CLI errors: `tests/ui/<case>.args` holds the arguments (a
//! JSON array; `{calc}`-style placeholders name built tools, `{ui}` the case's folder) and
//! `<case>.err` the exact exit code and stderr. A `<case>.toml` is a broken policy: its
//! `<case>.err` is what `toolhost policy check` says about it; those live beside the policy
//! crate, in `crates/policy/tests/ui/`, whose own test checks the errors without the
//! binary. `BLESS=1 cargo test` rewrites the `.err` files after a deliberate change.

use std::path::{Path, PathBuf};

use toolhost_tests::{cli, path};

/// The folders of golden cases: the CLI's, and the policy crate's broken policies.
fn ui_dirs() -> [PathBuf; 2] {
    let tests = Path::new(env!("CARGO_MANIFEST_DIR"));
    let root = tests.parent().expect("the workspace root");
    [tests.join("ui"), root.join("crates/policy/tests/ui")]
}

/// The placeholders of a case in folder `ui`, and what each stands for.
fn substitutions(ui: &Path) -> Vec<(String, String)> {
    let mut subs: Vec<(String, String)> = toolhost_tools::ALL
        .iter()
        .map(|(name, p)| (format!("{{{name}}}"), p.to_string()))
        .collect();
    subs.push(("{ui}".into(), ui.display().to_string()));
    subs
}

#[test]
fn golden_errors() {
    let bless = std::env::var_os("BLESS").is_some();
    let mut cases: Vec<PathBuf> = ui_dirs()
        .iter()
        .flat_map(|dir| std::fs::read_dir(dir).unwrap())
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "args" || e == "toml"))
        .collect();
    cases.sort();
    assert!(
        cases
            .iter()
            .any(|c| c.extension().is_some_and(|e| e == "toml"))
    );
    let mut failures = Vec::new();
    for case in cases {
        let subs = substitutions(case.parent().expect("a case is in a folder"));
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

/// Flags every command takes, documented once under "Global:".
const GLOBAL_FLAGS: [&str; 7] = [
    "--cache-dir",
    "--no-cache",
    "--state-dir",
    "--compile-timeout-ms",
    "--compile-memory-mib",
    "--help",
    "--version",
];

/// The commands under `path` that take no subcommand, from each level's `-h`.
fn leaf_commands(path: Vec<String>) -> Vec<Vec<String>> {
    let mut args = path.clone();
    args.push("-h".into());
    let out = cli(&args);
    assert_eq!(out.code, 0, "{args:?}: {}", out.stderr);
    let subs: Vec<String> = out
        .stdout
        .split("Commands:\n")
        .nth(1)
        .map(|rest| {
            rest.lines()
                .take_while(|l| l.starts_with("  "))
                .filter_map(|l| l.split_whitespace().next())
                .filter(|c| *c != "help")
                .map(String::from)
                .collect()
        })
        .unwrap_or_default();
    if subs.is_empty() {
        return vec![path];
    }
    subs.into_iter()
        .flat_map(|c| {
            let mut p = path.clone();
            p.push(c);
            leaf_commands(p)
        })
        .collect()
}

/// The book's CLI synopsis (`docs/cli.md`, its first code block): each `toolhost …` entry
/// with its continuation lines, the `[RUN FLAGS]`-style groups written out.
fn book_synopsis() -> Vec<String> {
    let page =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/cli.md"))
            .unwrap();
    let block = page
        .split("```\n")
        .nth(1)
        .expect("a synopsis block in docs/cli.md");
    let mut entries: Vec<String> = Vec::new();
    for line in block.lines() {
        if line.starts_with(' ') {
            if let Some(last) = entries.last_mut() {
                last.push(' ');
                last.push_str(line.trim());
            }
        } else if !line.is_empty() {
            entries.push(line.to_string());
        }
    }
    let groups: Vec<(String, String)> = entries
        .iter()
        .filter_map(|e| e.split_once(": "))
        .filter(|(name, _)| name.ends_with("FLAGS"))
        .map(|(name, flags)| (format!("[{name}]"), flags.to_string()))
        .collect();
    entries
        .into_iter()
        .filter(|e| e.starts_with("toolhost "))
        .map(|e| groups.iter().fold(e, |e, (k, v)| e.replace(k, v)))
        .collect()
}

/// Whether `text` names `flag` as a whole word (`--json`, not `--json-foo`).
fn names_flag(text: &str, flag: &str) -> bool {
    text.match_indices(flag).any(|(i, _)| {
        !text[i + flag.len()..].starts_with(|c: char| c.is_ascii_alphanumeric() || c == '-')
    })
}

#[test]
fn every_flag_has_help_and_is_in_the_books_synopsis() {
    let synopsis = book_synopsis();
    let mut problems = Vec::new();
    let leaves = leaf_commands(Vec::new());
    assert!(leaves.len() >= 15, "{leaves:?}");
    for cmd in leaves {
        let name = format!("toolhost {}", cmd.join(" "));
        let Some(entry) = synopsis
            .iter()
            .find(|e| e.starts_with(&format!("{name} ")) || **e == name)
        else {
            problems.push(format!(
                "`{name}` has no line in the CLI synopsis of docs/cli.md"
            ));
            continue;
        };
        let mut args = cmd.clone();
        args.push("-h".into());
        let help = cli(&args).stdout;
        let options = help.split("Options:\n").nth(1).unwrap_or_default();
        for line in options.lines().filter(|l| l.trim_start().starts_with('-')) {
            let words: Vec<&str> = line.split_whitespace().collect();
            let Some(flag) = words.iter().find(|w| w.starts_with("--")) else {
                continue;
            };
            let flag = flag.trim_end_matches(',');
            if GLOBAL_FLAGS.contains(&flag) {
                continue;
            }
            // After the flag (and its `<VALUE>`), a description.
            let at = words.iter().position(|w| w.starts_with("--")).unwrap();
            let rest = &words[at + 1..];
            let rest = match rest.first() {
                Some(w) if w.starts_with('<') => &rest[1..],
                _ => rest,
            };
            if rest.is_empty() {
                problems.push(format!("`{name} {flag}` has no help text"));
            }
            if !names_flag(entry, flag) {
                problems.push(format!(
                    "the synopsis of `{name}` in docs/cli.md lacks `{flag}`"
                ));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
