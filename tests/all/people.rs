//! People in the loop at the terminal, through the real binary on a pseudo-terminal
//! (util-linux `script`): answering a plan's question, reviewing a plan in an `$EDITOR`
//! that takes arguments (an invalid edit is shown and reopened, a valid one is shown for
//! approval), and review time that does not spend the run's wall budget.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_toolhost-test-cli");

/// A task in `dir` running `steps` (TOML array items) with calc, under `max_wall_ms`.
fn task(dir: &Path, steps: &str, max_wall_ms: u64) -> String {
    std::fs::write(dir.join("policy.toml"), "version = 1\n[tools.calc]\n").unwrap();
    let path = dir.join("task.toml");
    std::fs::write(
        &path,
        format!(
            "goal = \"g\"\npolicy = \"policy.toml\"\ntools = {{ calc = {:?} }}\n[budgets]\nmax_wall_ms = {max_wall_ms}\n\
             [planner.plan]\ngoal = \"g\"\nsteps = [\n{steps}\n]\n",
            toolhost_tests::path("calc")
        ),
    )
    .unwrap();
    path.display().to_string()
}

/// Runs `toolhost run TASK --approve --json` on a pseudo-terminal, typing `lines` one
/// by one with `gap` between them; returns the exit code, the terminal's text and the
/// JSON report (printed last).
pub(crate) fn on_a_terminal(
    dir: &Path,
    task: &str,
    env: &[(&str, &str)],
    lines: &[&str],
    gap: Duration,
) -> (i32, String, Value) {
    let cmd = format!("{BIN} --state-dir state run {task} --approve --json");
    let mut child = Command::new("script")
        .current_dir(dir)
        .args(["-qfec", &cmd, "/dev/null"])
        .envs(env.iter().copied())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("util-linux `script` runs");
    let mut stdin = child.stdin.take().unwrap();
    for line in lines {
        std::thread::sleep(gap);
        // The run may have ended already (a test's failure, told by its output).
        if stdin
            .write_all(format!("{line}\n").as_bytes())
            .and_then(|()| stdin.flush())
            .is_err()
        {
            break;
        }
    }
    std::thread::sleep(gap);
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).replace('\r', "");
    let doc = text
        // The report is the last thing printed, maybe on the line of a prompt whose answer
        // was typed (and echoed) before the prompt appeared.
        .rfind("{\n  \"goal\"")
        .and_then(|at| serde_json::from_str::<Value>(text[at..].trim()).ok())
        .unwrap_or(Value::Null);
    (out.status.code().unwrap_or(-1), text, doc)
}

#[test]
fn a_question_is_answered_at_the_terminal_and_asked_again_until_it_fits() {
    let dir = tempfile::tempdir().unwrap();
    let task = task(
        dir.path(),
        "{ id = \"n\", tool = \"human\", operation = \"ask\", args = { question = \"How many apples?\", answer = { type = \"integer\", minimum = 1 } } },\n\
         { id = \"sq\", tool = \"calc\", operation = \"eval\", args = { expression = \"${n.output} * 2\" } },",
        60_000,
    );
    let (code, text, doc) = on_a_terminal(
        dir.path(),
        &task,
        &[],
        &["a", "many", "0", "21"],
        Duration::from_millis(400),
    );
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("Step `n` asks: How many apples?"), "{text}");
    // The prompt says what the schema asks for, in words, and asks again until it fits.
    assert!(
        text.contains("answer (a whole number, at least 1)> "),
        "{text}"
    );
    assert!(
        text.contains("That does not answer the question:"),
        "{text}"
    );
    assert!(text.contains("minimum"), "{text}");
    assert_eq!(doc["answer"].as_f64(), Some(42.0), "{text}");
    // The review says what the question step does; the spinner never drew over the typing
    // (the question waited 1.2 s, past the spinner's 0.7 s).
    assert!(
        text.contains("- asks you a question; your answer is the step's output"),
        "{text}"
    );
    assert!(!text.contains("(unknown tool)"), "{text}");
    assert!(!text.contains("running: n"), "{text}");
}

/// Without a person to answer, a plan that asks is refused as the run's set-up, not
/// counted as an action the policy refused.
#[test]
fn a_question_nobody_can_answer_is_not_a_policy_refusal() {
    let dir = tempfile::tempdir().unwrap();
    let task = task(
        dir.path(),
        "{ id = \"n\", tool = \"human\", operation = \"ask\", args = { question = \"How many?\", answer = { type = \"integer\" } } },",
        60_000,
    );
    let out = Command::new(BIN)
        .current_dir(dir.path())
        .args(["--state-dir", "state", "run", &task])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success(), "{stdout}");
    assert!(stdout.contains("nobody can answer in this run"), "{stdout}");
    assert!(!stdout.contains("security: the policy refused"), "{stdout}");
}

#[test]
fn an_editor_with_arguments_reopens_on_an_invalid_edit_and_shows_a_valid_one() {
    let dir = tempfile::tempdir().unwrap();
    let task = task(
        dir.path(),
        "{ id = \"s\", tool = \"calc\", operation = \"eval\", args = { expression = \"1 + 1\" } },",
        60_000,
    );
    // First edit: a reference to a step that does not exist; second: a valid plan. The
    // editor is a command line with an argument, as `code --wait` is.
    let editor = dir.path().join("edit.sh");
    let count = dir.path().join("count");
    std::fs::write(
        &editor,
        format!(
            "#!/bin/sh\n[ \"$1\" = --wait ] || {{ echo \"no --wait: $*\" >&2; exit 3; }}\n\
             n=$(cat {c} 2>/dev/null || echo 0); n=$((n + 1)); echo $n > {c}\n\
             if [ $n = 1 ]; then expr='${{nope.output}} + 1'; else expr='40 + 2'; fi\n\
             printf '{{\"goal\": \"g\", \"steps\": [{{\"id\": \"e\", \"tool\": \"calc\", \"operation\": \"eval\", \"args\": {{\"expression\": \"%s\"}}}}]}}' \"$expr\" > \"$2\"\n",
            c = count.display()
        ),
    )
    .unwrap();
    let editor_cmd = format!("sh {} --wait", editor.display());
    let (code, text, doc) = on_a_terminal(
        dir.path(),
        &task,
        &[("EDITOR", &editor_cmd)],
        &["e", "e", "a"],
        Duration::from_millis(500),
    );
    assert_eq!(code, 0, "{text}");
    assert!(
        text.contains("The edited plan is not valid (1 problem):"),
        "{text}"
    );
    assert!(text.contains("`nope`"), "{text}");
    assert!(text.contains("The edited plan is valid."), "{text}");
    // The valid edit was shown before it ran.
    let shown = text
        .rfind("e  calc.eval")
        .expect("the edited plan is shown");
    assert!(shown < text.rfind("[a]pprove").unwrap(), "{text}");
    assert_eq!(doc["answer"].as_f64(), Some(42.0), "{text}");
    assert_eq!(std::fs::read_to_string(count).unwrap().trim(), "2");
}

#[test]
fn review_time_does_not_spend_the_wall_budget() {
    let dir = tempfile::tempdir().unwrap();
    let task = task(
        dir.path(),
        "{ id = \"s\", tool = \"calc\", operation = \"eval\", args = { expression = \"6 * 7\" } },",
        1_500,
    );
    // The person approves after 3 s: twice the run's whole wall budget.
    let (code, text, doc) =
        on_a_terminal(dir.path(), &task, &[], &["a"], Duration::from_millis(3_000));
    assert_eq!(code, 0, "{text}");
    assert_eq!(doc["stop"]["reason"], "completed", "{text}");
    assert!(doc["spent"]["wall"].as_u64().unwrap() < 1_500, "{doc}");
    // The journal says how long the person took.
    let journal = dir.path().join(doc["journal"]["path"].as_str().unwrap());
    let text = std::fs::read_to_string(&journal).unwrap();
    let approval: Value = text
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|r| r["kind"] == "approval")
        .expect("an approval record");
    assert!(
        approval["data"]["waited_ms"].as_u64().unwrap() >= 2_000,
        "{approval}"
    );
}

/// Nobody answers the plan review: with `max_wait_ms` the prompt is abandoned at the wait
/// budget (the terminal is still open; nobody typed anything) and the run stops there.
#[test]
fn an_unanswered_review_ends_at_the_wait_budget() {
    let dir = tempfile::tempdir().unwrap();
    let task = task(
        dir.path(),
        "{ id = \"s\", tool = \"calc\", operation = \"eval\", args = { expression = \"1 + 1\" } },",
        60_000,
    );
    let text = std::fs::read_to_string(&task).unwrap();
    std::fs::write(
        &task,
        text.replace(
            "max_wall_ms = 60000\n",
            "max_wall_ms = 60000\nmax_wait_ms = 500\n",
        ),
    )
    .unwrap();
    // The terminal stays open, silent, for 4 s: long past the wait budget.
    let (code, text, doc) = on_a_terminal(dir.path(), &task, &[], &[], Duration::from_secs(4));
    assert_eq!(code, 7, "{text}");
    assert_eq!(doc["stop"]["reason"], "budget_exhausted", "{text}");
    assert_eq!(doc["stop"]["which"], "wait", "{text}");
    assert_eq!(doc["steps"].as_array().map(Vec::len), Some(0), "{text}");
}

/// The plan shown for review says what each step may do: its tool's grants, and the
/// untrusted data that would reach its arguments (the same lines as the console's).
#[test]
fn the_review_shows_each_steps_grants_and_untrusted_flows() {
    let dir = tempfile::tempdir().unwrap();
    let notes = dir.path().join("notes");
    std::fs::create_dir_all(&notes).unwrap();
    std::fs::write(notes.join("a.txt"), "one two three").unwrap();
    std::fs::write(
        dir.path().join("policy.toml"),
        "version = 1\n[tools.fs]\nfiles = [{ host = \"notes\", guest = \"/notes\", access = \"read\" }]\n[tools.text]\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("task.toml"),
        format!(
            "goal = \"g\"\npolicy = \"policy.toml\"\ntools = {{ fs = {:?}, text = {:?} }}\n\
             [planner.plan]\ngoal = \"g\"\nsteps = [\n\
             {{ id = \"read\", tool = \"fs\", operation = \"read-file\", args = {{ path = \"/notes/a.txt\" }} }},\n\
             {{ id = \"count\", tool = \"text\", operation = \"count\", args = {{ text = {{ \"$ref\" = \"read.output\" }} }} }},\n]\n",
            toolhost_tests::path("fs"),
            toolhost_tests::path("text"),
        ),
    )
    .unwrap();
    let (code, text, doc) = on_a_terminal(
        dir.path(),
        "task.toml",
        &[],
        &["a"],
        Duration::from_millis(400),
    );
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("- files: /notes (read)"), "{text}");
    assert!(
        text.contains("- untrusted data: args.text ← `read` (`fs.read-file`, untrusted output)"),
        "{text}"
    );
    assert_eq!(doc["answer"]["words"], 3, "{doc}");
}
