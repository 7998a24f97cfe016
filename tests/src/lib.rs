//! Helpers shared by the integration tests in `all/`: one runtime, tools loaded once,
//! blocking wrappers for calls, and an in-process CLI runner.

pub mod bounded;
pub mod postgres;
pub mod proxy;
pub mod server;
pub mod suite;

use std::collections::HashMap;
use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};

use serde_json::Value;
use toolhost_runtime::{
    CallOutcome, Capabilities, FileGrant, Limits, Runtime, RuntimeConfig, Tool,
};

/// The runtime shared by tests that do not test the cache (no disk cache).
pub fn runtime() -> &'static Runtime {
    runtime_arc()
}

/// [`runtime`] as the `Arc` the engine takes; tools from [`tool`] belong to it.
pub fn runtime_arc() -> &'static Arc<Runtime> {
    static RT: OnceLock<Arc<Runtime>> = OnceLock::new();
    RT.get_or_init(|| Arc::new(Runtime::new(RuntimeConfig::default()).expect("runtime")))
}

/// The folder of every built component, the tools and the test fixtures (what the tests
/// give `toolhost run --tools-dir`): `target/fixtures`. Users' `target/tools` holds no
/// fixture.
pub fn tools_dir() -> String {
    toolhost_tools::FIXTURES_DIR.to_string()
}

/// The tools of `policy`, one per section and named after it (from [`tool`]); relative
/// grants are under `base`.
pub fn catalog_in(policy: &str, base: &std::path::Path) -> toolhost_engine::Catalog {
    let p = toolhost_runtime::Policy::parse("test.toml", policy, base).expect("a valid policy");
    let tools = p
        .tools
        .into_values()
        .map(|section| {
            let entry = toolhost_engine::Entry {
                tool: tool(&section.name),
                policy: section.clone(),
            };
            (section.name.into(), entry)
        })
        .collect();
    toolhost_engine::Catalog { tools }
}

/// The checkout's root (the workspace directory).
pub fn root() -> PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ has a parent")
        .to_path_buf()
}

/// Where `scripts/guest-langs.sh` installs the Python and JavaScript toolchains and the
/// MCP test clients: `TOOLHOST_GUEST_LANGS_DIR`, or `target/guest-langs`.
pub fn guest_langs() -> PathBuf {
    std::env::var_os("TOOLHOST_GUEST_LANGS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join("target").join("guest-langs"))
}

/// `name`, an entry point of the venv that `scripts/service-checks.sh` installs
/// (schemathesis, kubernetes-validate) under `TOOLHOST_SERVICE_CHECKS_DIR` or
/// `target/service-checks`; `None`, after saying so, when `TOOLHOST_SKIP_SERVICE_CHECKS=1`;
/// a panic naming the script when it is missing.
pub fn service_check(name: &str) -> Option<PathBuf> {
    if std::env::var_os("TOOLHOST_SKIP_SERVICE_CHECKS").is_some_and(|v| v == "1") {
        eprintln!("TOOLHOST_SKIP_SERVICE_CHECKS=1: skipping a test that runs `{name}`");
        return None;
    }
    let dir = std::env::var_os("TOOLHOST_SERVICE_CHECKS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join("target").join("service-checks"));
    let found = dir.join("venv").join("bin").join(name);
    assert!(
        found.is_file(),
        "{} is missing: run scripts/service-checks.sh (or set TOOLHOST_SKIP_SERVICE_CHECKS=1 to skip)",
        found.display()
    );
    Some(found)
}

/// Path of a built component (`calc`, `misbehave`, …, or the Python and JavaScript
/// tools of `toolhost-lang-tools`).
pub fn path(name: &str) -> &'static str {
    toolhost_tools::path(name)
        .or_else(|| toolhost_lang_tools::path(name))
        .unwrap_or_else(|| panic!("no built component named {name}"))
}

/// The tool `name`, loaded once per test binary.
pub fn tool(name: &str) -> Arc<Tool> {
    static TOOLS: OnceLock<Mutex<HashMap<String, Arc<Tool>>>> = OnceLock::new();
    let mut map = TOOLS.get_or_init(Default::default).lock().expect("lock");
    map.entry(name.to_string())
        .or_insert_with(|| Arc::new(runtime().load(path(name).as_ref()).expect("load tool")))
        .clone()
}

/// Runs a future to completion on a fresh current-thread runtime.
pub fn block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime")
        .block_on(f)
}

/// Calls `op` of tool `name` with no capabilities and the given limits.
pub fn call_with(
    name: &str,
    op: &str,
    args: Value,
    caps: &Capabilities,
    limits: &Limits,
) -> CallOutcome {
    let t = tool(name);
    block_on(runtime().call(&t, op, &args, caps, limits))
}

/// Calls `op` of tool `name` with no capabilities and default limits.
pub fn call(name: &str, op: &str, args: Value) -> CallOutcome {
    call_with(name, op, args, &Capabilities::none(), &Limits::default())
}

fn shared_cache_dir() -> &'static std::path::Path {
    static DIR: OnceLock<tempfile::TempDir> = OnceLock::new();
    DIR.get_or_init(|| tempfile::tempdir().expect("temp dir"))
        .path()
}

fn shared_state_dir() -> &'static std::path::Path {
    static DIR: OnceLock<tempfile::TempDir> = OnceLock::new();
    DIR.get_or_init(|| tempfile::tempdir().expect("temp dir"))
        .path()
}

/// What the CLI printed and returned.
#[derive(Debug)]
pub struct CliOutput {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

/// Runs `toolhost ARGS…` in process.
pub fn cli<I, S>(args: I) -> CliOutput
where
    I: IntoIterator<Item = S>,
    S: Into<OsString>,
{
    let mut out = Vec::new();
    let mut err = Vec::new();
    let args: Vec<OsString> = args.into_iter().map(Into::into).collect();
    // Share one compiled cache per test process unless the test chooses its own, so the
    // many CLI invocations compile each component once.
    let own_cache = args.iter().any(|a| a == "--no-cache" || a == "--cache-dir");
    let cache: Vec<OsString> = if own_cache {
        Vec::new()
    } else {
        vec!["--cache-dir".into(), shared_cache_dir().into()]
    };
    // Run journals go to a temporary state directory, never the user's, unless the test
    // chooses one.
    let own_state = args.iter().any(|a| a == "--state-dir");
    let state: Vec<OsString> = if own_state {
        Vec::new()
    } else {
        vec!["--state-dir".into(), shared_state_dir().into()]
    };
    let argv = std::iter::once(OsString::from("toolhost"))
        .chain(cache)
        .chain(state)
        .chain(args);
    let code = toolhost::cli::run(argv, &mut out, &mut err);
    CliOutput {
        code,
        stdout: String::from_utf8(out).expect("utf-8 stdout"),
        stderr: String::from_utf8(err).expect("utf-8 stderr"),
    }
}

/// Runs `toolhost run TASK --tools-dir (the built tools) --json`; the run's report.
pub fn run_json(task: &std::path::Path) -> Value {
    let tools = tools_dir();
    let out = cli([
        "run",
        task.to_str().expect("a UTF-8 path"),
        "--tools-dir",
        &tools,
        "--json",
    ]);
    serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{e}: {out:?}"))
}

/// Makes the child `cmd` starts die (SIGKILL) with the thread that started it: a server or
/// worker a failing test leaves behind would otherwise outlive the test (and its database).
pub fn die_with_parent(cmd: &mut std::process::Command) -> &mut std::process::Command {
    use std::os::unix::process::CommandExt;
    // SAFETY: prctl(2) is async-signal-safe and touches no memory of the parent.
    unsafe {
        cmd.pre_exec(|| {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) == 0 {
                Ok(())
            } else {
                Err(std::io::Error::last_os_error())
            }
        })
    }
}

/// Capabilities granting host directory `dir` as `/data`, read-only unless `write`.
pub fn grant_dir(dir: &std::path::Path, write: bool) -> Capabilities {
    Capabilities::none().files(vec![FileGrant::dir(dir, "/data", write)])
}
