//! The `toolhost` command line. One file per subcommand; this file holds the clap tree,
//! exit codes and the shared runtime setup.
//!
//! Text that came from a tool or a model (logs, stderr, errors, results, docs, plans,
//! answers) is printed for a person through `say!` or `toolhost_runtime::terminal`,
//! with its control characters escaped and no line of its own; `--json` output is exact.

/// `writeln!` of one line that a person reads and that holds text from a tool or a
/// model: control characters are escaped and an embedded newline shows as `\n`, so the
/// text can neither drive the terminal nor forge a line of the host's
/// (`toolhost_runtime::terminal::line`).
macro_rules! say {
    ($out:expr, $($fmt:tt)*) => {
        writeln!($out, "{}", toolhost_runtime::terminal::line(&format!($($fmt)*)))
    };
}
pub(crate) use say;

mod approve;
mod budget;
mod call;
mod cancel;
mod database;
mod eval;
mod grants;
mod inspect;
mod install;
mod journal;
mod mcp;
mod new;
mod pack;
mod plan;
mod planner;
mod policy;
mod progress;
mod question;
mod registry;
mod replay;
mod report;
mod resume;
mod run;
mod runs;
mod serve;
mod sign;
mod stdin;
mod submit;
mod worker;

use std::ffi::OsString;
use std::io::Write;
use std::path::PathBuf;

use clap::{Parser, Subcommand};

use toolhost_app::AppError;
use toolhost_runtime::{CompileLimits, Compiler, Runtime, RuntimeConfig, terminal};

/// Exit codes of `toolhost`, also listed in `--help`.
pub mod exit {
    pub const OK: i32 = 0;
    /// The tool returned an error value (`tool_error`).
    pub(crate) const TOOL_ERROR: i32 = 1;
    /// `toolhost eval`: a task failed, or (with `--baseline`) a metric left its band.
    pub(crate) const EVAL_FAILED: i32 = 1;
    /// Bad command line, bad arguments, unknown operation.
    pub(crate) const USAGE: i32 = 2;
    /// A limit stopped the call: fuel, deadline, memory, result size, rate limit.
    pub(crate) const LIMIT: i32 = 3;
    /// The tool trapped: panic, stack overflow, any other trap, failed instantiation.
    pub(crate) const TRAP: i32 = 4;
    /// A capability was denied.
    pub(crate) const DENIED: i32 = 5;
    /// The component could not be loaded (unreadable, not a component, unsupported types).
    pub(crate) const LOAD: i32 = 6;
    /// `toolhost run`: the run stopped before completing (budget, replan limit,
    /// evaluator, escalation, rejection).
    pub(crate) const STOPPED: i32 = 7;
    /// A journal is broken or torn (`toolhost journal verify`/`show`, `toolhost report`), or `toolhost run`
    /// could not write its journal (the run stopped `journal_failed`).
    pub const JOURNAL: i32 = 8;
    /// `toolhost replay`: the replay diverged from the recorded run.
    pub(crate) const DIVERGED: i32 = 9;
    /// `toolhost resume`: another process is writing the run (its `run` or a `resume`).
    pub const LOCKED: i32 = 10;
}

const EXIT_CODES: &str = "\
Exit codes:
  0  success
  1  the tool returned an error value (kind `tool_error`); `toolhost eval`: a task
     failed, or a metric left its baseline band
  2  usage error, bad arguments or unknown operation
  3  a limit stopped the call (fuel_exhausted, timeout, memory_limit, output_limit,
     rate_limited, overloaded)
  4  the tool trapped (panic, stack_overflow, trap, instantiate)
  5  a capability was denied (denied)
  6  the component could not be loaded
  7  `toolhost run` stopped before completing (budget_exhausted, replan_limit,
     evaluator_failed, escalated, rejected_by_human, cancelled, refusal_limit)
  8  a run journal is broken or torn, or could not be written (journal_failed)
  9  `toolhost replay` diverged from the recorded run
 10  `toolhost resume`: another process is writing the run";

#[derive(Debug, Parser)]
#[command(name = "toolhost", version, about = "Run WebAssembly components as sandboxed agent tools", after_help = EXIT_CODES)]
struct Cli {
    /// Directory of the compiled-component cache [default: $XDG_CACHE_HOME/toolhost or
    /// ~/.cache/toolhost; env TOOLHOST_CACHE_DIR]
    #[arg(long, global = true, value_name = "DIR")]
    cache_dir: Option<PathBuf>,
    /// Compile every component afresh and write nothing to the cache.
    #[arg(long, global = true)]
    no_cache: bool,
    /// Directory of run journals [default: $XDG_STATE_HOME/toolhost or
    /// ~/.local/state/toolhost; env TOOLHOST_STATE_DIR]
    #[arg(long, global = true, value_name = "DIR")]
    state_dir: Option<PathBuf>,
    /// Wall-clock limit on compiling one component, in a worker process that is killed
    /// past it [default: 600000; its CPU time is limited to 120 s]. Components are also
    /// refused before compiling when they pass a size or count limit (128 MiB, 50,000
    /// functions, 5,000 locals in a function, …: `CompileLimits`).
    #[arg(long, global = true, value_name = "MS")]
    compile_timeout_ms: Option<u64>,
    /// Memory limit on compiling one component, in MiB [default: 4096].
    #[arg(long, global = true, value_name = "MIB")]
    compile_memory_mib: Option<u64>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Work with tool components.
    #[command(subcommand)]
    Tool(ToolCommand),
    /// Work with policy files.
    #[command(subcommand)]
    Policy(PolicyCommand),
    /// Work with plans.
    #[command(subcommand)]
    Plan(PlanCommand),
    /// Run a task: plan, validate, execute with sandboxed tools, replan on failure.
    Run(run::Args),
    /// Carry a stopped run on from its journal (after a crash, a budget stop, a rejection).
    Resume(resume::Args),
    /// Replay a run with its recorded planner answers and fresh tool calls; report
    /// divergences.
    Replay(replay::Args),
    /// Queue a run in a PostgreSQL database for `toolhost worker`s; prints its id.
    Submit(submit::Args),
    /// Work the run queue of a PostgreSQL database: start queued runs, take over the runs
    /// of workers that died, until SIGTERM.
    Worker(worker::Args),
    /// Cancel a run of a PostgreSQL database (queued, running, or waiting for a person).
    Cancel(cancel::Args),
    /// List the runs of the state directory, newest first: state, start, duration, goal
    /// and why each stopped.
    Runs(runs::Args),
    /// Verify, show and prune run journals.
    #[command(subcommand)]
    Journal(journal::JournalCommand),
    Report(report::Args),
    /// Run a suite of golden tasks, report agent metrics, gate on a baseline.
    Eval(eval::Args),
    /// Serve the tools a policy allows to MCP clients (stdio, or streamable HTTP).
    Mcp(mcp::Args),
    Serve(serve::Args),
    /// Scaffold a new tool project (Rust, Python or JavaScript).
    #[command(subcommand)]
    New(new::NewCommand),
}

#[derive(Debug, Subcommand)]
enum PlanCommand {
    Validate(plan::ValidateArgs),
    Schema(plan::SchemaArgs),
}

#[derive(Debug, Subcommand)]
enum PolicyCommand {
    Check(policy::CheckArgs),
}

#[derive(Debug, Subcommand)]
enum ToolCommand {
    Inspect(inspect::Args),
    Call(call::Args),
    Pack(pack::Args),
    Push(registry::PushArgs),
    Pull(registry::PullArgs),
    Keygen(sign::KeygenArgs),
    Sign(sign::SignArgs),
    Verify(sign::VerifyArgs),
    Install(install::InstallArgs),
}

/// Runs the CLI with `args` (including the program name); returns the exit code.
pub fn run(
    args: impl IntoIterator<Item = OsString>,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> i32 {
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) => {
            let code = if e.use_stderr() {
                exit::USAGE
            } else {
                exit::OK
            };
            let text = e.render().to_string();
            let _ = if e.use_stderr() {
                write!(err, "{text}")
            } else {
                write!(out, "{text}")
            };
            return code;
        }
    };
    let result = RuntimeSetup::from_cli(&cli).and_then(|setup| dispatch(cli, &setup, out, err));
    match result {
        Ok(code) => code,
        Err(f) => {
            if !f.message.is_empty() {
                // A message may quote a tool's error: its lines after the first are
                // marked, so none passes for another `error:` line.
                let message = terminal::lines(&f.message, terminal::CONTINUATION);
                let _ = writeln!(err, "error: {message}");
            }
            f.code
        }
    }
}

/// Runs `cli`'s command; those that load components get a runtime set up as `setup` says.
fn dispatch(cli: Cli, setup: &RuntimeSetup, out: &mut dyn Write, err: &mut dyn Write) -> CmdResult {
    let state_dir = cli.state_dir;
    let rt = || runtime(setup).map_err(|e| Failure::new(exit::LOAD, format!("{e:#}")));
    match cli.command {
        Command::Tool(ToolCommand::Pack(args)) => pack::run(args, out),
        Command::Tool(ToolCommand::Push(args)) => registry::push(args, out),
        Command::Tool(ToolCommand::Pull(args)) => registry::pull(args, out),
        Command::Tool(ToolCommand::Keygen(args)) => sign::keygen(args, out),
        Command::Tool(ToolCommand::Sign(args)) => sign::sign(args, out),
        Command::Tool(ToolCommand::Verify(args)) => sign::verify(args, out),
        Command::Policy(PolicyCommand::Check(args)) => policy::check(args, out),
        Command::Plan(PlanCommand::Schema(args)) => plan::schema(args, out),
        Command::Journal(cmd) => journal::run(cmd, state_dir, out),
        Command::Runs(args) => runs::run(args, state_dir, out),
        Command::Report(args) => report::run(args, state_dir, out),
        Command::New(cmd) => new::run(cmd, out),
        Command::Submit(args) => submit::run(args, out),
        Command::Cancel(args) => cancel::run(args, out),
        Command::Run(mut args) => {
            args.journal.state_dir = state_dir;
            run::run(rt()?, args, out, err)
        }
        Command::Resume(mut args) => {
            args.journal.state_dir = state_dir;
            resume::run(rt()?, args, out, err)
        }
        Command::Replay(mut args) => {
            args.journal.state_dir = state_dir;
            replay::run(rt()?, args, out, err)
        }
        Command::Eval(mut args) => {
            args.journal.state_dir = state_dir;
            eval::run(rt()?, args, out, err)
        }
        Command::Mcp(mut args) => {
            args.state_dir = state_dir;
            mcp::run(rt()?, args, err)
        }
        Command::Serve(mut args) => {
            args.state_dir = state_dir;
            serve::run(rt()?, args, out)
        }
        Command::Worker(args) => worker::run(rt()?, args, out, err),
        Command::Plan(PlanCommand::Validate(args)) => plan::validate_cmd(&rt()?, args, out),
        Command::Tool(cmd) => {
            let rt =
                one_shot_runtime(setup).map_err(|e| Failure::new(exit::LOAD, format!("{e:#}")))?;
            match cmd {
                ToolCommand::Inspect(args) => inspect::run(&rt, args, out),
                ToolCommand::Call(args) => call::run(&rt, args, out, err),
                ToolCommand::Install(args) => install::run(&rt, args, out),
                ToolCommand::Pack(_)
                | ToolCommand::Push(_)
                | ToolCommand::Pull(_)
                | ToolCommand::Keygen(_)
                | ToolCommand::Sign(_)
                | ToolCommand::Verify(_) => unreachable!("handled above"),
            }
        }
    }
}

/// A failed command: its exit code and the message for stderr (empty if already printed).
#[derive(Debug)]
pub(crate) struct Failure {
    code: i32,
    message: String,
}

impl Failure {
    pub(crate) fn new(code: i32, message: impl Into<String>) -> Failure {
        Failure {
            code,
            message: message.into(),
        }
    }

    pub(crate) fn message(&self) -> &str {
        &self.message
    }
}

/// An error of `toolhost_app` as the command line reports it: its kind is the exit code.
impl From<AppError> for Failure {
    fn from(e: AppError) -> Failure {
        let code = match &e {
            AppError::Task(_) | AppError::Usage(_) => exit::USAGE,
            AppError::Denied(_) => exit::DENIED,
            AppError::Load(_) => exit::LOAD,
            AppError::Journal(_) => exit::JOURNAL,
            AppError::Locked(_) => exit::LOCKED,
        };
        Failure::new(code, e.to_string())
    }
}

pub(crate) type CmdResult = Result<i32, Failure>;

fn default_cache_dir() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("TOOLHOST_CACHE_DIR") {
        return Some(PathBuf::from(dir));
    }
    if let Some(dir) = std::env::var_os("XDG_CACHE_HOME") {
        return Some(PathBuf::from(dir).join("toolhost"));
    }
    std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache").join("toolhost"))
}

/// What every command that loads components sets its runtime up with.
struct RuntimeSetup {
    cache_dir: Option<PathBuf>,
    compile: CompileLimits,
}

impl RuntimeSetup {
    fn from_cli(cli: &Cli) -> Result<RuntimeSetup, Failure> {
        let mut compile = CompileLimits::default();
        for (flag, value) in [
            ("--compile-timeout-ms", cli.compile_timeout_ms),
            ("--compile-memory-mib", cli.compile_memory_mib),
        ] {
            match value {
                None => {}
                Some(0) => {
                    return Err(Failure::new(
                        exit::USAGE,
                        format!("{flag} 0 would refuse every component: give a positive value"),
                    ));
                }
                Some(v) if flag == "--compile-timeout-ms" => {
                    compile.timeout = std::time::Duration::from_millis(v);
                }
                Some(v) => compile.memory_mib = v,
            }
        }
        let cache_dir = if cli.no_cache {
            None
        } else {
            cli.cache_dir.clone().or_else(default_cache_dir)
        };
        Ok(RuntimeSetup { cache_dir, compile })
    }
}

fn runtime(setup: &RuntimeSetup) -> anyhow::Result<Runtime> {
    runtime_from(RuntimeConfig::default(), setup)
}

/// The runtime of a command that instantiates one tool once (`tool call`, `tool
/// inspect`): instances are allocated on demand. Setting up the default pool (1,000 slots,
/// a guard page `mprotect`ed per fiber stack) and unmapping it at exit was half the CPU
/// time of a one-shot `tool call`; on demand costs ~20 µs more for its one instance.
fn one_shot_runtime(setup: &RuntimeSetup) -> anyhow::Result<Runtime> {
    runtime_from(RuntimeConfig::default().pooling(None), setup)
}

fn runtime_from(config: RuntimeConfig, setup: &RuntimeSetup) -> anyhow::Result<Runtime> {
    Ok(Runtime::new(
        config
            .cache_dir(setup.cache_dir.clone())
            .compile(setup.compile.clone())
            .compiler(compiler()),
    )?)
}

/// The hidden subcommand the binary compiles components in: `toolhost __compile`, with
/// a component on stdin and its compiled artifact on stdout
/// ([`toolhost_runtime::compile::worker::serve`]).
const COMPILE_SUBCOMMAND: &str = "__compile";

/// Set by [`main`]: this process is the `toolhost` binary, which can start itself as a
/// compiler worker. (A test calling [`run`] in its own process cannot: its executable
/// is the test harness.)
static IS_BINARY: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Compile in a worker (this binary, `__compile`) when there is one to start.
fn compiler() -> Compiler {
    if !IS_BINARY.load(std::sync::atomic::Ordering::Relaxed) {
        return Compiler::InProcess;
    }
    // `/proc/self/exe` is the running binary even after an upgrade replaced its file, so
    // the worker's engine is always this one's.
    let program = if cfg!(target_os = "linux") {
        PathBuf::from("/proc/self/exe")
    } else {
        std::env::current_exe().unwrap_or_else(|_| PathBuf::from("toolhost"))
    };
    Compiler::Worker {
        program,
        args: vec![COMPILE_SUBCOMMAND.into()],
    }
}

/// The most the binary waits at exit for queued log lines to reach stderr.
const LOG_FLUSH_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(1);

/// The whole `main` of the `toolhost` binary (and of the tests' copy of it).
///
/// stdout and stderr are passed unlocked: each write takes the lock for itself. A command
/// that held either lock for its whole life would hang the first thread that logs to it —
/// a tokio worker inside a tool call, the OTLP exporter — and with it the run. Log lines
/// go through [`toolhost_app::log`] and never block; at exit they get
/// `LOG_FLUSH_TIMEOUT` to drain.
pub fn main() -> ! {
    if std::env::args_os()
        .nth(1)
        .is_some_and(|a| a == COMPILE_SUBCOMMAND)
    {
        std::process::exit(toolhost_runtime::compile::worker::serve());
    }
    IS_BINARY.store(true, std::sync::atomic::Ordering::Relaxed);
    init_tracing();
    let code = run(
        std::env::args_os(),
        &mut std::io::stdout(),
        &mut std::io::stderr(),
    );
    let _ = std::io::stdout().flush();
    toolhost_app::log::finish(LOG_FLUSH_TIMEOUT);
    std::process::exit(code);
}

/// Installs the `tracing` subscriber for the binary: `TOOLHOST_LOG` (e.g. `debug`) filters;
/// lines go to stderr through [`toolhost_app::log`], in colour only on a terminal.
pub(crate) fn init_tracing() {
    use tracing_subscriber::field::MakeExt;
    let filter = toolhost_app::telemetry::log_filter();
    // Log fields carry what tools and models said (an error's message, a tool's log
    // line): each is escaped, the level and target colours are the only escapes left.
    let fields = tracing_subscriber::fmt::format::debug_fn(|w, field, value| {
        let text = format!("{value:?}");
        let text = terminal::line(&text);
        if field.name() == "message" {
            write!(w, "{text}")
        } else {
            write!(w, "{}={text}", field.name())
        }
    })
    .delimited(" ");
    let _ = tracing_subscriber::fmt()
        .fmt_fields(fields)
        .with_env_filter(filter)
        .with_writer(toolhost_app::log::StderrWriter)
        .with_ansi(toolhost_app::log::stderr_is_terminal())
        .try_init();
}

pub(crate) fn load_tool(
    rt: &Runtime,
    path: &std::path::Path,
) -> Result<toolhost_runtime::Tool, Failure> {
    Ok(toolhost_app::load::load_tool(rt, path)?)
}
