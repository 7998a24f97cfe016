//! Single-file grants: a guest directory that holds only the granted files.
//!
//! A file grant (host `/srv/app/real.conf` as guest `/config/app.conf`) adds a preopen at
//! the guest directory (`/config`). That preopen is a read-only handle on the host
//! directory, but the guest never resolves a path through it: the gate answers every
//! path-taking call on it. Only the granted names (`app.conf`), exactly, may be opened,
//! stat'ed or have their times set; each is resolved in its own host directory, by its
//! host name, without following a symlink, and never created. Listing, creating,
//! renaming, linking, unlinking or reading links there is refused. File grants that
//! share a guest directory share its preopen, whatever host directories they come from.

use wasmtime::component::Resource;
use wasmtime_wasi::filesystem::{Descriptor, Dir, WasiFilesystemView};
use wasmtime_wasi::p2::bindings::filesystem::types::{
    DescriptorFlags, DescriptorStat, HostDescriptor, MetadataHashValue, NewTimestamp, OpenFlags,
    PathFlags,
};
use wasmtime_wasi::{FsPerms, OpenMode};

use super::Failure;
use crate::grants::{FileGrant, GrantKind};
use crate::sandbox::{GrantError, HostState};

/// The rule a refused call on a file grant's directory broke.
pub(super) const NOT_GRANTED: &str = "not a granted file";
pub(super) const NO_CREATE: &str = "a file grant cannot create";
pub(super) const NO_LISTING: &str = "a file grant's directory cannot be listed";
pub(super) const NO_CHANGES: &str =
    "a file grant's directory cannot be changed (create, rename, link, remove)";
pub(super) const NO_LINKS: &str = "a file grant's directory has no links to read";
pub(super) const SEALED: &str = "no path can be resolved from a granted file";
pub(super) const NO_METADATA: &str =
    "a file grant's directory has no metadata (stat, hash, identity) of its own";

/// A guest directory holding single-file grants.
pub(super) struct FileDir {
    /// The guest directory, e.g. `/config`.
    pub(super) guest: String,
    /// What the guest's descriptor for `guest` refers to: the first file's host
    /// directory, read-only whatever the grants say, so that even a call the gate let
    /// through by mistake could not change it.
    pub(super) preopen: Dir,
    files: Vec<GrantedFile>,
}

struct GrantedFile {
    /// The name the guest opens, e.g. `app.conf`.
    name: String,
    /// The file's name in `dir`.
    host_name: String,
    /// The file's host directory, with the grant's permissions (wasmtime-wasi enforces
    /// read-only on whatever is opened through it).
    dir: Dir,
}

/// Groups the file grants among `grants` by guest directory and opens their host
/// directories. A file grant whose guest directory is also a directory grant's guest
/// path is refused: one guest directory cannot be both a whole tree and a few files.
pub(super) fn file_dirs(grants: &[FileGrant]) -> Result<Vec<FileDir>, GrantError> {
    let mut dirs: Vec<FileDir> = Vec::new();
    for g in grants.iter().filter(|g| g.kind == GrantKind::File) {
        let error = |reason: String| GrantError {
            host: g.host.display().to_string(),
            guest: g.guest.clone(),
            reason,
        };
        let (guest_dir, name) = split_guest(&g.guest).ok_or_else(|| {
            error("a file grant's guest path must be absolute and end in a file name".into())
        })?;
        if let Some(d) = grants
            .iter()
            .find(|d| d.kind == GrantKind::Directory && same_dir(&d.guest, guest_dir))
        {
            return Err(error(format!(
                "guest directory `{guest_dir}` is also granted as a whole (`{}`); grant the file inside that directory instead",
                d.host.display()
            )));
        }
        let host_dir = g
            .host
            .parent()
            .ok_or_else(|| error("the file has no parent directory".into()))?;
        let host_name = g
            .host
            .file_name()
            .and_then(|n| n.to_str())
            .ok_or_else(|| error("the file name is not UTF-8".into()))?;
        let open = |perms| open_dir(host_dir, perms).map_err(|e| error(e.to_string()));
        let perms = if g.write {
            FsPerms::ReadWrite
        } else {
            FsPerms::ReadOnly
        };
        let file = GrantedFile {
            name: name.to_string(),
            host_name: host_name.to_string(),
            dir: open(perms)?,
        };
        let at = match dirs.iter().position(|d| same_dir(&d.guest, guest_dir)) {
            Some(i) => i,
            None => {
                dirs.push(FileDir {
                    guest: guest_dir.to_string(),
                    preopen: open(FsPerms::ReadOnly)?,
                    files: Vec::new(),
                });
                dirs.len() - 1
            }
        };
        if dirs[at].files.iter().any(|f| f.name == file.name) {
            return Err(error(format!("guest path `{}` is granted twice", g.guest)));
        }
        dirs[at].files.push(file);
    }
    Ok(dirs)
}

/// `/config/app.conf` → (`/config`, `app.conf`); `/app.conf` → (`/`, `app.conf`).
fn split_guest(guest: &str) -> Option<(&str, &str)> {
    let (dir, name) = guest.rsplit_once('/')?;
    if !guest.starts_with('/') || name.is_empty() || name == "." || name == ".." {
        return None;
    }
    Some((if dir.is_empty() { "/" } else { dir }, name))
}

fn same_dir(a: &str, b: &str) -> bool {
    fn trim(s: &str) -> &str {
        match s.trim_end_matches('/') {
            "" => "/",
            t => t,
        }
    }
    trim(a) == trim(b)
}

fn open_dir(path: &std::path::Path, perms: FsPerms) -> std::io::Result<Dir> {
    let dir = cap_std::fs::Dir::open_ambient_dir(path, cap_std::ambient_authority())?;
    let mode = match perms {
        FsPerms::ReadOnly => OpenMode::READ,
        FsPerms::ReadWrite => OpenMode::READ | OpenMode::WRITE,
    };
    // Not blocking the current thread, like the preopens of the default `WasiCtxBuilder`.
    Ok(Dir::new(dir.into_std_file(), perms, mode, false))
}

impl FileDir {
    fn get(&self, name: &str) -> Result<&GrantedFile, Failure> {
        self.files
            .iter()
            .find(|f| f.name == name)
            .ok_or(Failure::Rule(NOT_GRANTED))
    }
}

/// The granted file `name` of file directory `i`: its host directory, pushed into the
/// table for one call, and its host name.
fn granted(
    state: &mut HostState,
    i: usize,
    name: &str,
) -> Result<(Resource<Descriptor>, String), Failure> {
    let file = state.fs.file_dirs[i].get(name)?;
    let (dir, host_name) = (file.dir.clone(), file.host_name.clone());
    Ok((state.table.push(Descriptor::Dir(dir))?, host_name))
}

/// Runs `$call` (an expression using the view `$v`, the directory `$d` and the host name
/// `$n`) on granted file `$name` of file directory `$i`, then drops the temporary
/// directory descriptor again.
macro_rules! on_granted {
    ($state:expr, $i:expr, $name:expr, |$v:ident, $d:ident, $n:ident| $call:expr) => {{
        let (tmp, $n) = granted($state, $i, $name)?;
        let $d = Resource::new_borrow(tmp.rep());
        let result = {
            let $v = &mut $state.filesystem();
            $call.await
        };
        $state.table.delete(tmp)?;
        Ok(result?)
    }};
}

/// `open-at` on a file directory: the granted name only, never following a symlink, never
/// creating (a plain `create` flag is dropped, so writing an existing file works).
pub(super) async fn open(
    state: &mut HostState,
    i: usize,
    name: &str,
    oflags: OpenFlags,
    flags: DescriptorFlags,
) -> Result<Resource<Descriptor>, Failure> {
    if oflags.contains(OpenFlags::EXCLUSIVE) {
        return Err(Failure::Rule(NO_CREATE));
    }
    let oflags = oflags & !OpenFlags::CREATE;
    on_granted!(state, i, name, |v, d, n| v.open_at(
        d,
        PathFlags::empty(),
        n,
        oflags,
        flags
    ))
}

pub(super) async fn stat(
    state: &mut HostState,
    i: usize,
    name: &str,
) -> Result<DescriptorStat, Failure> {
    on_granted!(state, i, name, |v, d, n| v.stat_at(
        d,
        PathFlags::empty(),
        n
    ))
}

pub(super) async fn metadata_hash(
    state: &mut HostState,
    i: usize,
    name: &str,
) -> Result<MetadataHashValue, Failure> {
    on_granted!(state, i, name, |v, d, n| v.metadata_hash_at(
        d,
        PathFlags::empty(),
        n
    ))
}

pub(super) async fn set_times(
    state: &mut HostState,
    i: usize,
    name: &str,
    atim: NewTimestamp,
    mtim: NewTimestamp,
) -> Result<(), Failure> {
    on_granted!(state, i, name, |v, d, n| v.set_times_at(
        d,
        PathFlags::empty(),
        n,
        atim,
        mtim
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::file_grant;

    #[test]
    fn guest_paths_split_into_directory_and_name() {
        assert_eq!(
            split_guest("/config/app.conf"),
            Some(("/config", "app.conf"))
        );
        assert_eq!(split_guest("/app.conf"), Some(("/", "app.conf")));
        assert_eq!(split_guest("/config/"), None);
        assert_eq!(split_guest("app.conf"), None);
        assert_eq!(split_guest("/config/.."), None);
        assert!(same_dir("/config/", "/config") && same_dir("/", "/"));
    }

    fn grants(dir: &std::path::Path, specs: &[(&str, &str, bool)]) -> Vec<FileGrant> {
        specs
            .iter()
            .map(|(host, guest, write)| {
                let host = dir.join(host);
                if host.is_dir() {
                    FileGrant::dir(host, *guest, *write)
                } else {
                    std::fs::write(&host, "x").unwrap();
                    file_grant(&host, guest, *write).unwrap()
                }
            })
            .collect()
    }

    #[test]
    fn file_grants_in_one_guest_directory_share_it() {
        let a = tempfile::tempdir().unwrap();
        std::fs::create_dir(a.path().join("sub")).unwrap();
        let g = grants(
            a.path(),
            &[
                ("one", "/config/one", false),
                ("sub/two", "/config/two", true),
                ("three", "/other/three", false),
            ],
        );
        let dirs = file_dirs(&g).unwrap();
        assert_eq!(dirs.len(), 2);
        assert_eq!(dirs[0].guest, "/config");
        let names: Vec<_> = dirs[0].files.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["one", "two"]);
        assert!(dirs[0].get("three").is_err() && dirs[1].get("three").is_ok());
    }

    #[test]
    fn a_guest_directory_is_a_tree_or_files_not_both() {
        let a = tempfile::tempdir().unwrap();
        std::fs::create_dir(a.path().join("tree")).unwrap();
        let g = grants(
            a.path(),
            &[("tree", "/config", false), ("one", "/config/one", false)],
        );
        let err = file_dirs(&g).err().expect("conflict refused");
        assert!(err.reason.contains("also granted as a whole"), "{err}");
    }

    #[test]
    fn one_guest_path_cannot_name_two_files() {
        let a = tempfile::tempdir().unwrap();
        let g = grants(
            a.path(),
            &[("one", "/config/f", false), ("two", "/config/f", false)],
        );
        let err = file_dirs(&g).err().expect("duplicate refused");
        assert!(err.reason.contains("granted twice"), "{err}");
    }
}
