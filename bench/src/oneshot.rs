//! A one-shot `toolhost tool call calc.wasm eval` as a whole process, from the compiled
//! cache, vs spawning `/bin/true` and, where bubblewrap is installed, vs an empty
//! `bwrap … /bin/true` sandbox: what a caller pays per call without a resident host.
//!
//! The CLI is this binary run with [`AS_CLI`](super::mcp::AS_CLI) set: the CLI's own
//! `main`, built with the bench, so never a stale `toolhost` from an earlier build.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::{Figure, Scale, median};

/// The median wall time of `n` runs of `cmd` (stdout and stderr discarded).
fn spawn_median(mut cmd: impl FnMut() -> Command, n: usize) -> Duration {
    median(
        (0..n)
            .map(|_| {
                let mut c = cmd();
                c.stdout(Stdio::null()).stderr(Stdio::null());
                let t = Instant::now();
                let status = c.status().expect("spawn");
                let took = t.elapsed();
                assert!(status.success(), "{c:?} failed: {status}");
                took
            })
            .collect(),
    )
}

fn call(cache: &Path) -> Command {
    let mut c = Command::new(std::env::current_exe().expect("own path"));
    c.env(super::mcp::AS_CLI, "1")
        .env_remove("TOOLHOST_LOG")
        .arg("--cache-dir")
        .arg(cache)
        .args(["tool", "call"])
        .arg(toolhost_tools::CALC)
        .args(["eval", "--args", r#"{"expression": "6 * 7"}"#]);
    c
}

/// `bwrap` with an empty sandbox around `/bin/true`, if bubblewrap is installed and can
/// make a sandbox here.
fn bwrap() -> Option<Command> {
    let make = || {
        let mut c = Command::new("bwrap");
        c.args([
            "--ro-bind",
            "/usr",
            "/usr",
            "--symlink",
            "usr/lib",
            "/lib",
            "--symlink",
            "usr/lib64",
            "/lib64",
            "--symlink",
            "usr/bin",
            "/bin",
            "--unshare-all",
            "--die-with-parent",
            "/bin/true",
        ]);
        c
    };
    let ok = make()
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    ok.then(make)
}

pub fn run(scale: Scale) -> Figure {
    let cache = tempfile::tempdir().expect("cache dir");
    let n = scale.n(200, 40);
    // The first call compiles and fills the cache; the figure is of cached calls.
    spawn_median(|| call(cache.path()), 2);
    let one_shot = spawn_median(|| call(cache.path()), n);
    let true_ = spawn_median(|| Command::new("/bin/true"), n);
    let bwrap = bwrap().map(|_| spawn_median(|| bwrap().expect("bwrap"), n));
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    // Against the empty sandbox where there is one: the call should cost less.
    let (base, base_name) = match bwrap {
        Some(b) => (b, "the empty bwrap sandbox"),
        None => (
            true_,
            "/bin/true (bubblewrap is not installed or cannot sandbox here)",
        ),
    };
    Figure {
        name: "one-shot `toolhost tool call` as a whole process, cached",
        detail: format!(
            "calc.eval from the compiled cache {:.2} ms (goal ≤ 3 ms: {}) vs spawning /bin/true {:.2} ms{}; ratio against {base_name}",
            ms(one_shot),
            if ms(one_shot) <= 3.0 {
                "met"
            } else {
                "not met"
            },
            ms(true_),
            bwrap.map_or(String::new(), |b| format!(
                ", an empty bwrap sandbox running /bin/true {:.2} ms",
                ms(b)
            )),
        ),
        ratio: one_shot.as_secs_f64() / base.as_secs_f64(),
        target: 1.0,
        lower_is_better: true,
        gated: false,
    }
}
