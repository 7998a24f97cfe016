//! Credentials for a registry, first found wins:
//!
//! 1. `TOOLHOST_REGISTRY_TOKEN`: a bearer token, for every registry;
//! 2. `TOOLHOST_REGISTRY_USERNAME` and `TOOLHOST_REGISTRY_PASSWORD`: basic auth;
//! 3. the Docker config (`$DOCKER_CONFIG/config.json`, else `~/.docker/config.json`):
//!    `auths.REGISTRY.auth` (base64 `user:password`, what `docker login` writes),
//!    `username`/`password`, or `registrytoken` (bearer);
//! 4. none (anonymous).
//!
//! Credential helpers (`credsStore`, `credHelpers`) are not run: toolhost starts no
//! program to find a secret.

use std::path::{Path, PathBuf};

use base64::Engine as _;
use oci_client::secrets::RegistryAuth;
use serde::Deserialize;

use crate::DistError;

/// Where credentials for a registry came from, and what they are.
#[derive(Clone)]
pub struct Credentials {
    pub(crate) auth: RegistryAuth,
    /// Where they came from, for errors (never the secret).
    pub source: String,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credentials")
            .field("source", &self.source)
            .finish_non_exhaustive()
    }
}

impl Credentials {
    /// No credentials.
    pub fn anonymous() -> Credentials {
        Credentials {
            auth: RegistryAuth::Anonymous,
            source: "no credentials".into(),
        }
    }

    /// The credentials for `registry` from the environment and the Docker config.
    pub fn find(registry: &str) -> Result<Credentials, DistError> {
        let env = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
        if let Some(token) = env("TOOLHOST_REGISTRY_TOKEN") {
            return Ok(Credentials {
                auth: RegistryAuth::Bearer(token),
                source: "the bearer token of TOOLHOST_REGISTRY_TOKEN".into(),
            });
        }
        if let (Some(user), Some(pass)) = (
            env("TOOLHOST_REGISTRY_USERNAME"),
            env("TOOLHOST_REGISTRY_PASSWORD"),
        ) {
            return Ok(Credentials {
                source: format!("user `{user}` of TOOLHOST_REGISTRY_USERNAME"),
                auth: RegistryAuth::Basic(user, pass),
            });
        }
        let config = env("DOCKER_CONFIG")
            .map(|d| PathBuf::from(d).join("config.json"))
            .or_else(|| env("HOME").map(|h| PathBuf::from(h).join(".docker/config.json")));
        match config {
            Some(path) if path.exists() => from_docker_config(&path, registry),
            _ => Ok(Credentials::anonymous()),
        }
    }
}

#[derive(Deserialize)]
struct DockerConfig {
    #[serde(default)]
    auths: std::collections::BTreeMap<String, DockerAuth>,
}

#[derive(Deserialize)]
struct DockerAuth {
    auth: Option<String>,
    username: Option<String>,
    password: Option<String>,
    registrytoken: Option<String>,
}

fn from_docker_config(path: &Path, registry: &str) -> Result<Credentials, DistError> {
    let bad = |reason: String| DistError::DockerConfig {
        path: path.to_path_buf(),
        reason,
    };
    let text = std::fs::read_to_string(path).map_err(|e| bad(e.to_string()))?;
    let config: DockerConfig = serde_json::from_str(&text).map_err(|e| bad(e.to_string()))?;
    // `docker login` keys entries by host, or by a URL for Docker Hub and older clients.
    let entry = config.auths.iter().find(|(key, _)| {
        let host = key
            .trim_start_matches("https://")
            .trim_start_matches("http://")
            .split('/')
            .next()
            .unwrap_or("");
        host == registry
    });
    let Some((key, entry)) = entry else {
        return Ok(Credentials::anonymous());
    };
    let source = format!("the Docker config `{}` entry `{key}`", path.display());
    let auth = if let Some(token) = &entry.registrytoken {
        RegistryAuth::Bearer(token.clone())
    } else if let Some(encoded) = &entry.auth {
        let decoded = base64::engine::general_purpose::STANDARD
            .decode(encoded.trim())
            .ok()
            .and_then(|b| String::from_utf8(b).ok())
            .ok_or_else(|| {
                bad(format!(
                    "`auths.{key}.auth` is not base64 of `user:password`"
                ))
            })?;
        let (user, pass) = decoded.split_once(':').ok_or_else(|| {
            bad(format!(
                "`auths.{key}.auth` is not base64 of `user:password`"
            ))
        })?;
        RegistryAuth::Basic(user.to_string(), pass.to_string())
    } else if let (Some(u), Some(p)) = (&entry.username, &entry.password) {
        RegistryAuth::Basic(u.clone(), p.clone())
    } else {
        return Ok(Credentials::anonymous());
    };
    Ok(Credentials { auth, source })
}
