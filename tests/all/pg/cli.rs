//! `--database` through the real binary: `toolhost run` journals a run into PostgreSQL
//! under a lease it releases at the end; `journal verify`, `journal show` and `report`
//! read it back and check the same chain as a file's (a changed row is named); a bad URL
//! is a usage error naming it, an unreachable database a clear error, never a panic.

use std::process::{Command, Output};

use serde_json::Value;
use toolhost_tests::tools_dir;

const BIN: &str = env!("CARGO_BIN_EXE_toolhost-test-cli");

fn toolhost(state: &std::path::Path, args: &[&str]) -> Output {
    Command::new(BIN)
        .args(["--state-dir", state.to_str().unwrap()])
        .args(args)
        .env_remove("TOOLHOST_DATABASE_URL")
        .output()
        .expect("toolhost runs")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn example(name: &str) -> String {
    format!("{}/../examples/tasks/{name}", env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn a_run_journaled_to_postgres_verifies_and_a_changed_row_is_named() {
    let Some(t) = toolhost_tests::postgres::database(
        "a_run_journaled_to_postgres_verifies_and_a_changed_row_is_named",
    ) else {
        return;
    };
    let state = tempfile::tempdir().unwrap();
    let task = example("parallel.toml");
    let tools = tools_dir();
    let out = toolhost(
        state.path(),
        &[
            "run",
            &task,
            "--tools-dir",
            &tools,
            "--database",
            &t.url,
            "--json",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["stop"]["reason"], "completed", "{doc}");
    let run = doc["journal"]["run"].as_str().unwrap().to_string();
    let head = doc["journal"]["head"].as_str().unwrap().to_string();
    let records = doc["journal"]["records"].as_u64().unwrap();
    assert!(records >= 8, "{doc}");
    // Nothing went to the state directory; the run is in the database, released.
    assert!(!state.path().join("runs").exists());
    assert_eq!(
        t.sql(&format!("SELECT state, coalesce(lease_owner, '-'), epoch, (SELECT count(*) FROM journal_records WHERE run_id = '{run}') FROM runs WHERE id = '{run}'")),
        format!("stopped|-|1|{records}")
    );
    // Each row is one journal line, with its newline, and the chain runs through them.
    assert_eq!(
        t.sql("SELECT count(*) FROM journal_records WHERE right(convert_from(line, 'UTF8'), 1) <> E'\\n'"),
        "0"
    );

    let verify = toolhost(
        state.path(),
        &[
            "journal",
            "verify",
            &run,
            "--database",
            &t.url,
            "--head",
            &head,
        ],
    );
    assert_eq!(verify.status.code(), Some(0), "{}", text(&verify.stderr));
    assert_eq!(
        text(&verify.stdout).trim(),
        format!("chain: valid, {records} records, head sha256:{head}")
    );
    let show = toolhost(
        state.path(),
        &["journal", "show", &run, "--database", &t.url, "--json"],
    );
    assert_eq!(show.status.code(), Some(0), "{}", text(&show.stderr));
    let shown: Value = serde_json::from_slice(&show.stdout).unwrap();
    assert_eq!(shown["run"], run.as_str());
    assert_eq!(shown["valid"], true);
    assert_eq!(shown["complete"], true);
    assert_eq!(shown["records"].as_array().unwrap().len() as u64, records);
    let page = toolhost(
        state.path(),
        &["report", &run, "--database", &t.url, "--html", "-"],
    );
    assert_eq!(page.status.code(), Some(0), "{}", text(&page.stderr));
    assert!(text(&page.stdout).contains(&run));

    // The environment variable names the database as the flag does.
    let by_env = Command::new(BIN)
        .args(["--state-dir", state.path().to_str().unwrap()])
        .args(["journal", "verify", &run])
        .env("TOOLHOST_DATABASE_URL", &t.url)
        .output()
        .unwrap();
    assert_eq!(by_env.status.code(), Some(0), "{}", text(&by_env.stderr));

    // A changed row (one digit of record 3's timestamp) breaks the chain at record 4,
    // which names record 3 as changed.
    let row = |seq: u64| format!("run_id = '{run}' AND seq = {seq}");
    let original = t.sql(&format!(
        "SELECT encode(line, 'hex') FROM journal_records WHERE {}",
        row(3)
    ));
    t.sql(&format!(
        "UPDATE journal_records SET line = convert_to(regexp_replace(convert_from(line, 'UTF8'), '\"ts\":\"(\\d)', '\"ts\":\"9'), 'UTF8') WHERE {}",
        row(3)
    ));
    assert_ne!(
        t.sql(&format!(
            "SELECT encode(line, 'hex') FROM journal_records WHERE {}",
            row(3)
        )),
        original
    );
    let broken = toolhost(
        state.path(),
        &["journal", "verify", &run, "--database", &t.url],
    );
    assert_eq!(broken.status.code(), Some(8), "{}", text(&broken.stdout));
    let err = text(&broken.stderr);
    assert!(
        err.contains(&format!(
            "(run {run})` is broken: line 3: record 3 was changed after it was written"
        )),
        "{err}"
    );
    // Put back, it verifies again; a deleted row is then a missing record.
    t.sql(&format!(
        "UPDATE journal_records SET line = decode('{original}', 'hex') WHERE {}",
        row(3)
    ));
    let again = toolhost(
        state.path(),
        &["journal", "verify", &run, "--database", &t.url],
    );
    assert_eq!(again.status.code(), Some(0), "{}", text(&again.stderr));
    t.sql(&format!("DELETE FROM journal_records WHERE {}", row(5)));
    let missing = toolhost(
        state.path(),
        &["journal", "show", &run, "--database", &t.url],
    );
    assert_eq!(missing.status.code(), Some(8));
    assert!(
        text(&missing.stdout)
            .contains("chain: BROKEN: line 5: record 5 is missing: this line holds record 6"),
        "{}",
        text(&missing.stdout)
    );
}

#[test]
fn a_run_not_in_the_database_is_a_usage_error() {
    let Some(t) = toolhost_tests::postgres::database("a_run_not_in_the_database_is_a_usage_error")
    else {
        return;
    };
    let state = tempfile::tempdir().unwrap();
    let out = toolhost(
        state.path(),
        &["journal", "verify", "nope", "--database", &t.url],
    );
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        text(&out.stderr).trim(),
        format!("error: no run `nope` in the database at `{}`", t.url)
    );
}

#[test]
fn a_bad_database_url_is_a_usage_error_naming_it() {
    let state = tempfile::tempdir().unwrap();
    let task = example("parallel.toml");
    let tools = tools_dir();
    for (args, value) in [
        (
            vec!["journal", "verify", "R", "--database", "not-a-url"],
            "not-a-url",
        ),
        (
            vec!["journal", "show", "R", "--database", "mysql://u:pw@h/db"],
            "mysql://u:***@h/db",
        ),
        (
            vec![
                "report",
                "R",
                "--html",
                "-",
                "--database",
                "postgres://h:port/db",
            ],
            "postgres://h:port/db",
        ),
        (
            vec![
                "run",
                task.as_str(),
                "--tools-dir",
                tools.as_str(),
                "--database",
                "postgres//h/db",
            ],
            "postgres//h/db",
        ),
    ] {
        let out = toolhost(state.path(), &args);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.starts_with(&format!("error: `{value}` is not a PostgreSQL URL: ")),
            "{args:?}: {err}"
        );
        assert!(!err.contains("panicked"), "{err}");
    }
    assert!(
        !state.path().join("runs").exists(),
        "a refused run leaves no journal"
    );
}

#[test]
fn an_unreachable_database_is_a_clear_error() {
    // A port nothing listens on: bound, then closed.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("postgres://toolhost:secret@127.0.0.1:{port}/runs");
    let state = tempfile::tempdir().unwrap();
    let out = toolhost(
        state.path(),
        &["journal", "verify", "R", "--database", &url],
    );
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(8), "{err}");
    assert!(
        err.starts_with(&format!(
            "error: cannot reach the database at `postgres://toolhost:***@127.0.0.1:{port}/runs`: "
        )),
        "{err}"
    );
    assert!(err.contains("Connection refused"), "{err}");
    assert!(
        !err.contains("secret") && !err.contains("panicked"),
        "{err}"
    );
}

/// `toolhost runs --database URL` lists the database's runs newest first, each with its
/// state, goal, start, duration and stop, as it lists a state directory's.
#[test]
fn runs_lists_a_databases_runs_newest_first() {
    let Some(t) = toolhost_tests::postgres::database("runs_lists_a_databases_runs_newest_first")
    else {
        return;
    };
    let state = tempfile::tempdir().unwrap();
    let tools = tools_dir();
    let mut ids = Vec::new();
    for task in ["seed.toml", "parallel.toml"] {
        let out = toolhost(
            state.path(),
            &[
                "run",
                &example(task),
                "--tools-dir",
                &tools,
                "--database",
                &t.url,
                "--json",
            ],
        );
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
        ids.push(doc["journal"]["run"].as_str().unwrap().to_string());
    }
    let out = toolhost(state.path(), &["runs", "--database", &t.url, "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let runs: Value = serde_json::from_slice(&out.stdout).unwrap();
    let runs = runs.as_array().unwrap();
    let listed: Vec<&str> = runs.iter().map(|r| r["id"].as_str().unwrap()).collect();
    assert_eq!(listed, [ids[1].as_str(), ids[0].as_str()], "newest first");
    assert_eq!(runs[1]["goal"], "What is 12 * 4 + 5?");
    // The seed example is step-wise: its planner stops it, which `serve` calls completed.
    assert_eq!(runs[1]["stop"]["reason"], "planner_stopped");
    assert_eq!(runs[0]["stop"]["reason"], "completed");
    for r in runs {
        assert_eq!(r["state"], "completed", "{r}");
        assert!(r["started"].as_str().unwrap().ends_with('Z'), "{r}");
        assert!(r["duration_ms"].is_u64(), "{r}");
    }
    // The table, and nothing read from the state directory.
    let out = toolhost(state.path(), &["runs", "--database", &t.url]);
    let table = text(&out.stdout);
    assert!(
        table.contains(&ids[0]) && table.contains("completed"),
        "{table}"
    );
    assert!(!state.path().join("runs").exists());
}
