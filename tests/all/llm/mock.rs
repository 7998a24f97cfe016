//! A mock model provider on `127.0.0.1:0`: answers each request with the next canned reply
//! (status, headers, body, optional delay) and keeps every request it received, so tests
//! can assert the wire shape. Real response shapes are built by [`openai`] and
//! [`anthropic`].

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use serde_json::{Value, json};

/// One canned answer.
#[derive(Debug, Clone)]
pub struct Canned {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
    pub delay: Duration,
}

impl Canned {
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
        self.headers.push((name.into(), value.into()));
        self
    }

    pub fn after(mut self, ms: u64) -> Canned {
        self.delay = Duration::from_millis(ms);
        self
    }
}

/// A request as received.
#[derive(Debug, Clone)]
pub struct Request {
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: Value,
}

impl Request {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// The text of message `i` (OpenAI shape) or of the system prompt and first user
    /// message joined (Anthropic shape, `i` ignored).
    pub fn text(&self) -> String {
        if let Some(m) = self.body["messages"].as_array()
            && self.body.get("system").is_some()
        {
            return format!(
                "{}\n{}",
                self.body["system"].as_str().unwrap_or(""),
                m[0]["content"].as_str().unwrap_or("")
            );
        }
        self.body["messages"]
            .as_array()
            .map(|ms| {
                ms.iter()
                    .filter_map(|m| m["content"].as_str())
                    .collect::<Vec<_>>()
                    .join("\n")
            })
            .unwrap_or_default()
    }
}

/// A running mock; it lives until the test process exits.
pub struct Mock {
    addr: SocketAddr,
    received: Arc<Mutex<Vec<Request>>>,
}

impl Mock {
    pub fn start(replies: Vec<Canned>) -> Mock {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        let addr = listener.local_addr().expect("address");
        let received = Arc::new(Mutex::new(Vec::new()));
        let queue = Arc::new(Mutex::new(VecDeque::from(replies)));
        let log = received.clone();
        thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let (log, queue) = (log.clone(), queue.clone());
                thread::spawn(move || serve(stream, &log, &queue));
            }
        });
        Mock { addr, received }
    }

    /// The base URL to configure: `http://127.0.0.1:PORT/v1`.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    pub fn requests(&self) -> Vec<Request> {
        self.received.lock().expect("lock").clone()
    }
}

fn serve(stream: TcpStream, log: &Mutex<Vec<Request>>, queue: &Mutex<VecDeque<Canned>>) {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
    let mut reader = BufReader::new(stream.try_clone().expect("clone"));
    let mut out = stream;
    // Keep-alive: serve requests on this connection until the client hangs up.
    while let Some(req) = read(&mut reader) {
        log.lock().expect("lock").push(req);
        let canned = queue.lock().expect("lock").pop_front().unwrap_or_else(|| {
            Canned::status(
                500,
                r#"{"error": {"message": "the mock has no more replies"}}"#,
            )
        });
        thread::sleep(canned.delay);
        let mut head = format!(
            "HTTP/1.1 {} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\n",
            canned.status,
            canned.body.len()
        );
        for (n, v) in &canned.headers {
            head.push_str(&format!("{n}: {v}\r\n"));
        }
        head.push_str("\r\n");
        if out.write_all(head.as_bytes()).is_err()
            || out.write_all(canned.body.as_bytes()).is_err()
            || out.flush().is_err()
        {
            return;
        }
    }
}

fn read(reader: &mut impl BufRead) -> Option<Request> {
    let mut line = String::new();
    if reader.read_line(&mut line).ok()? == 0 {
        return None;
    }
    let path = line.split_whitespace().nth(1)?.to_string();
    let mut headers = Vec::new();
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).ok()?;
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        let (n, v) = line.split_once(':')?;
        headers.push((n.trim().to_ascii_lowercase(), v.trim().to_string()));
    }
    let len: usize = headers
        .iter()
        .find(|(n, _)| n == "content-length")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0; len];
    reader.read_exact(&mut body).ok()?;
    Some(Request {
        path,
        headers,
        body: serde_json::from_slice(&body).unwrap_or(Value::Null),
    })
}

/// A `chat.completion` whose message content is `content`.
pub fn openai(content: &str, prompt_tokens: u64, completion_tokens: u64) -> Canned {
    Canned::json(json!({
        "id": "chatcmpl-mock",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": "gpt-4o-mini-2024-07-18",
        "choices": [{
            "index": 0,
            "message": {"role": "assistant", "content": content, "refusal": null},
            "logprobs": null,
            "finish_reason": "stop"
        }],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens
        }
    }))
}

/// A `message` whose only block is a call of `tool` with `input`.
pub fn anthropic(tool: &str, input: Value, input_tokens: u64, output_tokens: u64) -> Canned {
    Canned::json(json!({
        "id": "msg_mock",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5",
        "content": [{"type": "tool_use", "id": "toolu_mock", "name": tool, "input": input}],
        "stop_reason": "tool_use",
        "stop_sequence": null,
        "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens}
    }))
}
