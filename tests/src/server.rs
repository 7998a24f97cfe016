//! A small HTTP/1.1 server for network tests: bound to `127.0.0.1:0`, one thread per
//! connection, canned answers per path, and a record of every request it received (so a
//! test can assert that a denied request never arrived).
//!
//! Routes of [`Server::start`]:
//! - `/text`: 200, `text/plain`, [`TEXT`];
//! - `/page`: 200, `text/html`, [`PAGE`] (links to extract);
//! - `/echo`: 200, JSON `{"method", "path", "headers": {name: value}, "body"}` of the request;
//! - `/goto?LOCATION`: 302 to `LOCATION` (the whole query, taken as it is);
//! - `/slow?MS[&TAG]`: waits MS milliseconds (at most [`MAX_WAIT`]), then 200 `slow`;
//! - `/huge?BYTES`: 200 with a body of BYTES `x`s;
//! - `/never`: reads the request and answers nothing for [`MAX_WAIT`], then hangs up;
//! - `/early`: answers 200 `early` as soon as the request head is in, without reading the
//!   body, and hangs up (a client still sending a body sees its connection reset);
//! - `/v1/traces`: 200, `application/x-protobuf`, empty (an OTLP/HTTP collector's
//!   success; the export is in [`Server::received`]);
//! - `/unavailable…` (any path under it): 503 `unavailable` (a collector that is down);
//! - anything else: 404 `not found`.
//!
//! A TLS client hello gets a plain-text 400, so TLS to this server fails fast.

use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use serde_json::{Map, Value, json};

/// The body of `/text`.
pub const TEXT: &str = "hello from the test server";
/// The body of `/page`: an HTML page with links of several forms.
pub const PAGE: &str = r##"<html><body><h1>Index</h1>
<a href="/text">The <b>text</b> route</a>
<a href='https://example.org/a?x=1&amp;y=2'>Elsewhere</a>
<a href=#top>Top</a> <a href="javascript:void(0)">Nothing</a>
<A HREF="/text">again</A> <a class="x" href="sub/page.html">  Sub
  page </a></body></html>"##;
/// The longest any route waits, so no test thread outlives the suite by much.
pub const MAX_WAIT: Duration = Duration::from_secs(20);
/// A connection that sends nothing for this long is closed.
const READ_TIMEOUT: Duration = Duration::from_secs(10);

/// A request as the server received it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Received {
    pub method: String,
    /// Path and query, as sent.
    pub target: String,
    /// Names in lower case, in order.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Received {
    /// The first header named `name` (lower case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// A running server; it lives until the test process exits.
pub struct Server {
    addr: SocketAddr,
    received: Arc<Mutex<Vec<Received>>>,
}

impl Server {
    /// Starts a server on a fresh loopback port.
    pub fn start() -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        let addr = listener.local_addr().expect("local address");
        let received = Arc::new(Mutex::new(Vec::new()));
        let log = received.clone();
        thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let log = log.clone();
                thread::spawn(move || serve(stream, &log));
            }
        });
        Server { addr, received }
    }

    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// `http://127.0.0.1:PORT`: the origin to grant.
    pub fn origin(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// `http://127.0.0.1:PORT{path}`.
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.origin())
    }

    /// The requests received so far, in order.
    pub fn received(&self) -> Vec<Received> {
        self.received.lock().expect("lock").clone()
    }
}

fn serve(stream: TcpStream, log: &Mutex<Vec<Received>>) {
    let _ = stream.set_read_timeout(Some(READ_TIMEOUT));
    let mut reader = BufReader::new(stream.try_clone().expect("clone the stream"));
    let mut out = stream;
    let tls = reader.fill_buf().is_ok_and(|b| b.first() == Some(&0x16));
    if tls {
        let _ = reply(
            &mut out,
            400,
            "text/plain",
            &[],
            b"this server speaks plain HTTP",
        );
        return;
    }
    let Some(mut request) = read_head(&mut reader) else {
        return;
    };
    if request.target.starts_with("/early") {
        log.lock().expect("lock").push(request);
        let _ = reply(&mut out, 200, "text/plain", &[], b"early");
        // Unread body bytes make the close a reset, which the sender sees.
        let _ = out.shutdown(std::net::Shutdown::Both);
        return;
    }
    let Some(body) = read_body(&mut reader, &request) else {
        return;
    };
    request.body = body;
    log.lock().expect("lock").push(request.clone());
    let (path, query) = match request.target.split_once('?') {
        Some((p, q)) => (p, q),
        None => (request.target.as_str(), ""),
    };
    let _ = match path {
        "/text" => reply(&mut out, 200, "text/plain", &[], TEXT.as_bytes()),
        "/page" => reply(&mut out, 200, "text/html", &[], PAGE.as_bytes()),
        "/echo" => {
            let body = echo(&request).to_string();
            reply(&mut out, 200, "application/json", &[], body.as_bytes())
        }
        "/goto" => reply(&mut out, 302, "text/plain", &[("location", query)], b""),
        "/slow" => {
            thread::sleep(wait(query));
            reply(&mut out, 200, "text/plain", &[], b"slow")
        }
        "/huge" => huge(&mut out, query.parse().unwrap_or(0)),
        "/never" => {
            thread::sleep(MAX_WAIT);
            Ok(())
        }
        // An empty ExportTraceServiceResponse: everything accepted.
        "/v1/traces" => reply(&mut out, 200, "application/x-protobuf", &[], b""),
        p if p.starts_with("/unavailable") => {
            reply(&mut out, 503, "text/plain", &[], b"unavailable")
        }
        _ => reply(&mut out, 404, "text/plain", &[], b"not found"),
    };
}

/// `MS`, or `MS&anything` (a tag that tells requests apart).
fn wait(query: &str) -> Duration {
    let ms = query.split('&').next().unwrap_or_default();
    Duration::from_millis(ms.parse().unwrap_or(0)).min(MAX_WAIT)
}

fn echo(r: &Received) -> Value {
    let headers: Map<String, Value> = r
        .headers
        .iter()
        .map(|(n, v)| (n.clone(), Value::String(v.clone())))
        .collect();
    json!({
        "method": r.method,
        "path": r.target,
        "headers": headers,
        "body": String::from_utf8_lossy(&r.body),
    })
}

/// The request line and headers; the body is left unread (empty).
fn read_head(reader: &mut impl BufRead) -> Option<Received> {
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    let mut parts = line.split_whitespace();
    let method = parts.next()?.to_string();
    let target = parts.next()?.to_string();
    let mut headers = Vec::new();
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).ok()?;
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        let (name, value) = line.split_once(':')?;
        headers.push((name.trim().to_ascii_lowercase(), value.trim().to_string()));
    }
    Some(Received {
        method,
        target,
        headers,
        body: Vec::new(),
    })
}

/// The body `head` announces: by length, chunked, or none.
fn read_body(reader: &mut impl BufRead, head: &Received) -> Option<Vec<u8>> {
    if let Some(len) = head.header("content-length") {
        let mut body = vec![0; len.parse().ok()?];
        reader.read_exact(&mut body).ok()?;
        Some(body)
    } else if head
        .header("transfer-encoding")
        .is_some_and(|t| t.eq_ignore_ascii_case("chunked"))
    {
        read_chunked(reader)
    } else {
        Some(Vec::new())
    }
}

fn read_chunked(reader: &mut impl BufRead) -> Option<Vec<u8>> {
    let mut body = Vec::new();
    loop {
        let mut size = String::new();
        reader.read_line(&mut size).ok()?;
        let size = usize::from_str_radix(size.trim().split(';').next()?, 16).ok()?;
        let mut chunk = vec![0; size + 2];
        reader.read_exact(&mut chunk).ok()?;
        if size == 0 {
            return Some(body);
        }
        body.extend_from_slice(&chunk[..size]);
    }
}

fn reply(
    out: &mut TcpStream,
    status: u16,
    content_type: &str,
    extra: &[(&str, &str)],
    body: &[u8],
) -> std::io::Result<()> {
    let mut head = format!(
        "HTTP/1.1 {status} {}\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\nconnection: close\r\n",
        reason(status),
        body.len()
    );
    for (name, value) in extra {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    out.write_all(head.as_bytes())?;
    out.write_all(body)?;
    out.flush()
}

fn huge(out: &mut TcpStream, bytes: usize) -> std::io::Result<()> {
    let head = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: {bytes}\r\nconnection: close\r\n\r\n"
    );
    out.write_all(head.as_bytes())?;
    let chunk = [b'x'; 16 << 10];
    let mut left = bytes;
    while left > 0 {
        let n = left.min(chunk.len());
        // The client hangs up once the body passes its limit; that ends the loop here.
        out.write_all(&chunk[..n])?;
        left -= n;
    }
    out.flush()
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        302 => "Found",
        400 => "Bad Request",
        503 => "Service Unavailable",
        _ => "Not Found",
    }
}
