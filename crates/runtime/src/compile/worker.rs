//! Compiling in a child process under a deadline and a memory cap.
//!
//! The parent (`compile`) starts the configured program with an empty environment and,
//! on Linux, `RLIMIT_DATA` (its writable private memory: the heap and the compiler's
//! allocations; unlike `RLIMIT_AS` it does not count address space merely reserved, which
//! allocators and thread stacks reserve generously), `RLIMIT_CPU`, no core dumps, and death
//! with its parent. It writes a header line and the component to the child's stdin, reads
//! the compiled artifact (`Engine::precompile_component`'s bytes) from its stdout, and
//! kills it at the deadline. The child ([`serve`]) compiles with an engine configured as
//! the parent's, so the parent's engine accepts the artifact (wasmtime checks that on
//! deserialising, and refuses an artifact of another configuration or version).

use std::ffi::OsString;
use std::io::{Read, Write};
use std::path::Path;
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use wasmtime::Engine;

use super::{CompileLimits, LimitExceeded};
use crate::metering::{Metering, engine_config};

/// The first line the parent writes, naming the protocol and the metering mode.
const HEADER: &str = "toolhost-compile/1";

/// The most of the child's stderr kept for an error message.
const STDERR_KEPT: u64 = 16 << 10;

/// Why the worker produced no artifact.
#[derive(Debug)]
pub(crate) enum Failed {
    Limit(LimitExceeded),
    /// The component does not compile, or the worker could not be run: the reason.
    Other(String),
}

/// Compiles `bytes` in `program args…` under `limits`; the serialized component.
pub(crate) fn compile(
    program: &Path,
    args: &[OsString],
    metering: Metering,
    bytes: &[u8],
    limits: &CompileLimits,
) -> Result<Vec<u8>, Failed> {
    let memory = limits.memory_mib.saturating_mul(1 << 20);
    let mut cmd = Command::new(program);
    cmd.args(args)
        .env_clear()
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    confine(&mut cmd, memory, limits.cpu_seconds);
    let started = Instant::now();
    let mut child = cmd.spawn().map_err(|e| {
        Failed::Other(format!(
            "cannot start the compiler worker `{}`: {e}",
            program.display()
        ))
    })?;
    let (Some(mut stdin), Some(stdout), Some(stderr)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        unreachable!("all three are piped")
    };
    let header = format!("{HEADER} {}\n", metering_name(metering));
    let deadline = started + limits.timeout;
    let (status, artifact, message) = std::thread::scope(|s| {
        // The child reads all of its input before it writes anything, so one thread can
        // feed it and then drain its stdout; stderr gets its own (an abort message comes
        // while stdout is still open).
        let io = std::thread::Builder::new()
            .name("toolhost-compile-io".into())
            .spawn_scoped(s, move || {
                let _ = stdin
                    .write_all(header.as_bytes())
                    .and_then(|()| stdin.write_all(bytes));
                drop(stdin);
                let mut artifact = Vec::new();
                // The artifact is built in the child's memory, so it is no larger than
                // the child may be.
                let _ = stdout.take(memory).read_to_end(&mut artifact);
                artifact
            });
        let err = std::thread::Builder::new()
            .name("toolhost-compile-err".into())
            .spawn_scoped(s, move || {
                let mut kept = Vec::new();
                let mut stderr = stderr;
                let _ = (&mut stderr).take(STDERR_KEPT).read_to_end(&mut kept);
                let _ = std::io::copy(&mut stderr, &mut std::io::sink());
                String::from_utf8_lossy(&kept).into_owned()
            });
        let status = wait(&mut child, deadline);
        let artifact = io.ok().and_then(|t| t.join().ok()).unwrap_or_default();
        let message = err.ok().and_then(|t| t.join().ok()).unwrap_or_default();
        (status, artifact, message)
    });
    let status = status.ok_or(Failed::Limit(LimitExceeded::Timeout {
        timeout: limits.timeout,
    }))?;
    if status.success() {
        tracing::debug!(
            elapsed_ms = started.elapsed().as_millis() as u64,
            bytes = artifact.len(),
            "compiled in a worker"
        );
        return Ok(artifact);
    }
    Err(classify(status, message.trim(), limits))
}

/// Waits for the child until `deadline`; `None` when it had to be killed.
fn wait(child: &mut std::process::Child, deadline: Instant) -> Option<ExitStatus> {
    let mut pause = Duration::from_millis(1);
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return Some(status),
            Ok(None) => {}
            Err(_) => break,
        }
        let now = Instant::now();
        if now >= deadline {
            break;
        }
        std::thread::sleep(pause.min(deadline - now));
        pause = (pause * 2).min(Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
    None
}

/// Why a worker that exited unsuccessfully did.
fn classify(status: ExitStatus, message: &str, limits: &CompileLimits) -> Failed {
    let memory = || {
        Failed::Limit(LimitExceeded::Memory {
            mib: limits.memory_mib,
        })
    };
    // An allocation refused under `RLIMIT_DATA` aborts the process with Rust's message,
    // or comes back from an `mmap` as `ENOMEM`.
    if [
        "memory allocation of",
        "Cannot allocate memory",
        "out of memory",
    ]
    .iter()
    .any(|m| message.contains(m))
    {
        return memory();
    }
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        match status.signal() {
            Some(libc::SIGXCPU) => {
                return Failed::Limit(LimitExceeded::Cpu {
                    seconds: limits.cpu_seconds,
                });
            }
            // Not ours (we wait for what we kill): the kernel's out-of-memory killer.
            Some(libc::SIGKILL) => return memory(),
            _ => {}
        }
    }
    if message.is_empty() {
        Failed::Other(format!("the compiler worker failed ({status})"))
    } else {
        Failed::Other(message.to_string())
    }
}

#[cfg(target_os = "linux")]
fn confine(cmd: &mut Command, memory: u64, cpu: u64) {
    use std::os::unix::process::CommandExt;
    let limit = |resource, soft: u64, hard: u64| {
        let l = libc::rlimit {
            rlim_cur: soft,
            rlim_max: hard,
        };
        // SAFETY: `setrlimit` only reads the struct it is given.
        if unsafe { libc::setrlimit(resource, &l) } == 0 {
            Ok(())
        } else {
            Err(std::io::Error::last_os_error())
        }
    };
    // SAFETY: the closure runs in the forked child before `exec` and calls only
    // async-signal-safe functions (`setrlimit`, `prctl`), allocating nothing.
    unsafe {
        cmd.pre_exec(move || {
            limit(libc::RLIMIT_DATA, memory, memory)?;
            // SIGXCPU at the soft limit ends it; SIGKILL, should that be caught, 5 s on.
            limit(libc::RLIMIT_CPU, cpu, cpu.saturating_add(5))?;
            limit(libc::RLIMIT_CORE, 0, 0)?;
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

/// Elsewhere only the deadline applies.
#[cfg(not(target_os = "linux"))]
fn confine(_cmd: &mut Command, _memory: u64, _cpu: u64) {}

fn metering_name(m: Metering) -> &'static str {
    match m {
        Metering::Fuel => "fuel",
        Metering::FuelAndEpoch => "fuel-and-epoch",
        Metering::EpochOnly => "epoch-only",
        Metering::Unmetered => "unmetered",
    }
}

fn metering_named(name: &str) -> Option<Metering> {
    [
        Metering::Fuel,
        Metering::FuelAndEpoch,
        Metering::EpochOnly,
        Metering::Unmetered,
    ]
    .into_iter()
    .find(|m| metering_name(*m) == name)
}

/// The child's side: reads a header line and a component from stdin, writes the compiled
/// artifact to stdout; the process's exit code (0, or 1 with the reason on stderr).
///
/// A program configured as [`super::Compiler::Worker`] calls this and exits with what it
/// returns (`toolhost __compile` does).
pub fn serve() -> i32 {
    match serve_io() {
        Ok(()) => 0,
        Err(why) => {
            eprintln!("{why}");
            1
        }
    }
}

fn serve_io() -> Result<(), String> {
    let mut input = Vec::new();
    std::io::stdin()
        .lock()
        .read_to_end(&mut input)
        .map_err(|e| format!("cannot read the component: {e}"))?;
    let newline = input
        .iter()
        .position(|&b| b == b'\n')
        .ok_or("no header line")?;
    let header = std::str::from_utf8(&input[..newline]).map_err(|_| "a bad header line")?;
    let metering = header
        .strip_prefix(HEADER)
        .and_then(|rest| metering_named(rest.trim()))
        .ok_or_else(|| format!("`{header}` is not a `{HEADER}` header"))?;
    let engine = Engine::new(&engine_config(metering))
        .map_err(|e| format!("cannot set up the engine: {e:#}"))?;
    let artifact = engine
        .precompile_component(&input[newline + 1..])
        .map_err(|e| format!("{e:#}"))?;
    let mut out = std::io::stdout().lock();
    out.write_all(&artifact)
        .and_then(|()| out.flush())
        .map_err(|e| format!("cannot write the artifact: {e}"))
}
