//! The bodies of an allowed request.
//!
//! - [`GuardedBody`]: the response body handed to the guest, capped at
//!   `Limits::max_http_response_bytes` and failed if the server goes quiet for longer than
//!   the between-bytes timeout.
//! - [`KeptBody`]: the guest's request body as hyper sees it, kept open after hyper is
//!   done with it.
//!
//! wasmtime-wasi-http 48 passes a body error to the guest as a stream error whose
//! `http-error-code` is none (it looks for its p2 `error-code` type, not the embedder
//! `Error` every body yields), so the guest sees the error's message, e.g. "HTTP response
//! body size exceeds limit: 8388608 bytes", rather than the code itself.

use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, ready};
use std::time::Duration;

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use tokio::time::{Instant, Sleep};
use wasmtime_wasi_http::{Error, WasiBody};

use crate::sandbox::audit::{AuditEvent, AuditLog};

/// A response body that fails with `HTTP-response-body-size` once more than `limit` bytes
/// have arrived, recording the tripped limit once.
pub(super) struct GuardedBody<B> {
    inner: B,
    limit: u64,
    received: u64,
    between_bytes: Duration,
    idle: Pin<Box<Sleep>>,
    /// Once the body has failed it stays ended: no more bytes reach the guest.
    done: bool,
    audit: AuditLog,
    /// `METHOD URL`, for the limit's audit detail.
    request: String,
    /// The request body, kept open as long as the response lives.
    _kept: Option<Kept>,
}

impl<B> GuardedBody<B> {
    pub fn new(
        inner: B,
        limit: usize,
        between_bytes: Duration,
        audit: AuditLog,
        request: String,
    ) -> GuardedBody<B> {
        GuardedBody {
            inner,
            limit: u64::try_from(limit).unwrap_or(u64::MAX),
            received: 0,
            between_bytes,
            idle: Box::pin(tokio::time::sleep(between_bytes)),
            done: false,
            audit,
            request,
            _kept: None,
        }
    }

    /// Keeps the request body behind `kept` open while this body lives.
    pub fn holding(mut self, kept: Kept) -> GuardedBody<B> {
        self._kept = Some(kept);
        self
    }

    fn too_large(&mut self) -> Error {
        self.done = true;
        self.audit.record(AuditEvent::Limit {
            limit: "http-response".into(),
            detail: format!(
                "the response body of {} was longer than {} bytes (max_http_response_bytes)",
                self.request, self.limit
            ),
        });
        Error::HttpResponseBodySize(Some(self.limit))
    }
}

impl<B> Body for GuardedBody<B>
where
    B: Body<Data = Bytes> + Unpin,
    B::Error: Into<Error>,
{
    type Data = Bytes;
    type Error = Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Error>>> {
        let this = &mut *self;
        if this.done {
            return Poll::Ready(None);
        }
        match Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) => {
                if let Some(data) = frame.data_ref() {
                    this.received = this.received.saturating_add(data.len() as u64);
                    if this.received > this.limit {
                        return Poll::Ready(Some(Err(this.too_large())));
                    }
                }
                let next = Instant::now() + this.between_bytes;
                this.idle.as_mut().reset(next);
                Poll::Ready(Some(Ok(frame)))
            }
            Poll::Ready(Some(Err(e))) => {
                this.done = true;
                Poll::Ready(Some(Err(e.into())))
            }
            Poll::Ready(None) => Poll::Ready(None),
            Poll::Pending => {
                ready!(this.idle.as_mut().poll(cx));
                this.done = true;
                Poll::Ready(Some(Err(Error::ConnectionReadTimeout)))
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.done || self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// Where a [`KeptBody`] leaves the guest's body when hyper drops it.
pub(super) type Kept = Arc<Mutex<Option<WasiBody>>>;

/// The guest's request body, handed to hyper.
///
/// Hyper drops a request body as soon as it has sent `content-length` bytes, which closes
/// the guest's `outgoing-body` stream: a guest still flushing or finishing it (the usual
/// write, flush, finish sequence) would then fail with `closed`, racing a server that has
/// already answered. On drop this puts the body in its [`Kept`] slot instead, which the
/// request's response holds, so the stream stays open until the guest is done with the
/// exchange. Nothing reads it after hyper: wasmtime-wasi-http refuses writes past
/// `content-length`, so the guest cannot fill it.
pub(super) struct KeptBody {
    inner: Option<WasiBody>,
    kept: Kept,
}

impl KeptBody {
    pub fn new(inner: WasiBody) -> (KeptBody, Kept) {
        let kept = Kept::default();
        let body = KeptBody {
            inner: Some(inner),
            kept: kept.clone(),
        };
        (body, kept)
    }
}

impl Drop for KeptBody {
    fn drop(&mut self) {
        if let Some(body) = self.inner.take() {
            *self.kept.lock().unwrap_or_else(|p| p.into_inner()) = Some(body);
        }
    }
}

impl Body for KeptBody {
    type Data = Bytes;
    type Error = Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Error>>> {
        match self.inner.as_mut() {
            Some(body) => Pin::new(body).poll_frame(cx),
            None => Poll::Ready(None),
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.as_ref().is_none_or(Body::is_end_stream)
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.as_ref().map(Body::size_hint).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use http_body_util::{BodyExt, Full};
    use tokio::sync::oneshot::{self, error::TryRecvError};

    use super::*;

    fn guarded<B>(inner: B, limit: usize, audit: &AuditLog) -> GuardedBody<B> {
        let request = "GET http://127.0.0.1:1/big".to_string();
        GuardedBody::new(inner, limit, Duration::from_secs(5), audit.clone(), request)
    }

    #[tokio::test]
    async fn a_body_within_the_limit_passes_untouched() {
        let audit = AuditLog::default();
        let body = guarded(Full::new(Bytes::from_static(b"hello")), 5, &audit);
        let got = body.collect().await.unwrap().to_bytes();
        assert_eq!(got, Bytes::from_static(b"hello"));
        assert_eq!(audit.take(), vec![]);
    }

    #[tokio::test]
    async fn a_longer_body_fails_with_the_size_code_and_records_the_limit() {
        let audit = AuditLog::default();
        let body = guarded(Full::new(Bytes::from(vec![b'x'; 6])), 5, &audit);
        let err = body.collect().await.unwrap_err();
        assert!(matches!(err, Error::HttpResponseBodySize(Some(5))), "{err}");
        let events = audit.take();
        assert!(
            matches!(&events[..], [AuditEvent::Limit { limit, detail }]
                if limit == "http-response" && detail.contains("GET http://127.0.0.1:1/big")),
            "{events:?}"
        );
    }

    /// A server that sent the headers and then nothing.
    struct Silent;

    impl Body for Silent {
        type Data = Bytes;
        type Error = std::convert::Infallible;

        fn poll_frame(
            self: Pin<&mut Self>,
            _: &mut Context<'_>,
        ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
            Poll::Pending
        }
    }

    #[tokio::test]
    async fn a_silent_server_fails_after_the_between_bytes_timeout() {
        let audit = AuditLog::default();
        let quiet = Duration::from_millis(50);
        let body = GuardedBody::new(Silent, 10, quiet, audit, String::new());
        let started = Instant::now();
        let err = body.collect().await.unwrap_err();
        assert!(matches!(err, Error::ConnectionReadTimeout), "{err}");
        assert!(started.elapsed() >= quiet);
    }

    #[test]
    fn a_request_body_outlives_hyper_while_kept() {
        // A receiver that notices when the body is finally dropped.
        let (tx, mut rx) = oneshot::channel::<()>();
        let inner = Full::new(Bytes::from_static(b"abc"))
            .map_err(|e| match e {})
            .map_frame(move |f| {
                let _ = &tx;
                f
            })
            .boxed_unsync();
        let (body, kept) = KeptBody::new(inner);
        drop(body);
        assert!(
            kept.lock().unwrap().is_some(),
            "the body moved to the keeper"
        );
        assert_eq!(rx.try_recv(), Err(TryRecvError::Empty), "the body is alive");
        drop(kept);
        assert_eq!(rx.try_recv(), Err(TryRecvError::Closed), "the body is gone");
    }
}
