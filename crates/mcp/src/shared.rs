//! What every session of a server shares: the runtime (whose call budget bounds the calls
//! in flight and their queue), the policy gate, the catalog, the sink; and
//! [`ServerConfig`], how calls are run. Below both the handler and the call path.

use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex, OnceLock, RwLock};
use std::time::Duration;

use rmcp::{Peer, RoleServer};
use toolhost_runtime::{Gate, Runtime};

use crate::Catalog;
use crate::sink::CallSink;

/// How a server runs calls. How many run at once, over all sessions, and how many may
/// wait is the runtime's [`CallBudget`](toolhost_runtime::CallBudget): a call past it is an
/// `isError` result of kind `overloaded`.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ServerConfig {
    /// How often a long call reports progress to a client that sent a progress token (the
    /// first report comes after one interval, so fast calls send none).
    pub progress_every: Duration,
}

impl Default for ServerConfig {
    fn default() -> ServerConfig {
        ServerConfig {
            progress_every: Duration::from_millis(250),
        }
    }
}

impl ServerConfig {
    pub fn progress_every(mut self, every: Duration) -> ServerConfig {
        self.progress_every = every;
        self
    }
}

pub(crate) struct Shared {
    pub rt: Arc<Runtime>,
    pub gate: Gate,
    pub(crate) catalog: RwLock<Arc<Catalog>>,
    pub sink: Arc<dyn CallSink>,
    pub seq: AtomicU64,
    /// Set when the sink failed: the server takes no further call.
    pub broken: OnceLock<String>,
    /// The sessions to tell when the tool list changes.
    pub(crate) peers: Mutex<Vec<Peer<RoleServer>>>,
    /// Bumped at each catalog swap: the `subscriptions/listen` streams (2026-07-28) watch it.
    pub(crate) generation: tokio::sync::watch::Sender<u64>,
    pub config: ServerConfig,
}

impl Shared {
    pub fn catalog(&self) -> Arc<Catalog> {
        self.catalog.read().expect("catalog lock").clone()
    }
}
