//! `parallel(…)` in code mode: independent calls run at once, each a step checked, run and
//! journaled as any call is; their values come back in the program's order, a failure is
//! raised once all have ended (or returned in its place), and misuse is a clear error
//! before anything runs.

use std::path::Path;

use serde_json::{Value, json};

use super::run_json;

/// A code-mode task in `dir` over calc, text (`extract-lines` not allowed) and misbehave
/// (`sleep` only), running `program`.
fn task(dir: &Path, program: &str) -> String {
    super::code_task(
        dir,
        "version = 1\napproval = \"deny\"\n[tools.calc]\n[tools.text]\noperations = [\"count\"]\n[tools.misbehave]\noperations = [\"sleep\"]\n",
        "[\"calc\", \"text\", \"misbehave\"]",
        "max_parallel = 4",
        program,
        "",
    )
}

fn run(program: &str) -> (i32, Value) {
    let dir = tempfile::tempdir().unwrap();
    run_json(&task(dir.path(), program), &[])
}

fn step<'a>(doc: &'a Value, id: &str) -> &'a Value {
    doc["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["id"] == id)
        .unwrap_or_else(|| panic!("no step {id}: {doc:#}"))
}

fn span(doc: &Value, id: &str) -> (u64, u64) {
    let s = step(doc, id);
    (
        s["started_us"].as_u64().unwrap(),
        s["finished_us"].as_u64().unwrap(),
    )
}

#[test]
fn independent_calls_run_at_once_and_come_back_in_the_programs_order() {
    let (code, doc) = run(r#"a, b, c = parallel(
    lambda: misbehave.sleep(ms=400),
    lambda: misbehave.sleep(ms=300),
    lambda: calc.eval_(expression="6 * 7"),
)
words = parallel([lambda t=t: text.count(text=t) for t in ["one", "two words", "and three words"]])
answer({"slept": [a, b], "product": c, "words": [w["words"] for w in words]})"#);
    assert_eq!(code, 0, "{doc:#}");
    assert_eq!(
        doc["answer"],
        json!({"slept": [400, 300], "product": 42, "words": [1, 2, 3]})
    );
    // Each call is a step of the revision, numbered in the program's order.
    for (id, op) in [
        ("c1", "sleep"),
        ("c2", "sleep"),
        ("c3", "eval"),
        ("c4", "count"),
        ("c5", "count"),
        ("c6", "count"),
    ] {
        let s = step(&doc, id);
        assert_eq!(s["operation"], op, "{id}: {doc:#}");
        assert_eq!(s["status"], "succeeded", "{id}: {doc:#}");
    }
    // The two sleeps overlapped: each started before the other finished.
    let (a, b) = (span(&doc, "c1"), span(&doc, "c2"));
    assert!(
        a.0 < b.1 && b.0 < a.1,
        "the sleeps ran one after the other: {a:?} {b:?}"
    );
}

#[test]
fn a_failure_is_raised_once_all_have_ended_or_returned_in_its_place() {
    let (code, doc) = run(r#"try:
    parallel(
        lambda: calc.eval_(expression="1 +"),
        lambda: text.extract_lines(text="x", first=1),
        lambda: misbehave.sleep(ms=50),
    )
    raised = None
except CallError as e:
    raised = [kind_of(e), isinstance(e, Denied)]
mixed = parallel(
    lambda: calc.eval_(expression="2 + 2"),
    lambda: text.extract_lines(text="x", first=1),
    lambda: calc.eval_(expression="1 +"),
    return_exceptions=True,
)
shown = []
for x in mixed:
    if isinstance(x, Denied):
        shown.append("denied " + kind_of(x))
    elif isinstance(x, ToolError):
        shown.append("error " + kind_of(x))
    else:
        shown.append(x)
answer({"raised": raised, "mixed": shown})"#);
    assert_eq!(code, 0, "{doc:#}");
    // The first failure in the program's order is raised: the tool's error, not the
    // refusal after it.
    assert_eq!(
        doc["answer"]["raised"],
        json!(["tool_error", false]),
        "{doc:#}"
    );
    assert_eq!(
        doc["answer"]["mixed"],
        json!([4, "denied not_allowed", "error tool_error"]),
        "{doc:#}"
    );
    // The call after the failures still ran; the refused one never did.
    assert_eq!(step(&doc, "c3")["status"], "succeeded", "{doc:#}");
    assert_eq!(step(&doc, "c2")["error"]["kind"], "not_allowed", "{doc:#}");
    assert_eq!(step(&doc, "c1")["error"]["kind"], "tool_error", "{doc:#}");
}

#[test]
fn misuse_is_a_clear_error_and_nothing_runs() {
    for (program, error) in [
        (
            "parallel(lambda: calc.eval_(expression='1')['x'])",
            "TypeError: 'ParallelCall' object is not subscriptable",
        ),
        (
            "parallel(lambda: str(calc.eval_(expression='1')))",
            "TypeError: inside parallel(), `lambda: calc.eval(...)` makes the call and returns it unchanged",
        ),
        (
            "parallel(lambda: [calc.eval_(expression='1'), calc.eval_(expression='2')])",
            "TypeError: parallel() takes calls as `lambda: tool.operation(...)`: call 1 made 2 tool calls",
        ),
        (
            "parallel(lambda: 5)",
            "call 1 made 0 tool calls and must make exactly one",
        ),
        (
            "parallel(lambda: parallel(lambda: calc.eval_(expression='1')))",
            "RuntimeError: parallel() cannot be nested",
        ),
        (
            "parallel([lambda: calc.eval_(expression='1')] * 257)",
            "ValueError: parallel() takes at most 256 calls, not 257",
        ),
    ] {
        let (code, doc) = run(program);
        assert_ne!(code, 0, "{program}: {doc:#}");
        let (kind, message) = super::program_error(&doc);
        assert_eq!(kind, "program_error", "{program}: {message}");
        assert!(message.contains(error), "{program}: {message}");
        let calls = doc["steps"].as_array().unwrap().len();
        assert_eq!(calls, 1, "{program}: only the program's own step: {doc:#}");
    }
}
