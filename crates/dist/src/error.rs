//! What can go wrong distributing a component: each message names the reference, digest
//! or file at fault and says why.

use std::path::PathBuf;

/// An error of a registry, the store or a reference.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DistError {
    /// The text is not an `oci://REGISTRY/REPOSITORY[:TAG|@sha256:HEX]` reference.
    #[error("`{reference}` is not an OCI reference: {reason}")]
    BadReference { reference: String, reason: String },
    /// `--insecure` (plain HTTP) was asked for a registry that is not on this machine.
    #[error(
        "refusing plain HTTP to `{registry}`: --insecure is allowed only for a loopback registry (localhost, 127.0.0.0/8, [::1]); other registries are reached over TLS"
    )]
    InsecureNotLoopback { registry: String },
    /// The registry refused the credentials (or asked for some and none were found).
    #[error(
        "registry `{registry}` refused {what} of `{reference}`: not authorized ({credentials}); set TOOLHOST_REGISTRY_USERNAME and TOOLHOST_REGISTRY_PASSWORD, or log in with `docker login {registry}`"
    )]
    Unauthorized {
        registry: String,
        reference: String,
        what: &'static str,
        credentials: String,
    },
    /// The registry has no manifest under this tag or digest.
    #[error("`{reference}` was not found in registry `{registry}`: no such tag or digest")]
    NotFound { registry: String, reference: String },
    /// The registry could not be reached.
    #[error("cannot reach registry `{registry}` for `{reference}`: {reason}")]
    Unreachable {
        registry: String,
        reference: String,
        reason: String,
    },
    /// Something else the registry answered.
    #[error("registry `{registry}` failed {what} of `{reference}`: {reason}")]
    Registry {
        registry: String,
        reference: String,
        what: &'static str,
        reason: String,
    },
    /// What the registry sent does not hash to the digest that names it.
    #[error(
        "{what} `{expected}` of `{reference}` does not match its digest: the registry sent content whose digest is `{actual}`; refusing it"
    )]
    DigestMismatch {
        reference: String,
        what: &'static str,
        expected: String,
        actual: String,
    },
    /// The manifest is not a Wasm component artifact (CNCF Wasm OCI layout).
    #[error("`{reference}` is not a Wasm component artifact: {reason}")]
    NotWasm { reference: String, reason: String },
    /// A Docker config file that could not be read.
    #[error("cannot read the Docker config `{path}`: {reason}")]
    DockerConfig { path: PathBuf, reason: String },
    /// A store entry whose bytes no longer hash to its name.
    #[error(
        "store entry `{path}` is corrupted: its content's digest is `{actual}`, not `{expected}`; remove it and pull again"
    )]
    Corrupted {
        path: PathBuf,
        expected: String,
        actual: String,
    },
    /// Neither the store nor (offline) the registry has the reference.
    #[error(
        "`{reference}` is not in the local store `{store}`: pull it first (`toolhost tool pull {reference}`)"
    )]
    NotStored { reference: String, store: PathBuf },
    /// A file of the store or the component that could not be read or written.
    #[error("{what} `{path}`: {source}")]
    Io {
        what: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl DistError {
    pub(crate) fn io(what: &'static str, path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        DistError::Io {
            what,
            path: path.into(),
            source,
        }
    }
}
