//! [`Runtime`]: the shared engine, linker and compiled cache; loads components as [`Tool`]s.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use tokio::sync::Semaphore;
use toolhost_policy::settable;
use wasmtime::component::{Component, Linker};
use wasmtime::{Enabled, Engine, PoolingAllocationConfig};

use crate::admission::{Admission, CallBudget, CallLoad};
use crate::cache::{self, Cache, Identity, Miss};
use crate::compile::{self, CompileLimits, Compiler, LimitExceeded};
use crate::docs;
use crate::error::LoadError;
pub use crate::metering::Metering;
use crate::metering::engine_config;
use crate::sandbox::{self, HostState};
use crate::tool::{self, Compiled, Tool};

/// Concurrent instances of the default pooling allocator ([`RuntimeConfig::pooling`]).
pub const DEFAULT_POOL: u32 = 1000;

/// A component at least this large is hashed on a second thread while its cached artifact
/// is mapped; a smaller one is hashed first (a thread costs what hashing ~100 KB does).
const HASH_ASIDE_FROM: usize = 1 << 20;

/// Elements a table may hold under the pooling allocator: 64 MiB of table, the default
/// memory cap ([`crate::Limits::memory_mib`]), which also counts tables.
pub(crate) const POOL_TABLE_ELEMENTS: usize = (64 << 20) / std::mem::size_of::<usize>();

settable! {
    /// How a [`Runtime`] is set up.
    ///
    /// `RuntimeConfig::default()`:
    /// - `cache_dir`: `None`, nothing is written to disk (the CLI passes a cache directory).
    ///   A directory given must be one only this user can write (created 0700 if missing):
    ///   [`Runtime::new`] refuses any other, since its entries are run as machine code;
    /// - `epoch_tick`: 5 ms, the granularity of call deadlines under the epoch modes;
    /// - `metering`: [`Metering::Fuel`];
    /// - `pooling`: `Some(`[`DEFAULT_POOL`]`)`: slots for 1,000 concurrent instances are
    ///   reserved up front and recycled, so a call neither maps nor unmaps memory and, where
    ///   the kernel has `PAGEMAP_SCAN` (Linux ≥ 6.7), takes no page faults on pages the
    ///   previous occupant of its slot touched (they are reset to their initial contents in
    ///   place). Every call still gets a fresh store and a fresh instance; a slot is wiped
    ///   before reuse. The cost is address space, not memory: each linear-memory slot reserves
    ///   4 GiB plus guard pages (about 8 TiB of the 128 TiB user address space for the default
    ///   pool), and a call beyond `n` concurrent ones waits for a slot (within its timeout).
    ///   A single table is capped at `POOL_TABLE_ELEMENTS` elements (64 MiB): growth beyond
    ///   fails as the WebAssembly spec allows (`table.grow` returns -1). `None` allocates every
    ///   instance on demand with `mmap`/`munmap` (slower per call, no up-front reservation: for
    ///   hosts with a limited address space, e.g. under `ulimit -v`). When the reservation
    ///   fails, [`Runtime::new`] logs a warning and allocates on demand;
    /// - `calls`: `Some(`[`CallBudget::default()`]`)`: the host-wide budget every call draws
    ///   from (calls running at once, the sum of their memory caps, a bounded queue beyond
    ///   them). `None` admits every call (for benchmarks' baselines and embedders that bound
    ///   calls themselves);
    /// - `compile`: [`CompileLimits::default()`], the size and count limits a component must
    ///   pass before it is compiled, and the time and memory a compilation may take;
    /// - `compiler`: [`Compiler::InProcess`]: only the size and count limits apply (a
    ///   library has no program of its own to compile in; the `toolhost` binary sets
    ///   [`Compiler::Worker`], which applies the time and memory limits too).
    #[derive(Debug, Clone, PartialEq, Eq)]
    #[non_exhaustive]
    pub struct RuntimeConfig {
        pub cache_dir: Option<PathBuf>,
        pub epoch_tick: Duration,
        pub metering: Metering,
        pub pooling: Option<u32>,
        pub calls: Option<CallBudget>,
        pub compile: CompileLimits,
        pub compiler: Compiler,
    }
}

impl Default for RuntimeConfig {
    fn default() -> RuntimeConfig {
        RuntimeConfig {
            cache_dir: None,
            epoch_tick: Duration::from_millis(5),
            metering: Metering::Fuel,
            pooling: Some(DEFAULT_POOL),
            calls: Some(CallBudget::default()),
            compile: CompileLimits::default(),
            compiler: Compiler::InProcess,
        }
    }
}

/// One engine for all tools, with fuel and epoch interruption on unless the
/// [`Metering`] says otherwise.
pub struct Runtime {
    pub(crate) engine: Engine,
    pub(crate) linker: Linker<HostState>,
    pub(crate) epoch_tick: Duration,
    pub(crate) metering: Metering,
    /// One permit per pool slot: a call waits here rather than fail to instantiate when
    /// the pool is full.
    pub(crate) slots: Option<Arc<Semaphore>>,
    /// The host-wide call budget, taken before a pool slot.
    pub(crate) admission: Option<Admission>,
    cache: Option<Cache>,
    compile: CompileLimits,
    compiler: Compiler,
    stop_ticker: Arc<AtomicBool>,
}

impl Drop for Runtime {
    fn drop(&mut self) {
        self.stop_ticker.store(true, Ordering::Relaxed);
    }
}

impl Runtime {
    pub fn new(config: RuntimeConfig) -> Result<Runtime, LoadError> {
        let mut c = engine_config(config.metering);
        let mut pooling = config.pooling;
        if let Some(n) = pooling {
            c.allocation_strategy(pool(n));
        }
        let engine = match Engine::new(&c) {
            Ok(engine) => engine,
            // Reserving the pool's address space can fail (`ulimit -v`, valgrind); every
            // guarantee holds on demand too, only slower.
            Err(e) if pooling.is_some() => {
                tracing::warn!(error = %format!("{e:#}"), "cannot reserve the instance pool; allocating instances on demand");
                pooling = None;
                c.allocation_strategy(wasmtime::InstanceAllocationStrategy::OnDemand);
                Engine::new(&c).map_err(|e| LoadError::Engine(format!("{e:#}")))?
            }
            Err(e) => return Err(LoadError::Engine(format!("{e:#}"))),
        };
        let linker = sandbox::linker(&engine).map_err(|e| LoadError::Engine(format!("{e:#}")))?;
        let stop = Arc::new(AtomicBool::new(false));
        if config.metering.epoch() {
            spawn_ticker(engine.clone(), config.epoch_tick, stop.clone());
        }
        Ok(Runtime {
            cache: config
                .cache_dir
                .map(|d| Cache::open(d, &engine))
                .transpose()?,
            engine,
            linker,
            epoch_tick: config.epoch_tick,
            metering: config.metering,
            slots: pooling
                .map(|n| Arc::new(Semaphore::new(usize::try_from(n).unwrap_or(usize::MAX)))),
            admission: config.calls.map(Admission::new),
            stop_ticker: stop,
            compile: config.compile,
            compiler: config.compiler,
        })
    }

    /// Replaces the host-wide call budget (`None`: none). Before the runtime is shared:
    /// a command sets the budget its configuration names once it has read it.
    pub fn set_call_budget(&mut self, budget: Option<CallBudget>) {
        self.admission = budget.map(Admission::new);
    }

    /// How much of the call budget is in use; `None` without a budget.
    pub fn call_load(&self) -> Option<CallLoad> {
        self.admission.as_ref().map(Admission::load)
    }

    /// The compiled cache in use, if any.
    pub fn cache_dir(&self) -> Option<&Path> {
        self.cache.as_ref().map(Cache::dir)
    }

    /// Loads the component at `path` as a tool named after the file stem.
    ///
    /// With a compiled cache, the digest the file had at its last load (a [`cache`] hint,
    /// matched by the file's identity) lets the compiled entry load while the file's
    /// SHA-256 is computed on another thread; the tool is returned only if the two agree,
    /// otherwise it is loaded again under the real digest.
    pub fn load(&self, path: &Path) -> Result<Tool, LoadError> {
        self.load_linked(path, &self.linker)
    }

    /// [`Runtime::load`] with `linker`'s imports.
    pub(crate) fn load_linked(
        &self,
        path: &Path,
        linker: &Linker<HostState>,
    ) -> Result<Tool, LoadError> {
        let read_err = |source| LoadError::Read {
            path: path.display().to_string(),
            source,
        };
        let file = std::fs::File::open(path).map_err(read_err)?;
        let identity = Identity::of(&file);
        // A file over `max_bytes` is refused before it is read into memory.
        let len = file.metadata().map_err(read_err)?.len();
        compile::scan::size(len, &self.compile).map_err(|e| self.limit_error(path, e))?;
        // Sized for the file as it is now (one allocation, no copies as it grows); read no
        // more than the limit allows, should the file grow meanwhile.
        let mut bytes = Vec::with_capacity(usize::try_from(len).map_or(0, |n| n.saturating_add(1)));
        file.take(self.compile.max_bytes.saturating_add(1))
            .read_to_end(&mut bytes)
            .map_err(read_err)?;
        let name = path
            .file_stem()
            .map_or_else(|| "tool".to_string(), |s| s.to_string_lossy().into_owned());
        self.load_from(&name, path, &bytes, identity, linker)
    }

    /// Loads a component from memory; `path` is used for messages and the sidecar lookup.
    pub fn load_bytes(&self, name: &str, path: &Path, bytes: &[u8]) -> Result<Tool, LoadError> {
        self.load_from(name, path, bytes, None, &self.linker)
    }

    /// [`Runtime::load_bytes`] of bytes whose SHA-256 is known to be `digest` (the host's
    /// own components, hashed when the host was built): not hashed again.
    pub(crate) fn load_known(
        &self,
        name: &str,
        path: &Path,
        bytes: &[u8],
        digest: &str,
    ) -> Result<Tool, LoadError> {
        self.header(path, bytes)?;
        let compiled = self.compile(path, digest, bytes)?;
        self.assemble(
            name,
            path,
            bytes,
            digest.to_string(),
            compiled,
            &self.linker,
        )
    }

    /// Refuses bytes that are not a component, saying what they are.
    fn header(&self, path: &Path, bytes: &[u8]) -> Result<(), LoadError> {
        if wasmparser::Parser::is_component(bytes) {
            return Ok(());
        }
        let reason = if wasmparser::Parser::is_core_wasm(bytes) {
            "it is a core module; wrap it with `wasm-tools component new` or build for wasm32-wasip2"
        } else {
            "it does not start with the WebAssembly component header"
        };
        Err(LoadError::NotComponent {
            path: path.display().to_string(),
            reason: reason.into(),
        })
    }

    fn load_from(
        &self,
        name: &str,
        path: &Path,
        bytes: &[u8],
        identity: Option<Identity>,
        linker: &Linker<HostState>,
    ) -> Result<Tool, LoadError> {
        self.header(path, bytes)?;
        let cache = self.cache.as_ref().zip(identity);
        let hint = cache.as_ref().and_then(|(c, id)| c.hint(id));
        let (digest, guess) = match &hint {
            None => (cache::sha256_hex(bytes), None),
            Some(hint) if bytes.len() < HASH_ASIDE_FROM => {
                let digest = cache::sha256_hex(bytes);
                let guess = (&digest == hint).then(|| self.cached(name, path, bytes, hint, linker));
                (digest, guess.flatten())
            }
            Some(hint) => std::thread::scope(|s| {
                let hashing = std::thread::Builder::new()
                    .name("toolhost-digest".into())
                    .spawn_scoped(s, || cache::sha256_hex(bytes));
                let guess = self.cached(name, path, bytes, hint, linker);
                // Without a second thread (none could be started) the digest is computed
                // here, after the guess: slower, equally checked.
                let digest = match hashing {
                    Ok(h) => h.join().expect("SHA-256 does not panic"),
                    Err(_) => cache::sha256_hex(bytes),
                };
                (digest, guess)
            }),
        };
        if hint.as_ref() == Some(&digest) {
            if let Some(tool) = guess {
                return tool;
            }
        } else if let Some((c, id)) = &cache {
            c.remember(id, &digest);
        }
        let compiled = self.compile(path, &digest, bytes)?;
        self.assemble(name, path, bytes, digest, compiled, linker)
    }

    /// The tool assembled from the cache's artifact for digest `hint`, if it holds one.
    fn cached(
        &self,
        name: &str,
        path: &Path,
        bytes: &[u8],
        hint: &str,
        linker: &Linker<HostState>,
    ) -> Option<Result<Tool, LoadError>> {
        let component = self.cache.as_ref()?.load(&self.engine, hint).ok()?;
        Some(self.assemble(
            name,
            path,
            bytes,
            hint.to_string(),
            (component, Compiled::FromCache),
            linker,
        ))
    }

    /// A tool from its compiled component.
    fn assemble(
        &self,
        name: &str,
        path: &Path,
        bytes: &[u8],
        digest: String,
        (component, compiled): (Component, Compiled),
        linker: &Linker<HostState>,
    ) -> Result<Tool, LoadError> {
        let shown = || path.display().to_string();
        let (docs, docs_source, declared) = docs::find(path, bytes)?;
        let operations = tool::operations(&self.engine, &component, docs.as_ref())?;
        let ty = component.component_type();
        let imports: Vec<String> = ty
            .imports(&self.engine)
            .map(|(n, _)| n.to_string())
            .collect();
        // Link strictly first; a component importing something the host does not offer
        // (another toolchain's extra interface) still loads, with those imports trapping.
        let (pre, unsatisfied) = match linker.instantiate_pre(&component) {
            Ok(pre) => (pre, None),
            Err(strict) => {
                let mut linker = linker.clone();
                linker
                    .define_unknown_imports_as_traps(&component)
                    .and_then(|()| linker.instantiate_pre(&component))
                    .map(|pre| (pre, Some(format!("{strict:#}"))))
                    .map_err(|e| LoadError::Link {
                        path: shown(),
                        reason: format!("{e:#}"),
                    })?
            }
        };
        Ok(Tool {
            name: name.to_string(),
            digest,
            description: docs.as_ref().and_then(|d| d.docs.clone()),
            operations,
            imports,
            unsatisfied_imports: unsatisfied,
            docs,
            docs_source,
            declared,
            compiled,
            pre,
        })
    }

    fn compile(
        &self,
        path: &Path,
        digest: &str,
        bytes: &[u8],
    ) -> Result<(Component, Compiled), LoadError> {
        let mut rebuilt = false;
        if let Some(cache) = &self.cache {
            match cache.load(&self.engine, digest) {
                Ok(c) => {
                    tracing::debug!(path = %path.display(), "loaded from the compiled cache");
                    return Ok((c, Compiled::FromCache));
                }
                Err(Miss::Absent) => {}
                Err(Miss::Corrupt(why)) => {
                    tracing::warn!(entry = %cache.entry_path(digest).display(), %why, "ignoring a bad compiled-cache entry; recompiling");
                    rebuilt = true;
                }
            }
        }
        let component = self.compile_bounded(path, bytes)?;
        if let Some(cache) = &self.cache {
            cache.store(digest, &component);
        }
        Ok((
            component,
            if rebuilt {
                Compiled::Rebuilt
            } else {
                Compiled::Fresh
            },
        ))
    }
}

impl Runtime {
    /// Compiles `bytes` within the [`CompileLimits`]: the size and count limits first,
    /// then, with a [`Compiler::Worker`], in a child process under a deadline and a
    /// memory cap.
    fn compile_bounded(&self, path: &Path, bytes: &[u8]) -> Result<Component, LoadError> {
        let failed = |reason: String| LoadError::Compile {
            path: path.display().to_string(),
            reason,
        };
        compile::scan::check(bytes, &self.compile).map_err(|e| self.limit_error(path, e))?;
        match &self.compiler {
            Compiler::InProcess => {
                Component::new(&self.engine, bytes).map_err(|e| failed(format!("{e:#}")))
            }
            Compiler::Worker { program, args } => {
                let artifact =
                    compile::worker::compile(program, args, self.metering, bytes, &self.compile)
                        .map_err(|e| match e {
                            compile::worker::Failed::Limit(l) => self.limit_error(path, l),
                            compile::worker::Failed::Other(reason) => failed(reason),
                        })?;
                // SAFETY: the artifact is what `Engine::precompile_component` wrote in our
                // own worker, from the bytes we gave it, and it is held in memory that
                // nothing else can change; wasmtime checks on its own that it was compiled
                // for this engine's configuration and version.
                unsafe { Component::deserialize(&self.engine, &artifact) }
                    .map_err(|e| failed(format!("the compiler worker's artifact: {e:#}")))
            }
        }
    }

    fn limit_error(&self, path: &Path, exceeded: LimitExceeded) -> LoadError {
        LoadError::CompileLimit {
            path: path.display().to_string(),
            exceeded,
        }
    }
}

/// A pool for `n` concurrent component instances, sized for the components toolchains
/// produce (several core instances, memories and tables each) and for memories up to the
/// largest memory limit a policy may set.
fn pool(n: u32) -> PoolingAllocationConfig {
    let mut p = PoolingAllocationConfig::new();
    p.total_component_instances(n)
        .total_core_instances(n.saturating_mul(16))
        .max_core_instances_per_component(64)
        .total_memories(n.saturating_mul(2))
        .max_memories_per_component(16)
        .total_tables(n.saturating_mul(4))
        .max_tables_per_component(32)
        .total_stacks(n)
        .max_memory_size(4 << 30)
        .table_elements(POOL_TABLE_ELEMENTS);
    // With `PAGEMAP_SCAN` the pool finds the pages a call touched and resets them in
    // place (zero or the initial image) instead of `madvise`-ing them away, so the next
    // call in the slot takes no page faults on them. Without it, resetting in place would
    // mean `memset`-ing the whole kept range, which costs more than the faults it saves.
    if PoolingAllocationConfig::is_pagemap_scan_available() {
        p.pagemap_scan(Enabled::Yes)
            .linear_memory_keep_resident(KEEP_RESIDENT)
            .table_keep_resident(KEEP_RESIDENT / 16);
    }
    p
}

/// Bytes of a pooled memory slot reset in place rather than released (only pages that are
/// resident count): enough for a small tool's stack and heap.
const KEEP_RESIDENT: usize = 1 << 20;

fn spawn_ticker(engine: Engine, tick: Duration, stop: Arc<AtomicBool>) {
    std::thread::Builder::new()
        .name("toolhost-epoch".into())
        .spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                std::thread::sleep(tick);
                engine.increment_epoch();
            }
        })
        .expect("spawn the epoch ticker thread");
}
