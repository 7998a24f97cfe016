//! Showing the host a refusal that wasi-libc made on its own (see the crate doc).

use crate::{FsError, ops};

/// What the refused call meant to do, so the host records the right action.
#[derive(Clone, Copy)]
pub enum Intent {
    Read,
    List,
    Stat,
    Write,
}

/// `e` as the WIT error; for a path outside every grant, after the host has seen the
/// attempt.
pub fn refused(e: ops::Error, path: &str, intent: Intent) -> FsError {
    if let ops::Error::OutsideGrants(_) = &e {
        show_host(path, intent);
    }
    FsError::from(e)
}

/// Repeats the attempt on the first granted directory with the path made absolute (as
/// wasi-libc resolves a relative one, from `/`). The host refuses an absolute path below a
/// directory before touching anything, so this cannot reach a file; its answer is
/// ignored: the caller already has its error.
#[cfg(target_arch = "wasm32")]
fn show_host(path: &str, intent: Intent) {
    use wasi::filesystem::types::{DescriptorFlags, OpenFlags, PathFlags};

    let Some((dir, _)) = wasi::filesystem::preopens::get_directories()
        .into_iter()
        .next()
    else {
        // Nothing is granted: there is no host directory to show the attempt to.
        return;
    };
    let absolute = if path.starts_with('/') {
        path.to_string()
    } else {
        format!("/{path}")
    };
    let _ = match intent {
        Intent::Stat => dir.stat_at(PathFlags::empty(), &absolute).map(drop),
        Intent::Read => dir
            .open_at(
                PathFlags::empty(),
                &absolute,
                OpenFlags::empty(),
                DescriptorFlags::READ,
            )
            .map(drop),
        Intent::List => dir
            .open_at(
                PathFlags::empty(),
                &absolute,
                OpenFlags::DIRECTORY,
                DescriptorFlags::READ,
            )
            .map(drop),
        Intent::Write => dir
            .open_at(
                PathFlags::empty(),
                &absolute,
                OpenFlags::empty(),
                DescriptorFlags::WRITE,
            )
            .map(drop),
    };
}

/// Natively (the crate's unit tests) there is no host to show anything to.
#[cfg(not(target_arch = "wasm32"))]
fn show_host(_path: &str, _intent: Intent) {}
