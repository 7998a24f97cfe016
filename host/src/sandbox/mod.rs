//! The per-call sandbox: the store's state, the linker, and the grants that open it.
//!
//! Every call gets a fresh [`HostState`] built by [`HostState::new`] from [`Capabilities`]
//! and [`Limits`](crate::Limits). What a call can reach is exactly what those two say; the
//! defaults reach nothing (see [`Capabilities::none`]).
//!
//! - `stdio`: captured, capped stdout/stderr.
//! - `limiter`: one memory budget for all memories and tables of the instance.
//! - `log`: the `toolhost:host/log` import.
//! - `http`: the gate for `wasi:http` requests (deny-all by default).

mod http;
mod limiter;
mod log;
mod stdio;

use std::path::PathBuf;

use wasmtime::component::{Linker, ResourceTable};
use wasmtime_wasi::{FsPerms, WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};
use wasmtime_wasi_http::{WasiHttpCtx, WasiHttpCtxView, WasiHttpView};

pub use self::http::DenyAllHttp;
pub use self::limiter::{InstanceLimiter, MemoryLimitExceeded};
pub use self::log::{LogRecord, LogSink};
pub use self::stdio::CappedPipe;
use crate::Limits;

pub(crate) mod bindings {
    wasmtime::component::bindgen!({
        path: "../wit",
        world: "toolhost:host/host",
    });
}

/// A directory made visible to the guest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirGrant {
    /// Directory on the host.
    pub host: PathBuf,
    /// Path the guest sees it at.
    pub guest: String,
    /// `false`: read-only (no create, write, rename, unlink, truncate, set-times).
    pub write: bool,
}

/// What a call may reach beyond its own memory.
///
/// [`Capabilities::none`] (also `Default`) grants nothing:
/// - no preopened directories, so every filesystem call fails;
/// - no environment variables and no arguments;
/// - stdin closed; stdout/stderr captured per call, capped by [`Limits`];
/// - no network: every HTTP request is refused, `wasi:sockets` denies every address and name
///   lookup.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Capabilities {
    pub dirs: Vec<DirGrant>,
    pub env: Vec<(String, String)>,
}

impl Capabilities {
    /// No capabilities at all.
    pub fn none() -> Capabilities {
        Capabilities::default()
    }
}

/// A grant that cannot be applied, e.g. a directory that does not exist.
#[derive(Debug, thiserror::Error)]
#[error("cannot grant `{host}` as `{guest}`: {reason}")]
pub struct GrantError {
    pub host: String,
    pub guest: String,
    pub reason: String,
}

/// The state of one call's store.
pub struct HostState {
    wasi: WasiCtx,
    http: WasiHttpCtx,
    pub(crate) http_hooks: DenyAllHttp,
    table: ResourceTable,
    pub(crate) limiter: InstanceLimiter,
    pub(crate) logs: LogSink,
    pub(crate) stdout: CappedPipe,
    pub(crate) stderr: CappedPipe,
}

impl HostState {
    /// Builds the state of one call from its grants and limits.
    pub fn new(caps: &Capabilities, limits: &Limits) -> Result<HostState, GrantError> {
        let stdout = CappedPipe::new(limits.max_stdio_bytes);
        let stderr = CappedPipe::new(limits.max_stdio_bytes);
        let mut b = WasiCtxBuilder::new();
        b.stdout(stdout.clone())
            .stderr(stderr.clone())
            .allow_tcp(false)
            .allow_udp(false)
            .allow_ip_name_lookup(false);
        for d in &caps.dirs {
            let perms = if d.write {
                FsPerms::ReadWrite
            } else {
                FsPerms::ReadOnly
            };
            b.preopened_dir(&d.host, &d.guest, perms)
                .map_err(|e| GrantError {
                    host: d.host.display().to_string(),
                    guest: d.guest.clone(),
                    reason: format!("{e:#}"),
                })?;
        }
        for (k, v) in &caps.env {
            b.env(k, v);
        }
        Ok(HostState {
            wasi: b.build(),
            http: WasiHttpCtx::new(),
            http_hooks: DenyAllHttp::default(),
            table: ResourceTable::new(),
            limiter: InstanceLimiter::new(limits.memory_bytes()),
            logs: LogSink::new(limits.max_log_bytes),
            stdout,
            stderr,
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
pub fn linker(engine: &wasmtime::Engine) -> wasmtime::Result<Linker<HostState>> {
    let mut linker = Linker::new(engine);
    wasmtime_wasi::p2::add_to_linker_async(&mut linker)?;
    wasmtime_wasi_http::p2::add_only_http_to_linker_async(&mut linker)?;
    bindings::Host_::add_to_linker::<_, wasmtime::component::HasSelf<_>>(&mut linker, |s| s)?;
    Ok(linker)
}
