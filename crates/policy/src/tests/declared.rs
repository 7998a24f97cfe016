//! [`Declared`] narrowing [`ToolPolicy`]s: each part keeps only what both allow.

use std::path::Path;

use crate::{Declared, Policy};

fn section(dir: &Path, text: &str) -> crate::ToolPolicy {
    let p = Policy::parse(
        "policy.toml",
        &format!("version = 1\n[tools.t]\n{text}"),
        dir,
    )
    .unwrap();
    p.tools["t"].clone()
}

fn declared(text: &str) -> Declared {
    Declared::parse("carried.toml", &format!("version = 1\n{text}")).unwrap()
}

#[test]
fn each_part_keeps_only_what_both_allow() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("data/in")).unwrap();
    let operator = section(
        dir.path(),
        "operations = [\"get\", \"put\"]\n\
         files = [{ host = \"data\", guest = \"/data\", access = \"read-write\" }]\n\
         network = { http = [\"https://*.example.com\"], tcp = [\"10.0.0.0/8:5432\"], name_lookup = true }\n\
         limits = { memory_mib = 32, max_calls_per_minute = 60 }\n",
    );
    let narrowed = operator.narrowed_by(&declared(
        "operations = [\"put\", \"delete\"]\n\
         files = [{ guest = \"/data/in\", access = \"read\" }, { guest = \"/data/in\", access = \"read-write\" }, { guest = \"/etc\", access = \"read\" }]\n\
         network = { http = [\"https://api.example.com\", \"https://evil.test\"], tcp = [\"10.1.2.3:5432\", \"10.1.2.3:22\"] }\n\
         limits = { memory_mib = 4096, timeout_ms = 100, max_calls_per_minute = 6 }\n\
         sensitive = true\n",
    ));
    assert_eq!(narrowed.operations, Some(vec!["put".to_string()]));
    let files = &narrowed.capabilities.files;
    assert_eq!(files.len(), 1, "{files:?}");
    assert_eq!(files[0].guest, "/data/in");
    assert!(files[0].write, "the two declared entries merge: read-write");
    assert!(files[0].host.ends_with("data/in"), "{files:?}");
    let net = &narrowed.capabilities.network;
    let http: Vec<String> = net.http.iter().map(ToString::to_string).collect();
    assert_eq!(http, ["https://api.example.com:443"]);
    let tcp: Vec<String> = net.tcp.iter().map(ToString::to_string).collect();
    assert_eq!(tcp, ["10.1.2.3:5432"]);
    assert!(!net.name_lookup, "the component did not ask for DNS");
    assert_eq!(narrowed.limits.memory_mib, 32);
    assert_eq!(narrowed.limits.timeout.as_millis(), 100);
    assert_eq!(narrowed.max_calls_per_minute, Some(6));
    assert!(narrowed.sensitive);
}

#[test]
fn what_it_leaves_out_stays_as_the_operator_wrote_it() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("data")).unwrap();
    let operator = section(
        dir.path(),
        "files = [{ host = \"data\", guest = \"/data\", access = \"read\" }]\n",
    );
    let narrowed = operator.narrowed_by(&declared("sensitive = false\n"));
    assert_eq!(narrowed.capabilities.files, operator.capabilities.files);
    assert_eq!(narrowed.operations, operator.operations);
    assert_eq!(narrowed.limits, operator.limits);
}

#[test]
fn a_bad_carried_policy_names_every_problem() {
    let e = Declared::parse(
        "fs.wasm",
        "version = 2\nfiles = [{ guest = \"rel\", access = \"read\" }]\nlimits = { fuel = 0 }\n",
    )
    .unwrap_err()
    .to_string();
    assert!(e.starts_with("3 problems in `fs.wasm`"), "{e}");
    let unknown = Declared::parse("fs.wasm", "version = 1\nwiden = true\n").unwrap_err();
    assert!(unknown.to_string().contains("widen"), "{unknown}");
}
