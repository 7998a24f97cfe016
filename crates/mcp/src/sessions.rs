//! The cap on sessions (protocol revisions before 2026-07-28). A session is a worker task
//! with its channels, created by any `initialize` a client sends, before it has called
//! anything: uncapped, 20,000 of them held 1.1 GB for the five minutes rmcp keeps an
//! idle one. `Sessions` wraps rmcp's in-memory manager and keeps a book of each
//! session's last use and open streams: past the cap, the least recently used idle
//! session (no stream open) is closed to make room, and a session idle for longer than the
//! idle limit is closed by the sweep. A session with a stream open (a call in progress, a
//! standing `GET`) is not idle: it holds a connection, which the connection cap bounds.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use futures_util::{Stream, StreamExt};
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_server::session::local::{
    LocalSessionManager, LocalSessionManagerError,
};
use rmcp::transport::streamable_http_server::session::{
    ServerSseMessage, SessionId, SessionManager,
};
use tokio_util::sync::CancellationToken;

/// How many sessions a server keeps and for how long. [`SessionLimits::default`]:
///
/// - at most 1,024 sessions (about 60 MB); past that the least recently used idle one is
///   closed, or, when every one has a stream open, the new one is refused (503);
/// - a session with no stream open and no request for 2 minutes is closed (its client
///   gets 404 and, as the transport spec says, starts a new one).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct SessionLimits {
    pub max_sessions: usize,
    pub idle: Duration,
}

impl SessionLimits {
    pub const DEFAULT_MAX_SESSIONS: usize = 1024;
    pub const DEFAULT_IDLE: Duration = Duration::from_secs(120);

    pub fn max_sessions(mut self, n: usize) -> SessionLimits {
        self.max_sessions = n;
        self
    }

    pub fn idle(mut self, d: Duration) -> SessionLimits {
        self.idle = d;
        self
    }
}

impl Default for SessionLimits {
    fn default() -> SessionLimits {
        SessionLimits {
            max_sessions: Self::DEFAULT_MAX_SESSIONS,
            idle: Self::DEFAULT_IDLE,
        }
    }
}

/// Why a session could not be made or used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SessionsError {
    #[error("this server holds its most sessions ({max}), each with a call or stream open")]
    Full { max: usize },
    #[error(transparent)]
    Local(#[from] LocalSessionManagerError),
}

struct Entry {
    last_used: Instant,
    /// Streams open (a call's response, a standing `GET`, a resumed stream).
    open: usize,
}

#[derive(Default)]
struct Book {
    entries: HashMap<SessionId, Entry>,
    /// Sessions being created: counted against the cap before they have an id.
    creating: usize,
}

impl Book {
    fn touch(&mut self, id: &SessionId) {
        if let Some(e) = self.entries.get_mut(id) {
            e.last_used = Instant::now();
        }
    }

    /// Removes and returns the sessions idle for `idle` or longer.
    fn expired(&mut self, idle: Duration) -> Vec<SessionId> {
        let now = Instant::now();
        let gone: Vec<SessionId> = self
            .entries
            .iter()
            .filter(|(_, e)| e.open == 0 && now - e.last_used >= idle)
            .map(|(id, _)| id.clone())
            .collect();
        for id in &gone {
            self.entries.remove(id);
        }
        gone
    }

    fn least_recently_used_idle(&self) -> Option<SessionId> {
        self.entries
            .iter()
            .filter(|(_, e)| e.open == 0)
            .min_by_key(|(_, e)| e.last_used)
            .map(|(id, _)| id.clone())
    }
}

/// rmcp's in-memory session manager under [`SessionLimits`].
pub(crate) struct Sessions {
    inner: LocalSessionManager,
    limits: SessionLimits,
    book: Arc<Mutex<Book>>,
}

/// One open stream of a session: the session is not idle while it lives.
struct Open {
    book: Arc<Mutex<Book>>,
    id: SessionId,
}

impl Drop for Open {
    fn drop(&mut self) {
        let mut book = lock(&self.book);
        if let Some(e) = book.entries.get_mut(&self.id) {
            e.open = e.open.saturating_sub(1);
            e.last_used = Instant::now();
        }
    }
}

fn lock(book: &Mutex<Book>) -> MutexGuard<'_, Book> {
    book.lock().unwrap_or_else(|p| p.into_inner())
}

impl Sessions {
    pub(crate) fn new(limits: SessionLimits) -> Sessions {
        let mut inner = LocalSessionManager::default();
        // Idleness is judged here, where open streams are known: rmcp's own timer would
        // also end a session whose client holds a `GET` stream and is quiet.
        inner.session_config.keep_alive = None;
        Sessions {
            inner,
            limits,
            book: Arc::default(),
        }
    }

    /// Whether a new session would be refused: the cap is reached and every session has a
    /// stream open.
    pub(crate) fn full(&self) -> bool {
        let book = lock(&self.book);
        book.entries.len() + book.creating >= self.limits.max_sessions
            && book.entries.values().all(|e| e.open > 0)
    }

    /// Closes the sessions idle for too long, every so often, until `stop`.
    pub(crate) async fn sweep(self: Arc<Self>, stop: CancellationToken) {
        let every = (self.limits.idle / 4).clamp(Duration::from_millis(50), Duration::from_secs(5));
        loop {
            tokio::select! {
                () = tokio::time::sleep(every) => {}
                () = stop.cancelled() => return,
            }
            let gone = lock(&self.book).expired(self.limits.idle);
            self.close_all(gone).await;
        }
    }

    async fn close_all(&self, ids: Vec<SessionId>) {
        for id in ids {
            tracing::debug!(session = %id, "closing an idle session");
            let _ = self.inner.close_session(&id).await;
        }
    }

    fn open(&self, id: &SessionId) -> Open {
        let mut book = lock(&self.book);
        if let Some(e) = book.entries.get_mut(id) {
            e.open += 1;
            e.last_used = Instant::now();
        }
        Open {
            book: self.book.clone(),
            id: id.clone(),
        }
    }
}

/// `stream`, holding `open` until it is dropped.
fn holding<S>(stream: S, open: Open) -> impl Stream<Item = ServerSseMessage> + Send + Sync + 'static
where
    S: Stream<Item = ServerSseMessage> + Send + Sync + 'static,
{
    stream.map(move |m| {
        let _ = &open;
        m
    })
}

impl SessionManager for Sessions {
    type Error = SessionsError;
    type Transport = <LocalSessionManager as SessionManager>::Transport;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), SessionsError> {
        let victims = {
            let mut book = lock(&self.book);
            let mut victims = book.expired(self.limits.idle);
            if book.entries.len() + book.creating >= self.limits.max_sessions {
                let Some(lru) = book.least_recently_used_idle() else {
                    return Err(SessionsError::Full {
                        max: self.limits.max_sessions,
                    });
                };
                book.entries.remove(&lru);
                victims.push(lru);
            }
            book.creating += 1;
            victims
        };
        self.close_all(victims).await;
        let made = self.inner.create_session().await;
        let mut book = lock(&self.book);
        book.creating -= 1;
        let (id, transport) = made?;
        book.entries.insert(
            id.clone(),
            Entry {
                last_used: Instant::now(),
                open: 0,
            },
        );
        Ok((id, transport))
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, SessionsError> {
        lock(&self.book).touch(id);
        Ok(self.inner.initialize_session(id, message).await?)
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, SessionsError> {
        Ok(lock(&self.book).entries.contains_key(id) && self.inner.has_session(id).await?)
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), SessionsError> {
        lock(&self.book).entries.remove(id);
        Ok(self.inner.close_session(id).await?)
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, SessionsError> {
        let open = self.open(id);
        let stream = self.inner.create_stream(id, message).await?;
        Ok(holding(stream, open))
    }

    async fn accept_message(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<(), SessionsError> {
        lock(&self.book).touch(id);
        Ok(self.inner.accept_message(id, message).await?)
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, SessionsError> {
        let open = self.open(id);
        let stream = self.inner.create_standalone_stream(id).await?;
        Ok(holding(stream, open))
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, SessionsError> {
        let open = self.open(id);
        let stream = self.inner.resume(id, last_event_id).await?;
        Ok(holding(stream, open))
    }
}
