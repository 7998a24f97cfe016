//! A real PostgreSQL server for the tests of the PostgreSQL journal: started once per
//! test process from the server binaries (`initdb`, `pg_ctl`, `postgres`: on `PATH`,
//! else Debian's `/usr/lib/postgresql/VERSION/bin`), with one fresh database per test.
//!
//! - `initdb` refuses root: as root the cluster belongs to `nobody`, in a temporary
//!   directory handed to it; otherwise to the current user.
//! - It listens on 127.0.0.1 only, on a free port (a socket bound to port 0 and closed;
//!   another port on a conflict), with its unix socket in the temporary directory.
//! - It is stopped (`pg_ctl stop -m immediate`) and its directory removed when the test
//!   process exits.
//! - `TOOLHOST_SKIP_POSTGRES=1` skips the tests that need it, saying so; without it, a
//!   machine with no server binaries fails them with what to install.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

/// The shared server, taken and stopped at exit.
static SERVER: Mutex<Option<Server>> = Mutex::new(None);

/// How to reach the shared server, once started (or why it could not start).
static STARTED: OnceLock<Result<Endpoint, String>> = OnceLock::new();

#[derive(Debug, Clone)]
struct Endpoint {
    port: u16,
    bin: PathBuf,
}

struct Server {
    bin: PathBuf,
    data: PathBuf,
    owner: Option<(u32, u32)>,
    /// Removed on drop, after the server stopped.
    _dir: tempfile::TempDir,
}

impl Drop for Server {
    fn drop(&mut self) {
        let mut stop = Command::new(self.bin.join("pg_ctl"));
        stop.arg("-D")
            .arg(&self.data)
            .args(["stop", "-m", "immediate", "-w"]);
        let _ = as_owner(&mut stop, self.owner).output();
    }
}

extern "C" fn stop_at_exit() {
    if let Ok(mut s) = SERVER.lock() {
        s.take();
    }
}

/// A fresh database of the shared server for one test.
#[derive(Debug, Clone)]
pub struct TestDb {
    /// `postgres://postgres@127.0.0.1:PORT/NAME`
    pub url: String,
    pub name: String,
    port: u16,
    bin: PathBuf,
}

impl TestDb {
    /// Runs `sql` in this database with `psql` and returns what it printed (unaligned,
    /// tuples only); panics with psql's message when it fails.
    pub fn sql(&self, sql: &str) -> String {
        psql(&self.bin, self.port, &self.name, sql)
    }
}

/// A new, empty database; `None` (after saying so on stderr) when
/// `TOOLHOST_SKIP_POSTGRES=1`.
pub fn database(test: &str) -> Option<TestDb> {
    if std::env::var_os("TOOLHOST_SKIP_POSTGRES").is_some_and(|v| v == "1") {
        eprintln!("TOOLHOST_SKIP_POSTGRES=1: skipping `{test}`, which needs a PostgreSQL server");
        return None;
    }
    let end = STARTED.get_or_init(start).as_ref().unwrap_or_else(|e| {
        panic!("{e} (or set TOOLHOST_SKIP_POSTGRES=1 to skip the PostgreSQL tests)")
    });
    static N: AtomicU64 = AtomicU64::new(0);
    let name = format!(
        "t_{}_{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    );
    psql(
        &end.bin,
        end.port,
        "postgres",
        &format!("CREATE DATABASE {name}"),
    );
    Some(TestDb {
        url: format!("postgres://postgres@127.0.0.1:{}/{name}", end.port),
        name,
        port: end.port,
        bin: end.bin.clone(),
    })
}

fn psql(bin: &Path, port: u16, db: &str, sql: &str) -> String {
    let out = Command::new(bin.join("psql"))
        .args(["-h", "127.0.0.1", "-p", &port.to_string(), "-U", "postgres"])
        .args([
            "-d",
            db,
            "-X",
            "-q",
            "-A",
            "-t",
            "-v",
            "ON_ERROR_STOP=1",
            "-c",
            sql,
        ])
        .output()
        .expect("psql runs");
    assert!(
        out.status.success(),
        "psql `{sql}` failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// The directory of the server binaries: where `initdb` is on `PATH` (resolved through
/// symlinks, so `psql` is found beside it), else the newest `/usr/lib/postgresql/*/bin`.
fn binaries() -> Option<PathBuf> {
    let on_path = std::env::var_os("PATH").and_then(|p| {
        std::env::split_paths(&p)
            .map(|d| d.join("initdb"))
            .find(|f| f.is_file())
    });
    if let Some(dir) = on_path
        .and_then(|f| std::fs::canonicalize(f).ok())
        .and_then(|f| f.parent().map(Path::to_path_buf))
        .filter(|d| d.join("pg_ctl").is_file() && d.join("psql").is_file())
    {
        return Some(dir);
    }
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .flatten()
        .filter_map(|e| {
            let v = e.file_name().to_str()?.parse().ok()?;
            let bin = e.path().join("bin");
            bin.join("initdb").is_file().then_some((v, bin))
        })
        .collect();
    versions.sort();
    versions.pop().map(|(_, bin)| bin)
}

/// `nobody`'s uid and gid when we are root (initdb refuses root), else `None`.
fn owner() -> Result<Option<(u32, u32)>, String> {
    // SAFETY: getuid has no preconditions.
    if unsafe { libc::getuid() } != 0 {
        return Ok(None);
    }
    let passwd = std::fs::read_to_string("/etc/passwd").map_err(|e| e.to_string())?;
    passwd
        .lines()
        .map(|l| l.split(':').collect::<Vec<_>>())
        .find(|f| f.first() == Some(&"nobody") && f.len() > 3)
        .and_then(|f| Some(Some((f[2].parse().ok()?, f[3].parse().ok()?))))
        .ok_or_else(|| "running as root, and there is no `nobody` user to own the cluster".into())
}

fn as_owner(c: &mut Command, owner: Option<(u32, u32)>) -> &mut Command {
    if let Some((uid, gid)) = owner {
        std::os::unix::process::CommandExt::uid(c, uid);
        // std drops root's supplementary groups when it changes the uid.
        std::os::unix::process::CommandExt::gid(c, gid);
    }
    c
}

fn failed(what: &str, out: &Output) -> String {
    format!(
        "{what} failed ({}): {}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}

fn start() -> Result<Endpoint, String> {
    let bin = binaries().ok_or(
        "no PostgreSQL server binaries: no `initdb` on PATH nor under /usr/lib/postgresql/*/bin; \
         install Debian's `postgresql` package",
    )?;
    let owner = owner()?;
    let dir = tempfile::Builder::new()
        .prefix("toolhost-pg-")
        .tempdir()
        .map_err(|e| e.to_string())?;
    if let Some((uid, gid)) = owner {
        std::os::unix::fs::chown(dir.path(), Some(uid), Some(gid)).map_err(|e| e.to_string())?;
    }
    let data = dir.path().join("data");
    let mut initdb = Command::new(bin.join("initdb"));
    initdb
        .arg("-D")
        .arg(&data)
        .args([
            "-U",
            "postgres",
            "-A",
            "trust",
            "-E",
            "UTF8",
            "--locale=C",
            "--no-sync",
        ])
        .current_dir(dir.path());
    let out = as_owner(&mut initdb, owner)
        .output()
        .map_err(|e| format!("cannot run initdb: {e}"))?;
    if !out.status.success() {
        return Err(failed("initdb", &out));
    }
    let log = dir.path().join("server.log");
    let mut last = String::new();
    for _ in 0..5 {
        let port = free_port();
        let options = format!(
            "-c listen_addresses=127.0.0.1 -p {port} -k {} -c max_connections=200",
            dir.path().display()
        );
        let mut pg_ctl = Command::new(bin.join("pg_ctl"));
        pg_ctl
            .arg("-D")
            .arg(&data)
            .args(["-o", &options, "-l"])
            .arg(&log)
            .args(["-w", "-t", "60", "start"])
            .current_dir(dir.path());
        let out = as_owner(&mut pg_ctl, owner)
            .output()
            .map_err(|e| format!("cannot run pg_ctl: {e}"))?;
        if out.status.success() {
            *SERVER.lock().unwrap_or_else(|p| p.into_inner()) = Some(Server {
                bin: bin.clone(),
                data,
                owner,
                _dir: dir,
            });
            // SAFETY: registers a plain `extern "C"` function with no arguments.
            unsafe { libc::atexit(stop_at_exit) };
            return Ok(Endpoint { port, bin });
        }
        let server_log = std::fs::read_to_string(&log).unwrap_or_default();
        last = format!("{}\n{server_log}", failed("pg_ctl start", &out));
        if !server_log.contains("could not bind") && !server_log.contains("already in use") {
            break;
        }
    }
    Err(last)
}
