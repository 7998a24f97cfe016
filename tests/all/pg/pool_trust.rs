//! A pool's worker checks signatures with its own `[trust]`: whatever the run's owner
//! checked (here nothing: the run's policy has no `[trust]`), a worker whose policy requires
//! a signature refuses to run a call of a component that has none from a key it trusts, as a
//! refusal in the step's events, and runs it once the component is signed.

use std::time::Duration;

use super::pools::{finished, plain_worker, policies, pool_worker, records, status, task};
use super::queue::{settled, signal, submit, text, toolhost};

#[test]
fn a_pool_worker_refuses_a_component_its_own_trust_does_not_vouch_for() {
    let Some(t) = toolhost_tests::postgres::database("pool_worker_trust") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    policies(d);
    std::fs::create_dir_all(d.join("tools")).unwrap();
    let component = d.join("tools/fs.wasm");
    std::fs::copy(
        format!("{}/fs.wasm", toolhost_tests::tools_dir()),
        &component,
    )
    .unwrap();
    let state = d.join("state");
    let key = d.join("release");
    let keygen = toolhost(&state, &["tool", "keygen", key.to_str().unwrap()], &[]);
    assert_eq!(keygen.status.code(), Some(0), "{}", text(&keygen.stderr));
    std::fs::write(
        d.join("pool-policy.toml"),
        "version = 1\n\
         [trust]\nrequire_signature = true\nkeys = { release = \"release.pub\" }\n\
         [tools.fs]\ncomponent = \"tools/fs.wasm\"\noperations = [\"write-file\"]\n\
         files = [{ host = \"data\", guest = \"/data\", access = \"read-write\" }]\n",
    )
    .unwrap();
    let plain = plain_worker(&t);
    let pool = pool_worker(&t, d, "data");
    let write = task(
        d,
        "write",
        "\"fs\"",
        &[r#"  { id = "w", tool = "fs", operation = "write-file", args = { path = "/data/out.txt", content = "signed only", mode = "overwrite" } }"#.into()],
    );

    // Unsigned: the pool's worker refuses it, naming its policy, the tool and why.
    let unsigned = submit(&t, &write);
    settled(&t, Duration::from_secs(60));
    assert_eq!(status(&t, &unsigned), "failed");
    let w = finished(&records(&t, &unsigned), "w").clone();
    assert_eq!(w["error"]["kind"], "denied", "{w}");
    let message = w["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("the policy of this worker")
            && message.contains("tool `fs`")
            && message.contains("it is not signed"),
        "{message}"
    );
    assert!(
        w["events"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["event"] == "call" && e["decision"] == "denied"),
        "{w}"
    );
    assert!(!d.join("data/out.txt").exists(), "the refused call ran");

    // Signed by the key the worker trusts (the bytes, and so the digest the run checked,
    // unchanged): the same worker now runs it.
    let sign = toolhost(
        &state,
        &[
            "tool",
            "sign",
            component.to_str().unwrap(),
            "--key",
            d.join("release.key").to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(sign.status.code(), Some(0), "{}", text(&sign.stderr));
    let signed = submit(&t, &write);
    settled(&t, Duration::from_secs(60));
    assert_eq!(status(&t, &signed), "completed");
    assert_eq!(
        std::fs::read_to_string(d.join("data/out.txt")).unwrap(),
        "signed only"
    );
    for w in [pool, plain] {
        signal(&w, libc::SIGTERM);
        let out = w.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    }
}
