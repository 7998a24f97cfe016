//! A one-shot `toolhost tool call calc.wasm eval` as a whole process, from the compiled
//! cache, vs spawning `/bin/true` and, where bubblewrap is installed, vs an empty
//! `bwrap … /bin/true` sandbox: what a caller pays per call without a resident host.
//!
//! The process measured is the shipped binary, `target/release/toolhost` (what README
//! command 1 and the test command build; a one-shot call's cost is mostly the binary's own
//! start: its relocations and the pages it touches), when it is there and newer than its
//! sources; otherwise this binary run with [`AS_CLI`](super::mcp::AS_CLI)
//! set (the CLI's own `main`, built with the bench), and the figure says which. bubblewrap
//! is `$TOOLHOST_BWRAP_BIN`, else `target/bwrap/root/usr/bin/bwrap` (scripts/bwrap.sh, which
//! the test command runs), else `bwrap` on `PATH`.

use std::path::{Path, PathBuf};
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

/// The shipped binary when it is there and built after the last change to the sources it
/// is built from (`crates/`, `Cargo.toml`, `Cargo.lock`); `None` otherwise.
fn shipped() -> Option<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let bin = root.join("target/release/toolhost");
    let built = std::fs::metadata(&bin).and_then(|m| m.modified()).ok()?;
    let mut newest = std::time::SystemTime::UNIX_EPOCH;
    let mut dirs = vec![root.join("crates")];
    for f in ["Cargo.toml", "Cargo.lock"] {
        if let Ok(t) = std::fs::metadata(root.join(f)).and_then(|m| m.modified()) {
            newest = newest.max(t);
        }
    }
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).ok()?.flatten() {
            let Ok(meta) = entry.metadata() else { continue };
            if meta.is_dir() {
                dirs.push(entry.path());
            } else if let Ok(t) = meta.modified() {
                newest = newest.max(t);
            }
        }
    }
    (built >= newest).then_some(bin)
}

fn call(cli: Option<&Path>, cache: &Path) -> Command {
    let mut c = match cli {
        Some(bin) => Command::new(bin),
        None => {
            let mut c = Command::new(std::env::current_exe().expect("own path"));
            c.env(super::mcp::AS_CLI, "1");
            c
        }
    };
    c.env_remove("TOOLHOST_LOG")
        .arg("--cache-dir")
        .arg(cache)
        .args(["tool", "call"])
        .arg(toolhost_tools::CALC)
        .args(["eval", "--args", r#"{"expression": "6 * 7"}"#]);
    c
}

/// bubblewrap's binary, if it is installed and can make a sandbox here.
fn bwrap_bin() -> Option<PathBuf> {
    let bin = std::env::var_os("TOOLHOST_BWRAP_BIN")
        .map(PathBuf::from)
        .or_else(|| {
            let unpacked =
                Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/bwrap/root/usr/bin/bwrap");
            unpacked.is_file().then_some(unpacked)
        })
        .unwrap_or_else(|| PathBuf::from("bwrap"));
    let ok = bwrap(&bin)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    ok.then_some(bin)
}

/// `bwrap` with an empty sandbox around `/bin/true`.
fn bwrap(bin: &Path) -> Command {
    let mut c = Command::new(bin);
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
}

pub fn run(scale: Scale) -> Figure {
    let cache = tempfile::tempdir().expect("cache dir");
    let n = scale.n(200, 40);
    // The first call compiles and fills the cache; the figure is of cached calls.
    let cli = shipped();
    spawn_median(|| call(cli.as_deref(), cache.path()), 2);
    let one_shot = spawn_median(|| call(cli.as_deref(), cache.path()), n);
    let which = match &cli {
        Some(_) => "the shipped target/release/toolhost",
        None => {
            "the bench binary as the CLI (target/release/toolhost is missing or older than its sources)"
        }
    };
    let true_ = spawn_median(|| Command::new("/bin/true"), n);
    let bwrap = bwrap_bin().map(|bin| spawn_median(|| bwrap(&bin), n));
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
            "calc.eval from the compiled cache by {which} {:.2} ms (goal ≤ 3 ms: {}) vs spawning /bin/true {:.2} ms{}; ratio against {base_name}",
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
