//! The filesystem operations on plain `std::fs`, free of the component bindings so they can
//! be tested natively against a temporary directory.

use std::fmt;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::time::UNIX_EPOCH;

/// Largest file `read` accepts when the caller gives no limit.
pub const DEFAULT_MAX_BYTES: u64 = 1 << 20;
/// Largest limit `read` accepts: the guest has a fixed memory budget (64 MiB by default)
/// and the contents are held in memory while the host copies them out.
pub const MAX_BYTES: u64 = 16 << 20;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    File,
    Directory,
    Symlink,
    Other,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub name: String,
    pub kind: Kind,
    pub size: u64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Metadata {
    pub kind: Kind,
    pub size: u64,
    pub modified: Option<u64>,
    pub readonly: Option<bool>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteMode {
    Create,
    Overwrite,
    Append,
}

/// Mirrors the WIT `fs-error`; each message names the path and the reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    NotFound(String),
    PermissionDenied(String),
    NotUtf8(String),
    TooLarge(String),
    Other(String),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (Error::NotFound(m)
        | Error::PermissionDenied(m)
        | Error::NotUtf8(m)
        | Error::TooLarge(m)
        | Error::Other(m)) = self;
        f.write_str(m)
    }
}

/// Classifies an io error from `action` (a verb such as "read") on `path`.
fn io_error(action: &str, path: &str, e: &io::Error) -> Error {
    match e.kind() {
        io::ErrorKind::NotFound => Error::NotFound(format!("cannot {action} `{path}`: {e}")),
        // The host refuses a path outside every grant (`access`), a `..` escape
        // (`not-permitted`) and a write to a read-only grant (`read-only`).
        io::ErrorKind::PermissionDenied | io::ErrorKind::ReadOnlyFilesystem => {
            Error::PermissionDenied(format!(
                "cannot {action} `{path}`: the host does not allow it ({e})"
            ))
        }
        _ => Error::Other(format!("cannot {action} `{path}`: {e}")),
    }
}

fn kind_of(t: fs::FileType) -> Kind {
    if t.is_symlink() {
        Kind::Symlink
    } else if t.is_dir() {
        Kind::Directory
    } else if t.is_file() {
        Kind::File
    } else {
        Kind::Other
    }
}

/// Reads the UTF-8 file at `path` if it has at most `max_bytes` bytes.
pub fn read(path: &str, max_bytes: Option<u64>) -> Result<String, Error> {
    let limit = max_bytes.unwrap_or(DEFAULT_MAX_BYTES);
    if limit > MAX_BYTES {
        return Err(Error::TooLarge(format!(
            "max-bytes {limit} is above the maximum of {MAX_BYTES} bytes"
        )));
    }
    let file = File::open(path).map_err(|e| io_error("read", path, &e))?;
    let meta = file.metadata().map_err(|e| io_error("read", path, &e))?;
    if meta.is_dir() {
        return Err(Error::Other(format!(
            "cannot read `{path}`: it is a directory (use `list-dir`)"
        )));
    }
    if meta.len() > limit {
        return Err(too_large(path, &meta.len().to_string(), limit));
    }
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
    // One byte past the limit tells a file that grew since `metadata` from one that fits.
    file.take(limit.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|e| io_error("read", path, &e))?;
    if bytes.len() as u64 > limit {
        return Err(too_large(path, "more than that", limit));
    }
    String::from_utf8(bytes).map_err(|e| {
        Error::NotUtf8(format!(
            "cannot read `{path}` as text: it is not valid UTF-8 (first invalid byte at \
             offset {})",
            e.utf8_error().valid_up_to()
        ))
    })
}

fn too_large(path: &str, size: &str, limit: u64) -> Error {
    Error::TooLarge(format!(
        "cannot read `{path}`: it is {size} bytes, over the limit of {limit} (raise \
         max-bytes, up to {MAX_BYTES})"
    ))
}

/// Lists the directory at `path`, sorted by name.
pub fn list(path: &str) -> Result<Vec<Entry>, Error> {
    let mut out = Vec::new();
    for item in fs::read_dir(path).map_err(|e| io_error("list", path, &e))? {
        let item = item.map_err(|e| io_error("list", path, &e))?;
        // A name that is not UTF-8 cannot travel as a WIT string; a lossy name still lets
        // the rest of the listing through.
        let name = item.file_name().to_string_lossy().into_owned();
        let entry_path = format!("{}/{name}", path.trim_end_matches('/'));
        // `DirEntry::metadata` does not follow symlinks, matching `stat`.
        let meta = item
            .metadata()
            .map_err(|e| io_error("inspect", &entry_path, &e))?;
        out.push(Entry {
            name,
            kind: kind_of(meta.file_type()),
            size: meta.len(),
        });
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(out)
}

/// Describes `path` without following a final symlink.
pub fn stat(path: &str) -> Result<Metadata, Error> {
    let meta = fs::symlink_metadata(path).map_err(|e| io_error("inspect", path, &e))?;
    Ok(Metadata {
        kind: kind_of(meta.file_type()),
        size: meta.len(),
        modified: meta
            .modified()
            .ok()
            .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
            .map(|d| d.as_secs()),
        readonly: write_refused(path, &meta),
    })
}

/// Whether the file at `path` cannot be opened for writing; `None` unless it is a regular
/// file. Permission bits would be simpler but say nothing in the sandbox: WASI reports
/// none, so std calls every file read-only, and a grant's own read-only flag is invisible.
/// Opening without `truncate` or `create` changes nothing.
fn write_refused(path: &str, meta: &fs::Metadata) -> Option<bool> {
    meta.is_file()
        .then(|| OpenOptions::new().write(true).open(path).is_err())
}

/// Writes `content` to `path` according to `mode`; returns the number of bytes written.
pub fn write(path: &str, content: &str, mode: WriteMode) -> Result<u64, Error> {
    let mut options = OpenOptions::new();
    match mode {
        WriteMode::Create => options.write(true).create_new(true),
        WriteMode::Overwrite => options.write(true).create(true).truncate(true),
        WriteMode::Append => options.append(true).create(true),
    };
    let mut file = options.open(path).map_err(|e| {
        if e.kind() == io::ErrorKind::AlreadyExists {
            Error::Other(format!(
                "cannot create `{path}`: it already exists (use mode `overwrite` to replace \
                 it or `append` to add to it)"
            ))
        } else {
            io_error("write", path, &e)
        }
    })?;
    file.write_all(content.as_bytes())
        .and_then(|()| file.flush())
        .map_err(|e| io_error("write", path, &e))?;
    Ok(content.len() as u64)
}

#[cfg(test)]
mod tests;
