//! The accept loop and its connections: a permit of the connection cap is taken before
//! each accept (so past the cap nothing is accepted and no descriptor is spent), and each
//! connection is served by hyper's HTTP/1 with the header timeout, its request bodies
//! under their deadline, until it closes or the server stops.

use std::sync::Arc;
use std::time::Duration;

use hyper::body::{Body, Incoming};
use hyper::{Request, Response};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_util::sync::CancellationToken;

use crate::ConnLimits;
use crate::accept::Acceptor;
use crate::body::Deadline;

/// How long connections may go on finishing their responses once the server stops.
const DRAIN: Duration = Duration::from_secs(5);

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Serves `service` on `listener` within `limits` until `stop` is cancelled, then lets the
/// connections finish their responses (for a few seconds at most) and returns. `limits`
/// should have passed [`ConnLimits::check`]; a cap of 0 is taken as 1.
pub async fn serve<S, B>(
    listener: TcpListener,
    limits: ConnLimits,
    service: S,
    stop: CancellationToken,
) where
    S: hyper::service::Service<Request<Deadline<Incoming>>, Response = Response<B>>
        + Clone
        + Send
        + 'static,
    S::Future: Send + 'static,
    S::Error: Into<BoxError>,
    B: Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<BoxError>,
{
    let cap = limits.max_connections.clamp(1, Semaphore::MAX_PERMITS);
    let permits = Arc::new(Semaphore::new(cap));
    let mut acceptor = Acceptor::new(listener);
    loop {
        let permit = tokio::select! {
            p = permits.clone().acquire_owned() => p.expect("the semaphore is never closed"),
            () = stop.cancelled() => break,
        };
        let tcp = tokio::select! {
            tcp = acceptor.accept() => tcp,
            () = stop.cancelled() => break,
        };
        tokio::spawn(connection(
            tcp,
            limits,
            service.clone(),
            stop.clone(),
            permit,
        ));
    }
    // Every permit back means every connection closed.
    let all = u32::try_from(cap).unwrap_or(u32::MAX);
    let _ = tokio::time::timeout(DRAIN, permits.acquire_many(all)).await;
}

async fn connection<S, B>(
    tcp: TcpStream,
    limits: ConnLimits,
    service: S,
    stop: CancellationToken,
    _permit: OwnedSemaphorePermit,
) where
    S: hyper::service::Service<Request<Deadline<Incoming>>, Response = Response<B>>
        + Send
        + 'static,
    S::Future: Send + 'static,
    S::Error: Into<BoxError>,
    B: Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<BoxError>,
{
    let _ = tcp.set_nodelay(true);
    let body_timeout = limits.body_timeout;
    let bounded = hyper::service::service_fn(move |req: Request<Incoming>| {
        service.call(req.map(|b| Deadline::new(b, body_timeout)))
    });
    let mut http = hyper::server::conn::http1::Builder::new();
    // The timer starts when hyper waits for a request head: on a new connection, and on a
    // kept-alive one after each response, so one timeout closes both slow and idle ones.
    http.timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout);
    let conn = http.serve_connection(TokioIo::new(tcp), bounded);
    tokio::pin!(conn);
    let ended = tokio::select! {
        ended = conn.as_mut() => ended,
        () = stop.cancelled() => {
            conn.as_mut().graceful_shutdown();
            conn.await
        }
    };
    if let Err(e) = ended {
        tracing::debug!(error = %e, "connection closed");
    }
}
