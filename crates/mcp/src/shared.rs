//! What every session of a server shares: the runtime (whose call budget bounds the calls
//! in flight and their queue), the policy gate, the catalog, the sink; and
//! [`ServerConfig`], how calls are run. Below both the handler and the call path.

use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex, OnceLock, RwLock};
use std::time::Duration;

use rmcp::{Peer, RoleServer};
use toolhost_runtime::{Gate, Runtime};

use crate::Catalog;
use crate::logging::SessionLevel;
use crate::sink::CallSink;

/// How a server runs calls. How many run at once, over all sessions, and how many may
/// wait is the runtime's [`CallBudget`](toolhost_runtime::CallBudget): a call past it is an
/// `isError` result of kind `overloaded`.
#[derive(Clone)]
#[non_exhaustive]
pub struct ServerConfig {
    /// How often a long call reports progress to a client that sent a progress token (the
    /// first report comes after one interval, so fast calls send none).
    pub progress_every: Duration,
    /// The most MCP tasks one client holds at once (`toolhost mcp --max-tasks`): its
    /// oldest finished one is forgotten to make room; past this many working ones, a call
    /// that would start a task is refused (an `isError` result of kind `overloaded`).
    pub max_tasks: usize,
    /// How long a finished task's status and result are kept for `tasks/get`.
    pub task_ttl: Duration,
    /// The key that seals and opens the `requestState` of 2026-07-28 questions, shared by
    /// replicas (`--state-key-file`); `None`: one drawn at start, known to this process only.
    pub state_key: Option<Vec<u8>>,
    /// Where tasks are kept so that replicas share them (`--database`); `None`: in this
    /// process's memory.
    pub task_database: Option<crate::TaskDatabase>,
    /// What runs `run_program` calls (`--code`); `None`: no such tool.
    pub programs: Option<Arc<dyn crate::Programs>>,
}

/// The key never shows: only whether there is one.
impl std::fmt::Debug for ServerConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerConfig")
            .field("progress_every", &self.progress_every)
            .field("max_tasks", &self.max_tasks)
            .field("task_ttl", &self.task_ttl)
            .field("state_key", &self.state_key.as_ref().map(|_| "(set)"))
            .field("task_database", &self.task_database)
            .field("programs", &self.programs.is_some())
            .finish()
    }
}

impl Default for ServerConfig {
    /// - progress every 250 ms;
    /// - at most 16 tasks per client, each finished one kept an hour;
    /// - a `requestState` key of this process's own;
    /// - tasks in this process's memory only.
    fn default() -> ServerConfig {
        ServerConfig {
            progress_every: Duration::from_millis(250),
            max_tasks: 16,
            task_ttl: Duration::from_secs(3600),
            state_key: None,
            task_database: None,
            programs: None,
        }
    }
}

impl ServerConfig {
    pub fn progress_every(mut self, every: Duration) -> ServerConfig {
        self.progress_every = every;
        self
    }

    pub fn max_tasks(mut self, max: usize) -> ServerConfig {
        self.max_tasks = max;
        self
    }

    pub fn state_key(mut self, key: Vec<u8>) -> ServerConfig {
        self.state_key = Some(key);
        self
    }

    pub fn task_database(mut self, tasks: crate::TaskDatabase) -> ServerConfig {
        self.task_database = Some(tasks);
        self
    }

    /// Offers `run_program`, whose programs `programs` runs.
    pub fn programs(mut self, programs: Arc<dyn crate::Programs>) -> ServerConfig {
        self.programs = Some(programs);
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
    /// Seals and opens the `requestState` of 2026-07-28 questions (`ask`).
    pub(crate) codec: rmcp::model::RequestStateCodec,
    /// The MCP tasks of every client (`tasks`), in memory, unless `durable`.
    pub(crate) tasks: crate::tasks::Tasks,
    /// The MCP tasks in the database replicas share (`durable`), when there is one.
    pub(crate) durable: Option<crate::durable::Durable>,
    pub config: ServerConfig,
    /// `run_program`, when the server offers it.
    pub programs: Option<crate::program::Served>,
}

/// What one session has of its own: the log level its client set, and its sink when the
/// server's sink gives each session one ([`CallSink::session`]).
pub(crate) struct Session {
    /// Tells this session's tasks from others' (never shown to anyone).
    pub id: u64,
    pub level: SessionLevel,
    sink: OnceLock<Arc<dyn CallSink>>,
    /// Held while the session's sink is opened, so it is opened once.
    opening: Mutex<()>,
}

impl Default for Session {
    fn default() -> Session {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        Session {
            id: NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            level: SessionLevel::default(),
            sink: OnceLock::new(),
            opening: Mutex::new(()),
        }
    }
}

impl Session {
    /// Where the calls of a request are recorded: the session's own sink for a session that
    /// began with `initialize` (opened at its first use: its `notifications/initialized` and
    /// its first call may arrive in either order), the server's for a `stateless` request
    /// (2026-07-28: each is a session of one request). An error is the sink's failure to
    /// open one.
    pub fn sink(&self, shared: &Shared, stateless: bool) -> Result<Arc<dyn CallSink>, String> {
        if stateless {
            return Ok(shared.sink.clone());
        }
        if let Some(s) = self.sink.get() {
            return Ok(s.clone());
        }
        let _once = self.opening.lock().expect("session sink lock");
        if let Some(s) = self.sink.get() {
            return Ok(s.clone());
        }
        let sink = shared
            .sink
            .session()?
            .unwrap_or_else(|| shared.sink.clone());
        let _ = self.sink.set(sink.clone());
        Ok(sink)
    }
}

impl Shared {
    /// Records how task `id` ended, in the store it lives in (PostgreSQL or memory).
    pub(crate) async fn settle(&self, id: &str, state: crate::tasks::State) {
        match &self.durable {
            Some(d) => d.settle(id, state).await,
            None => self.tasks.settle(id, state),
        }
    }

    pub fn catalog(&self) -> Arc<Catalog> {
        self.catalog.read().expect("catalog lock").clone()
    }
}
