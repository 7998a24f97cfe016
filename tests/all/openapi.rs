//! The API against its own OpenAPI document, by an independent client: schemathesis
//! (PyPI, pinned in tests/service/requirements.txt, installed by
//! `scripts/service-checks.sh`) reads `/openapi.json` from the real `toolhost serve` on
//! `127.0.0.1:0` and sends every operation requests made from its schemas, valid and
//! invalid, with the token and without it. A response fails the test when it is a 5xx,
//! has a status code, content type or header the document does not list, or a body that
//! does not match the documented schema; a request the document forbids must be refused,
//! and one without the token must get 401. Against the embedded backend and a real
//! PostgreSQL (`--database`).

use std::process::Command;

use toolhost_tests::service_check;

use crate::serve::{Fixture, Server, sha256_hex};

/// The checks every response is held to (`schemathesis run --checks`).
const CHECKS: &str = "not_a_server_error,status_code_conformance,content_type_conformance,\
response_headers_conformance,response_schema_conformance,negative_data_rejection,ignored_auth";

/// Test cases per operation: enough for the coverage phase's edge cases and some fuzzing,
/// small enough for CI (about a minute for both backends).
const EXAMPLES: &str = "40";

/// The token schemathesis sends, holding every role (`admin`): so that no operation is
/// answered 403 only, which would leave its other responses untested.
const TOKEN: &str = "tok-schemathesis";

/// `serve.toml` with [`TOKEN`], in the fixture's directory.
fn config(f: &Fixture) -> String {
    let path = f.p("serve.toml");
    std::fs::write(
        &path,
        format!(
            "[[tokens]]\nname = \"schemathesis\"\nsha256 = \"{}\"\nroles = [\"admin\"]\n",
            sha256_hex(TOKEN)
        ),
    )
    .unwrap();
    path.display().to_string()
}

/// Runs schemathesis against `server`; panics with its report when a check fails.
fn check(server: &Server) {
    let Some(schemathesis) = service_check("schemathesis") else {
        return;
    };
    let scratch = tempfile::tempdir().unwrap();
    let out = Command::new(schemathesis)
        .current_dir(scratch.path())
        .arg("run")
        .arg(format!("{}/openapi.json", server.url))
        .args(["--checks", CHECKS])
        .args(["--header", &format!("Authorization: Bearer {TOKEN}")])
        .args(["--max-examples", EXAMPLES, "--generation-deterministic"])
        .args(["--workers", "1"])
        .args(["--request-timeout", "30", "--no-color"])
        .env("NO_COLOR", "1")
        .env_remove("SCHEMATHESIS_HOOKS")
        .output()
        .expect("run schemathesis");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "schemathesis found the API breaking its own document ({}):\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    // It ran every operation: a document it could not read would test nothing.
    assert!(
        !stdout.contains("No operations"),
        "schemathesis tested nothing:\n{stdout}"
    );
}

#[test]
fn the_api_keeps_to_its_openapi_document() {
    let f = Fixture::new();
    let server = f.start(&["--config", &config(&f), "--max-concurrent-runs", "2"]);
    check(&server);
}

#[test]
fn the_api_keeps_to_its_openapi_document_on_postgresql() {
    let Some(t) = toolhost_tests::postgres::database("openapi") else {
        return;
    };
    let f = Fixture::new();
    let server = f.start(&[
        "--config",
        &config(&f),
        "--database",
        &t.url,
        "--max-concurrent-runs",
        "2",
    ]);
    check(&server);
}
