//! The I/O of an allowed request: the host's name lookup, the TCP connection to the one
//! checked address, TLS, and the HTTP/1.1 handshake.
//!
//! All of it runs on a small runtime of its own (`EGRESS`), so that egress works whatever
//! runtime the embedder drives calls with (the CLI's has no I/O driver), and is cancelled
//! with the call: every task is held by a [`Task`], which aborts it when dropped.

use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::{Arc, LazyLock};
use std::task::{Context, Poll};
use std::time::Duration;

use hyper::client::conn::http1::{self, SendRequest};
use rustls::pki_types::ServerName;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio::task::JoinHandle;
use wasmtime_wasi_http::io::TokioIo;
use wasmtime_wasi_http::{Error, RequestOptions, WasiBody};

use super::decide::Target;
use crate::grants::Scheme;

/// Used for each timeout the guest's `request-options` leave unset. The call's own
/// deadline (`Limits::timeout`) is usually much shorter and ends the call first.
pub(super) const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// The timeouts of one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Timeouts {
    /// Name lookup, TCP connect, TLS and HTTP handshake, each.
    pub connect: Duration,
    /// From sending the request to its response's status and headers.
    pub first_byte: Duration,
    /// Between two frames of the response body.
    pub between_bytes: Duration,
}

impl Timeouts {
    pub fn new(options: Option<RequestOptions>) -> Timeouts {
        let o = options.unwrap_or_default();
        // A zero timeout would fail every request at once; treat it as unset.
        let pick = |d: Option<Duration>| d.filter(|d| !d.is_zero()).unwrap_or(DEFAULT_TIMEOUT);
        Timeouts {
            connect: pick(o.connect_timeout),
            first_byte: pick(o.first_byte_timeout),
            between_bytes: pick(o.between_bytes_timeout),
        }
    }
}

static EGRESS: LazyLock<tokio::runtime::Runtime> = LazyLock::new(|| {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("toolhost-egress")
        .enable_all()
        .build()
        .expect("cannot start the egress runtime")
});

/// A task on the egress runtime, aborted when this handle is dropped (the call ended or
/// the guest dropped the request or response).
pub(super) struct Task<T>(JoinHandle<Result<T, Error>>);

impl<T: Send + 'static> Task<T> {
    pub fn spawn(f: impl Future<Output = Result<T, Error>> + Send + 'static) -> Task<T> {
        Task(EGRESS.spawn(f))
    }
}

impl<T> Drop for Task<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}

impl<T> Future for Task<T> {
    type Output = Result<T, Error>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        Pin::new(&mut self.0).poll(cx).map(|joined| {
            joined.unwrap_or_else(|e| Err(Error::InternalError(Some(format!("egress task: {e}")))))
        })
    }
}

/// Resolves `host` on the host (never by the guest's resolver), in the resolver's order.
pub(super) async fn resolve(
    host: &str,
    port: u16,
    timeout: Duration,
) -> Result<Vec<IpAddr>, Error> {
    let found = tokio::time::timeout(timeout, tokio::net::lookup_host((host, port)))
        .await
        .map_err(|_| Error::DnsTimeout)?
        .map_err(|e| Error::DnsError {
            rcode: Some(e.to_string()),
            info_code: None,
        })?;
    Ok(found.map(|a| a.ip()).collect())
}

pub(super) trait Stream: AsyncRead + AsyncWrite + Send + Sync + Unpin + 'static {}
impl<T: AsyncRead + AsyncWrite + Send + Sync + Unpin + 'static> Stream for T {}

pub(super) type Connection = http1::Connection<TokioIo<Box<dyn Stream>>, WasiBody>;

/// Connects to `addr` (already checked: it is never resolved again) and speaks HTTP/1.1
/// to `target`, over TLS for `https`.
pub(super) async fn open(
    addr: SocketAddr,
    target: &Target,
    timeout: Duration,
) -> Result<(SendRequest<WasiBody>, Connection), Error> {
    let tcp = tokio::time::timeout(timeout, TcpStream::connect(addr))
        .await
        .map_err(|_| Error::ConnectionTimeout)?
        .map_err(connect_error)?;
    let _ = tcp.set_nodelay(true);
    let stream: Box<dyn Stream> = match target.scheme {
        Scheme::Http => Box::new(tcp),
        Scheme::Https => {
            let name = server_name(target)?;
            let tls = tokio_rustls::TlsConnector::from(TLS.clone());
            let stream = tokio::time::timeout(timeout, tls.connect(name, tcp))
                .await
                .map_err(|_| Error::ConnectionTimeout)?
                .map_err(tls_error)?;
            Box::new(stream)
        }
    };
    tokio::time::timeout(timeout, http1::handshake(TokioIo::new(stream)))
        .await
        .map_err(|_| Error::ConnectionTimeout)?
        .map_err(Error::Hyper)
}

/// Mozilla's roots (compiled in, so the host's trust store cannot widen them), ring as the
/// provider (set explicitly: another crate's choice of process default must not matter).
static TLS: LazyLock<Arc<rustls::ClientConfig>> = LazyLock::new(|| {
    let roots = rustls::RootCertStore {
        roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
    };
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("ring supports the default protocol versions")
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Arc::new(config)
});

/// SNI and the name the certificate must carry: the request's host, as written.
fn server_name(target: &Target) -> Result<ServerName<'static>, Error> {
    match target.ip() {
        Some(ip) => Ok(ServerName::IpAddress(ip.into())),
        None => ServerName::try_from(target.host.clone()).map_err(|e| Error::DnsError {
            rcode: Some(format!(
                "`{}` is not a valid TLS server name: {e}",
                target.host
            )),
            info_code: None,
        }),
    }
}

fn connect_error(e: std::io::Error) -> Error {
    use std::io::ErrorKind as K;
    match e.kind() {
        K::ConnectionRefused => Error::ConnectionRefused,
        K::TimedOut => Error::ConnectionTimeout,
        K::ConnectionReset | K::ConnectionAborted => Error::ConnectionTerminated,
        K::HostUnreachable | K::NetworkUnreachable => Error::DestinationUnavailable,
        _ => Error::Connect(e),
    }
}

/// Certificate problems and alerts as their own codes, so a tool can say which it was.
fn tls_error(e: std::io::Error) -> Error {
    match e
        .get_ref()
        .and_then(|inner| inner.downcast_ref::<rustls::Error>())
    {
        Some(rustls::Error::InvalidCertificate(_)) => Error::TlsCertificateError,
        Some(rustls::Error::AlertReceived(alert)) => Error::TlsAlertReceived {
            alert_id: Some(u8::from(*alert)),
            alert_message: Some(format!("{alert:?}")),
        },
        Some(_) => Error::TlsProtocolError,
        None => Error::Tls(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unset_or_zero_timeouts_fall_back_to_the_default() {
        assert_eq!(Timeouts::new(None).connect, DEFAULT_TIMEOUT);
        let t = Timeouts::new(Some(RequestOptions {
            connect_timeout: Some(Duration::from_secs(2)),
            first_byte_timeout: Some(Duration::ZERO),
            between_bytes_timeout: None,
        }));
        assert_eq!(
            t,
            Timeouts {
                connect: Duration::from_secs(2),
                first_byte: DEFAULT_TIMEOUT,
                between_bytes: DEFAULT_TIMEOUT,
            }
        );
    }

    #[test]
    fn tls_names_the_requested_host() {
        let t = |host: &str| Target {
            scheme: Scheme::Https,
            host: host.into(),
            port: 443,
        };
        assert_eq!(
            server_name(&t("api.example.com")).unwrap(),
            ServerName::try_from("api.example.com").unwrap()
        );
        assert_eq!(
            server_name(&t("::1")).unwrap(),
            ServerName::IpAddress("::1".parse::<IpAddr>().unwrap().into())
        );
    }

    #[test]
    fn refused_connections_keep_their_code() {
        let e = std::io::Error::from(std::io::ErrorKind::ConnectionRefused);
        assert!(matches!(connect_error(e), Error::ConnectionRefused));
    }
}
