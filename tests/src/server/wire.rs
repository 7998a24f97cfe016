//! HTTP/1.1 on the server's side, as much as the tests need: a request head and its body
//! (by length or chunked) in, a response head and body out.

use std::io::{BufRead, Write};

use serde_json::Value;

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

    /// The body as JSON; `Null` when it is not JSON (a model client always sends JSON,
    /// so a test indexing into `Null` fails on the value it expected).
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or(Value::Null)
    }
}

/// The request line and headers; the body is left unread (empty). `None` when the
/// client hung up (also between requests on a kept-alive connection) or sent no HTTP.
pub(crate) fn read_head(reader: &mut impl BufRead) -> Option<Received> {
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
pub(crate) fn read_body(reader: &mut impl BufRead, head: &Received) -> Option<Vec<u8>> {
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

/// A whole response: status, `headers`, a `content-length` and `body`.
pub(crate) fn respond(
    out: &mut impl Write,
    status: u16,
    headers: &[(&str, &str)],
    body: &[u8],
) -> std::io::Result<()> {
    write_head(out, status, headers, body.len())?;
    out.write_all(body)?;
    out.flush()
}

/// The status line and headers of a response whose body of `len` bytes follows.
pub(super) fn write_head(
    out: &mut impl Write,
    status: u16,
    headers: &[(&str, &str)],
    len: usize,
) -> std::io::Result<()> {
    let mut head = format!("HTTP/1.1 {status} {}\r\n", reason(status));
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str(&format!("content-length: {len}\r\n\r\n"));
    out.write_all(head.as_bytes())
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        302 => "Found",
        400 => "Bad Request",
        404 => "Not Found",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        503 => "Service Unavailable",
        // Clients read the code, not the phrase.
        _ => "Status",
    }
}
