//! Deno-style grant flags: `--allow-read`, `--allow-write`, `--allow-env`.

use std::path::PathBuf;

use crate::sandbox::{Capabilities, DirGrant};

/// Grant flags shared by commands that run tools. Nothing is granted unless a flag says so.
#[derive(Debug, Default, clap::Args)]
pub(crate) struct GrantArgs {
    /// Let the tool read the host directory HOST, seen by the tool at GUEST
    /// [default GUEST: HOST]. Repeatable.
    #[arg(long = "allow-read", value_name = "HOST[:GUEST]")]
    read: Vec<String>,
    /// Let the tool read and write the host directory HOST, seen at GUEST. Repeatable.
    #[arg(long = "allow-write", value_name = "HOST[:GUEST]")]
    write: Vec<String>,
    /// Pass environment variable NAME: the host's value, or VALUE. Repeatable.
    #[arg(long = "allow-env", value_name = "NAME[=VALUE]")]
    env: Vec<String>,
}

impl GrantArgs {
    pub(crate) fn capabilities(&self) -> Result<Capabilities, String> {
        let mut caps = Capabilities::none();
        for (flag, specs, write) in [
            ("--allow-read", &self.read, false),
            ("--allow-write", &self.write, true),
        ] {
            for spec in specs {
                caps.dirs.push(dir_grant(flag, spec, write)?);
            }
        }
        for spec in &self.env {
            caps.env.push(env_grant(spec)?);
        }
        Ok(caps)
    }
}

fn dir_grant(flag: &str, spec: &str, write: bool) -> Result<DirGrant, String> {
    let (host, guest) = match spec.split_once(':') {
        Some((h, g)) if !g.is_empty() => (h, g.to_string()),
        Some((h, _)) => (h, h.to_string()),
        None => (spec, spec.to_string()),
    };
    if host.is_empty() {
        return Err(format!("{flag}={spec}: the host path is empty"));
    }
    let path = PathBuf::from(host);
    let meta =
        std::fs::metadata(&path).map_err(|e| format!("{flag}={spec}: cannot use `{host}`: {e}"))?;
    if !meta.is_dir() {
        return Err(format!(
            "{flag}={spec}: `{host}` is not a directory; grant the directory that contains it"
        ));
    }
    Ok(DirGrant {
        host: path,
        guest,
        write,
    })
}

fn env_grant(spec: &str) -> Result<(String, String), String> {
    let (name, value) = match spec.split_once('=') {
        Some((n, v)) => (n, v.to_string()),
        None => {
            let v = std::env::var(spec).map_err(|_| {
                format!("--allow-env={spec}: `{spec}` is not set in the host environment (or is not UTF-8)")
            })?;
            (spec, v)
        }
    };
    if name.is_empty() || name.contains('\0') {
        return Err(format!(
            "--allow-env={spec}: `{name}` is not a valid variable name"
        ));
    }
    Ok((name.to_string(), value))
}
