//! `fs`: reads, lists, inspects and writes files in the directories the host grants.
//!
//! Access control is entirely the host's: the component sees only pre-opened directories,
//! so this crate uses plain `std::fs` and turns its errors into the WIT `fs-error`.
//!
//! A path outside every grant reaches the host too: the host preopens an empty `/` that
//! wasi-libc resolves such paths against, refuses them there and records the denial, and
//! the call is `denied` rather than the tool's own error.
//!
//! The operations are `read-file`, `list-dir`, `stat-path` and `write-file` rather than
//! `read`, `list`, `stat` and `write`: wit-bindgen exports a world's functions under their
//! bare names, and `read`, `write` and `stat` would collide with libc's symbols (a link
//! error for wasm32-wasip2, a crashing native test binary).

pub mod ops;

toolhost_sdk::tool!();

struct Fs;

impl Guest for Fs {
    fn read_file(path: String, max_bytes: Option<u64>) -> Result<String, FsError> {
        Ok(ops::read(&path, max_bytes)?)
    }

    fn list_dir(path: String) -> Result<Vec<Entry>, FsError> {
        let entries = ops::list(&path)?;
        Ok(entries
            .into_iter()
            .map(|e| Entry {
                name: e.name,
                kind: e.kind.into(),
                size: e.size,
            })
            .collect())
    }

    fn stat_path(path: String) -> Result<Metadata, FsError> {
        let m = ops::stat(&path)?;
        Ok(Metadata {
            kind: m.kind.into(),
            size: m.size,
            modified: m.modified,
            readonly: m.readonly,
        })
    }

    fn write_file(path: String, content: String, mode: WriteMode) -> Result<u64, FsError> {
        let mode = match mode {
            WriteMode::Create => ops::WriteMode::Create,
            WriteMode::Overwrite => ops::WriteMode::Overwrite,
            WriteMode::Append => ops::WriteMode::Append,
        };
        Ok(ops::write(&path, &content, mode)?)
    }
}

impl From<ops::Error> for FsError {
    fn from(e: ops::Error) -> FsError {
        match e {
            ops::Error::NotFound(m) => FsError::NotFound(m),
            ops::Error::PermissionDenied(m) => FsError::PermissionDenied(m),
            ops::Error::NotUtf8(m) => FsError::NotUtf8(m),
            ops::Error::TooLarge(m) => FsError::TooLarge(m),
            ops::Error::Other(m) => FsError::Other(m),
        }
    }
}

impl From<ops::Kind> for EntryKind {
    fn from(k: ops::Kind) -> EntryKind {
        match k {
            ops::Kind::File => EntryKind::File,
            ops::Kind::Directory => EntryKind::Directory,
            ops::Kind::Symlink => EntryKind::Symlink,
            ops::Kind::Other => EntryKind::Other,
        }
    }
}

export!(Fs);
