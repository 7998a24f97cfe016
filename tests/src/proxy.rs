//! A round-robin HTTP/1.1 proxy in front of replicas, as a load balancer without stickiness
//! puts it: bound to `127.0.0.1:0`, one thread per client connection, each request sent to
//! the next replica in turn on a connection of its own (`connection: close`, so the next
//! request of the client goes through the proxy's choice again). A replica that refuses the
//! connection (it died) is skipped for the next one, as a balancer's passive health check
//! does; only when none takes the request is it answered 502 and counted as failed. The
//! response is passed back as it comes (an event stream too), byte for byte.

use std::io::{BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use crate::server::wire::{Received, read_body, read_head, respond};

/// How long the proxy waits for a replica to accept a connection.
const CONNECT: Duration = Duration::from_secs(2);

/// The proxy; it serves until the test process ends.
pub struct RoundRobin {
    addr: SocketAddr,
    state: Arc<State>,
}

struct State {
    replicas: Vec<SocketAddr>,
    next: AtomicUsize,
    /// Requests each replica answered.
    served: Mutex<Vec<usize>>,
    /// Requests no replica answered (502).
    failed: AtomicUsize,
}

impl RoundRobin {
    /// Starts a proxy in front of `replicas`.
    pub fn start(replicas: Vec<SocketAddr>) -> RoundRobin {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the proxy");
        let addr = listener.local_addr().expect("the proxy's address");
        let state = Arc::new(State {
            served: Mutex::new(vec![0; replicas.len()]),
            replicas,
            next: AtomicUsize::new(0),
            failed: AtomicUsize::new(0),
        });
        let shared = state.clone();
        thread::spawn(move || {
            for client in listener.incoming().map_while(Result::ok) {
                let state = shared.clone();
                thread::spawn(move || state.forward(client));
            }
        });
        RoundRobin { addr, state }
    }

    /// `http://127.0.0.1:PORT` + `path`.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// Requests each replica answered, in the order the replicas were given.
    pub fn served(&self) -> Vec<usize> {
        self.state.served.lock().expect("served lock").clone()
    }

    /// Requests that no replica answered.
    pub fn failed(&self) -> usize {
        self.state.failed.load(Ordering::SeqCst)
    }
}

impl State {
    /// One request of `client` to the next replica that takes it; its answer back.
    fn forward(&self, client: TcpStream) {
        let _ = client.set_read_timeout(Some(Duration::from_secs(30)));
        let Ok(reading) = client.try_clone() else {
            return;
        };
        let mut reader = BufReader::new(reading);
        let Some(mut head) = read_head(&mut reader) else {
            return;
        };
        let Some(body) = read_body(&mut reader, &head) else {
            return;
        };
        head.body = body;
        let mut client = client;
        let first = self.next.fetch_add(1, Ordering::SeqCst);
        for i in 0..self.replicas.len() {
            let at = (first + i) % self.replicas.len();
            let Ok(mut replica) = TcpStream::connect_timeout(&self.replicas[at], CONNECT) else {
                continue;
            };
            if replica.write_all(&request(&head)).is_err() {
                continue;
            }
            // A replica that accepted the request but died before answering gave nothing:
            // that is a failed request, never a silent retry (the call may have run).
            match pass_back(&mut replica, &mut client) {
                0 => break,
                _ => {
                    self.served.lock().expect("served lock")[at] += 1;
                    return;
                }
            }
        }
        self.failed.fetch_add(1, Ordering::SeqCst);
        let _ = respond(&mut client, 502, &[], b"no replica answered");
    }
}

/// `head` and its body as a request on a connection of its own.
fn request(head: &Received) -> Vec<u8> {
    let mut out = format!("{} {} HTTP/1.1\r\n", head.method, head.target);
    let hop = [
        "connection",
        "keep-alive",
        "transfer-encoding",
        "content-length",
    ];
    for (name, value) in head
        .headers
        .iter()
        .filter(|(n, _)| !hop.contains(&n.as_str()))
    {
        out.push_str(&format!("{name}: {value}\r\n"));
    }
    out.push_str(&format!(
        "content-length: {}\r\nconnection: close\r\n\r\n",
        head.body.len()
    ));
    let mut bytes = out.into_bytes();
    bytes.extend_from_slice(&head.body);
    bytes
}

/// Copies what `replica` answers to `client` until the replica closes; the bytes copied.
fn pass_back(replica: &mut TcpStream, client: &mut TcpStream) -> usize {
    let mut buf = [0u8; 16 * 1024];
    let mut copied = 0;
    loop {
        match replica.read(&mut buf) {
            Ok(0) | Err(_) => return copied,
            Ok(n) => {
                if client.write_all(&buf[..n]).is_err() {
                    return copied + n;
                }
                copied += n;
            }
        }
    }
}
