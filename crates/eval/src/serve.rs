//! A suite's loopback file server (`[serve]` in `suite.toml`): the files of one directory
//! over HTTP/1.1 on a fixed loopback address, up while the suite runs, so tasks with
//! network grants have something real to fetch without the internet. The address is fixed
//! because a policy grants an origin (`http://127.0.0.1:PORT`) by its port.
//!
//! Only `GET` and `HEAD` of regular files below the directory are served; a path that
//! leaves it (`..`, a symlink out) is a 404 like a missing file.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use serde::Deserialize;
use tokio::sync::oneshot;

/// `[serve]` as written in `suite.toml`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServeConfig {
    /// The directory served, relative to `suite.toml`.
    pub dir: PathBuf,
    /// A loopback address with a fixed port, e.g. `127.0.0.1:18765`.
    pub addr: SocketAddr,
}

/// Why the server cannot start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServeError {
    #[error(
        "[serve] addr `{0}` is not a loopback address: a suite's file server listens on 127.0.0.1 or ::1 only"
    )]
    NotLoopback(SocketAddr),
    #[error(
        "[serve] addr `{0}` needs a fixed port: the policy grants the origin by its port (e.g. 127.0.0.1:18765)"
    )]
    NoPort(SocketAddr),
    #[error("[serve] dir `{dir}`: {reason}")]
    Dir { dir: String, reason: String },
    #[error("cannot listen on `{addr}` for the suite's file server: {reason}")]
    Bind { addr: SocketAddr, reason: String },
}

/// A running file server; dropping it stops it.
#[derive(Debug)]
pub struct FileServer {
    addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl FileServer {
    /// Starts serving `config.dir` (relative to `base`) on `config.addr`.
    pub fn start(config: &ServeConfig, base: &Path) -> Result<FileServer, ServeError> {
        let addr = config.addr;
        if !addr.ip().is_loopback() {
            return Err(ServeError::NotLoopback(addr));
        }
        if addr.port() == 0 {
            return Err(ServeError::NoPort(addr));
        }
        let dir = base
            .join(&config.dir)
            .canonicalize()
            .map_err(|e| ServeError::Dir {
                dir: config.dir.display().to_string(),
                reason: e.to_string(),
            })?;
        if !dir.is_dir() {
            return Err(ServeError::Dir {
                dir: config.dir.display().to_string(),
                reason: "not a directory".into(),
            });
        }
        let bind = |reason: String| ServeError::Bind { addr, reason };
        let listener = std::net::TcpListener::bind(addr).map_err(|e| bind(e.to_string()))?;
        listener
            .set_nonblocking(true)
            .map_err(|e| bind(e.to_string()))?;
        let tokio = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .build()
            .map_err(|e| bind(e.to_string()))?;
        let (stop, stopped) = oneshot::channel();
        let thread = std::thread::Builder::new()
            .name("eval-serve".into())
            .spawn(move || tokio.block_on(accept(listener, dir, stopped)))
            .map_err(|e| bind(e.to_string()))?;
        Ok(FileServer {
            addr,
            stop: Some(stop),
            thread: Some(thread),
        })
    }

    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for FileServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

async fn accept(listener: std::net::TcpListener, dir: PathBuf, mut stopped: oneshot::Receiver<()>) {
    let Ok(listener) = tokio::net::TcpListener::from_std(listener) else {
        return;
    };
    loop {
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(_) => continue,
            },
            _ = &mut stopped => return,
        };
        let dir = dir.clone();
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |req| {
                let dir = dir.clone();
                async move { Ok::<_, std::convert::Infallible>(respond(&dir, &req)) }
            });
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

fn respond(dir: &Path, req: &Request<Incoming>) -> Response<Full<Bytes>> {
    let reply = |status: StatusCode, kind: &str, body: Vec<u8>| {
        let mut r = Response::new(Full::new(Bytes::from(body)));
        *r.status_mut() = status;
        if let Ok(v) = kind.parse() {
            r.headers_mut().insert(hyper::header::CONTENT_TYPE, v);
        }
        r
    };
    if req.method() != Method::GET && req.method() != Method::HEAD {
        return reply(
            StatusCode::METHOD_NOT_ALLOWED,
            "text/plain",
            b"GET or HEAD only\n".to_vec(),
        );
    }
    match file_below(dir, req.uri().path()) {
        Some(path) => match std::fs::read(&path) {
            Ok(body) if req.method() == Method::HEAD => {
                let mut r = reply(StatusCode::OK, content_type(&path), Vec::new());
                r.headers_mut()
                    .insert(hyper::header::CONTENT_LENGTH, body.len().into());
                r
            }
            Ok(body) => reply(StatusCode::OK, content_type(&path), body),
            Err(_) => not_found(),
        },
        None => not_found(),
    }
}

fn not_found() -> Response<Full<Bytes>> {
    let mut r = Response::new(Full::new(Bytes::from_static(b"not found\n")));
    *r.status_mut() = StatusCode::NOT_FOUND;
    r
}

/// The regular file `uri_path` names below `dir` (`/` is `index.html`), if it stays there.
fn file_below(dir: &Path, uri_path: &str) -> Option<PathBuf> {
    let rel = uri_path.trim_start_matches('/');
    let rel = if rel.is_empty() { "index.html" } else { rel };
    if rel
        .split('/')
        .any(|part| part == ".." || part.contains('\\'))
    {
        return None;
    }
    let path = dir.join(rel).canonicalize().ok()?;
    (path.starts_with(dir) && path.is_file()).then_some(path)
}

fn content_type(path: &Path) -> &'static str {
    match path.extension().and_then(|e| e.to_str()) {
        Some("html" | "htm") => "text/html; charset=utf-8",
        Some("json") => "application/json",
        Some("csv") => "text/csv; charset=utf-8",
        Some("txt") => "text/plain; charset=utf-8",
        _ => "application/octet-stream",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir() -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir(d.path().join("www")).unwrap();
        std::fs::write(d.path().join("www/a.json"), "{}").unwrap();
        std::fs::write(d.path().join("secret.txt"), "no").unwrap();
        d
    }

    #[test]
    fn only_files_below_the_directory_are_found() {
        let d = dir();
        let www = d.path().join("www").canonicalize().unwrap();
        assert!(file_below(&www, "/a.json").is_some());
        assert!(file_below(&www, "/../secret.txt").is_none());
        assert!(file_below(&www, "/missing").is_none());
        assert!(file_below(&www, "/").is_none(), "no index.html here");
    }

    #[test]
    fn addresses_must_be_loopback_with_a_port() {
        let d = dir();
        let at = |addr: &str| ServeConfig {
            dir: "www".into(),
            addr: addr.parse().unwrap(),
        };
        let e = FileServer::start(&at("0.0.0.0:18999"), d.path()).unwrap_err();
        assert!(e.to_string().contains("not a loopback address"), "{e}");
        let e = FileServer::start(&at("127.0.0.1:0"), d.path()).unwrap_err();
        assert!(e.to_string().contains("needs a fixed port"), "{e}");
        let e = FileServer::start(
            &ServeConfig {
                dir: "nope".into(),
                addr: "127.0.0.1:18999".parse().unwrap(),
            },
            d.path(),
        )
        .unwrap_err();
        assert!(e.to_string().contains("[serve] dir `nope`"), "{e}");
    }

    #[test]
    fn serves_a_file_and_stops_when_dropped() {
        use std::io::{Read, Write};
        let d = dir();
        // A free port, taken and released, then served.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let config = ServeConfig {
            dir: "www".into(),
            addr: SocketAddr::from(([127, 0, 0, 1], port)),
        };
        let server = FileServer::start(&config, d.path()).unwrap();
        let get = |path: &str| {
            let mut s = std::net::TcpStream::connect(server.addr()).unwrap();
            write!(
                s,
                "GET {path} HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n"
            )
            .unwrap();
            let mut text = String::new();
            s.read_to_string(&mut text).unwrap();
            text
        };
        let ok = get("/a.json");
        assert!(ok.starts_with("HTTP/1.1 200"), "{ok}");
        assert!(
            ok.contains("application/json") && ok.ends_with("{}"),
            "{ok}"
        );
        assert!(get("/../secret.txt").starts_with("HTTP/1.1 404"));
        let addr = server.addr();
        drop(server);
        assert!(
            std::net::TcpStream::connect(addr).is_err(),
            "still listening"
        );
    }
}
