//! The text, json and fs tools, called through the host.

use serde_json::json;
use toolhost_runtime::{CallError, ErrorKind, Limits};
use toolhost_tests::{call, call_with};

#[test]
fn text_counts_searches_and_extracts() {
    assert_eq!(
        call("text", "count", json!({"text": "héllo world\nbye"})).result,
        Ok(json!({"lines": 2, "words": 3, "chars": 15, "bytes": 16}))
    );
    let found = call(
        "text",
        "search",
        json!({"text": "a1 b22", "pattern": "[a-z]([0-9]+)"}),
    )
    .result
    .unwrap();
    assert_eq!(
        found[1],
        json!({"start": 3, "end": 6, "line": 1, "column": 4, "text": "b22", "groups": ["22"]})
    );
    assert_eq!(
        call(
            "text",
            "extract-lines",
            json!({"text": "one\ntwo\nthree", "first": 2, "last": 3})
        )
        .result,
        Ok(json!("two\nthree"))
    );
}

#[test]
fn text_errors_name_the_bad_value() {
    let err = call("text", "search", json!({"text": "x", "pattern": "a(b"}))
        .result
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::ToolError);
    assert!(
        err.to_string()
            .contains("`a(b` is not a valid regular expression"),
        "{err}"
    );
    let err = call(
        "text",
        "extract-lines",
        json!({"text": "one\ntwo", "first": 3}),
    )
    .result
    .unwrap_err();
    assert!(err.to_string().contains("line 3"), "{err}");
}

#[test]
fn json_queries_with_jsonpath() {
    let doc = r#"{"store":{"book":[{"title":"Dune","price":8},{"title":"Emma","price":12}]}}"#;
    let out = call(
        "json",
        "query",
        json!({"document": doc, "path": "$..book[?@.price < 10].title"}),
    );
    assert_eq!(
        out.result,
        Ok(json!([{"path": "$['store']['book'][0]['title']", "value": "\"Dune\""}]))
    );
    let err = call(
        "json",
        "query",
        json!({"document": "{\"a\": 1,}", "path": "$.a"}),
    )
    .result
    .unwrap_err();
    assert!(
        err.to_string().contains("document is not valid JSON"),
        "{err}"
    );
    let err = call(
        "json",
        "query",
        json!({"document": "{}", "path": "$.store["}),
    )
    .result
    .unwrap_err();
    assert!(err.to_string().contains("not a valid JSONPath"), "{err}");
}

#[test]
fn fs_without_a_grant_fails_cleanly() {
    for (op, args) in [
        ("read-file", json!({"path": "/etc/hostname"})),
        ("list-dir", json!({"path": "/"})),
        ("stat-path", json!({"path": "/tmp"})),
        (
            "write-file",
            json!({"path": "/tmp/x", "content": "x", "mode": "create"}),
        ),
    ] {
        let err = call("fs", op, args).result.unwrap_err();
        // The host refused the path (outside every grant) and the tool failed on it with
        // its `permission-denied`: the call is the sandbox's denial.
        match &err {
            CallError::Denied { reason } => assert!(
                reason.contains("(access: outside every grant); the tool then failed: ")
                    && reason.contains("permission-denied"),
                "{op}: {reason}"
            ),
            other => panic!("{op}: expected a denial, got {other}"),
        }
    }
}

#[test]
fn fs_reads_lists_and_writes_inside_its_grant() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "alpha").unwrap();
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    let ro = toolhost_tests::grant_dir(dir.path(), false);
    let l = Limits::default();
    assert_eq!(
        call_with("fs", "read-file", json!({"path": "/data/a.txt"}), &ro, &l).result,
        Ok(json!("alpha"))
    );
    let listed = call_with("fs", "list-dir", json!({"path": "/data"}), &ro, &l)
        .result
        .unwrap();
    assert_eq!(
        listed,
        json!([{"name": "a.txt", "kind": "file", "size": 5}, {"name": "sub", "kind": "directory", "size": listed[1]["size"]}])
    );
    let err = call_with(
        "fs",
        "write-file",
        json!({"path": "/data/b.txt", "content": "x", "mode": "create"}),
        &ro,
        &l,
    )
    .result
    .unwrap_err();
    // The sandbox refused the create: a denial, not the tool's own failure.
    assert_eq!(err.kind(), ErrorKind::Denied, "{err}");
    assert!(!dir.path().join("b.txt").exists());

    let rw = toolhost_tests::grant_dir(dir.path(), true);
    let out = call_with(
        "fs",
        "write-file",
        json!({"path": "/data/b.txt", "content": "beta", "mode": "create"}),
        &rw,
        &l,
    );
    assert_eq!(out.result, Ok(json!(4)));
    assert_eq!(
        std::fs::read_to_string(dir.path().join("b.txt")).unwrap(),
        "beta"
    );
    let err = call_with(
        "fs",
        "write-file",
        json!({"path": "/data/b.txt", "content": "x", "mode": "create"}),
        &rw,
        &l,
    )
    .result
    .unwrap_err();
    assert!(err.to_string().contains("already exists"), "{err}");
}

#[test]
fn kernels_compute_what_they_compute_natively() {
    assert_eq!(
        call("kernels", "fib", json!({"n": 20})).result,
        Ok(json!(6765))
    );
    assert_eq!(
        call("kernels", "sieve", json!({"n": 100})).result,
        Ok(json!(25))
    );
    let sorted = call("kernels", "sort", json!({"n": 1000, "seed": 7}))
        .result
        .unwrap();
    assert!(sorted.as_u64().unwrap() > 0);
    // The same input gives the same checksum: the kernel is deterministic.
    assert_eq!(
        call("kernels", "sort", json!({"n": 1000, "seed": 7})).result,
        Ok(sorted)
    );
}
