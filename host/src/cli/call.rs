//! `toolhost tool call`: one sandboxed call, result as JSON on stdout.

use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use serde_json::{Value, json};

use super::grants::GrantArgs;
use super::{CmdResult, Failure, exit, load_tool};
use crate::error::{CallError, ErrorKind};
use crate::{Limits, Runtime};

/// Call one operation of a component in a fresh sandboxed instance.
///
/// Prints the result as JSON on stdout. On failure the exit code tells the kind (see
/// `toolhost --help`); with `--json` stdout holds `{"ok": false, "error": {"kind", "message"}}`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The component (.wasm).
    path: PathBuf,
    /// The operation: `name`, or `interface.name` for a function of an exported interface.
    operation: String,
    /// Arguments as a JSON object keyed by parameter name.
    #[arg(long, default_value = "{}", value_name = "JSON")]
    args: String,
    /// Fuel for the call (about one unit per instruction) [default: 1000000000].
    #[arg(long, value_name = "N")]
    fuel: Option<u64>,
    /// Wall-clock deadline in milliseconds, host waits included [default: 5000].
    #[arg(long, value_name = "N")]
    timeout_ms: Option<u64>,
    /// Memory cap in MiB for all memories and tables of the instance [default: 64].
    #[arg(long, value_name = "N")]
    memory_mib: Option<u64>,
    /// Print one JSON object: result or error, fuel, duration, logs, captured output.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    grants: GrantArgs,
}

fn exit_code(kind: ErrorKind) -> i32 {
    match kind {
        ErrorKind::ToolError => exit::TOOL_ERROR,
        ErrorKind::BadArguments | ErrorKind::UnknownOperation => exit::USAGE,
        ErrorKind::FuelExhausted
        | ErrorKind::Timeout
        | ErrorKind::MemoryLimit
        | ErrorKind::OutputLimit
        | ErrorKind::RateLimited => exit::LIMIT,
        ErrorKind::Panic | ErrorKind::StackOverflow | ErrorKind::Trap | ErrorKind::Instantiate => {
            exit::TRAP
        }
        ErrorKind::Denied => exit::DENIED,
    }
}

pub(crate) fn run(rt: &Runtime, args: Args, out: &mut dyn Write, err: &mut dyn Write) -> CmdResult {
    let call_args: Value = serde_json::from_str(&args.args).map_err(|e| {
        Failure::new(
            exit::USAGE,
            format!("--args is not valid JSON: {e} (got `{}`)", args.args),
        )
    })?;
    let caps = args
        .grants
        .capabilities()
        .map_err(|m| Failure::new(exit::USAGE, m))?;
    let defaults = Limits::default();
    let limits = Limits {
        fuel: args.fuel.unwrap_or(defaults.fuel),
        timeout: args
            .timeout_ms
            .map_or(defaults.timeout, Duration::from_millis),
        memory_mib: args.memory_mib.unwrap_or(defaults.memory_mib),
        ..defaults
    };
    let tool = load_tool(rt, &args.path)?;
    let tokio = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .map_err(|e| Failure::new(exit::LOAD, format!("cannot start the async runtime: {e}")))?;
    let outcome = tokio.block_on(rt.call(&tool, &args.operation, &call_args, &caps, &limits));
    let report = &outcome.report;
    if args.json {
        let mut doc = match &outcome.result {
            Ok(v) => json!({"ok": true, "result": v}),
            Err(e) => json!({"ok": false, "error": error_json(e)}),
        };
        doc["report"] = serde_json::to_value(report).expect("report serialises");
        let _ = writeln!(out, "{}", serde_json::to_string_pretty(&doc).expect("JSON"));
    } else {
        for rec in &report.logs {
            let _ = writeln!(err, "[{} {}] {}", tool.name, rec.level, rec.message);
        }
        if !report.stderr.is_empty() {
            let _ = write!(err, "{}", report.stderr);
        }
        if let Ok(v) = &outcome.result {
            let _ = writeln!(out, "{}", serde_json::to_string_pretty(v).expect("JSON"));
        }
    }
    match outcome.result {
        Ok(_) => Ok(exit::OK),
        Err(e) => {
            let code = exit_code(e.kind());
            if args.json {
                Err(Failure::new(code, ""))
            } else {
                Err(Failure::new(code, format!("[{}] {e}", e.kind().as_str())))
            }
        }
    }
}

fn error_json(e: &CallError) -> Value {
    let mut v = json!({"kind": e.kind(), "message": e.to_string()});
    if let CallError::ToolError { value } = e {
        v["value"] = value.clone();
    }
    v
}
