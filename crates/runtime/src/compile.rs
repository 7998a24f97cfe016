//! Bounding the work of compiling a component, which is done on untrusted input before any
//! call's limits apply: one function with 40,000 locals live across a loop (480 KB) took
//! Cranelift 79 s; 300,000 empty functions took 26 s and 1.69 GB.
//!
//! Two bounds, in this order:
//! - [`scan`]: size and count limits ([`CompileLimits`]) read from the component's
//!   sections with `wasmparser` before anything is compiled: a refusal takes milliseconds
//!   and names the limit and the value;
//! - [`worker`]: with [`Compiler::Worker`], the compilation itself runs in a child process
//!   under a CPU-time limit, a wall-clock deadline and a memory cap, and ends when it
//!   passes one. A memory
//!   cap cannot be set in this process: the instance pool reserves terabytes of address
//!   space, and one compile must not take down the calls in flight.
//!
//! With [`Compiler::InProcess`] (the library default: an embedder has no program to
//! start) only the first bound applies. The `toolhost` binary uses a worker: itself, run as
//! `toolhost __compile`, which calls [`worker::serve`].

pub mod scan;
pub mod worker;

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use toolhost_policy::settable;

settable! {
    /// The most a component may be or ask of the compiler before it is refused.
    ///
    /// `CompileLimits::default()` admits the project's own Python (componentize-py, 18–27
    /// MiB, ~13,400 functions, at most 271 locals in a function) and JavaScript components
    /// with room to spare, and refuses the shapes that make Cranelift's time or memory
    /// explode:
    /// - `max_bytes`: 128 MiB of component (checked before the file is read whole);
    /// - `max_functions`: 50,000 functions defined in all core modules together;
    /// - `max_function_bytes`: 4 MiB of code in one function body;
    /// - `max_locals`: 5,000 locals in one function (compile time grows about with the
    ///   cube of the values live at once: 4,000 took 0.06 s, 40,000 took 79 s);
    /// - `max_modules`: 64 core modules and nested components;
    /// - `max_instances`: 1,000 core and component instances;
    /// - `max_segments`: 100,000 data and element segments;
    /// - `max_types`: 100,000 core and component type definitions;
    /// - `max_imports`, `max_exports`: 50,000 each (core and component together);
    /// - `cpu_seconds`: 120 s of CPU time for one compilation, all its threads together
    ///   (with [`Compiler::Worker`]: `RLIMIT_CPU`; the Python tools take 10–20 s). CPU
    ///   time, unlike wall-clock time, does not grow when the machine is busy;
    /// - `timeout`: 600 s of wall-clock time for one compilation (with
    ///   [`Compiler::Worker`]): a compile waiting for a loaded machine's cores is let be,
    ///   up to this;
    /// - `memory_mib`: 4,096 MiB of memory for one compilation (with [`Compiler::Worker`]:
    ///   the worker's writable private memory, `RLIMIT_DATA`).
    #[derive(Debug, Clone, PartialEq, Eq)]
    #[non_exhaustive]
    pub struct CompileLimits {
        pub max_bytes: u64,
        pub max_functions: u64,
        pub max_function_bytes: u64,
        pub max_locals: u64,
        pub max_modules: u64,
        pub max_instances: u64,
        pub max_segments: u64,
        pub max_types: u64,
        pub max_imports: u64,
        pub max_exports: u64,
        pub cpu_seconds: u64,
        pub timeout: Duration,
        pub memory_mib: u64,
    }
}

impl Default for CompileLimits {
    fn default() -> CompileLimits {
        CompileLimits {
            max_bytes: 128 << 20,
            max_functions: 50_000,
            max_function_bytes: 4 << 20,
            max_locals: 5_000,
            max_modules: 64,
            max_instances: 1_000,
            max_segments: 100_000,
            max_types: 100_000,
            max_imports: 50_000,
            max_exports: 50_000,
            cpu_seconds: 120,
            timeout: Duration::from_secs(600),
            memory_mib: 4096,
        }
    }
}

/// Where components are compiled.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Compiler {
    /// In this process, on the calling thread: [`CompileLimits`]' size and count limits
    /// apply, its `timeout` and `memory_mib` do not.
    #[default]
    InProcess,
    /// In a child process, `program` run with `args`, which must call [`worker::serve`]
    /// (the `toolhost` binary: itself with `__compile`): killed past [`CompileLimits`]'
    /// `timeout`, and unable to take more than its `memory_mib`.
    Worker {
        program: PathBuf,
        args: Vec<OsString>,
    },
}

/// A limit a component passed: what it is, the value found and the limit.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LimitExceeded {
    #[error("{what}, over the limit `{limit}` of {max}")]
    Count {
        /// The [`CompileLimits`] field.
        limit: &'static str,
        /// What was counted, with the value (`it defines 300000 functions`).
        what: String,
        value: u64,
        max: u64,
    },
    #[error("compiling it took longer than the limit `timeout` of {} ms", .timeout.as_millis())]
    Timeout { timeout: Duration },
    #[error("compiling it took more CPU time than the limit `cpu_seconds` of {seconds} s")]
    Cpu { seconds: u64 },
    #[error("compiling it needed more than the limit `memory_mib` of {mib} MiB")]
    Memory { mib: u64 },
}

impl LimitExceeded {
    /// The name of the limit (a [`CompileLimits`] field).
    pub fn limit(&self) -> &'static str {
        match self {
            LimitExceeded::Count { limit, .. } => limit,
            LimitExceeded::Timeout { .. } => "timeout",
            LimitExceeded::Cpu { .. } => "cpu_seconds",
            LimitExceeded::Memory { .. } => "memory_mib",
        }
    }
}
