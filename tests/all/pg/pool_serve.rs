//! Executor pools as operators deploy them: `toolhost serve --database --pool NAME
//! --pool-policy FILE`, one replica that serves the API, owns the runs submitted to it and,
//! as a worker of pool `data`, runs their pooled calls too, under its pool policy's grants
//! (the run's policy grants nothing); and one policy file shared by the owners and the
//! pool's workers, whose pooled grants only the pool's workers resolve.

use std::process::Command;

use serde_json::json;

use std::time::Duration;

use super::pools::{LEASE, finished, policies, records, status, task};
use super::queue::{BIN, settled, signal, submit, text, toolhost, worker};
use crate::serve::spawn;

#[test]
fn a_serve_replica_with_a_pool_runs_the_pooled_calls_of_its_runs() {
    let Some(t) = toolhost_tests::postgres::database("serve_pool") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    policies(dir.path());
    task(
        dir.path(),
        "write",
        "\"fs\", \"calc\"",
        &[
            r#"  { id = "w", tool = "fs", operation = "write-file", args = { path = "/data/out.txt", content = "served", mode = "overwrite" } }"#.into(),
            r#"  { id = "c", tool = "calc", operation = "eval", args = { expression = "6 * 7" } }"#.into(),
        ],
    );
    let p = |name: &str| dir.path().join(name).display().to_string();
    // Only the tools the run uses: a replica compiles its whole tools directory at start.
    std::fs::create_dir(dir.path().join("tools")).unwrap();
    for tool in ["fs", "calc"] {
        let to = dir.path().join(format!("tools/{tool}.wasm"));
        std::fs::copy(toolhost_tests::path(tool), to).unwrap();
    }
    let serve = |extra: &[&str]| {
        let mut cmd = Command::new(BIN);
        cmd.args([
            "--state-dir",
            &p("state"),
            "--cache-dir",
            &p("cache"),
            "serve",
        ])
        .args(["--listen", "127.0.0.1:0", "--tasks-dir", &p("")])
        .args(["--tools-dir", &p("tools")])
        .args(["--policy", &p("policy.toml")])
        .args(extra)
        .env_remove("TOOLHOST_DATABASE_URL");
        cmd
    };

    // A pool without its policy, or without the database the calls travel through: refused.
    let out = serve(&["--database", &t.url, "--pool", "data"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("--pool-policy"),
        "{}",
        text(&out.stderr)
    );
    let out = serve(&["--pool", "data", "--pool-policy", &p("pool-policy.toml")])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("--pool needs --database"),
        "{}",
        text(&out.stderr)
    );

    let server = spawn(serve(&[
        "--database",
        &t.url,
        "--pool",
        "data",
        "--pool-policy",
        &p("pool-policy.toml"),
        "--lease-ms",
        LEASE,
        "--poll-ms",
        "100",
    ]));
    let (code, run) = server.post("/v1/runs", json!({"task": {"name": "write"}}));
    assert_eq!(code, 201, "{run}");
    let run = run["id"].as_str().unwrap().to_string();
    let done = server.wait(&run, |r| {
        !matches!(r["state"].as_str(), Some("queued" | "running"))
    });
    assert_eq!(done["state"], "completed", "{done}");
    assert_eq!(status(&t, &run), "completed");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("data/out.txt")).unwrap(),
        "served"
    );
    let recs = records(&t, &run);
    assert_eq!(finished(&recs, "w")["status"], "succeeded");
    assert_eq!(finished(&recs, "c")["output"], 42);
    // The replica's own call slot ran the call it queued.
    let pid = server.child.id();
    assert_eq!(
        t.sql(&format!(
            "SELECT status, claimed_by LIKE 'toolhost serve, pid {pid} on %' FROM step_calls WHERE run_id = '{run}'"
        )),
        "done|t"
    );
}

/// One policy file for the owners of runs and the pool's workers: the pooled section's
/// grants (a variable only the pool worker's host has) are resolved on the pool worker
/// only, so the owner starts without them; and the value never leaves the pool worker,
/// not even in an output that echoes it.
#[test]
fn one_policy_file_serves_the_owner_and_the_pool_worker() {
    let Some(t) = toolhost_tests::postgres::database("one_policy_for_pools") else {
        return;
    };
    const SECRET: &str = "pool-only-7f3a9c2e51";
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("policy.toml"),
        "version = 1\napproval = \"deny\"\n\
         [tools.misbehave]\npool = \"vault\"\noperations = [\"read-env\"]\n\
         env = { TOKEN = { from_host = \"TOOLHOST_TEST_POOL_SECRET\" } }\n",
    )
    .unwrap();
    let path = task(
        dir.path(),
        "token",
        "\"misbehave\"",
        &[r#"  { id = "e", tool = "misbehave", operation = "read-env", args = { name = "TOKEN" } }"#.into()],
    );
    let policy = dir.path().join("policy.toml");
    // The owner has no such variable; checking the file as the pool's worker would, here,
    // says so (and names it).
    let state = tempfile::tempdir().unwrap();
    let check = toolhost(
        state.path(),
        &["policy", "check", policy.to_str().unwrap()],
        &[],
    );
    assert_eq!(check.status.code(), Some(0), "{}", text(&check.stderr));
    assert!(
        text(&check.stdout).contains("resolved on the workers of pool vault"),
        "{}",
        text(&check.stdout)
    );
    let check = toolhost(
        state.path(),
        &[
            "policy",
            "check",
            policy.to_str().unwrap(),
            "--pool",
            "vault",
        ],
        &[],
    );
    assert_eq!(check.status.code(), Some(2), "{}", text(&check.stdout));
    assert!(
        text(&check.stderr).contains("TOOLHOST_TEST_POOL_SECRET"),
        "{}",
        text(&check.stderr)
    );

    let owner = worker(&t, &["--lease-ms", LEASE, "--poll-ms", "100"], &[]);
    let pool = worker(
        &t,
        &[
            "--pool",
            "vault",
            "--policy",
            policy.to_str().unwrap(),
            "--lease-ms",
            LEASE,
            "--poll-ms",
            "100",
        ],
        &[("TOOLHOST_TEST_POOL_SECRET", SECRET.to_string())],
    );
    let run = submit(&t, &path);
    settled(&t, Duration::from_secs(60));
    assert_eq!(status(&t, &run), "completed");
    let recs = records(&t, &run);
    let e = finished(&recs, "e");
    assert_eq!(e["status"], "succeeded", "{e}");
    assert_eq!(e["output"], "[redacted:secret]", "{e}");
    // Nowhere in the database: not in the queued call's outcome, not in the journal.
    let anywhere = t.sql(&format!(
        "SELECT (SELECT count(*) FROM step_calls WHERE outcome::text LIKE '%{SECRET}%') + \
                (SELECT count(*) FROM journal_records WHERE line LIKE '%{SECRET}%')"
    ));
    assert_eq!(anywhere, "0");
    for w in [owner, pool] {
        signal(&w, libc::SIGTERM);
        let out = w.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    }
}
