//! A real OCI registry for the tests: Debian's `docker-registry` (CNCF distribution 2.8,
//! installed under target/registry by scripts/registry.sh, or `$TOOLHOST_REGISTRY_BIN`),
//! one per test, on 127.0.0.1 and a free port (a socket bound to port 0 and closed; another
//! port when the registry cannot take it), storing in a temporary directory, with or
//! without htpasswd basic auth. Killed when dropped (and with the test process).
//! `TOOLHOST_SKIP_REGISTRY=1` skips the tests that need it, saying so.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub struct Registry {
    child: Child,
    /// `127.0.0.1:PORT` or `[::1]:PORT`
    pub addr: String,
    dir: tempfile::TempDir,
}

impl Drop for Registry {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Registry {
    /// `oci://127.0.0.1:PORT/REPO` (or `oci://[::1]:PORT/REPO`)
    pub fn reference(&self, repo: &str) -> String {
        format!("oci://{}/{repo}", self.addr)
    }

    /// The registry's storage (what a tamper test edits).
    pub fn storage(&self) -> PathBuf {
        self.dir.path().join("storage/docker/registry/v2")
    }
}

fn binary() -> PathBuf {
    if let Some(bin) = std::env::var_os("TOOLHOST_REGISTRY_BIN") {
        return bin.into();
    }
    toolhost_tests::root().join("target/registry/root/usr/bin/docker-registry")
}

/// A registry for `test` on 127.0.0.1, with basic auth for `user:password` when given;
/// `None` (after saying so) when `TOOLHOST_SKIP_REGISTRY=1`.
pub fn start(test: &str, basic: Option<(&str, &str)>) -> Option<Registry> {
    start_at(test, basic, "127.0.0.1")
}

/// A registry for `test` on loopback address `ip` (`127.0.0.1`, `::1`), as [`start`].
pub fn start_at(test: &str, basic: Option<(&str, &str)>, ip: &str) -> Option<Registry> {
    if std::env::var_os("TOOLHOST_SKIP_REGISTRY").is_some_and(|v| v == "1") {
        eprintln!("TOOLHOST_SKIP_REGISTRY=1: skipping `{test}`, which needs a registry");
        return None;
    }
    let bin = binary();
    assert!(
        bin.exists(),
        "no registry at `{}`: run scripts/registry.sh (or set TOOLHOST_REGISTRY_BIN, or TOOLHOST_SKIP_REGISTRY=1)",
        bin.display()
    );
    for _ in 0..5 {
        let mut registry = spawn(&bin, basic, ip);
        if wait_ready(&mut registry) {
            return Some(registry);
        }
        // A port taken between the probe and the registry's bind: another one.
    }
    panic!(
        "the registry `{}` did not start (5 ports tried)",
        bin.display()
    )
}

/// Starts the registry `bin` in a fresh directory on a free port of `ip`.
fn spawn(bin: &Path, basic: Option<(&str, &str)>, ip: &str) -> Registry {
    let dir = tempfile::tempdir().unwrap();
    let auth = match basic {
        Some((user, password)) => {
            let hash = bcrypt::hash(password, 4).unwrap();
            let file = dir.path().join("htpasswd");
            std::fs::write(&file, format!("{user}:{hash}\n")).unwrap();
            format!(
                "auth:\n  htpasswd:\n    realm: toolhost-test\n    path: {}\n",
                file.display()
            )
        }
        None => String::new(),
    };
    let host = match ip.contains(':') {
        true => format!("[{ip}]"),
        false => ip.to_string(),
    };
    let port = TcpListener::bind(format!("{host}:0"))
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let addr = format!("{host}:{port}");
    let config = dir.path().join("config.yml");
    let storage = dir.path().join("storage");
    std::fs::write(
        &config,
        format!(
            "version: 0.1\nlog:\n  level: error\n  accesslog:\n    disabled: true\nstorage:\n  filesystem:\n    rootdirectory: {}\nhttp:\n  addr: \"{addr}\"\n  secret: toolhost-test\n{auth}",
            storage.display()
        ),
    )
    .unwrap();
    let mut cmd = Command::new(bin);
    cmd.arg("serve")
        .arg(&config)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let child = toolhost_tests::die_with_parent(&mut cmd).spawn().unwrap();
    Registry { child, addr, dir }
}

/// Whether the registry answers `GET /v2/` (200, or 401 with auth) within 15 s.
fn wait_ready(registry: &mut Registry) -> bool {
    let end = Instant::now() + Duration::from_secs(15);
    while Instant::now() < end {
        if registry.child.try_wait().ok().flatten().is_some() {
            return false;
        }
        if let Ok(mut s) = TcpStream::connect(&registry.addr) {
            let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
            let _ = write!(s, "GET /v2/ HTTP/1.0\r\nHost: {}\r\n\r\n", registry.addr);
            let mut head = [0u8; 12];
            if s.read_exact(&mut head).is_ok() && head.starts_with(b"HTTP/1.") {
                return true;
            }
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    false
}

/// Overwrites the blob `digest` in the registry's storage with `bytes` (a tampering
/// registry, or a disk that rotted).
pub fn tamper_blob(registry: &Registry, digest: &str, bytes: &[u8]) {
    let hex = digest.strip_prefix("sha256:").unwrap();
    let data: &Path = &registry
        .storage()
        .join("blobs/sha256")
        .join(&hex[..2])
        .join(hex)
        .join("data");
    assert!(data.exists(), "no blob at {}", data.display());
    std::fs::write(data, bytes).unwrap();
}
