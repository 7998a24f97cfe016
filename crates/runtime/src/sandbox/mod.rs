//! The per-call sandbox: the store's state, the linker, and the grants that open it.
//!
//! Every call gets a fresh `HostState` built by `HostState::new` from
//! [`Capabilities`] and [`Limits`]. What a call can reach is exactly what
//! those two say; the defaults reach nothing (see [`Capabilities::none`]). Every decision
//! is recorded in the call's `AuditLog`.
//!
//! - `audit`: [`AuditEvent`]s and the per-call log.
//! - `stdio`: captured, capped stdout/stderr.
//! - `limiter`: one memory budget for all memories and tables of the instance.
//! - `meter`: what host calls cost: the deadline checked on entry to each, fuel charged
//!   for their work, host memory held for the call.
//! - `random`: `wasi:random` draws, capped and charged.
//! - `log`: the `toolhost:host/log` import.
//! - [`ask`]: the `toolhost:host/ask` import, a tool's questions to its caller's side
//!   (granted by `ask = true` only), handed to the embedder.
//! - [`program`]: the `toolhost:host/tools` import, the code-mode interpreter's calls to
//!   the run's tools, handed to the embedder.
//! - `egress`: the gate for `wasi:http` requests (origins, DNS pinning, special ranges).
//! - `net`: the gate for raw `wasi:sockets` (TCP grants; no listening, no UDP; no socket at
//!   all without a TCP grant).
//! - `lookup`: the `wasi:sockets/ip-name-lookup` audit.
//! - `fs_gate`: the gate below `wasi:filesystem`: file events, single-file grants, the
//!   empty `/` that refuses paths outside every grant, symlink targets, the write budget.
//! - `env`: the `wasi:cli/environment` audit (names read, never values).

pub mod ask;
pub mod audit;
mod egress;
mod env;
mod fs_gate;
mod limiter;
mod log;
mod lookup;
pub(crate) mod meter;
mod net;
pub mod program;
mod random;
mod stdio;

use wasmtime::component::{Linker, ResourceTable};
use wasmtime_wasi::{FsPerms, WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};
use wasmtime_wasi_http::{WasiHttpCtx, WasiHttpCtxView, WasiHttpView};

pub use self::audit::{AuditEvent, Decision};
pub(crate) use self::audit::{AuditLog, AuditSpent};
pub(crate) use self::egress::EgressHooks;
pub(crate) use self::fs_gate::WriteLimitExceeded;
pub(crate) use self::limiter::{InstanceLimiter, MemoryLimitExceeded};
pub use self::log::LogRecord;
pub(crate) use self::log::LogSink;
pub(crate) use self::meter::DeadlineReached;
use self::meter::Meter;
pub(crate) use self::stdio::CappedPipe;
use crate::Limits;
use crate::grants::{Capabilities, GrantKind};

pub(crate) mod bindings {
    wasmtime::component::bindgen!({
        path: "wit",
        world: "toolhost:host/host",
        // A host function can end the call (the host-memory budget).
        imports: {
            "toolhost:host/ask.offered": async | trappable,
            "toolhost:host/ask.ask": async | trappable,
            "toolhost:host/ask.offers-url": async | trappable,
            "toolhost:host/ask.open-url": async | trappable,
            default: trappable,
        },
    });
}

/// A grant that cannot be applied, e.g. a directory that does not exist.
#[derive(Debug, thiserror::Error)]
#[error("cannot grant `{host}` as `{guest}`: {reason}")]
pub(crate) struct GrantError {
    pub host: String,
    pub guest: String,
    pub reason: String,
}

/// The state of one call's store.
pub(crate) struct HostState {
    wasi: WasiCtx,
    http: WasiHttpCtx,
    pub(crate) http_hooks: EgressHooks,
    table: ResourceTable,
    pub(crate) limiter: InstanceLimiter,
    pub(crate) meter: Meter,
    pub(crate) logs: LogSink,
    pub(crate) stdout: CappedPipe,
    pub(crate) stderr: CappedPipe,
    pub(crate) audit: AuditLog,
    /// Guest paths of descriptors and the single-file grants' directories.
    pub(crate) fs: fs_gate::FsScopes,
    /// Bytes written to files so far, against the call's caps.
    pub(crate) writes: std::sync::Arc<fs_gate::WriteBudget>,
    /// Where a program's tool calls go (`toolhost:host/tools`): set only for the code-mode
    /// interpreter's calls; without it the import traps.
    pub(crate) program: Option<program::ProgramDoor>,
    /// Whether the call may ask (`toolhost:host/ask`) and where its questions go.
    pub(crate) ask: ask::AskState,
}

impl HostState {
    /// Builds the state of one call from its grants and limits; decisions go to `audit`.
    pub fn new(
        caps: &Capabilities,
        limits: &Limits,
        audit: AuditLog,
    ) -> Result<HostState, GrantError> {
        let meter = Meter::new(limits.max_host_bytes);
        let stdout = CappedPipe::new(limits.max_stdio_bytes, meter.shared());
        let stderr = CappedPipe::new(limits.max_stdio_bytes, meter.shared());
        let mut b = WasiCtxBuilder::new();
        b.stdout(stdout.clone())
            .stderr(stderr.clone())
            // With a TCP grant sockets can be created, but every address goes through the
            // check, which refuses all but granted connects (and records each decision).
            // Without one no socket is created at all: each would hold a descriptor.
            .allow_tcp(!caps.network.tcp.is_empty())
            .allow_udp(false)
            .max_random_size(crate::limits::MAX_RANDOM_DRAW)
            .allow_ip_name_lookup(caps.network.name_lookup)
            .socket_addr_check(net::socket_check(caps.network.tcp.clone(), audit.clone()));
        for d in &caps.files {
            let perms = if d.write {
                FsPerms::ReadWrite
            } else {
                FsPerms::ReadOnly
            };
            let grant_error = |reason: String| GrantError {
                host: d.host.display().to_string(),
                guest: d.guest.clone(),
                reason,
            };
            // File grants are preopened by the filesystem gate (`fs_gate::FsScopes`).
            if d.kind == GrantKind::File {
                continue;
            }
            b.preopened_dir(&d.host, &d.guest, perms)
                .map_err(|e| grant_error(format!("{e:#}")))?;
        }
        for (k, v) in &caps.env {
            b.env(k, v);
        }
        let fs = fs_gate::FsScopes::new(&caps.files)?;
        let mut table = ResourceTable::new();
        // Every descriptor, socket, stream, pollable, field set and request the guest
        // opens is an entry: this caps them all, and the descriptors behind them.
        table.set_max_capacity(limits.max_resources);
        Ok(HostState {
            wasi: b.build(),
            http: WasiHttpCtx::new(),
            http_hooks: EgressHooks {
                origins: caps.network.http.clone(),
                audit: audit.clone(),
                max_response_bytes: limits.max_http_response_bytes,
            },
            table,
            limiter: InstanceLimiter::new(limits.memory_bytes()),
            meter,
            logs: LogSink::new(limits.max_log_bytes),
            stdout,
            stderr,
            audit,
            fs,
            writes: fs_gate::WriteBudget::new(limits.max_written_bytes, limits.max_file_bytes),
            program: None,
            ask: ask::AskState {
                granted: caps.ask,
                asker: None,
            },
        })
    }
}
impl WasiView for HostState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

impl WasiHttpView for HostState {
    fn http(&mut self) -> WasiHttpCtxView<'_> {
        WasiHttpCtxView {
            ctx: &mut self.http,
            table: &mut self.table,
            hooks: &mut self.http_hooks,
        }
    }
}

/// The linker shared by every tool: all of WASI 0.2, `wasi:http`, and `toolhost:host`.
pub(crate) fn linker(engine: &wasmtime::Engine) -> wasmtime::Result<Linker<HostState>> {
    let mut linker = Linker::new(engine);
    wasmtime_wasi::p2::add_to_linker_async(&mut linker)?;
    wasmtime_wasi_http::p2::add_only_http_to_linker_async(&mut linker)?;
    bindings::Host_::add_to_linker::<_, wasmtime::component::HasSelf<_>>(&mut linker, |s| s)?;
    // Every tool links `toolhost:host/tools`, so a component that imports it links strictly
    // (the interpreter in a tools folder, loaded as a tool); only a call whose state holds
    // a program's channel may use it, any other call traps.
    program::add_to_linker(&mut linker)?;
    // Audit wrappers replace some wasmtime-wasi functions with ones that call them.
    linker.allow_shadowing(true);
    lookup::add_to_linker(&mut linker)?;
    net::add_to_linker(&mut linker)?;
    random::add_to_linker(&mut linker)?;
    egress::add_to_linker(&mut linker)?;
    fs_gate::add_to_linker(&mut linker)?;
    env::add_to_linker(&mut linker)?;
    Ok(linker)
}
