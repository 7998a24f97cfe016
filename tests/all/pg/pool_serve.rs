//! `toolhost serve --database --pool NAME --pool-policy FILE`: one replica that serves the
//! API, owns the runs submitted to it and, as a worker of pool `data`, runs their pooled
//! calls too, under its pool policy's grants (the run's policy grants nothing).

use std::process::Command;

use serde_json::json;

use super::pools::{LEASE, finished, policies, records, status, task};
use super::queue::{BIN, text};
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
