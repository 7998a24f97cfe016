//! `toolhost tool install`: a component from a real registry, verified and written as
//! `NAME.wasm` into the tools directory; the same bytes again change nothing, other bytes
//! need `--force`, a signature checked with `--key` installs nothing when it fails, and
//! bad names and a missing directory are refused before anything is fetched.

use std::os::unix::fs::PermissionsExt;

use super::sign::{keygen, sign};
use super::{Pushed, calc_pushed, push, toolhost};
use toolhost_tests::path;

#[test]
fn install_verifies_and_writes_the_tool_into_the_tools_directory() {
    let Some(Pushed {
        reg: _reg,
        home,
        tag,
        ..
    }) = calc_pushed("install_verifies_and_writes", "acme/calc")
    else {
        return;
    };
    let home = home.path();
    let tools = home.join("tools");
    let tools_dir = tools.to_str().unwrap();
    let calc = std::fs::read(path("calc")).unwrap();
    let installed = tools.join("calc.wasm");

    // Into a directory that does not exist yet, named after the repository.
    let out = toolhost(
        home,
        &["tool", "install", &tag, "--tools-dir", tools_dir],
        &[],
    );
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(out.field("installed"), "calc");
    assert_eq!(std::fs::read(&installed).unwrap(), calc);
    let mode = std::fs::metadata(&installed).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o644);
    let call = [
        "tool",
        "call",
        installed.to_str().unwrap(),
        "eval",
        "--args",
        r#"{"expression":"6*7"}"#,
    ];
    let ran = toolhost(home, &call, &[]);
    assert_eq!((ran.code, ran.stdout.trim()), (0, "42"), "{ran:?}");

    // The same bytes again (the directory from TOOLHOST_TOOLS_DIR): nothing changes.
    let env = [("TOOLHOST_TOOLS_DIR", tools_dir)];
    let again = toolhost(home, &["tool", "install", &tag], &env);
    assert_eq!(again.code, 0, "{again:?}");
    assert_eq!(again.field("unchanged"), "calc");

    // The tag moved to other bytes: refused without --force, naming both digests.
    assert_eq!(push(home, "fs", &tag, &[]).code, 0);
    let moved = toolhost(home, &["tool", "install", &tag], &env);
    assert_eq!(moved.code, 2, "{moved:?}");
    assert!(
        moved.stderr.contains("is installed with other bytes") && moved.stderr.contains("--force"),
        "{}",
        moved.stderr
    );
    assert_eq!(
        std::fs::read(&installed).unwrap(),
        calc,
        "replaced without --force"
    );
    let forced = toolhost(home, &["tool", "install", &tag, "--force"], &env);
    assert_eq!(forced.code, 0, "{forced:?}");
    assert_eq!(
        std::fs::read(&installed).unwrap(),
        std::fs::read(path("fs")).unwrap()
    );
    // Never a temporary file left beside it.
    let names: Vec<_> = std::fs::read_dir(&tools)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["calc.wasm"], "{names:?}");

    // Refused before anything is fetched: a name that is not a tool name, no directory.
    let bad = toolhost(home, &["tool", "install", &tag, "--name", "Calc 2"], &env);
    assert_eq!(bad.code, 2, "{bad:?}");
    assert!(
        bad.stderr.contains("`Calc 2` is not a valid tool name"),
        "{}",
        bad.stderr
    );
    let nowhere = toolhost(home, &["tool", "install", &tag], &[]);
    assert_eq!(nowhere.code, 2, "{nowhere:?}");
    assert!(
        nowhere.stderr.contains("--tools-dir DIR"),
        "{}",
        nowhere.stderr
    );
}

#[test]
fn install_with_a_key_installs_only_what_that_key_signed() {
    let Some(Pushed {
        reg: _reg,
        home,
        tag,
        ..
    }) = calc_pushed("install_with_a_key", "acme/calc")
    else {
        return;
    };
    let home = home.path();
    let release = keygen(home, "release");
    keygen(home, "other");
    let tools = home.join("tools");
    let install = |key: &str| {
        let key = home.join(format!("{key}.pub"));
        let args = [
            "tool",
            "install",
            &tag,
            "--tools-dir",
            tools.to_str().unwrap(),
            "--key",
            key.to_str().unwrap(),
        ];
        toolhost(home, &args, &[])
    };

    // Unsigned: nothing installed.
    let unsigned = install("release");
    assert_eq!(unsigned.code, 5, "{unsigned:?}");
    assert!(
        unsigned.stderr.contains("tool `calc`"),
        "{}",
        unsigned.stderr
    );
    assert!(!tools.join("calc.wasm").exists());

    // Signed by `release`: `other` does not vouch for it, `release` does.
    let signed = sign(home, &tag, "release");
    assert_eq!(signed.code, 0, "{signed:?}");
    let wrong = install("other");
    assert_eq!(wrong.code, 5, "{wrong:?}");
    assert!(!tools.join("calc.wasm").exists());
    let right = install("release");
    assert_eq!(right.code, 0, "{right:?}");
    assert_eq!(right.field("key id"), release);
    assert_eq!(
        std::fs::read(tools.join("calc.wasm")).unwrap(),
        std::fs::read(path("calc")).unwrap()
    );
}
