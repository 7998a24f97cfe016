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
            Compiled::Fresh,
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
