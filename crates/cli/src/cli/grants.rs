//! Deno-style grant flags: `--allow-read`, `--allow-write`, `--allow-net`, `--allow-tcp`,
//! `--allow-dns`, `--allow-env`. Nothing is granted unless a flag says so.

use toolhost_runtime::grants::{Capabilities, Origin, SocketGrant};
use toolhost_runtime::policy::{self, EnvValue};

/// Grant flags shared by commands that run tools.
#[derive(Debug, Default, clap::Args)]
pub(crate) struct GrantArgs {
    /// Let the tool read the host directory or file HOST, seen by the tool at GUEST
    /// [default GUEST: HOST]. Repeatable.
    #[arg(long = "allow-read", value_name = "HOST[:GUEST]")]
    read: Vec<String>,
    /// Let the tool read and write the host directory or file HOST, seen at GUEST.
    /// Repeatable.
    #[arg(long = "allow-write", value_name = "HOST[:GUEST]")]
    write: Vec<String>,
    /// Let the tool send HTTP requests to ORIGIN (`https://api.example.com`,
    /// `https://*.example.com:8443`, `http://127.0.0.1:8080`). Repeatable.
    #[arg(long = "allow-net", value_name = "ORIGIN")]
    net: Vec<String>,
    /// Let the tool open raw TCP connections to ADDR (`IP:PORT` or `IP/PREFIX:PORT`).
    /// Repeatable.
    #[arg(long = "allow-tcp", value_name = "ADDR")]
    tcp: Vec<String>,
    /// Let the tool resolve host names (`wasi:sockets/ip-name-lookup`).
    #[arg(long = "allow-dns")]
    dns: bool,
    /// Pass environment variable NAME: the host's value, or VALUE. Repeatable.
    #[arg(long = "allow-env", value_name = "NAME[=VALUE]")]
    env: Vec<String>,
}

impl GrantArgs {
    /// Whether any grant flag was given.
    pub(crate) fn any(&self) -> bool {
        !(self.read.is_empty()
            && self.write.is_empty()
            && self.net.is_empty()
            && self.tcp.is_empty()
            && !self.dns
            && self.env.is_empty())
    }

    pub(crate) fn capabilities(&self) -> Result<Capabilities, String> {
        let mut caps = Capabilities::none();
        for (flag, specs, write) in [
            ("--allow-read", &self.read, false),
            ("--allow-write", &self.write, true),
        ] {
            for spec in specs {
                let (host, guest) = match spec.split_once(':') {
                    Some((h, g)) if !g.is_empty() => (h, g),
                    Some((h, _)) => (h, h),
                    None => (spec.as_str(), spec.as_str()),
                };
                let grant = policy::file_grant(host.as_ref(), guest, write)
                    .map_err(|e| format!("{flag}={spec}: {e}"))?;
                if let Some(why) = toolhost_runtime::grants::conflict(&caps.files, &grant) {
                    return Err(format!("{flag}={spec}: {why}"));
                }
                caps.files.push(grant);
            }
        }
        for spec in &self.net {
            let origin: Origin = spec
                .parse()
                .map_err(|e| format!("--allow-net={spec}: {e}"))?;
            caps.network.http.push(origin);
        }
        for spec in &self.tcp {
            let grant: SocketGrant = spec
                .parse()
                .map_err(|e| format!("--allow-tcp={spec}: {e}"))?;
            caps.network.tcp.push(grant);
        }
        caps.network.name_lookup = self.dns;
        for spec in &self.env {
            let (name, value) = match spec.split_once('=') {
                Some((n, v)) => (n, EnvValue::Literal(v.to_string())),
                None => (
                    spec.as_str(),
                    EnvValue::FromHost {
                        from_host: spec.clone(),
                    },
                ),
            };
            let value =
                policy::env_grant(name, &value).map_err(|e| format!("--allow-env={spec}: {e}"))?;
            caps.env.push((name.to_string(), value));
        }
        Ok(caps)
    }
}
