//! The golden policies beside this crate: `tests/ui/policy_<case>.toml` is a broken policy
//! and `policy_<case>.err` what `toolhost policy check` prints about it. Each is read and
//! checked here and its error compared with the `.err`; the CLI's golden runner
//! (`tests/all/cli.rs` in the workspace) runs the same files through the binary, so the
//! text a user sees stays checked too. `{ui}` in a `.err` stands for the folder.

use std::path::{Path, PathBuf};

use crate::{Policy, PolicyError};

fn ui_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/ui")
}

/// What the CLI prints for a policy it refuses: exit code 2 (a usage error), then
/// `error: ` and the message, each line after the first marked as a continuation (the
/// runtime's `terminal::lines` with `terminal::CONTINUATION`, `  | `).
fn as_the_cli_prints(e: &PolicyError) -> String {
    let message = e.to_string();
    let message = message.strip_suffix('\n').unwrap_or(&message);
    format!("exit: 2\nerror: {}\n", message.replace('\n', "\n  | "))
}

#[test]
fn every_golden_policy_is_refused_as_its_err_file_says() {
    let ui = ui_dir();
    let mut cases: Vec<PathBuf> = std::fs::read_dir(&ui)
        .expect("read tests/ui")
        .map(|e| e.expect("a directory entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    cases.sort();
    assert!(cases.len() >= 20, "{cases:?}");
    let folder = ui.display().to_string();
    let mut failures = Vec::new();
    for case in &cases {
        let error = match Policy::load(case) {
            Ok(_) => {
                failures.push(format!("{}: accepted", case.display()));
                continue;
            }
            Err(e) => e,
        };
        let actual = as_the_cli_prints(&error).replace(&folder, "{ui}");
        let golden = case.with_extension("err");
        let expected = std::fs::read_to_string(&golden)
            .unwrap_or_else(|e| panic!("{}: {e}", golden.display()));
        if actual != expected {
            failures.push(format!(
                "{}:\n--- expected\n{expected}--- actual\n{actual}",
                case.display()
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
