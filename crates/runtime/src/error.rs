//! Typed errors: [`LoadError`] when a component cannot become a tool, [`CallError`] when a
//! call does not produce a result. Every message names the bad value and the reason.

use serde::Serialize;

use crate::convert::ConvertError;

/// Why a component could not be loaded as a tool.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LoadError {
    #[error("cannot read `{path}`: {source}")]
    Read {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("`{path}` is not a WebAssembly component: {reason}")]
    NotComponent { path: String, reason: String },
    #[error("cannot compile `{path}`: {reason}")]
    Compile { path: String, reason: String },
    /// The component passed one of the [`crate::compile::CompileLimits`], found before
    /// compiling (a size or count) or while compiling in a worker (time, memory).
    #[error("cannot compile `{path}`: {exceeded}")]
    CompileLimit {
        path: String,
        exceeded: crate::compile::LimitExceeded,
    },
    #[error("operation `{operation}` cannot be a tool operation: its {position} is {what}")]
    Unsupported {
        operation: String,
        position: String,
        what: String,
    },
    #[error("cannot link `{path}`: {reason}")]
    Link { path: String, reason: String },
    #[error("docs of `{path}`: {reason}")]
    Docs { path: String, reason: String },
    /// The policy a component carries (`toolhost:policy`) cannot be read: the component
    /// is refused rather than run with the operator's grants alone.
    #[error("component `{path}` carries a policy that cannot be used: {reason}")]
    Policy { path: String, reason: String },
    #[error("cannot set up the engine: {0}")]
    Engine(String),
    /// The compiled cache's directory or key is one the host refuses to trust.
    #[error(transparent)]
    Cache(#[from] crate::cache::CacheError),
}

/// Why a call failed. [`CallError::kind`] gives the stable machine-readable kind.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum CallError {
    #[error("unknown operation `{operation}`; the tool's operations are: {available}")]
    UnknownOperation {
        operation: String,
        available: String,
    },
    #[error("bad arguments: {0}")]
    BadArguments(#[from] ConvertError),
    #[error("fuel exhausted: the call used all {limit} units of fuel")]
    FuelExhausted { limit: u64 },
    #[error("deadline exceeded: the call ran longer than {timeout_ms} ms")]
    Timeout { timeout_ms: u64 },
    #[error(
        "memory limit exceeded: the instance asked for {requested} bytes, the limit is {limit} bytes"
    )]
    MemoryLimit { limit: usize, requested: usize },
    #[error("stack overflow: the tool recursed too deeply")]
    StackOverflow,
    #[error("tool panicked: {message}")]
    Panic { message: String },
    #[error("tool trapped: {message}")]
    Trap { message: String },
    #[error("tool returned an error: {}", display_json(.value))]
    ToolError { value: serde_json::Value },
    #[error("result too large: {size} bytes of JSON, the limit is {limit} bytes")]
    OutputLimit { size: usize, limit: usize },
    #[error("denied: {reason}")]
    Denied { reason: String },
    #[error(
        "rate limited: tool `{tool}` may be called {per_minute} times per minute; retry in {retry_after_ms} ms"
    )]
    RateLimited {
        tool: String,
        per_minute: u32,
        retry_after_ms: u64,
    },
    #[error("cannot start the call: {reason}")]
    Instantiate { reason: String },
    #[error(
        "host memory limit exceeded: {what} would bring what the host holds for the call to \
         {requested} bytes, the limit is {limit} bytes"
    )]
    HostMemoryLimit {
        what: String,
        limit: usize,
        requested: usize,
    },
    #[error(
        "resource limit exceeded: the call may hold {limit} host resources (descriptors, \
         sockets, streams, pollables, …) at once"
    )]
    ResourceLimit { limit: usize },
    #[error(
        "arguments too large: {size} bytes of JSON, the limit is {limit} bytes (`max_args_bytes`)"
    )]
    ArgumentsTooLarge { size: usize, limit: usize },
    /// The tool called `wasi:cli/exit` before returning a result.
    #[error("the tool exited with code {code} instead of returning a result")]
    Exit { code: u32 },
    #[error("write limit exceeded: {detail}")]
    WriteLimit { detail: String },
    #[error(
        "audit limit exceeded: the call's audit events reached {budget} bytes (`max_audit_bytes`); it was ended rather than go on unaudited"
    )]
    AuditLimit { budget: usize },
    /// The host's call budget ([`CallBudget`](crate::CallBudget)) had no room for the call
    /// and its queue was full, or the call waited its whole timeout: it never ran.
    #[error("overloaded: {reason}")]
    Overloaded { reason: String },
}

fn display_json(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

impl CallError {
    /// For a failure caused by a limit, the limit's name: `fuel`, `timeout`, `memory`,
    /// `output`, `host-memory`, `resources`, `arguments`, `written`, `audit`, `calls` (the
    /// host's call budget).
    pub fn limit_name(&self) -> Option<&'static str> {
        match self {
            CallError::FuelExhausted { .. } => Some("fuel"),
            CallError::Timeout { .. } => Some("timeout"),
            CallError::MemoryLimit { .. } => Some("memory"),
            CallError::OutputLimit { .. } => Some("output"),
            CallError::HostMemoryLimit { .. } => Some("host-memory"),
            CallError::ResourceLimit { .. } => Some("resources"),
            CallError::ArgumentsTooLarge { .. } => Some("arguments"),
            CallError::WriteLimit { .. } => Some("written"),
            CallError::AuditLimit { .. } => Some("audit"),
            CallError::Overloaded { .. } => Some("calls"),
            _ => None,
        }
    }

    /// Stable kind, as used in `--json` output and exit codes.
    pub fn kind(&self) -> ErrorKind {
        match self {
            CallError::UnknownOperation { .. } => ErrorKind::UnknownOperation,
            CallError::BadArguments(_) => ErrorKind::BadArguments,
            CallError::FuelExhausted { .. } => ErrorKind::FuelExhausted,
            CallError::Timeout { .. } => ErrorKind::Timeout,
            CallError::MemoryLimit { .. } => ErrorKind::MemoryLimit,
            CallError::StackOverflow => ErrorKind::StackOverflow,
            CallError::Panic { .. } => ErrorKind::Panic,
            CallError::Trap { .. } => ErrorKind::Trap,
            CallError::ToolError { .. } => ErrorKind::ToolError,
            CallError::OutputLimit { .. } => ErrorKind::OutputLimit,
            CallError::Denied { .. } => ErrorKind::Denied,
            CallError::RateLimited { .. } => ErrorKind::RateLimited,
            CallError::Instantiate { .. } => ErrorKind::Instantiate,
            CallError::HostMemoryLimit { .. } => ErrorKind::HostMemoryLimit,
            CallError::ResourceLimit { .. } => ErrorKind::ResourceLimit,
            CallError::ArgumentsTooLarge { .. } => ErrorKind::BadArguments,
            CallError::Exit { .. } => ErrorKind::Exit,
            CallError::WriteLimit { .. } => ErrorKind::WriteLimit,
            CallError::AuditLimit { .. } => ErrorKind::AuditLimit,
            CallError::Overloaded { .. } => ErrorKind::Overloaded,
        }
    }
}

/// The stable kinds of call failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ErrorKind {
    UnknownOperation,
    BadArguments,
    FuelExhausted,
    Timeout,
    MemoryLimit,
    StackOverflow,
    Panic,
    Trap,
    ToolError,
    OutputLimit,
    Denied,
    RateLimited,
    Instantiate,
    HostMemoryLimit,
    ResourceLimit,
    Exit,
    WriteLimit,
    AuditLimit,
    Overloaded,
}

impl ErrorKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::UnknownOperation => "unknown_operation",
            ErrorKind::BadArguments => "bad_arguments",
            ErrorKind::FuelExhausted => "fuel_exhausted",
            ErrorKind::Timeout => "timeout",
            ErrorKind::MemoryLimit => "memory_limit",
            ErrorKind::StackOverflow => "stack_overflow",
            ErrorKind::Panic => "panic",
            ErrorKind::Trap => "trap",
            ErrorKind::ToolError => "tool_error",
            ErrorKind::OutputLimit => "output_limit",
            ErrorKind::Denied => "denied",
            ErrorKind::RateLimited => "rate_limited",
            ErrorKind::Instantiate => "instantiate",
            ErrorKind::HostMemoryLimit => "host_memory_limit",
            ErrorKind::ResourceLimit => "resource_limit",
            ErrorKind::Exit => "exit",
            ErrorKind::WriteLimit => "write_limit",
            ErrorKind::AuditLimit => "audit_limit",
            ErrorKind::Overloaded => "overloaded",
        }
    }
}
