//! A file or environment grant as the policy writes it, checked against this host: the
//! host path exists (a single file is pinned to its canonical path), the host variable is
//! set. Executor pools' workers run these for the sections sent to them.

use std::path::Path;

use super::{FileGrant, GrantKind};
use crate::raw::EnvValue;

/// Checks a file or directory grant: the host path must exist; a file grant is pinned to
/// the file's canonical path so a later symlink swap cannot redirect it.
pub fn file_grant(host: &Path, guest: &str, write: bool) -> Result<FileGrant, String> {
    if host.as_os_str().is_empty() {
        return Err("the host path is empty".into());
    }
    if !guest.starts_with('/') || guest.split('/').any(|c| c == ".." || c == ".") {
        return Err(format!(
            "guest path `{guest}` must be absolute and must not contain `.` or `..` components"
        ));
    }
    let meta =
        std::fs::metadata(host).map_err(|e| format!("cannot use `{}`: {e}", host.display()))?;
    let kind = if meta.is_dir() {
        GrantKind::Directory
    } else if meta.is_file() {
        GrantKind::File
    } else {
        return Err(format!(
            "`{}` is neither a directory nor a regular file",
            host.display()
        ));
    };
    if kind == GrantKind::File && guest.ends_with('/') {
        return Err(format!(
            "guest path `{guest}` ends in `/` but `{}` is a file",
            host.display()
        ));
    }
    let host = match kind {
        GrantKind::File => std::fs::canonicalize(host)
            .map_err(|e| format!("cannot use `{}`: {e}", host.display()))?,
        GrantKind::Directory => host.to_path_buf(),
    };
    Ok(FileGrant {
        host,
        guest: guest.to_string(),
        write,
        kind,
    })
}

/// Checks an environment grant and returns the value the tool will see.
pub fn env_grant(name: &str, value: &EnvValue) -> Result<String, String> {
    let valid = !name.is_empty()
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !valid {
        return Err(format!(
            "`{name}` is not a valid variable name: use letters, digits and `_`, not starting with a digit"
        ));
    }
    match value {
        EnvValue::Literal(v) => Ok(v.clone()),
        EnvValue::FromHost { from_host } => std::env::var(from_host).map_err(|_| {
            format!("`{from_host}` is not set in the host environment (or is not UTF-8)")
        }),
    }
}
