use super::*;

fn spec(toml: &str) -> Result<Fault, String> {
    let s: FaultSpec = serde_json::from_value(serde_json::to_value(toml_like(toml)).unwrap())
        .map_err(|e| e.to_string())?;
    Fault::try_from(s)
}

/// `key = value` pairs (JSON values), one per line: enough for these tests without a TOML
/// parser in the engine.
fn toml_like(text: &str) -> serde_json::Map<String, Value> {
    text.lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| {
            (
                k.trim().to_string(),
                serde_json::from_str(v.trim()).unwrap(),
            )
        })
        .collect()
}

fn call<'a>(
    id: &'a StepId,
    rev: u32,
    tool: &'a ToolName,
    op: &'a OperationName,
) -> (&'a StepId, u32, &'a ToolName, &'a OperationName) {
    (id, rev, tool, op)
}

/// Which of `n` calls of calc.eval (steps s1..sn, revision 1) fire.
fn firing(faults: &Faults, n: u32) -> Vec<u32> {
    let mut counts = Vec::new();
    let tool = ToolName::from("calc");
    let op = OperationName::from("eval");
    (1..=n)
        .filter(|i| {
            let id = StepId::try_from(format!("s{i}")).unwrap();
            faults.fire(&mut counts, call(&id, 1, &tool, &op)).is_some()
        })
        .collect()
}

#[test]
fn nth_fires_once_on_the_nth_matching_call() {
    let f = spec("tool = \"calc\"\nkind = \"error\"\nnth = 2").unwrap();
    let faults = Faults::new("eval", vec![f]);
    assert_eq!(firing(&faults, 5), [2]);
}

#[test]
fn every_fires_on_each_matching_call_and_an_operation_narrows_it() {
    let f =
        spec("tool = \"calc\"\noperation = \"eval\"\nkind = \"timeout\"\nevery = true").unwrap();
    assert_eq!(firing(&Faults::new("eval", vec![f]), 3), [1, 2, 3]);
    let other = spec("tool = \"calc\"\noperation = \"other\"\nkind = \"timeout\"\nevery = true");
    assert_eq!(
        firing(&Faults::new("eval", vec![other.unwrap()]), 3),
        [] as [u32; 0]
    );
    let text = spec("tool = \"text\"\nkind = \"fuel\"\nevery = true").unwrap();
    assert_eq!(firing(&Faults::new("eval", vec![text]), 3), [] as [u32; 0]);
}

#[test]
fn a_step_fault_matches_its_step_and_revision_only() {
    let f = Fault::parse("s2@1", FaultKind::Timeout).unwrap();
    assert_eq!(firing(&Faults::new("replay", vec![f.clone()]), 4), [2]);
    let mut counts = Vec::new();
    let (id, tool, op) = (
        StepId::try_from("s2".to_string()).unwrap(),
        ToolName::from("calc"),
        OperationName::from("eval"),
    );
    let faults = Faults::new("replay", vec![f]);
    assert!(faults.fire(&mut counts, call(&id, 2, &tool, &op)).is_none());
}

#[test]
fn probability_is_deterministic_per_seed_and_near_its_rate() {
    let at = |seed: u64| {
        let f = spec(&format!(
            "tool = \"calc\"\nkind = \"error\"\nprobability = 0.3\nseed = {seed}"
        ))
        .unwrap();
        firing(&Faults::new("eval", vec![f]), 1000)
    };
    assert_eq!(at(7), at(7));
    assert_ne!(at(7), at(8));
    let n = at(7).len();
    assert!((230..370).contains(&n), "{n} of 1000 fired at p = 0.3");
}

#[test]
fn injected_errors_have_the_runtime_kinds_and_say_fault_injected() {
    let kinds = [
        (FaultKind::Error, "tool_error"),
        (FaultKind::Fail, "trap"),
        (FaultKind::Timeout, "timeout"),
        (FaultKind::Fuel, "fuel_exhausted"),
        (FaultKind::Unavailable, "instantiate"),
    ];
    for (kind, want) in kinds {
        let i = Injected {
            kind,
            note: "fault injected by eval (x)".into(),
        };
        let e = i.error(500, 30).unwrap();
        assert_eq!(e.kind, want);
        assert!(
            e.message.contains("fault injected by eval"),
            "{}",
            e.message
        );
    }
    let timeout = Injected {
        kind: FaultKind::Timeout,
        note: "fault injected by eval (x)".into(),
    };
    assert!(
        timeout
            .error(1, 30)
            .unwrap()
            .message
            .starts_with("deadline exceeded: the call ran longer than 30 ms")
    );
    let malformed = Injected {
        kind: FaultKind::Malformed,
        note: String::new(),
    };
    assert!(malformed.error(1, 1).is_none());
}

#[test]
fn bad_specs_say_what_is_wrong() {
    let cases = [
        ("kind = \"error\"\nnth = 1", "needs `step`"),
        (
            "tool = \"a\"\nstep = \"s1\"\nkind = \"error\"\nnth = 1",
            "not both",
        ),
        ("tool = \"a\"\nkind = \"error\"", "say when the fault fires"),
        (
            "tool = \"a\"\nkind = \"error\"\nnth = 1\nevery = true",
            "exactly one of",
        ),
        ("tool = \"a\"\nkind = \"error\"\nnth = 0", "from 1"),
        (
            "tool = \"a\"\nkind = \"error\"\nprobability = 1.5",
            "not between 0 and 1",
        ),
        (
            "tool = \"a\"\nkind = \"error\"\nnth = 1\nseed = 3",
            "`seed` goes with",
        ),
        (
            "step = \"s1@0\"\nkind = \"error\"\nnth = 1",
            "not a number from 1",
        ),
        (
            "tool = \"a\"\nkind = \"explode\"\nnth = 1",
            "unknown variant",
        ),
    ];
    for (text, want) in cases {
        let e = spec(text).unwrap_err();
        assert!(e.contains(want), "{text}: {e}");
    }
}

#[test]
fn faults_display_as_replay_and_suites_name_them() {
    assert_eq!(
        Fault::parse("readme@2", FaultKind::Fail)
            .unwrap()
            .to_string(),
        "fail readme@2"
    );
    let f = spec("tool = \"calc\"\noperation = \"eval\"\nkind = \"error\"\nnth = 2").unwrap();
    assert_eq!(f.to_string(), "error calc.eval on call 2");
}
