//! [`Server`]: the `rmcp` `ServerHandler` over a [`Catalog`]. Tools only (with logging, and
//! `subscriptions/listen` for tool list changes): no resources, no prompts, no tool that
//! reads or changes grants, the policy or limits.

use std::borrow::Cow;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex, OnceLock, RwLock};

use rmcp::model::SubscriptionFilter;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CancelTaskParams, GetTaskParams, GetTaskResult,
    Implementation, InitializeResult, ListToolsResult, PaginatedRequestParams, ProtocolVersion,
    ServerCapabilities, Tool as McpTool, UpdateTaskParams,
};
use rmcp::service::{NotificationContext, RequestContext, SubscriptionContext};
use rmcp::{ErrorData, Peer, RoleServer, ServerHandler};
use toolhost_runtime::{Gate, Runtime};

use crate::catalog::TaskSupport;
use crate::shared::{Session, Shared};
use crate::sink::CallSink;
use crate::tasks;
use crate::{Catalog, ServerConfig, call, errors};

/// Serves a [`Catalog`] to MCP clients. Cheap to clone: clones share the catalog, the
/// policy gate (rate limits add up over all sessions), the runtime and its call budget, and
/// the sink.
#[derive(Clone)]
pub struct Server {
    pub(crate) shared: Arc<Shared>,
    /// This session's own state (the log level its client set, its sink); a clone shares
    /// it, [`Server::session`] starts a new one.
    session: Arc<Session>,
}

impl Server {
    ///
    /// Fails only when no key can be drawn for the request state of 2026-07-28 questions.
    pub fn new(
        rt: Arc<Runtime>,
        catalog: Catalog,
        sink: Arc<dyn CallSink>,
        config: ServerConfig,
    ) -> Result<Server, String> {
        let codec = crate::ask::codec(config.state_key.as_deref())?;
        let durable = match config.task_database.clone() {
            Some(tasks) => Some(crate::durable::Durable::start(tasks)?),
            None => None,
        };
        if config.programs.is_some() && catalog.get(crate::program::TOOL).is_some() {
            return Err(format!(
                "a served tool is named `{}`, the name of code mode's tool: rename its section or serve without --code",
                crate::program::TOOL
            ));
        }
        let programs = config.programs.clone().map(crate::program::Served::new);
        Ok(Server {
            shared: Arc::new(Shared {
                rt,
                gate: Gate::new(),
                catalog: RwLock::new(Arc::new(catalog)),
                sink,
                seq: AtomicU64::new(0),
                broken: OnceLock::new(),
                peers: Mutex::new(Vec::new()),
                generation: tokio::sync::watch::Sender::new(0),
                codec,
                tasks: crate::tasks::Tasks::default(),
                durable,
                programs,
                config,
            }),
            session: Arc::default(),
        })
    }

    /// The server for one more session: everything shared but the session's own state (the
    /// log level its client sets, its own sink when the server's sink gives sessions one).
    pub fn session(&self) -> Server {
        Server {
            shared: self.shared.clone(),
            session: Arc::default(),
        }
    }

    /// With a task database: keeps this replica's tasks (renews its leases, takes over
    /// the tasks of replicas whose leases lapsed, forgets expired ones) until `stop`.
    /// Without one, returns at once.
    pub async fn keep_tasks(&self, stop: tokio_util::sync::CancellationToken) {
        crate::keep::keep(self.shared.clone(), stop).await;
    }

    /// With a task database, once this replica stops serving (SIGTERM): stops the calls of
    /// the tasks it runs, hands each that may run again to the other replicas at once and
    /// ends the others `failed`, saying why. Without one, nothing to do.
    pub async fn hand_back_tasks(&self) -> crate::HandedBack {
        match &self.shared.durable {
            Some(d) => d.hand_back().await,
            None => crate::HandedBack::default(),
        }
    }

    /// The catalog calls resolve through now.
    pub fn catalog(&self) -> Arc<Catalog> {
        self.shared.catalog()
    }

    /// Swaps in `catalog` (calls running keep the one they started with) and tells every
    /// live session, and every `subscriptions/listen` stream that asked, that the tool list
    /// changed.
    pub async fn replace_catalog(&self, catalog: Catalog) {
        *self.shared.catalog.write().expect("catalog lock") = Arc::new(catalog);
        self.shared.generation.send_modify(|g| *g += 1);
        let peers: Vec<Peer<RoleServer>> = {
            let mut peers = self.shared.peers.lock().expect("peers lock");
            peers.retain(|p| !p.is_transport_closed());
            peers.clone()
        };
        for peer in peers {
            if let Err(e) = peer.notify_tool_list_changed().await {
                tracing::debug!(error = %e, "cannot tell a session that the tool list changed");
            }
        }
    }
}

/// The revisions served: the two 2025 revisions clients use today, the older ones the
/// SDK still negotiates, and 2026-07-28 (stateless requests, `server/discover`).
const VERSIONS: &[ProtocolVersion] = &[
    ProtocolVersion::V_2024_11_05,
    ProtocolVersion::V_2025_03_26,
    ProtocolVersion::V_2025_06_18,
    ProtocolVersion::V_2025_11_25,
    ProtocolVersion::V_2026_07_28,
];

impl ServerHandler for Server {
    #[allow(deprecated)] // logging: see `logging`
    fn get_info(&self) -> InitializeResult {
        InitializeResult::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .enable_logging()
                .enable_tasks()
                .build(),
        )
        .with_server_info(Implementation::new("toolhost", env!("CARGO_PKG_VERSION")))
        .with_instructions(
            "Each tool runs in a fresh WebAssembly sandbox with fuel, a deadline, a memory cap \
             and only the capabilities the operator's policy grants. The annotations are \
             computed from those grants and enforced: a read-only tool cannot write a file or \
             reach the network.",
        )
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        Cow::Borrowed(VERSIONS)
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        if let Some(info) = context.peer.peer_info() {
            let client = format!("{} {}", info.client_info.name, info.client_info.version);
            match self.session.sink(&self.shared, false) {
                Ok(sink) => sink.client(&client, info.protocol_version.as_str()),
                Err(why) => {
                    call::broke(&self.shared, why);
                }
            }
        }
        self.shared
            .peers
            .lock()
            .expect("peers lock")
            .push(context.peer.clone());
    }

    /// `subscriptions/listen` (2026-07-28): tool list changes are the one kind of
    /// notification a tools-only server has; whatever else is asked for is left out of the
    /// acknowledgment.
    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        let mut accepted = SubscriptionFilter::new();
        accepted.tools_list_changed = requested.tools_list_changed;
        Some(accepted)
    }

    async fn listen(&self, subscription: SubscriptionContext) -> Result<(), ErrorData> {
        let mut changes = self.shared.generation.subscribe();
        changes.mark_unchanged();
        let wants_tools = subscription.accepted().tools_list_changed == Some(true);
        loop {
            tokio::select! {
                () = subscription.cancelled() => return Ok(()),
                changed = changes.changed() => {
                    if changed.is_err() {
                        return Ok(());
                    }
                    if wants_tools && let Err(e) = subscription.sink().notify_tool_list_changed().await {
                        tracing::debug!(error = %e, "cannot tell a listener that the tool list changed");
                        return Ok(());
                    }
                }
            }
        }
    }

    #[allow(deprecated)] // logging: see `logging`
    async fn set_level(
        &self,
        request: rmcp::model::SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.session.level.set(request.level);
        Ok(())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let mut tools = self.shared.catalog().descriptors();
        if let Some(p) = &self.shared.programs {
            tools.push(p.descriptor());
        }
        Ok(ListToolsResult::with_all_items(tools))
    }

    fn get_tool(&self, name: &str) -> Option<McpTool> {
        match &self.shared.programs {
            Some(p) if name == crate::program::TOOL => Some(p.descriptor()),
            _ => self.shared.catalog().descriptor(name),
        }
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if let Some(p) = &self.shared.programs
            && request.name == crate::program::TOOL
        {
            let args = serde_json::Value::Object(request.arguments.unwrap_or_default());
            if tasks::wanted(&request.name, TaskSupport::Optional, &context)? {
                return crate::program_call::start(&self.shared, &self.session, args, context)
                    .await;
            }
            let ct = context.ct.clone();
            let asking = crate::ask::Asking::new(
                &self.shared.codec,
                &request.name,
                &args,
                tasks::owner(self.session.id, &context) == tasks::Owner::Stateless,
                None,
                None,
                &context,
            )?;
            return crate::program_call::call(p, &args, asking, ct, None)
                .await
                .map(Into::into);
        }
        let catalog = self.shared.catalog();
        let Some(entry) = catalog.get(&request.name) else {
            return Err(errors::unknown_tool(
                &request.name,
                &catalog.names().collect::<Vec<_>>(),
            ));
        };
        let args = serde_json::Value::Object(request.arguments.unwrap_or_default());
        let round = call::Round {
            responses: request.input_responses,
            state: request.request_state,
            inbox: None,
        };
        if tasks::wanted(&request.name, entry.task, &context)? && !call::asks_first(entry, &round) {
            return call::start_task(
                &self.shared,
                &self.session,
                catalog.clone(),
                (request.name.to_string(), args, round),
                context,
            )
            .await;
        }
        call::call(
            &self.shared,
            &self.session,
            &request.name,
            entry,
            args,
            round,
            context,
        )
        .await
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        let owner = tasks::owner(self.session.id, &context);
        if let Some(d) = &self.shared.durable {
            return d.get(&request.task_id, owner).await;
        }
        self.shared
            .tasks
            .get(&request.task_id, owner, self.shared.config.task_ttl)
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let owner = tasks::owner(self.session.id, &context);
        if let Some(d) = &self.shared.durable {
            return d.cancel(&request.task_id, owner).await;
        }
        self.shared.tasks.cancel(&request.task_id, owner)
    }

    async fn update_task(
        &self,
        request: UpdateTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let owner = tasks::owner(self.session.id, &context);
        let answers = request.input_responses;
        if let Some(d) = &self.shared.durable {
            return d.update(&request.task_id, owner, answers).await;
        }
        self.shared.tasks.update(&request.task_id, owner, answers)
    }
}
