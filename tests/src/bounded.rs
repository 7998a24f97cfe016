//! The real binary as a subprocess, bounded in time: a test of a bound fails with "took
//! longer than N s" where the bound is missing, instead of hanging the suite.

use std::ffi::OsStr;
use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// What a bounded run left: its exit code (`None`: a signal), its output as bytes (so a
/// test can look for raw escape bytes), and how long it took.
#[derive(Debug)]
pub struct Ended {
    pub code: Option<i32>,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    pub took: Duration,
}

impl Ended {
    pub fn stdout(&self) -> String {
        String::from_utf8_lossy(&self.stdout).into_owned()
    }

    pub fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.stderr).into_owned()
    }
}

/// Runs `bin ARGS…` with stdin closed, reading both pipes as it goes; kills it and panics
/// with "took longer than …" when it outlives `limit`.
pub fn run_bounded<S: AsRef<OsStr>>(bin: &str, args: &[S], limit: Duration) -> Ended {
    let mut cmd = Command::new(bin);
    cmd.args(args).env_remove("TOOLHOST_LOG");
    wait_bounded(&mut cmd, limit)
}

/// Runs `cmd` as given (its arguments and environment) with stdin closed, reading both
/// pipes as it goes; kills it and panics with "took longer than …", its output's tail
/// beside, when it outlives `limit`.
pub fn wait_bounded(cmd: &mut Command, limit: Duration) -> Ended {
    let shown: Vec<String> = cmd
        .get_args()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let start = Instant::now();
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start toolhost");
    let drain = |mut pipe: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            let _ = pipe.read_to_end(&mut bytes);
            bytes
        })
    };
    let out = drain(Box::new(child.stdout.take().expect("stdout")));
    let err = drain(Box::new(child.stderr.take().expect("stderr")));
    let code = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status.code();
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            let stdout = String::from_utf8_lossy(&out.join().unwrap_or_default()).into_owned();
            let stderr = String::from_utf8_lossy(&err.join().unwrap_or_default()).into_owned();
            panic!(
                "toolhost {shown:?} took longer than {} s (killed): it hung\n\
                 stdout:\n{stdout}\nstderr (last 4000 bytes):\n{}",
                limit.as_secs_f64(),
                tail(&stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    Ended {
        code,
        stdout: out.join().expect("stdout reader"),
        stderr: err.join().expect("stderr reader"),
        took: start.elapsed(),
    }
}

/// The last 4000 bytes of `s` (at a character boundary).
pub fn tail(s: &str) -> &str {
    let mut at = s.len().saturating_sub(4000);
    while !s.is_char_boundary(at) {
        at += 1;
    }
    &s[at..]
}
