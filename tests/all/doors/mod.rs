//! Every network door of the host bounded before authentication (issue 35, finding 4):
//! `toolhost mcp --http` and `toolhost serve` as subprocesses, attacked with raw TCP
//! (half-sent requests, idle keep-alive connections, connection floods, a descriptor
//! limit), sessions past their cap, and SSE followers past theirs, each watched from
//! outside through `/proc` (the sockets, CPU time and memory the server holds).

mod mcp;
mod serve;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::Command;
use std::time::{Duration, Instant};

/// `host:port` of a URL such as `http://127.0.0.1:PORT/mcp`.
pub(crate) fn host_port(url: &str) -> String {
    let rest = url.strip_prefix("http://").expect("an http URL");
    rest.split('/').next().expect("an authority").to_string()
}

/// `n` connections that each send part of a request head and then nothing (slowloris).
pub(crate) fn half_sent(addr: &str, path: &str, n: usize) -> Vec<TcpStream> {
    (0..n)
        .map(|_| {
            let mut s = TcpStream::connect(addr).expect("connect");
            s.write_all(format!("POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ").as_bytes())
                .expect("half a request");
            s
        })
        .collect()
}

/// A connection that sent one whole request (`GET path`) and was answered, kept alive.
pub(crate) fn idle_after_one_request(addr: &str, path: &str) -> TcpStream {
    let mut s = TcpStream::connect(addr).expect("connect");
    s.write_all(format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n").as_bytes())
        .expect("a request");
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut buf = [0u8; 4096];
    let n = s.read(&mut buf).expect("an answer");
    assert!(
        buf[..n].starts_with(b"HTTP/1.1 "),
        "not an HTTP answer: {:?}",
        String::from_utf8_lossy(&buf[..n])
    );
    s
}

/// Whether the server closed `s` before `deadline` (whatever it sent first).
pub(crate) fn closed_by(s: &mut TcpStream, deadline: Instant) -> bool {
    let mut buf = [0u8; 4096];
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return false;
        }
        s.set_read_timeout(Some(left)).unwrap();
        match s.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return true,
            Err(_) => return false,
        }
    }
}

/// Asserts that the server closes every one of `conns` within `limit`.
pub(crate) fn all_closed_within(conns: &mut [TcpStream], limit: Duration, what: &str) {
    let deadline = Instant::now() + limit;
    for (i, s) in conns.iter_mut().enumerate() {
        assert!(
            closed_by(s, deadline),
            "{what} {i} of {} is still open after {limit:?}: the server holds it",
            conns.len()
        );
    }
}

/// The header timeout (set to 400 ms) holds at the server at `url`: 20 requests
/// half-sent to `slow` and a keep-alive connection left idle after one request to `idle`
/// are all closed.
pub(crate) fn header_timeout_closes(url: &str, slow: &str, idle: &str) {
    let addr = host_port(url);
    let mut slow = half_sent(&addr, slow, 20);
    let mut idle = vec![idle_after_one_request(&addr, idle)];
    all_closed_within(&mut slow, Duration::from_secs(3), "half-sent request");
    all_closed_within(
        &mut idle,
        Duration::from_secs(1),
        "idle keep-alive connection",
    );
}

/// The TCP sockets process `pid` holds (the listener among them).
pub(crate) fn sockets(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .expect("the server's descriptors")
        .filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
        .filter(|l| l.to_string_lossy().starts_with("socket:"))
        .count()
}

/// CPU time process `pid` has used (user + system).
pub(crate) fn cpu_time(pid: u32) -> Duration {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("stat");
    // After the command name (which may hold spaces): field 14 is utime, 15 stime.
    let fields: Vec<&str> = stat[stat.rfind(')').unwrap() + 2..]
        .split_whitespace()
        .collect();
    let ticks: u64 = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
    // SAFETY: sysconf reads a constant of the system.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as u64;
    Duration::from_millis(ticks * 1000 / hz)
}

/// Resident memory of process `pid`, in MiB.
pub(crate) fn rss_mib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("status");
    let kib: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .expect("VmRSS");
    kib / 1024
}

/// Starts the child of `cmd` with at most `n` open descriptors (`RLIMIT_NOFILE`).
pub(crate) fn limit_descriptors(cmd: &mut Command, n: u64) {
    use std::os::unix::process::CommandExt;
    // SAFETY: getrlimit and setrlimit are async-signal-safe and touch no memory of the
    // parent.
    unsafe {
        cmd.pre_exec(move || {
            let mut lim = libc::rlimit {
                rlim_cur: 0,
                rlim_max: 0,
            };
            if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            lim.rlim_cur = n;
            if libc::setrlimit(libc::RLIMIT_NOFILE, &lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}
