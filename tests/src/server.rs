//! The one HTTP/1.1 server of the tests: bound to `127.0.0.1:0`, one thread per
//! connection, and a record of every request it received (so a test can assert the wire
//! shape of what a client sent, or that a denied request never arrived). Two ways to answer:
//!
//! - [`Server::start`]: fixed routes, one request per connection (`connection: close`):
//!   - `/text`: 200, `text/plain`, [`TEXT`];
//!   - `/page`: 200, `text/html`, [`PAGE`] (links to extract);
//!   - `/echo`: 200, JSON `{"method", "path", "headers": {name: value}, "body"}` of the request;
//!   - `/goto?LOCATION`: 302 to `LOCATION` (the whole query, taken as it is);
//!   - `/slow?MS[&TAG]`: waits MS milliseconds (at most [`MAX_WAIT`]), then 200 `slow`;
//!   - `/huge?BYTES`: 200 with a body of BYTES `x`s;
//!   - `/never`: reads the request and answers nothing for [`MAX_WAIT`], then hangs up;
//!   - `/early`: answers 200 `early` as soon as the request head is in, without reading the
//!     body, and hangs up (a client still sending a body sees its connection reset);
//!   - `/v1/traces`: 200, `application/x-protobuf`, empty (an OTLP/HTTP collector's
//!     success; the export is in [`Server::received`]);
//!   - `/unavailable…` (any path under it): 503 `unavailable` (a collector that is down);
//!   - anything else: 404 `not found`.
//! - [`Server::replying`]: whatever the path, the next [`Canned`] reply of a queue (a model
//!   provider's answers, refusals, slow answers), on kept-alive connections as a model
//!   provider serves them; a 500 once the queue is empty.
//! - [`Server::answering`]: as `replying`, each reply made from the request by a function
//!   (a mock model whose answer and token usage depend on the prompt it was sent).
//!
//! In both queued modes a request to a model provider's path (`…/responses`,
//! `…/chat/completions`, `…/messages`) that the official SDK's request type does not
//! allow ([`sdk`]) is answered 400 with the violations, and takes no reply off the queue.
//!
//! A TLS client hello gets a plain-text 400, so TLS to this server fails fast.

pub mod sdk;
pub(crate) mod wire;

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use serde_json::{Map, Value, json};

pub use self::wire::Received;
use self::wire::{read_body, read_head, respond, write_head};

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

/// One queued answer of [`Server::replying`]: JSON unless a header says otherwise.
#[derive(Debug, Clone)]
pub struct Canned {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
    /// How long to wait before answering.
    pub delay: Duration,
}

impl Canned {
    /// 200 with `body`.
    pub fn json(body: Value) -> Canned {
        Canned::status(200, &body.to_string())
    }

    pub fn status(status: u16, body: &str) -> Canned {
        Canned {
            status,
            headers: Vec::new(),
            body: body.to_string(),
            delay: Duration::ZERO,
        }
    }

    pub fn header(mut self, name: &str, value: &str) -> Canned {
        self.headers.push((name.to_ascii_lowercase(), value.into()));
        self
    }

    /// Answers after `ms` milliseconds.
    pub fn after(mut self, ms: u64) -> Canned {
        self.delay = Duration::from_millis(ms);
        self
    }

    fn exhausted() -> Canned {
        Canned::status(
            500,
            r#"{"error": {"message": "the test server has no more replies"}}"#,
        )
    }
}

/// A reply made from the request it answers.
type Answer = Box<dyn Fn(&Received) -> Canned + Send + Sync>;

enum Answers {
    Routes,
    Queue(Mutex<VecDeque<Canned>>),
    Func(Answer),
}

struct Shared {
    answers: Answers,
    received: Mutex<Vec<Received>>,
}

impl Shared {
    fn record(&self, request: Received) {
        self.received.lock().expect("lock").push(request);
    }
}

/// A running server; it lives until the test process exits.
pub struct Server {
    addr: SocketAddr,
    shared: Arc<Shared>,
}

impl Server {
    /// Starts a server with the routes of the module doc on a fresh loopback port.
    pub fn start() -> Server {
        Server::spawn(Answers::Routes)
    }

    /// Starts a server that answers each request with the next of `replies`.
    pub fn replying(replies: Vec<Canned>) -> Server {
        Server::spawn(Answers::Queue(Mutex::new(replies.into())))
    }

    /// Starts a server that answers each request with `answer(request)`.
    pub fn answering(answer: impl Fn(&Received) -> Canned + Send + Sync + 'static) -> Server {
        Server::spawn(Answers::Func(Box::new(answer)))
    }

    fn spawn(answers: Answers) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        let addr = listener.local_addr().expect("local address");
        let shared = Arc::new(Shared {
            answers,
            received: Mutex::new(Vec::new()),
        });
        let for_thread = shared.clone();
        thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let shared = for_thread.clone();
                thread::spawn(move || serve(stream, &shared));
            }
        });
        Server { addr, shared }
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
        self.shared.received.lock().expect("lock").clone()
    }
}

/// `http://127.0.0.1:PORT` of a port nothing listens on (bound, then closed again): a
/// collector or provider that is down.
pub fn closed_origin() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
    format!("http://{}", listener.local_addr().expect("local address"))
}

fn serve(stream: TcpStream, shared: &Shared) {
    let _ = stream.set_read_timeout(Some(READ_TIMEOUT));
    let mut reader = BufReader::new(stream.try_clone().expect("clone the stream"));
    let mut out = stream;
    let tls = reader.fill_buf().is_ok_and(|b| b.first() == Some(&0x16));
    if tls {
        let _ = plain(
            &mut out,
            400,
            "text/plain",
            &[],
            b"this server speaks plain HTTP",
        );
        return;
    }
    match &shared.answers {
        Answers::Routes => {
            if let Some(request) = read_head(&mut reader) {
                route(request, &mut reader, &mut out, shared);
            }
        }
        // Until the client hangs up: model clients keep their connections alive.
        answers => {
            while let Some(mut request) = read_head(&mut reader) {
                let Some(body) = read_body(&mut reader, &request) else {
                    return;
                };
                request.body = body;
                let canned = if let Some(why) = sdk::check(&request.target, &request.body) {
                    eprintln!("{why}");
                    Canned::status(400, &why)
                } else {
                    match answers {
                        Answers::Func(f) => f(&request),
                        Answers::Queue(queue) => queue
                            .lock()
                            .expect("lock")
                            .pop_front()
                            .unwrap_or_else(Canned::exhausted),
                        Answers::Routes => Canned::exhausted(),
                    }
                };
                shared.record(request);
                if queued(&mut out, canned).is_err() {
                    return;
                }
            }
        }
    }
}

fn queued(out: &mut TcpStream, canned: Canned) -> std::io::Result<()> {
    thread::sleep(canned.delay);
    let mut headers: Vec<(&str, &str)> = canned
        .headers
        .iter()
        .map(|(n, v)| (n.as_str(), v.as_str()))
        .collect();
    if !headers.iter().any(|(n, _)| *n == "content-type") {
        headers.insert(0, ("content-type", "application/json"));
    }
    respond(out, canned.status, &headers, canned.body.as_bytes())
}

fn route(mut request: Received, reader: &mut impl BufRead, out: &mut TcpStream, shared: &Shared) {
    if request.target.starts_with("/early") {
        shared.record(request);
        let _ = plain(out, 200, "text/plain", &[], b"early");
        // Unread body bytes make the close a reset, which the sender sees.
        let _ = out.shutdown(std::net::Shutdown::Both);
        return;
    }
    let Some(body) = read_body(reader, &request) else {
        return;
    };
    request.body = body;
    shared.record(request.clone());
    let (path, query) = match request.target.split_once('?') {
        Some((p, q)) => (p, q),
        None => (request.target.as_str(), ""),
    };
    let _ = match path {
        "/text" => plain(out, 200, "text/plain", &[], TEXT.as_bytes()),
        "/page" => plain(out, 200, "text/html", &[], PAGE.as_bytes()),
        "/echo" => {
            let body = echo(&request).to_string();
            plain(out, 200, "application/json", &[], body.as_bytes())
        }
        "/goto" => plain(out, 302, "text/plain", &[("location", query)], b""),
        "/slow" => {
            thread::sleep(wait(query));
            plain(out, 200, "text/plain", &[], b"slow")
        }
        "/huge" => huge(out, query.parse().unwrap_or(0)),
        "/never" => {
            thread::sleep(MAX_WAIT);
            Ok(())
        }
        // An empty ExportTraceServiceResponse: everything accepted.
        "/v1/traces" => plain(out, 200, "application/x-protobuf", &[], b""),
        p if p.starts_with("/unavailable") => plain(out, 503, "text/plain", &[], b"unavailable"),
        _ => plain(out, 404, "text/plain", &[], b"not found"),
    };
}

/// A route's answer: one per connection.
fn plain(
    out: &mut TcpStream,
    status: u16,
    content_type: &str,
    extra: &[(&str, &str)],
    body: &[u8],
) -> std::io::Result<()> {
    let mut headers = vec![("content-type", content_type), ("connection", "close")];
    headers.extend_from_slice(extra);
    respond(out, status, &headers, body)
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

fn huge(out: &mut TcpStream, bytes: usize) -> std::io::Result<()> {
    let headers = [("content-type", "text/plain"), ("connection", "close")];
    write_head(out, 200, &headers, bytes)?;
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
