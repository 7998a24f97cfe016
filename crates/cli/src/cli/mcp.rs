//! `toolhost mcp`: serve the tools a policy allows to MCP clients, over stdio or
//! streamable HTTP, every call sandboxed and journaled.

mod code;
mod journal;
mod load;
mod sampled;
mod user;

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;
use toolhost_mcp::http::{self, Auth, HttpConfig};
use toolhost_mcp::{CallSink, ConnLimits, HandedBack, NoSink, Server, ServerConfig, SessionLimits};
use toolhost_runtime::Runtime;

use super::{CmdResult, Failure, exit};

/// Serve every operation the policy allows as an MCP tool (stdio by default).
///
/// Each tool is named `SECTION.OPERATION` (or as `--tool-names` says) and runs in a fresh sandbox with its section's
/// grants and limits; its annotations (readOnlyHint, destructiveHint, openWorldHint,
/// idempotentHint) are computed from those grants and enforced. Nothing an MCP client
/// sends can read or change grants, the policy or limits. Every call is journaled under
/// the state directory (the journal's path is printed on stderr at start).
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The policy: which tools are served, with what grants and limits.
    #[arg(long, value_name = "FILE")]
    policy: PathBuf,
    /// The components to serve; each needs a section in the policy.
    #[arg(value_name = "TOOL.wasm", conflicts_with = "tools_dir")]
    tools: Vec<PathBuf>,
    /// Serve every component in DIR that has a section in the policy (default
    /// `TOOLHOST_TOOLS_DIR`; without either, the sections' `component` files).
    #[arg(long, value_name = "DIR")]
    tools_dir: Option<PathBuf>,
    /// With a tools directory: serve the sections that have a component there and only
    /// name the others on stderr (without it, a section with no component is an error).
    #[arg(long)]
    allow_missing: bool,
    /// Serve streamable HTTP on ADDR (e.g. `127.0.0.1:8700`; port 0 picks one) at `/mcp`
    /// instead of stdio. A non-loopback address needs a bearer token.
    #[arg(long, value_name = "ADDR")]
    http: Option<SocketAddr>,
    /// Require `Authorization: Bearer TOKEN` on HTTP, the token read from FILE (or from
    /// `TOOLHOST_MCP_TOKEN`).
    #[arg(long, value_name = "FILE", requires = "http")]
    token_file: Option<PathBuf>,
    /// Also accept this `Host` (and its origin) on HTTP, e.g. the name a proxy forwards
    /// (repeatable).
    #[arg(long = "allow-host", value_name = "HOST", requires = "http")]
    allow_hosts: Vec<String>,
    /// `--max-calls` (alias `--max-in-flight`) bounds the calls running at once over all
    /// clients; more wait in a bounded queue, and past it are refused with an `isError`
    /// result of kind `overloaded`.
    #[command(flatten)]
    budget: super::budget::BudgetArgs,
    /// HTTP connections held at once; more wait in the listen backlog [default: 512].
    #[arg(long, value_name = "N", requires = "http")]
    max_connections: Option<usize>,
    /// How long a client may take to send a request head, from connecting or from its
    /// previous response (idle keep-alive connections are closed after it) [default: 10000].
    #[arg(long, value_name = "MS", requires = "http")]
    header_timeout_ms: Option<u64>,
    /// How long a client may take to send a request body, from its head [default: 30000].
    #[arg(long, value_name = "MS", requires = "http")]
    body_timeout_ms: Option<u64>,
    /// Sessions kept at once; past it the least recently used idle one is closed, and a
    /// new one is refused (503) when every one has a call or stream open [default: 1024].
    #[arg(long, value_name = "N", requires = "http")]
    max_sessions: Option<usize>,
    /// A session with no call or stream open for this long is closed [default: 120000].
    #[arg(long, value_name = "MS", requires = "http")]
    session_idle_ms: Option<u64>,
    /// MCP tasks one client holds at once (operations a policy section lists under
    /// `tasks`): its oldest finished task is forgotten to make room, and past this many
    /// working ones a call that would start a task is an `isError` result of kind
    /// `overloaded` [default: 16].
    #[arg(long, value_name = "N")]
    max_tasks: Option<usize>,
    /// Keep MCP tasks in the PostgreSQL database at URL (postgres://USER@HOST:PORT/DATABASE)
    /// instead of this process's memory: every replica given the same URL answers for any
    /// task, and takes over those of a replica that died (running the call again only when
    /// its section is `idempotent`, carrying a stateless task's program on from its run's
    /// journal there, else failing the task and saying why).
    #[arg(long, value_name = "URL", requires = "http")]
    database: Option<String>,
    /// With --database: how long this replica's hold on a task lasts unrenewed (renewed
    /// every third of it); a replica that dies leaves its tasks to the others after this.
    #[arg(long, value_name = "MS", default_value_t = 10_000, requires = "database",
          value_parser = clap::value_parser!(u64).range(300..=3_600_000))]
    task_lease_ms: u64,
    /// Seal the `requestState` of 2026-07-28 questions with the key in FILE (at least 32
    /// bytes, readable by its owner only), so that replicas behind one address given the
    /// same file answer each other's rounds; without it each process draws its own.
    #[arg(long, value_name = "FILE")]
    state_key_file: Option<PathBuf>,
    /// How tools are named: `qualified` is `SECTION.OPERATION`; `operation` is the
    /// operation alone with `-` written `_` (`test-simple-text` as `test_simple_text`),
    /// refused when two sections export the same operation.
    #[arg(long, value_name = "STYLE", default_value = "qualified")]
    tool_names: ToolNamesArg,
    /// Reload a changed policy or component without a restart; a broken one is refused
    /// and the previous tools stay.
    #[arg(long)]
    watch: bool,
    /// Do not journal calls (for measuring the bare protocol cost).
    #[arg(long)]
    no_journal: bool,
    /// Code mode: also serve `run_program`, which runs a Python program over the served
    /// tools (their typed API is in its description); each call the program makes is
    /// checked, budgeted and journaled as a plan step, in a run journal of its own.
    #[arg(long, conflicts_with = "watch")]
    code: bool,
    /// With --code: programs running at once; one more is an `isError` result of kind
    /// `overloaded` [default: 4].
    #[arg(long, value_name = "N", requires = "code",
          value_parser = clap::value_parser!(u64).range(1..=1024))]
    max_programs: Option<u64>,
    /// From the global `--state-dir`.
    #[arg(skip)]
    pub state_dir: Option<PathBuf>,
}

/// `--tool-names`.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum ToolNamesArg {
    Qualified,
    Operation,
}

impl From<ToolNamesArg> for toolhost_mcp::ToolNames {
    fn from(arg: ToolNamesArg) -> Self {
        match arg {
            ToolNamesArg::Qualified => toolhost_mcp::ToolNames::Qualified,
            ToolNamesArg::Operation => toolhost_mcp::ToolNames::Operation,
        }
    }
}

/// How often `--watch` looks at the files.
const WATCH_EVERY: Duration = Duration::from_millis(500);

pub(crate) fn run(mut rt: Runtime, args: Args, err: &mut dyn Write) -> CmdResult {
    args.budget.apply(&mut rt)?;
    let (connections, sessions) = http_limits(&args)?;
    let auth = auth(&args)?;
    let http = args.http.map(|bind| {
        HttpConfig::new(bind, auth)
            .allow_hosts(args.allow_hosts.clone())
            .connections(connections)
            .sessions(sessions)
    });
    let rt = Arc::new(rt);
    let source = load::Source::new(&args);
    let loaded = source.load(&rt)?;
    let journaled = session_journal(&args, &loaded, err)?;
    let sink: Arc<dyn CallSink> = match &journaled {
        Some(j) => j.clone(),
        None => Arc::new(NoSink),
    };
    let tools = loaded.catalog.len();
    let mut config = server_config(&args)?;
    if args.code {
        config = config.programs(programs(&args, &rt, &loaded, &source)?);
    }
    let server = Server::new(rt.clone(), loaded.catalog, sink, config)
        .map_err(|e| Failure::new(exit::LOAD, format!("cannot start the MCP server: {e}")))?;
    let tokio = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| Failure::new(exit::LOAD, format!("cannot start the async runtime: {e}")))?;
    let stop = CancellationToken::new();
    let outcome = tokio.block_on(async {
        spawn_signals(stop.clone());
        let keeper = tokio::spawn({
            let (server, stop) = (server.clone(), stop.clone());
            async move { server.keep_tasks(stop).await }
        });
        if args.watch {
            let (files, reload) = source.watcher(rt.clone());
            let (server, stop) = (server.clone(), stop.clone());
            tokio::spawn(toolhost_mcp::watch::watch(
                server,
                WATCH_EVERY,
                files,
                reload,
                stop,
            ));
        }
        let served = serve(server.clone(), http, tools, &stop).await;
        stop.cancel();
        let _ = keeper.await;
        hand_back(&server).await;
        served
    });
    stop.cancel();
    // Calls still running end with the runtime; their sandboxes go with them.
    tokio.shutdown_timeout(Duration::from_secs(2));
    if let Some(j) = journaled {
        j.end(match &outcome {
            Ok(()) => "the client closed the session or the server was stopped",
            Err(f) => f.message(),
        });
    }
    outcome.map(|()| exit::OK)
}

/// `run_program`'s programs (`--code`), run over the tools `loaded` serves.
fn programs(
    args: &Args,
    rt: &Arc<Runtime>,
    loaded: &load::Loaded,
    source: &load::Source,
) -> Result<Arc<dyn toolhost_mcp::Programs>, Failure> {
    let served = loaded
        .files
        .iter()
        .map(|(name, path, _)| (name.clone(), path.clone()))
        .collect();
    let programs = code::CodePrograms::new(
        rt.clone(),
        &args.policy,
        served,
        source.tools_dir(),
        args.state_dir.clone(),
        args.max_programs.unwrap_or(4) as usize,
    )?
    .in_database(
        args.database.clone(),
        Duration::from_millis(args.task_lease_ms),
    );
    Ok(Arc::new(code::Shared(Arc::new(programs))))
}

/// Serves `server` over stdio, or over HTTP as `http` says, until the client leaves or
/// `stop`.
async fn serve(
    server: Server,
    http: Option<HttpConfig>,
    tools: usize,
    stop: &CancellationToken,
) -> Result<(), Failure> {
    match http {
        None => {
            eprintln!("toolhost mcp: serving {tools} tools over stdio");
            toolhost_mcp::stdio::serve(server, stop.clone())
                .await
                .map_err(|e| Failure::new(exit::USAGE, e.to_string()))
        }
        Some(config) => serve_http(server, config, tools, stop).await,
    }
}

/// Once stopped (SIGTERM, or the client left) and its upkeep ended: the tasks still running
/// here go to the other replicas now rather than when their leases lapse.
async fn hand_back(server: &Server) {
    let back = server.hand_back_tasks().await;
    if back != HandedBack::default() {
        eprintln!(
            "toolhost mcp: handed {} task(s) back to the other replicas; ended {} that may not run again",
            back.handed, back.ended
        );
    }
}

/// How HTTP clients authenticate: the token, if one is given; none is refused on an
/// address that is not loopback.
fn auth(args: &Args) -> Result<Auth, Failure> {
    let usage = |m: String| Failure::new(exit::USAGE, m);
    let auth = match token(args)? {
        Some(t) => Auth::bearer(&t).map_err(|e| usage(e.to_string()))?,
        None => Auth::none(),
    };
    if let Some(addr) = args.http
        && !addr.ip().is_loopback()
        && args.token_file.is_none()
        && std::env::var_os("TOOLHOST_MCP_TOKEN").is_none()
    {
        return Err(usage(http::HttpError::Unauthenticated { addr }.to_string()));
    }
    Ok(auth)
}

/// The session's journal (named on `err`), unless `--no-journal`.
fn session_journal(
    args: &Args,
    loaded: &load::Loaded,
    err: &mut dyn Write,
) -> Result<Option<Arc<journal::JournalSink>>, Failure> {
    if args.no_journal {
        return Ok(None);
    }
    let transport = if args.http.is_some() { "http" } else { "stdio" };
    let opener = load::JournalOpener::new(args, loaded, transport)?;
    let j = opener.open()?;
    let _ = writeln!(err, "toolhost mcp: journal {}", j.path().display());
    // Over HTTP each session that begins with `initialize` gets a journal of its own; this
    // one keeps the stateless (2026-07-28) requests.
    let per_session = args.http.is_some().then_some(opener);
    Ok(Some(Arc::new(journal::JournalSink::new(j, per_session))))
}

/// Serves `server`'s `tools` tools over streamable HTTP as `config` says, until `stop`.
async fn serve_http(
    server: Server,
    config: HttpConfig,
    tools: usize,
    stop: &CancellationToken,
) -> Result<(), Failure> {
    let usage = |m: String| Failure::new(exit::USAGE, m);
    let listening = http::bind(server, config, stop)
        .await
        .map_err(|e| usage(e.to_string()))?;
    let addr = listening
        .local_addr()
        .map_err(|e| usage(format!("cannot read the bound address: {e}")))?;
    // Tests and scripts read the address from this line.
    eprintln!(
        "toolhost mcp: serving {tools} tools at http://{addr}{}",
        http::PATH
    );
    listening.serve(stop.clone()).await;
    Ok(())
}

/// The connection and session bounds of HTTP: the defaults, with the flags on top.
fn http_limits(args: &Args) -> Result<(ConnLimits, SessionLimits), Failure> {
    let usage = |m: String| Failure::new(exit::USAGE, m);
    let mut conns = ConnLimits::default();
    let mut sessions = SessionLimits::default();
    for (flag, n) in [
        ("--max-connections", args.max_connections),
        ("--max-sessions", args.max_sessions),
    ] {
        if n == Some(0) {
            return Err(usage(format!(
                "{flag} 0 would serve nobody: give at least 1"
            )));
        }
    }
    let min = ConnLimits::MIN_TIMEOUT.as_millis() as u64;
    for (flag, ms) in [
        ("--header-timeout-ms", args.header_timeout_ms),
        ("--body-timeout-ms", args.body_timeout_ms),
        ("--session-idle-ms", args.session_idle_ms),
    ] {
        if let Some(ms) = ms.filter(|ms| *ms < min) {
            return Err(usage(format!(
                "{flag} {ms} is too short: give at least {min}"
            )));
        }
    }
    if let Some(n) = args.max_connections {
        conns = conns.max_connections(n);
    }
    if let Some(ms) = args.header_timeout_ms {
        conns = conns.header_timeout(Duration::from_millis(ms));
    }
    if let Some(ms) = args.body_timeout_ms {
        conns = conns.body_timeout(Duration::from_millis(ms));
    }
    if let Some(n) = args.max_sessions {
        sessions = sessions.max_sessions(n);
    }
    if let Some(ms) = args.session_idle_ms {
        sessions = sessions.idle(Duration::from_millis(ms));
    }
    Ok((conns, sessions))
}

/// How the server runs calls: `--max-tasks`, `--state-key-file`, `--database`.
fn server_config(args: &Args) -> Result<ServerConfig, Failure> {
    let usage = |m: String| Failure::new(exit::USAGE, m);
    let mut config = ServerConfig::default();
    match args.max_tasks {
        Some(0) => {
            return Err(usage(
                "--max-tasks 0 would refuse every task: give at least 1".into(),
            ));
        }
        Some(n) => config = config.max_tasks(n),
        None => {}
    }
    if let Some(file) = &args.state_key_file {
        config = config.state_key(state_key(file).map_err(usage)?);
    }
    if let Some(url) = &args.database {
        let db = toolhost_app::database::connect(url)?;
        config = config.task_database(toolhost_mcp::TaskDatabase {
            db,
            lease: Duration::from_millis(args.task_lease_ms),
        });
    }
    Ok(config)
}

/// The `requestState` key in `file`: whoever reads it can forge the answers of a round, so
/// it must be the owner's alone, and long enough to resist guessing.
fn state_key(file: &std::path::Path) -> Result<Vec<u8>, String> {
    use std::os::unix::fs::PermissionsExt;
    let named = |why: String| format!("--state-key-file {}: {why}", file.display());
    let meta = std::fs::metadata(file).map_err(|e| named(format!("cannot read it: {e}")))?;
    let mode = meta.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        return Err(named(format!(
            "its mode is {mode:03o}, so others may read the key: make it 600 (chmod 600)"
        )));
    }
    let key = std::fs::read(file).map_err(|e| named(format!("cannot read it: {e}")))?;
    let min = toolhost_mcp::STATE_KEY_MIN;
    if key.len() < min {
        return Err(named(format!(
            "it holds {} bytes; a key needs at least {min} (e.g. `head -c 32 /dev/urandom > FILE`)",
            key.len()
        )));
    }
    Ok(key)
}

/// The bearer token: `--token-file`, else `TOOLHOST_MCP_TOKEN` (HTTP only).
fn token(args: &Args) -> Result<Option<String>, Failure> {
    if args.http.is_none() {
        return Ok(None);
    }
    if let Some(file) = &args.token_file {
        let text = std::fs::read_to_string(file).map_err(|e| {
            Failure::new(
                exit::USAGE,
                format!("--token-file {}: cannot read it: {e}", file.display()),
            )
        })?;
        return Ok(Some(text));
    }
    Ok(std::env::var("TOOLHOST_MCP_TOKEN").ok())
}

/// SIGINT and SIGTERM stop the server: no new calls, running ones end.
fn spawn_signals(stop: CancellationToken) {
    tokio::spawn(async move {
        let mut term =
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(s) => s,
                Err(_) => return,
            };
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
        }
        eprintln!("toolhost mcp: stopping");
        stop.cancel();
    });
}
