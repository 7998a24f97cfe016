//! `toolhost policy check`: validate a policy file and print the effective grants.

use std::io::Write;
use std::path::PathBuf;

use super::{CmdResult, Failure, exit};
use toolhost_runtime::grants::GrantKind;
use toolhost_runtime::policy::{Policy, ToolPolicy};

/// Validate a policy file and print what each tool may do.
///
/// Errors name the file, line and column, the bad value and the reason. Exit code 0 when
/// the policy is valid, 2 when it is not.
#[derive(Debug, clap::Args)]
pub(crate) struct CheckArgs {
    /// The policy file (TOML).
    path: PathBuf,
    /// Print the effective policy as JSON (environment values are never printed).
    #[arg(long)]
    json: bool,
    /// Check it as a worker of executor pool NAME does (repeatable): the files and
    /// environment grants of the sections sent to NAME are resolved here too. Without it,
    /// they are left to the pool's workers.
    #[arg(long = "pool", value_name = "NAME", value_parser = super::worker::parse_pool)]
    pools: Vec<toolhost_runtime::policy::PoolName>,
}

pub(crate) fn check(args: CheckArgs, out: &mut dyn Write) -> CmdResult {
    let policy = Policy::load_for(&args.path, &args.pools)
        .map_err(|e| Failure::new(exit::USAGE, e.to_string()))?;
    if args.json {
        let doc = serde_json::to_string_pretty(&policy).expect("policy serialises");
        let _ = writeln!(out, "{doc}");
        return Ok(exit::OK);
    }
    let n = policy.tools.len();
    let _ = writeln!(
        out,
        "{}: valid, {n} tool{}{}",
        policy.source,
        if n == 1 { "" } else { "s" },
        if n == 0 {
            " (no tool may be called)"
        } else {
            ""
        }
    );
    let _ = writeln!(
        out,
        "approval: {}",
        match policy.approval {
            toolhost_engine::ApprovalMode::Deny =>
                "deny (unattended runs escalate steps that need approval)",
            toolhost_engine::ApprovalMode::Auto =>
                "auto (unattended runs approve steps that need approval)",
        }
    );
    let _ = writeln!(
        out,
        "refusals: {}",
        match policy.max_refusals {
            Some(n) => format!("a run stops once {n} of its actions are refused"),
            None => "each is refused and counted; runs go on".into(),
        }
    );
    for tool in policy.tools.values() {
        let _ = write!(out, "\n{}", describe(tool));
    }
    Ok(exit::OK)
}

fn list<T>(items: &[T], show: impl Fn(&T) -> String) -> String {
    if items.is_empty() {
        "none".into()
    } else {
        items.iter().map(show).collect::<Vec<_>>().join(", ")
    }
}

/// The tool's data-flow rules: whether its outputs are trusted, and where untrusted data
/// may not go.
fn flow(f: &toolhost_runtime::policy::Flow) -> String {
    use toolhost_runtime::policy::Trust;
    let mut s = format!(
        "  outputs:     {}\n",
        match f.outputs {
            Trust::Trusted => "trusted (the operator's word)",
            Trust::Untrusted => "untrusted",
            Trust::Derived => "as trusted as its arguments (no file or network grant)",
        }
    );
    if !f.trusted_args.is_empty() {
        s += &format!(
            "  trusted args: {}\n",
            f.trusted_args
                .iter()
                .map(|(op, args)| format!("{op}({})", args.join(", ")))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    if !f.accepts_untrusted {
        s += "  untrusted data: refused (not in `[flows] untrusted_may_reach`)\n";
    }
    s
}

/// The effective grants of one tool, one line per kind.
fn describe(t: &ToolPolicy) -> String {
    format!(
        "tool `{}`\n{}{}{}{}",
        t.name,
        identity(t),
        flow(&t.flow),
        grants(t),
        limits(t)
    )
}

/// Which component a tool is, what of it may run, and where.
fn identity(t: &ToolPolicy) -> String {
    let mut s = String::new();
    let component = match (&t.component, &t.sha256) {
        (Some(c), _) => c.display().to_string(),
        (None, _) => format!("any component named `{}`", t.name),
    };
    s += &format!("  component:   {component}\n");
    if let Some(pin) = &t.sha256 {
        s += &format!("  sha256:      {pin}\n");
    }
    if let Some(rule) = &t.signature {
        let signers: Vec<String> = rule
            .signers
            .iter()
            .map(|k| format!("{} ({:.12})", k.name, k.key_id))
            .collect();
        s += &format!(
            "  signature:   required, from {}\n",
            match signers.is_empty() {
                true => "no key: every component is refused".to_string(),
                false => signers.join(", "),
            }
        );
    }
    s += &format!(
        "  operations:  {}\n",
        t.operations
            .as_ref()
            .map_or_else(|| "all".to_string(), |o| o.join(", "))
    );
    s += &format!(
        "  sensitive:   {}\n",
        if t.sensitive {
            "yes (the engine asks for approval)"
        } else {
            "no"
        }
    );
    if t.idempotent {
        s += "  idempotent:  yes (the operator's word; advertised to MCP clients)\n";
    }
    if let Some(pool) = &t.pool {
        s += &format!(
            "  pool:        {pool} (calls run on `toolhost worker --pool {pool}` workers, under their own policy)\n"
        );
    }
    s
}

/// What a tool may reach: files, the network, the environment.
fn grants(t: &ToolPolicy) -> String {
    let caps = &t.capabilities;
    let mut s = String::new();
    if let Some(pool) = t.pool.as_ref().filter(|_| t.grants_on_pool) {
        s += &format!(
            "  files, env:  resolved on the workers of pool {pool} (`policy check --pool {pool}` checks them as they do)\n"
        );
    }
    s += &format!(
        "  files:       {}\n",
        list(&caps.files, |f| format!(
            "{} = {} ({}, {})",
            f.guest,
            f.host.display(),
            if f.write { "read-write" } else { "read" },
            match f.kind {
                GrantKind::Directory => "directory",
                GrantKind::File => "file",
            }
        ))
    );
    s += &format!(
        "  http:        {}\n",
        list(&caps.network.http, |o| o.to_string())
    );
    s += &format!(
        "  tcp:         {}\n",
        list(&caps.network.tcp, |g| g.to_string())
    );
    s += &format!(
        "  name lookup: {}\n",
        if caps.network.name_lookup {
            "yes"
        } else {
            "no"
        }
    );
    s += &format!(
        "  env:         {}\n",
        list(&t.env_sources, |(k, src)| format!("{k} ({src})"))
    );
    s
}

/// What one call of a tool may spend, in the sandbox and on the host's side.
fn limits(t: &ToolPolicy) -> String {
    let l = &t.limits;
    let mut s = format!(
        "  limits:      fuel {}, timeout {} ms, memory {} MiB, output {} B, stdout/stderr {} B, logs {} B, http response {} B, {}\n",
        l.fuel,
        l.timeout.as_millis(),
        l.memory_mib,
        l.max_result_bytes,
        l.max_stdio_bytes,
        l.max_log_bytes,
        l.max_http_response_bytes,
        t.max_calls_per_minute.map_or_else(
            || "no rate limit".to_string(),
            |r| format!("{r} calls/minute")
        )
    );
    s += &format!(
        "  host side:   memory {} B, open resources {}, written {} B, file size {} B, args {} B, audit {} B\n",
        l.max_host_bytes,
        l.max_resources,
        l.max_written_bytes,
        l.max_file_bytes,
        l.max_args_bytes,
        l.max_audit_bytes,
    );
    s
}
