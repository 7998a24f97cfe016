//! The data-flow rules checked again at the call (`exec::launch`), where validation cannot
//! see what the run knows: a resumed run carries the provenance its journal recorded. Here
//! the operator, between the stop and the resume, marked the file tool's outputs trusted;
//! validation of the resumed revision computes the note's taint under that policy and
//! passes, but the note was read as untrusted data and its record says so. Only the check
//! before the call stops the note from reaching `calc`'s trusted argument.

use serde_json::json;
use toolhost_engine::{
    Cancel, Checkpoint, Current, Engine, Observer, Plan, Quiet, RunConfig, Spent, StepRecord,
    StepStatus, Unattended, Unfinished, ValidPlan,
};

use super::{Recording, catalog_in, record, rt};

/// What the note says: an instruction a planner or `calc` must not take from a file.
const NOTE: &str = "6 * 7";

/// The policy at the resume: `fs` vouched for (its outputs trusted), `calc`'s expression
/// still required to be trusted.
const POLICY: &str = r#"
version = 1
[tools.fs]
files = [{ host = "inbox", guest = "/inbox", access = "read" }]
outputs = "trusted"
[tools.calc]
trusted_args = { eval = ["expression"] }
"#;

fn plan() -> Plan {
    serde_json::from_value(json!({"goal": "sum the note", "revision": 1, "steps": [
        {"id": "note", "tool": "fs", "operation": "read-file", "args": {"path": "/inbox/note.txt"}},
        {"id": "sum", "tool": "calc", "operation": "eval", "args": {"expression": "${note.output}"}}
    ]}))
    .expect("a plan")
}

/// The journal's checkpoint: `note` ran (an untrusted output, as the policy then said),
/// the run stopped before `sum` started.
fn checkpoint() -> Checkpoint {
    let note: StepRecord = serde_json::from_value(json!({
        "id": "note", "revision": 1, "tool": "fs", "operation": "read-file",
        "args": {"path": "/inbox/note.txt"}, "status": "succeeded", "output": NOTE,
        "untrusted": ["`note` (`fs.read-file`, untrusted output)"],
        "fuel": 1000, "started_us": 10, "finished_us": 20
    }))
    .expect("a step record");
    Checkpoint {
        goal: "sum the note".into(),
        spent: Spent::default(),
        records: vec![note],
        revisions: vec![plan()],
        calls: Vec::new(),
        current: Some(Current {
            plan: plan(),
            approved: true,
            handoff: false,
            confidence: 1.0,
            unfinished: Vec::new(),
        }),
        pending: None,
        refused: 0,
    }
}

#[test]
fn recorded_provenance_stops_a_call_that_validation_let_through() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("inbox")).unwrap();
    std::fs::write(dir.path().join("inbox/note.txt"), NOTE).unwrap();
    let catalog = catalog_in(POLICY, dir.path());

    // Validation alone admits the revision under the new policy.
    let valid: Result<ValidPlan, _> =
        toolhost_engine::validate(&plan(), &catalog, 10, &Default::default());
    assert!(valid.is_ok(), "{:?}", valid.err());

    let mut planner = Recording::new(json!({"plan": plan()}));
    let mut approver = Unattended(toolhost_engine::ApprovalMode::Deny);
    let mut observer = Quiet;
    let observer: &mut dyn Observer = &mut observer;
    let mut engine = Engine::builder(rt(), catalog)
        .config(RunConfig::default())
        .approver(&mut approver)
        .observer(observer)
        .build();
    let report = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
        .block_on(engine.resume(
            checkpoint(),
            &mut planner,
            &Unfinished::default(),
            &Cancel::new(),
        ));

    let sum = record(&report, "sum");
    assert_eq!(
        (sum.status, sum.error.as_ref().map(|e| e.kind.as_str())),
        (StepStatus::Failed, Some("untrusted_flow")),
        "the note reached calc: {report:#?}"
    );
    let message = &sum.error.as_ref().unwrap().message;
    assert!(
        message.contains(
            "argument `expression` of `calc.eval` must not derive from untrusted data: \
             `note` (`fs.read-file`, untrusted output) → `sum` args.expression"
        ),
        "{message}"
    );
    // Refused before the call: calc never ran.
    assert_eq!((sum.output.as_ref(), sum.fuel), (None, 0));
    assert!(sum.events.is_empty(), "{:?}", sum.events);
    assert_eq!(report.answer, None);
}
