//! Serving streamable HTTP on hyper: one endpoint, `/mcp`; `Host` and `Origin` checked
//! against the bound address (DNS-rebinding protection, as the transport spec requires);
//! a bearer token required when one is set, and required for any non-loopback bind.
//! Sessions (revisions before 2026-07-28) and stateless requests (2026-07-28) are served
//! in parallel, within the server's cap on calls in flight. Connections are accepted under
//! [`ConnLimits`] (a cap, header and body timeouts: `toolhost-listen`), sessions kept under
//! [`SessionLimits`] (`sessions`).

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::{Method, Request, Response, StatusCode};
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use sha2::{Digest, Sha256};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use toolhost_listen::{ConnLimits, Deadline, LimitError};

use crate::Server;
use crate::sessions::{SessionLimits, Sessions};

/// The path the MCP endpoint is served on.
pub const PATH: &str = "/mcp";

/// The largest request body accepted, before any tool's own `max_args_bytes` applies.
const MAX_BODY: usize = 4 << 20;

/// What a client refused for want of room is told to wait, in seconds.
const RETRY_AFTER_S: &str = "5";

type Service = StreamableHttpService<Server, Sessions>;

/// Who may call.
#[derive(Clone)]
pub struct Auth {
    /// SHA-256 of the token, so a comparison takes the same time whatever the guess.
    digest: Option<[u8; 32]>,
}

impl std::fmt::Debug for Auth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Auth")
            .field("token", &self.digest.as_ref().map(|_| "<set>"))
            .finish()
    }
}

impl Auth {
    /// Anyone who can reach the socket (loopback binds only).
    pub fn none() -> Auth {
        Auth { digest: None }
    }

    /// Requests must carry `Authorization: Bearer TOKEN`.
    pub fn bearer(token: &str) -> Result<Auth, HttpError> {
        let token = token.trim();
        if token.is_empty() {
            return Err(HttpError::EmptyToken);
        }
        Ok(Auth {
            digest: Some(Sha256::digest(token.as_bytes()).into()),
        })
    }

    fn admits<B>(&self, req: &Request<B>) -> bool {
        let Some(want) = &self.digest else {
            return true;
        };
        let given = req
            .headers()
            .get(hyper::header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .map(|t| <[u8; 32]>::from(Sha256::digest(t.trim().as_bytes())));
        given.is_some_and(|g| g.iter().zip(want).fold(0u8, |acc, (a, b)| acc | (a ^ b)) == 0)
    }
}

/// Where and how to serve HTTP.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct HttpConfig {
    pub bind: SocketAddr,
    pub auth: Auth,
    /// More `Host` names to accept besides the bound address and loopback names (for a
    /// server behind a proxy that keeps the client's `Host`).
    pub allowed_hosts: Vec<String>,
    /// The connection cap and timeouts ([`ConnLimits::default`] unless set).
    pub connections: ConnLimits,
    /// The session cap and idle limit ([`SessionLimits::default`] unless set).
    pub sessions: SessionLimits,
}

impl HttpConfig {
    pub fn new(bind: SocketAddr, auth: Auth) -> HttpConfig {
        HttpConfig {
            bind,
            auth,
            allowed_hosts: Vec::new(),
            connections: ConnLimits::default(),
            sessions: SessionLimits::default(),
        }
    }

    pub fn connections(mut self, limits: ConnLimits) -> HttpConfig {
        self.connections = limits;
        self
    }

    pub fn sessions(mut self, limits: SessionLimits) -> HttpConfig {
        self.sessions = limits;
        self
    }

    pub fn allow_hosts(mut self, hosts: Vec<String>) -> HttpConfig {
        self.allowed_hosts = hosts;
        self
    }
}

/// Why the HTTP server cannot start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HttpError {
    #[error(
        "refusing to serve MCP on {addr} without authentication: a non-loopback address is reachable by other machines; set a bearer token (--token-file FILE or TOOLHOST_MCP_TOKEN), or bind 127.0.0.1 and put an authenticating proxy in front"
    )]
    Unauthenticated { addr: SocketAddr },
    #[error("the bearer token is empty")]
    EmptyToken,
    #[error(transparent)]
    Connections(#[from] LimitError),
    #[error("a cap of 0 sessions would serve nobody: give at least 1")]
    NoSessions,
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
}

/// A bound listener, ready to serve.
pub struct Listening {
    listener: TcpListener,
    service: Arc<Service>,
    sessions: Arc<Sessions>,
    connections: ConnLimits,
    auth: Auth,
}

impl Listening {
    /// The address actually bound (the port chosen for port 0).
    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// Serves until `stop` is cancelled.
    pub async fn serve(self, stop: CancellationToken) {
        tokio::spawn(self.sessions.clone().sweep(stop.clone()));
        let (service, sessions, auth) = (self.service, self.sessions, self.auth);
        let handle = hyper::service::service_fn(move |req: Request<Deadline<Incoming>>| {
            let (service, sessions, auth) = (service.clone(), sessions.clone(), auth.clone());
            async move { Ok::<_, Infallible>(route(&service, &sessions, &auth, req).await) }
        });
        toolhost_listen::serve(self.listener, self.connections, handle, stop).await;
    }
}

async fn route(
    service: &Service,
    sessions: &Sessions,
    auth: &Auth,
    req: Request<Deadline<Incoming>>,
) -> Response<BoxBody<Bytes, Infallible>> {
    if req.uri().path() != PATH {
        return plain(
            StatusCode::NOT_FOUND,
            format!("not found: the MCP endpoint is {PATH}"),
        );
    }
    if !auth.admits(&req) {
        let mut r = plain(
            StatusCode::UNAUTHORIZED,
            "a bearer token is required: send `Authorization: Bearer TOKEN`".into(),
        );
        r.headers_mut().insert(
            hyper::header::WWW_AUTHENTICATE,
            hyper::header::HeaderValue::from_static("Bearer"),
        );
        return r;
    }
    // A POST without a session may open one (an `initialize`): refused here, with a status
    // that says wait, when no session could make room for it.
    let new_session = req.method() == Method::POST && !req.headers().contains_key("mcp-session-id");
    if new_session && sessions.full() {
        let mut r = plain(
            StatusCode::SERVICE_UNAVAILABLE,
            "too many sessions, each with a call or stream open: retry later".into(),
        );
        r.headers_mut().insert(
            hyper::header::RETRY_AFTER,
            hyper::header::HeaderValue::from_static(RETRY_AFTER_S),
        );
        return r;
    }
    let closing = req.method() == Method::DELETE;
    let mut r = service.handle(req).await;
    // rmcp answers a closed session 202 (Accepted), which clients read as a failure (the
    // Python SDK logs "Session termination failed: 202"); it is done, so 200.
    if closing && r.status() == StatusCode::ACCEPTED {
        *r.status_mut() = StatusCode::OK;
    }
    r
}

fn plain(status: StatusCode, text: String) -> Response<BoxBody<Bytes, Infallible>> {
    let mut r = Response::new(Full::new(Bytes::from(text)).boxed());
    *r.status_mut() = status;
    r
}

/// Binds `config.bind` for `server`, refusing a non-loopback address without a token.
/// Calls end when `stop` is cancelled (sessions too).
pub async fn bind(
    server: Server,
    config: HttpConfig,
    stop: &CancellationToken,
) -> Result<Listening, HttpError> {
    if !config.bind.ip().is_loopback() && config.auth.digest.is_none() {
        return Err(HttpError::Unauthenticated { addr: config.bind });
    }
    config.connections.check()?;
    if config.sessions.max_sessions == 0 {
        return Err(HttpError::NoSessions);
    }
    let listener = TcpListener::bind(config.bind)
        .await
        .map_err(|source| HttpError::Bind {
            addr: config.bind,
            source,
        })?;
    let addr = listener.local_addr().map_err(|source| HttpError::Bind {
        addr: config.bind,
        source,
    })?;
    let port = addr.port();
    let mut hosts = vec![
        "localhost".to_string(),
        "127.0.0.1".to_string(),
        "::1".to_string(),
    ];
    if !addr.ip().is_unspecified() {
        hosts.push(addr.ip().to_string());
    }
    hosts.extend(config.allowed_hosts.iter().cloned());
    // Browsers may only call from a page served by this same origin; a page elsewhere
    // (DNS rebinding, a hostile site) is refused. Clients that send no Origin pass.
    let origins: Vec<String> = hosts
        .iter()
        .map(|h| match h.parse::<std::net::Ipv6Addr>() {
            Ok(_) => format!("http://[{h}]:{port}"),
            Err(_) => format!("http://{h}:{port}"),
        })
        .collect();
    let http = StreamableHttpServerConfig::default()
        .with_allowed_hosts(hosts)
        .with_allowed_origins(origins)
        .enforce_origin_validation()
        .with_max_request_body_bytes(MAX_BODY)
        .with_cancellation_token(stop.child_token());
    let sessions = Arc::new(Sessions::new(config.sessions));
    let service = StreamableHttpService::new(move || Ok(server.session()), sessions.clone(), http);
    Ok(Listening {
        listener,
        service: Arc::new(service),
        sessions,
        connections: config.connections,
        auth: config.auth,
    })
}
