use super::*;

fn write(dir: &Path, rel: &str, text: &str) {
    let p = dir.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

const TASK: &str = "goal = \"g\"\npolicy = \"policy.toml\"\ntools = [\"calc\"]\n";

#[test]
fn a_suite_splits_its_tasks_and_skips_files_without_a_goal() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path();
    write(
        dir,
        "suite.toml",
        "name = \"s\"\nmax_concurrent = 3\ntools_dir = \"../tools\"\n[[faults.inject]]\ntool = \"calc\"\nkind = \"timeout\"\nnth = 2\n",
    );
    write(dir, "policy.toml", "version = 1\n[tools.calc]\n");
    write(
        dir,
        "b/two.toml",
        &format!(
            "{TASK}id = \"second\"\ntags = [\"x\"]\n[expect]\noutcome = \"escalated\"\n[[faults]]\nstep = \"s1@2\"\nkind = \"error\"\nevery = true\n[[setup.copy]]\nfrom = \"a\"\nto = \"b\"\n"
        ),
    );
    write(dir, "a.toml", TASK);
    let s = Suite::load(dir).unwrap();
    assert_eq!((s.name.as_str(), s.max_concurrent), ("s", Some(3)));
    assert_eq!(s.tools_dir, Some(dir.join("../tools")));
    assert_eq!(s.faults.len(), 1);
    let ids: Vec<&str> = s.tasks.iter().map(|t| t.id.as_str()).collect();
    assert_eq!(ids, ["a", "second"]);
    let two = &s.tasks[1];
    assert_eq!(two.tags, ["x"]);
    assert_eq!(two.expect.outcome, "escalated");
    assert_eq!(two.faults[0].to_string(), "error s1@2");
    assert_eq!(two.setup.len(), 1);
    // What the task loader gets has none of the harness's keys.
    let mut keys: Vec<&str> = two.table.keys().map(String::as_str).collect();
    keys.sort();
    assert_eq!(keys, ["goal", "policy", "tools"]);
    assert_eq!(s.tasks[0].expect, Expect::default());
}

#[test]
fn bad_suites_name_the_file_and_the_reason() {
    let cases: [(&str, &str, &str); 5] = [
        (
            "x.toml",
            "[[faults]]\ntool = \"calc\"\nkind = \"error\"\n",
            "x.toml`: [[faults]] #1: say when the fault fires",
        ),
        (
            "x.toml",
            "[expect]\nanswer = { equals = 1, contains = \"a\" }\n",
            "more than one check",
        ),
        (
            "x.toml",
            "[expect]\nordr = \"set\"\n",
            "unknown field `ordr`",
        ),
        ("x.toml", "goal = \n", "x.toml`: line 1, column"),
        (
            "x.toml",
            "[expect]\nanswer = { schema = { type = 7 } }\n",
            "not a valid JSON Schema",
        ),
    ];
    for (rel, extra, want) in cases {
        let d = tempfile::tempdir().unwrap();
        let text = if extra.starts_with("goal") {
            extra.to_string()
        } else {
            format!("{TASK}{extra}")
        };
        write(d.path(), rel, &text);
        let e = Suite::load(d.path()).unwrap_err().to_string();
        assert!(e.contains(want), "{extra}: {e}");
    }
    let d = tempfile::tempdir().unwrap();
    write(d.path(), "a.toml", &format!("{TASK}id = \"same\"\n"));
    write(d.path(), "b.toml", &format!("{TASK}id = \"same\"\n"));
    let e = Suite::load(d.path()).unwrap_err().to_string();
    assert!(e.starts_with("task id `same` is used by both"), "{e}");
    let d = tempfile::tempdir().unwrap();
    write(d.path(), "policy.toml", "version = 1\n");
    let e = Suite::load(d.path()).unwrap_err().to_string();
    assert!(e.contains("has no golden tasks"), "{e}");
}
