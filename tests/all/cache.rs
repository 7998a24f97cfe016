//! The compiled cache: a second start loads instead of compiling; bad entries are rebuilt.

use serde_json::Value;
use toolhost_runtime::tool::Compiled;
use toolhost_runtime::{Runtime, RuntimeConfig};
use toolhost_tests::{cli, path};

fn runtime(dir: &std::path::Path) -> Runtime {
    Runtime::new(RuntimeConfig::default().cache_dir(Some(dir.to_path_buf()))).unwrap()
}

fn entries(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "cwasm"))
        .collect()
}

#[test]
fn second_start_loads_from_the_cache() {
    let dir = tempfile::tempdir().unwrap();
    let first = runtime(dir.path()).load(path("calc").as_ref()).unwrap();
    assert_eq!(first.compiled, Compiled::Fresh);
    assert_eq!(entries(dir.path()).len(), 1);
    // A new runtime stands for a new process: nothing shared but the directory.
    let second = runtime(dir.path()).load(path("calc").as_ref()).unwrap();
    assert_eq!(second.compiled, Compiled::FromCache);
    assert_eq!(second.digest, first.digest);
}

#[test]
fn cli_reports_the_cache_hit() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display().to_string();
    let run = || {
        let out = cli([
            "--cache-dir",
            &d,
            "tool",
            "inspect",
            path("typesink"),
            "--json",
        ]);
        assert_eq!(out.code, 0, "{}", out.stderr);
        serde_json::from_str::<Value>(&out.stdout).unwrap()["compiled"].clone()
    };
    assert_eq!(run(), "fresh");
    assert_eq!(run(), "from_cache");
}

#[test]
fn corrupt_or_truncated_entries_are_rebuilt() {
    let dir = tempfile::tempdir().unwrap();
    runtime(dir.path()).load(path("calc").as_ref()).unwrap();
    let entry = entries(dir.path()).pop().unwrap();
    let good = std::fs::read(&entry).unwrap();

    let mut flipped = good.clone();
    let mid = flipped.len() / 2;
    flipped[mid] ^= 0xff;
    for damaged in [
        flipped,
        good[..good.len() / 3].to_vec(),
        b"not a cache entry".to_vec(),
    ] {
        std::fs::write(&entry, &damaged).unwrap();
        let t = runtime(dir.path()).load(path("calc").as_ref()).unwrap();
        assert_eq!(
            t.compiled,
            Compiled::Rebuilt,
            "a damaged entry must not be loaded"
        );
        // The rebuilt entry is whole again and serves the next start.
        assert_eq!(
            runtime(dir.path())
                .load(path("calc").as_ref())
                .unwrap()
                .compiled,
            Compiled::FromCache
        );
    }
}

fn hints(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    std::fs::read_dir(dir.join("hints"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect()
}

#[test]
fn an_entry_without_its_summary_is_rebuilt() {
    let dir = tempfile::tempdir().unwrap();
    runtime(dir.path()).load(path("calc").as_ref()).unwrap();
    let entry = entries(dir.path()).pop().unwrap();
    std::fs::remove_file(entry.with_extension("sum")).unwrap();
    let t = runtime(dir.path()).load(path("calc").as_ref()).unwrap();
    assert_eq!(t.compiled, Compiled::Fresh);
    assert!(
        entry.with_extension("sum").exists(),
        "the summary is written again"
    );
}

#[test]
fn a_wrong_digest_hint_never_loads_another_tool() {
    let dir = tempfile::tempdir().unwrap();
    // Two tools in the cache; then the hint for calc's file is pointed at typesink's entry,
    // as a stale or planted hint would be.
    let calc = runtime(dir.path()).load(path("calc").as_ref()).unwrap();
    let [hint] = hints(dir.path()).try_into().unwrap();
    assert_eq!(std::fs::read_to_string(&hint).unwrap(), calc.digest);
    let other = runtime(dir.path()).load(path("typesink").as_ref()).unwrap();
    assert_ne!(other.digest, calc.digest);
    std::fs::write(&hint, &other.digest).unwrap();

    let loaded = runtime(dir.path()).load(path("calc").as_ref()).unwrap();
    assert_eq!(loaded.digest, calc.digest);
    assert_eq!(loaded.compiled, Compiled::FromCache);
    let ops = |t: &toolhost_runtime::tool::Tool| {
        t.operations
            .iter()
            .map(|o| o.name.clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(ops(&loaded), ops(&calc));
    assert_eq!(
        std::fs::read_to_string(&hint).unwrap(),
        calc.digest,
        "the wrong hint is corrected"
    );
}

#[test]
fn a_rewritten_file_is_loaded_under_its_new_digest() {
    let dir = tempfile::tempdir().unwrap();
    let tools = tempfile::tempdir().unwrap();
    let file = tools.path().join("t.wasm");
    std::fs::copy(path("calc"), &file).unwrap();
    let first = runtime(dir.path()).load(&file).unwrap();
    std::fs::copy(path("typesink"), &file).unwrap();
    let second = runtime(dir.path()).load(&file).unwrap();
    assert_ne!(second.digest, first.digest);
    assert_eq!(
        second.digest,
        runtime(dir.path())
            .load(path("typesink").as_ref())
            .unwrap()
            .digest
    );
}

// --- Entries are machine code: trusted only where only this user can write them. ---

const BIN: &str = env!("CARGO_BIN_EXE_toolhost-test-cli");

/// `toolhost --cache-dir CACHE ARGS…` as a subprocess, killed after `limit`: exit code,
/// stdout, stderr; `None` when it was still running then.
fn toolhost_within(
    cache: &std::path::Path,
    args: &[&str],
    limit: std::time::Duration,
) -> Option<(i32, String, String)> {
    use std::process::{Command, Stdio};
    let mut child = Command::new(BIN)
        .arg("--cache-dir")
        .arg(cache)
        .args(args)
        .env_remove("TOOLHOST_LOG")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > limit {
            child.kill().unwrap();
            child.wait().unwrap();
            return None;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    Some((
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    ))
}

/// Long enough to compile calc on a loaded machine; a load blocked on a FIFO never ends.
const LIMIT: std::time::Duration = std::time::Duration::from_secs(120);

fn calc_eval(cache: &std::path::Path) -> (i32, String, String) {
    toolhost_within(
        cache,
        &[
            "tool",
            "call",
            path("calc"),
            "eval",
            "--args",
            r#"{"expression": "6 * 7"}"#,
        ],
        LIMIT,
    )
    .expect("`tool call` ran past its limit")
}

/// Makes `path` another user's (nobody's) where the tests run as root; false otherwise.
fn give_to_nobody(path: &std::path::Path) -> bool {
    // SAFETY: geteuid(2) cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("not root: cannot give {} to another user", path.display());
        return false;
    }
    std::os::unix::fs::lchown(path, Some(65534), Some(65534)).unwrap();
    true
}

#[test]
fn an_entry_planted_under_another_component_s_name_is_not_run() {
    // Someone who can write the cache compiles their own component (typesink stands in)
    // with toolhost into a cache of their own and plants the entry, summary and all,
    // under calc's name.
    let victim = tempfile::tempdir().unwrap();
    let theirs = tempfile::tempdir().unwrap();
    let (code, out, err) = calc_eval(victim.path());
    assert_eq!(code, 0, "{out}{err}");
    let calc_entry = entries(victim.path()).pop().unwrap();
    let (code, _, err) = toolhost_within(
        theirs.path(),
        &["tool", "inspect", path("typesink"), "--json"],
        LIMIT,
    )
    .unwrap();
    assert_eq!(code, 0, "{err}");
    let planted = entries(theirs.path()).pop().unwrap();
    std::fs::copy(&planted, &calc_entry).unwrap();
    std::fs::copy(
        planted.with_extension("sum"),
        calc_entry.with_extension("sum"),
    )
    .unwrap();

    let (code, out, err) = calc_eval(victim.path());
    assert_eq!(
        (code, out.trim()),
        (0, "42"),
        "the planted entry ran instead of calc: stdout {out:?}, stderr {err}"
    );
    assert!(
        err.contains("ignoring a bad compiled-cache entry") && err.contains("MAC"),
        "the fallback to compiling is not reported: {err}"
    );
    let (code, out, err) = toolhost_within(
        victim.path(),
        &["tool", "inspect", path("calc"), "--json"],
        LIMIT,
    )
    .unwrap();
    assert_eq!(code, 0, "{err}");
    let inspected: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        inspected["compiled"], "from_cache",
        "rebuilt once, then served"
    );
}

#[test]
fn a_patched_entry_is_rebuilt_and_the_rebuild_reported() {
    let dir = tempfile::tempdir().unwrap();
    runtime(dir.path()).load(path("calc").as_ref()).unwrap();
    let entry = entries(dir.path()).pop().unwrap();
    let mut bytes = std::fs::read(&entry).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0x01;
    std::fs::write(&entry, &bytes).unwrap();
    let (code, out, err) = toolhost_within(
        dir.path(),
        &["tool", "inspect", path("calc"), "--json"],
        LIMIT,
    )
    .unwrap();
    assert_eq!(code, 0, "{err}");
    let inspected: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        inspected["compiled"], "rebuilt",
        "a patched entry must be reported as rebuilt: {err}"
    );
    assert!(err.contains(&entry.display().to_string()), "{err}");
}

#[test]
fn another_user_s_file_in_the_cache_is_not_loaded() {
    let dir = tempfile::tempdir().unwrap();
    runtime(dir.path()).load(path("calc").as_ref()).unwrap();
    let entry = entries(dir.path()).pop().unwrap();
    if !give_to_nobody(&entry) {
        return;
    }
    let (code, out, err) = calc_eval(dir.path());
    assert_eq!((code, out.trim()), (0, "42"), "{err}");
    assert!(
        err.contains("owned by uid 65534"),
        "another user's entry was loaded without a word: {err}"
    );
}

#[test]
fn a_fifo_planted_in_the_cache_blocks_no_load() {
    for planted in ["summary", "artifact", "hint", "seal"] {
        let dir = tempfile::tempdir().unwrap();
        runtime(dir.path()).load(path("calc").as_ref()).unwrap();
        let entry = entries(dir.path()).pop().unwrap();
        let target = match planted {
            "summary" => entry.with_extension("sum"),
            "seal" => entry.with_extension("seal"),
            "artifact" => entry,
            _ => hints(dir.path()).pop().unwrap(),
        };
        // A young entry has no seal yet: the FIFO takes the place a seal would have.
        let _ = std::fs::remove_file(&target);
        let c = std::ffi::CString::new(target.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let ran = toolhost_within(
            dir.path(),
            &["tool", "inspect", path("calc"), "--json"],
            LIMIT,
        );
        let (code, _, err) =
            ran.unwrap_or_else(|| panic!("a FIFO planted as the {planted} blocked the load"));
        assert_eq!(code, 0, "{planted}: {err}");
    }
}

#[test]
fn a_cache_directory_others_can_write_is_refused() {
    use std::os::unix::fs::PermissionsExt;
    let parent = tempfile::tempdir().unwrap();
    let refused = |dir: &std::path::Path, why: &str| {
        let (code, out, err) =
            toolhost_within(dir, &["tool", "inspect", path("calc"), "--json"], LIMIT).unwrap();
        assert_ne!(code, 0, "{} was used: {out}", dir.display());
        let expected = format!("refusing the compiled cache directory `{}`", dir.display());
        assert!(
            err.contains(&expected) && err.contains(why),
            "expected {expected:?} and {why:?}: {err}"
        );
    };
    for (mode, why) in [
        (
            0o777,
            "writable by its group and every other user (mode 0777)",
        ),
        (0o1777, "(mode 1777)"),
        (0o770, "writable by its group (mode 0770)"),
    ] {
        let dir = parent.path().join(format!("m{mode:o}"));
        std::fs::create_dir(&dir).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(mode)).unwrap();
        refused(&dir, why);
    }
    let real = parent.path().join("real");
    std::fs::create_dir(&real).unwrap();
    let link = parent.path().join("link");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    refused(&link, "it is a symbolic link");
    let theirs = parent.path().join("theirs");
    std::fs::create_dir(&theirs).unwrap();
    if give_to_nobody(&theirs) {
        refused(&theirs, "it is owned by uid 65534");
    }
    // Inside a shared parent (/tmp, an emptyDir), toolhost makes its own, 0700.
    let shared = parent.path().join("shared");
    std::fs::create_dir(&shared).unwrap();
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o1777)).unwrap();
    let own = shared.join("toolhost");
    let (code, _, err) = calc_eval(&own);
    assert_eq!(code, 0, "{err}");
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o7777;
    assert_eq!(mode(&own), 0o700);
    for e in std::fs::read_dir(&own).unwrap() {
        let p = e.unwrap().path();
        let want = if p.is_dir() { 0o700 } else { 0o600 };
        assert_eq!(mode(&p), want, "{}", p.display());
    }
}
