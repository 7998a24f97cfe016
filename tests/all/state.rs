//! The state directory holds what the host reads back and trusts (journals, inline tasks,
//! submitters, plan memory): one only this user can write, or none. Every command refuses
//! another (with the reason), makes its own 0700 inside a shared parent, and writes 0600
//! files in 0700 directories.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

use serde_json::json;

use crate::serve::{Fixture, inline_plan};

const BIN: &str = env!("CARGO_BIN_EXE_toolhost-test-cli");

fn mode(p: &Path) -> u32 {
    std::fs::symlink_metadata(p).unwrap().permissions().mode() & 0o7777
}

/// `toolhost --state-dir DIR ARGS…` (the real binary): exit code and stderr.
fn with_state(dir: &Path, args: &[&str]) -> (i32, String) {
    let out = Command::new(BIN)
        .arg("--state-dir")
        .arg(dir)
        .args(args)
        .env_remove("TOOLHOST_LOG")
        .env_remove("TOOLHOST_DATABASE_URL")
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_state_directory_others_can_write_is_refused_by_every_door() {
    let parent = tempfile::tempdir().unwrap();
    let mut cases = Vec::new();
    for (name, m, why) in [
        (
            "world",
            0o777,
            "writable by its group and every other user (mode 0777)",
        ),
        ("group", 0o770, "writable by its group (mode 0770)"),
    ] {
        let dir = parent.path().join(name);
        std::fs::create_dir(&dir).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(m)).unwrap();
        cases.push((dir, why));
    }
    let real = parent.path().join("real");
    std::fs::create_dir(&real).unwrap();
    let link = parent.path().join("link");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    cases.push((link, "it is a symbolic link"));
    let theirs = parent.path().join("theirs");
    std::fs::create_dir(&theirs).unwrap();
    // SAFETY: geteuid(2) cannot fail.
    if unsafe { libc::geteuid() } == 0 {
        std::os::unix::fs::lchown(&theirs, Some(65534), Some(65534)).unwrap();
        cases.push((theirs, "it is owned by uid 65534"));
    } else {
        eprintln!("not root: the case of another user's state directory is skipped");
    }
    for (dir, why) in &cases {
        let expected = format!("refusing the state directory `{}`", dir.display());
        for args in [
            &["journal", "show", "no-such-run"][..],
            &["serve", "--listen", "127.0.0.1:0", "--tasks-dir", "."][..],
        ] {
            let (code, err) = with_state(dir, args);
            assert!(
                code != 0 && err.contains(&expected) && err.contains(why),
                "{args:?} with {}: expected {expected:?} and {why:?}, got exit {code}: {err}",
                dir.display()
            );
        }
    }
}

#[test]
fn serve_writes_its_state_0600_in_0700_directories() {
    let f = Fixture::new();
    // A shared parent (a volume's root): the state directory toolhost makes inside it is
    // what counts.
    std::fs::set_permissions(f.dir.path(), std::fs::Permissions::from_mode(0o1777)).unwrap();
    let config = f.p("serve.toml");
    let token = |name: &str, roles: &str| {
        format!(
            "[[tokens]]\nname = \"{name}\"\nsha256 = \"{}\"\nroles = [{roles}]\n\n",
            crate::serve::sha256_hex(&format!("tok-{name}"))
        )
    };
    let text = token("ci", "\"submit\", \"read\"") + &token("approver", "\"approve\"");
    std::fs::write(&config, text).unwrap();
    let server = f.start(&["--config", config.to_str().unwrap()]);
    let ci = server.as_token("tok-ci");
    let (status, run) = ci.post("/v1/runs", inline_plan("6 * 7"));
    assert_eq!(status, 201, "{run}");
    let id = run["id"].as_str().unwrap();
    // The inline task, the submitter file and the journal are written by now.
    ci.wait(id, |r| r["state"] == "waiting_for_approval");
    all_private(&f.state(), id);
    let approval = format!("/v1/runs/{id}/approval");
    let approver = server.as_token("tok-approver");
    let (status, e) = approver.post(&approval, json!({"decision": "approve"}));
    assert_eq!(status, 200, "{e}");
    let done = ci.wait(id, |r| r["state"] == "completed" || r["state"] == "failed");
    assert_eq!(done["answer"], json!(42), "{done}");
    drop(server);
    all_private(&f.state(), id);
}

/// Every directory under `state` (itself included) is 0700 and every file 0600, and the
/// inline task, the submitter file and the journal of run `id` are among them.
fn all_private(state: &Path, id: &str) {
    let mut seen = Vec::new();
    let mut wrong = Vec::new();
    let mut stack = vec![state.to_path_buf()];
    while let Some(p) = stack.pop() {
        let m = mode(&p);
        let want = if p.is_dir() { 0o700 } else { 0o600 };
        if p.is_dir() {
            stack.extend(std::fs::read_dir(&p).unwrap().map(|e| e.unwrap().path()));
        }
        if m != want {
            wrong.push(format!("{} is {m:04o}, not {want:04o}", p.display()));
        }
        seen.push(p);
    }
    for part in [
        "serve/tasks/",
        &format!("serve/{id}.json"),
        &format!("runs/{id}.jsonl"),
    ] {
        assert!(
            seen.iter().any(|p| p.to_string_lossy().contains(part)),
            "nothing at {part} in {seen:?}"
        );
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
}
