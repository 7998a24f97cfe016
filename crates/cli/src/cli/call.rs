//! `toolhost tool call`: one sandboxed call, result as JSON on stdout.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use super::grants::GrantArgs;
use super::{CmdResult, Failure, exit, load_tool};
use toolhost_app::trust;
use toolhost_runtime::error::{CallError, ErrorKind};
use toolhost_runtime::policy::{Gate, Policy, ToolPolicy, TrustedKey};
use toolhost_runtime::{Capabilities, Limits, Runtime, terminal};

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
    /// Arguments as a JSON object keyed by parameter name; `@FILE` reads them from a file
    /// and `-` from stdin (for arguments past the command line's size limit).
    #[arg(long, default_value = "{}", value_name = "JSON|@FILE|-")]
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
    /// Print one JSON object: result or error, fuel, duration, logs, captured output and
    /// the audit events of every capability decision.
    #[arg(long)]
    json: bool,
    /// Run under this policy file: the tool's section (the one whose `component` is this
    /// file, else the one named after the file stem) gives its grants and limits. Limit
    /// flags may only tighten them; grant flags cannot be combined with a policy.
    #[arg(long, value_name = "FILE")]
    policy: Option<PathBuf>,
    #[command(flatten)]
    grants: GrantArgs,
}

/// The most of a bad `--args` value an error message quotes.
const QUOTE: usize = 60;

/// The call's arguments from `--args`: inline JSON, `@FILE`, or `-` for stdin.
fn call_args(given: &str) -> Result<Value, Failure> {
    let (source, text) = match given {
        "-" => {
            let mut text = String::new();
            std::io::Read::read_to_string(&mut std::io::stdin(), &mut text).map_err(|e| {
                Failure::new(exit::USAGE, format!("--args -: cannot read stdin: {e}"))
            })?;
            ("--args - (stdin)".to_string(), text)
        }
        _ => match given.strip_prefix('@') {
            Some(file) => {
                let text = std::fs::read_to_string(file).map_err(|e| {
                    Failure::new(
                        exit::USAGE,
                        format!("--args @{file}: cannot read `{file}`: {e}"),
                    )
                })?;
                (format!("--args @{file}"), text)
            }
            None => ("--args".to_string(), given.to_string()),
        },
    };
    serde_json::from_str(&text).map_err(|e| {
        Failure::new(
            exit::USAGE,
            format!(
                "{source} is not valid JSON: {e} (near `{}`)",
                near(&text, &e)
            ),
        )
    })
}

/// At most [`QUOTE`] characters of `text` around where `e` happened: a 50 MB argument
/// is not echoed back whole.
fn near(text: &str, e: &serde_json::Error) -> String {
    let line = text.lines().nth(e.line().saturating_sub(1)).unwrap_or("");
    let chars: Vec<char> = line.chars().collect();
    let at = e.column().saturating_sub(1).min(chars.len());
    let from = at.saturating_sub(QUOTE / 2);
    let to = (from + QUOTE).min(chars.len());
    let mut quoted: String = chars[from..to].iter().collect();
    if from > 0 {
        quoted.insert(0, '…');
    }
    if to < chars.len() {
        quoted.push('…');
    }
    quoted
}

fn exit_code(kind: ErrorKind) -> i32 {
    match kind {
        ErrorKind::ToolError | ErrorKind::Exit => exit::TOOL_ERROR,
        ErrorKind::BadArguments | ErrorKind::UnknownOperation => exit::USAGE,
        ErrorKind::FuelExhausted
        | ErrorKind::Timeout
        | ErrorKind::MemoryLimit
        | ErrorKind::OutputLimit
        | ErrorKind::HostMemoryLimit
        | ErrorKind::ResourceLimit
        | ErrorKind::WriteLimit
        | ErrorKind::AuditLimit
        | ErrorKind::RateLimited
        | ErrorKind::Overloaded => exit::LIMIT,
        ErrorKind::Panic | ErrorKind::StackOverflow | ErrorKind::Trap | ErrorKind::Instantiate => {
            exit::TRAP
        }
        ErrorKind::Denied => exit::DENIED,
        // `ErrorKind` is non-exhaustive: a kind this mapping does not know yet is a
        // failure of the call itself, like a trap.
        _ => exit::TRAP,
    }
}

pub(crate) fn run(rt: &Runtime, args: Args, out: &mut dyn Write, err: &mut dyn Write) -> CmdResult {
    let call_args = call_args(&args.args)?;
    let plan = plan(&args)?;
    let tool = match &plan {
        // A section that requires a signature: checked before the component is compiled.
        Plan::Policy(section, _, keys) if let Some(rule) = &section.signature => {
            let checked = trust::check(&section.name, &args.path, rule, keys, false)?;
            let tool = Arc::new(load_tool(rt, &checked.file)?);
            toolhost_app::load::signed(tool, &section.name, &args.path, &checked)?
        }
        _ => Arc::new(load_tool(rt, &args.path)?),
    };
    let tokio = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Failure::new(exit::LOAD, format!("cannot start the async runtime: {e}")))?;
    // Through the policy gate, under `section` narrowed by the policy the component
    // carries, if any.
    let gated = |section: &ToolPolicy, limits: &Limits| {
        let section = tool.narrow(section);
        let limits = limits.capped_by(&section.limits);
        tokio.block_on(Gate::new().call(rt, &section, &tool, &args.operation, &call_args, &limits))
    };
    let outcome = match &plan {
        Plan::Flags(caps, limits) if tool.declared.is_none() => {
            tokio.block_on(rt.call(&tool, &args.operation, &call_args, caps, limits))
        }
        // The carried policy narrows what the flags grant, as it narrows a section.
        Plan::Flags(caps, limits) => gated(
            &ToolPolicy::granted(&tool.name, caps.clone(), limits.clone()),
            limits,
        ),
        Plan::Policy(section, limits, _) => gated(section, limits),
    };
    let report = &outcome.report;
    if args.json {
        let mut doc = match &outcome.result {
            Ok(v) => json!({"ok": true, "result": v}),
            Err(e) => json!({"ok": false, "error": error_json(e)}),
        };
        doc["report"] = serde_json::to_value(report).expect("report serialises");
        let _ = writeln!(out, "{}", serde_json::to_string_pretty(&doc).expect("JSON"));
    } else {
        // The tool's words, each line marked as its own.
        for rec in &report.logs {
            let _ = say!(err, "[{} {}] {}", tool.name, rec.level, rec.message);
        }
        for line in report.stderr.lines() {
            let _ = say!(err, "[{} stderr] {line}", tool.name);
        }
        if let Ok(v) = &outcome.result {
            let _ = writeln!(out, "{}", terminal::json_pretty(v));
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

/// Where the call's grants and limits come from.
enum Plan {
    Flags(Capabilities, Limits),
    /// The section, its limits, and the policy's keys (`[trust]`).
    Policy(Box<ToolPolicy>, Limits, BTreeMap<String, TrustedKey>),
}

fn plan(args: &Args) -> Result<Plan, Failure> {
    let usage = |m: String| Failure::new(exit::USAGE, m);
    let Some(policy_path) = &args.policy else {
        let caps = args.grants.capabilities().map_err(usage)?;
        let limits = limits_from_flags(args, &Limits::default(), None)?;
        return Ok(Plan::Flags(caps, limits));
    };
    if args.grants.any() {
        return Err(usage(
            "grant flags (--allow-*) cannot be combined with --policy: the policy holds all of \
             the tool's grants; add them to its section instead"
                .into(),
        ));
    }
    let policy = Policy::load(policy_path).map_err(|e| usage(e.to_string()))?;
    let section = policy.section_for(&args.path).ok_or_else(|| {
        let stem = args
            .path
            .file_stem()
            .map_or_else(String::new, |s| s.to_string_lossy().into_owned());
        Failure::new(
            exit::DENIED,
            format!(
                "[denied] policy `{}` has no section for `{}`: add `[tools.{stem}]` (or a section \
                 whose `component` is this file) to allow it",
                policy_path.display(),
                args.path.display()
            ),
        )
    })?;
    let limits = limits_from_flags(args, &section.limits, Some(&section.name))?;
    Ok(Plan::Policy(
        Box::new(section.clone()),
        limits,
        policy.keys.clone(),
    ))
}

/// `base` with the limit flags applied; under a policy (`tool` set) a flag may only
/// lower a limit.
fn limits_from_flags(args: &Args, base: &Limits, tool: Option<&str>) -> Result<Limits, Failure> {
    let mut l = base.clone();
    for (flag, value, current) in [
        ("--fuel", args.fuel, base.fuel),
        (
            "--timeout-ms",
            args.timeout_ms,
            u64::try_from(base.timeout.as_millis()).unwrap_or(u64::MAX),
        ),
        ("--memory-mib", args.memory_mib, base.memory_mib),
    ] {
        let Some(v) = value else { continue };
        if v == 0 {
            return Err(Failure::new(
                exit::USAGE,
                format!("{flag} 0 would make every call fail: give a positive value"),
            ));
        }
        if let Some(tool) = tool
            && v > current
        {
            return Err(Failure::new(
                exit::USAGE,
                format!(
                    "{flag} {v} is above the policy's limit of {current} for tool `{tool}`: flags \
                     can only tighten a policy"
                ),
            ));
        }
        match flag {
            "--fuel" => l.fuel = v,
            "--timeout-ms" => l.timeout = Duration::from_millis(v),
            _ => l.memory_mib = v,
        }
    }
    Ok(l)
}
