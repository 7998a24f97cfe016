//! A request body that must arrive whole in time: a client that sends its head and then
//! trickles (or withholds) the body would otherwise hold its connection for as long as it
//! likes.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use hyper::body::{Body, Frame, SizeHint};
use tokio::time::Sleep;

/// `inner`, failing with [`DeadlineError::Late`] if it has not ended by its deadline.
pub struct Deadline<B> {
    inner: B,
    /// Boxed so that `Deadline` is `Unpin` whatever the timer is.
    sleep: Pin<Box<Sleep>>,
    limit: Duration,
}

impl<B> Deadline<B> {
    /// `inner`, to end within `limit` from now.
    pub fn new(inner: B, limit: Duration) -> Deadline<B> {
        Deadline {
            inner,
            sleep: Box::pin(tokio::time::sleep(limit)),
            limit,
        }
    }
}

/// Why a request body could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DeadlineError {
    #[error("the request body did not arrive within {} ms", .0.as_millis())]
    Late(Duration),
    #[error(transparent)]
    Body(Box<dyn std::error::Error + Send + Sync>),
}

impl<B> Body for Deadline<B>
where
    B: Body<Data = Bytes> + Unpin,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    type Data = Bytes;
    type Error = DeadlineError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, DeadlineError>>> {
        let this = self.get_mut();
        if let Poll::Ready(frame) = Pin::new(&mut this.inner).poll_frame(cx) {
            return Poll::Ready(frame.map(|r| r.map_err(|e| DeadlineError::Body(e.into()))));
        }
        if this.sleep.as_mut().poll(cx).is_ready() {
            return Poll::Ready(Some(Err(DeadlineError::Late(this.limit))));
        }
        Poll::Pending
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}
