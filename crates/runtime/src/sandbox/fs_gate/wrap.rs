//! The shadowing `wasi:filesystem` functions: each refuses to act once the call's audit
//! budget is spent, resolves the guest path, applies the scope's rules and the write
//! budget, calls wasmtime-wasi's own implementation, and records the decision.

use wasmtime::StoreContextMut;
use wasmtime::component::{Linker, Resource};
use wasmtime_wasi::filesystem::{Descriptor, WasiFilesystemView};
use wasmtime_wasi::p2::bindings::filesystem::preopens;
use wasmtime_wasi::p2::bindings::filesystem::types::{
    DescriptorFlags, DescriptorStat, ErrorCode, Filesize, HostDescriptor, MetadataHashValue,
    NewTimestamp, OpenFlags, PathFlags,
};
use wasmtime_wasi::p2::{DynOutputStream, ReaddirIterator};

use super::budget::Metered;
use super::files::{self, NO_CHANGES, NO_LINKS, NO_LISTING, NO_METADATA, SEALED};
use super::outside::{self, OUTSIDE};
use super::{Failure, Scope, finish};
use crate::sandbox::{AuditEvent, Decision, HostState};

/// The interfaces wasmtime-wasi 48 registers (its WIT is `wasi:filesystem@0.2.12`); guests
/// importing any other 0.2.x reach them through the linker's semver matching. Upgrading
/// wasmtime-wasi changes these names: the gate's integration tests (which expect
/// events) catch a shadow that no longer applies.
const TYPES: &str = "wasi:filesystem/types@0.2.12";
const PREOPENS: &str = "wasi:filesystem/preopens@0.2.12";

type Fd = Resource<Descriptor>;
type R<T> = wasmtime::Result<Result<T, ErrorCode>>;

/// Registers an async shadow `$f(state, args…) -> wasmtime::Result<T>` as `$name`; it
/// traps instead once the audit budget is spent (fail closed: nothing goes unaudited).
macro_rules! gate {
    ($inst:ident, $name:literal, $f:ident($($arg:ident: $ty:ty),*)) => {
        $inst.func_wrap_async(
            $name,
            |mut store: StoreContextMut<'_, HostState>, ($($arg,)*): ($($ty,)*)| {
                Box::new(async move {
                    store.data().audit.check()?;
                    Ok(($f(store.data_mut(), $($arg),*).await?,))
                })
            },
        )?;
    };
}

pub(super) fn add_to_linker(linker: &mut Linker<HostState>) -> wasmtime::Result<()> {
    linker.instance(PREOPENS)?.func_wrap(
        "get-directories",
        |mut store: StoreContextMut<'_, HostState>, (): ()| {
            Ok((get_directories(store.data_mut())?,))
        },
    )?;

    let mut i = linker.instance(TYPES)?;
    gate!(i, "[method]descriptor.open-at",
        open_at(fd: Fd, pf: PathFlags, path: String, of: OpenFlags, df: DescriptorFlags));
    gate!(i, "[method]descriptor.stat-at", stat_at(fd: Fd, pf: PathFlags, path: String));
    gate!(i, "[method]descriptor.metadata-hash-at",
        metadata_hash_at(fd: Fd, pf: PathFlags, path: String));
    gate!(i, "[method]descriptor.set-times-at",
        set_times_at(fd: Fd, pf: PathFlags, path: String, a: NewTimestamp, m: NewTimestamp));
    gate!(i, "[method]descriptor.readlink-at", readlink_at(fd: Fd, path: String));
    gate!(i, "[method]descriptor.create-directory-at", create_directory_at(fd: Fd, path: String));
    gate!(i, "[method]descriptor.remove-directory-at", remove_directory_at(fd: Fd, path: String));
    gate!(i, "[method]descriptor.unlink-file-at", unlink_file_at(fd: Fd, path: String));
    gate!(i, "[method]descriptor.symlink-at", symlink_at(fd: Fd, target: String, link: String));
    gate!(i, "[method]descriptor.rename-at", rename_at(fd: Fd, old: String, to: Fd, new: String));
    gate!(i, "[method]descriptor.link-at",
        link_at(fd: Fd, pf: PathFlags, old: String, to: Fd, new: String));
    gate!(i, "[method]descriptor.read-directory", read_directory(fd: Fd));
    gate!(i, "[method]descriptor.set-times", set_times(fd: Fd, a: NewTimestamp, m: NewTimestamp));
    gate!(i, "[method]descriptor.set-size", set_size(fd: Fd, size: Filesize));
    gate!(i, "[method]descriptor.write", write(fd: Fd, buf: Vec<u8>, offset: Filesize));
    gate!(i, "[method]descriptor.stat", stat(fd: Fd));
    gate!(i, "[method]descriptor.metadata-hash", metadata_hash(fd: Fd));
    gate!(i, "[method]descriptor.is-same-object", is_same_object(a: Fd, b: Fd));
    i.func_wrap(
        "[method]descriptor.write-via-stream",
        |mut store: StoreContextMut<'_, HostState>, (fd, offset): (Fd, Filesize)| {
            store.data().audit.check()?;
            Ok((stream(store.data_mut(), fd, Some(offset))?,))
        },
    )?;
    i.func_wrap(
        "[method]descriptor.append-via-stream",
        |mut store: StoreContextMut<'_, HostState>, (fd,): (Fd,)| {
            store.data().audit.check()?;
            Ok((stream(store.data_mut(), fd, None)?,))
        },
    )?;
    Ok(())
}

/// A write stream on `fd` (at `offset`, or appending), metered by the write budget.
fn stream(s: &mut HostState, fd: Fd, offset: Option<Filesize>) -> R<Resource<DynOutputStream>> {
    let rep = fd.rep();
    let r = match offset {
        Some(offset) => s.filesystem().write_via_stream(fd, offset),
        None => s.filesystem().append_via_stream(fd),
    };
    let r = match r {
        Ok(raw) => {
            // Swapped for a metered stream under a fresh handle: the guest has not seen
            // the first one yet.
            let inner = s.table.delete(raw)?;
            let path = s.fs.path(rep);
            let metered: DynOutputStream =
                Box::new(Metered::new(inner, s.writes.clone(), path, offset));
            Ok(s.table.push(metered)?)
        }
        Err(e) => Err(e.into()),
    };
    finish(s, "write", || s.fs.path(rep), r, true)
}

/// wasmtime-wasi's preopens (the directory grants), then one per file directory, then
/// the empty `/` if no grant is there. The real grants come first: a guest that takes
/// the first preopen gets a grant, and wasi-libc's longest-prefix match never prefers
/// `/` over one.
fn get_directories(s: &mut HostState) -> wasmtime::Result<Vec<(Fd, String)>> {
    let mut dirs = preopens::Host::get_directories(&mut s.filesystem())?;
    for (fd, guest) in &dirs {
        s.fs.insert(fd.rep(), guest.as_str(), Scope::Tree);
    }
    for i in 0..s.fs.file_dirs.len() {
        let d = &s.fs.file_dirs[i];
        let (dir, guest) = (d.preopen.clone(), d.guest.clone());
        let fd = s.table.push(Descriptor::Dir(dir))?;
        s.fs.insert(fd.rep(), guest.as_str(), Scope::Files(i));
        dirs.push((fd, guest));
    }
    if s.fs.outside {
        let nothing = match &s.fs.nothing {
            Some(dir) => dir.clone(),
            None => {
                let dir = outside::open().map_err(|e| {
                    wasmtime::Error::msg(format!(
                        "cannot open the empty `/` preopen that stands for everything \
                         outside the grants: {e}"
                    ))
                })?;
                s.fs.nothing.insert(dir).clone()
            }
        };
        let fd = s.table.push(Descriptor::Dir(nothing))?;
        s.fs.insert(fd.rep(), outside::ROOT, Scope::Outside);
        dirs.push((fd, outside::ROOT.to_string()));
    }
    Ok(dirs)
}

/// `Ok` in a directory grant's tree; else the rule a file directory (`files_rule`) or a
/// granted file breaks.
fn tree_only(scope: Scope, files_rule: &'static str) -> Result<(), Failure> {
    match scope {
        Scope::Tree => Ok(()),
        Scope::Files(_) => Err(Failure::Rule(files_rule)),
        Scope::Sealed => Err(Failure::Rule(SEALED)),
        Scope::Outside => Err(Failure::Rule(OUTSIDE)),
    }
}

fn open_action(of: OpenFlags, df: DescriptorFlags) -> &'static str {
    if of.contains(OpenFlags::CREATE) {
        "create"
    } else if of.contains(OpenFlags::TRUNCATE)
        || df.intersects(DescriptorFlags::WRITE | DescriptorFlags::MUTATE_DIRECTORY)
    {
        "open-write"
    } else {
        "open-read"
    }
}

async fn open_at(
    s: &mut HostState,
    fd: Fd,
    pf: PathFlags,
    path: String,
    of: OpenFlags,
    df: DescriptorFlags,
) -> R<Fd> {
    let (full, scope) = s.fs.resolve(fd.rep(), &path);
    let r = match scope {
        Scope::Tree => (s.filesystem().open_at(fd, pf, path, of, df).await).map_err(Failure::from),
        Scope::Files(i) => files::open(s, i, &path, of, df).await,
        Scope::Sealed => Err(Failure::Rule(SEALED)),
        Scope::Outside => Err(Failure::Rule(OUTSIDE)),
    };
    if let Ok(opened) = &r {
        let child = match scope {
            Scope::Tree => Scope::Tree,
            Scope::Files(_) | Scope::Sealed | Scope::Outside => Scope::Sealed,
        };
        s.fs.insert(opened.rep(), full.as_str(), child);
    }
    finish(s, open_action(of, df), || full, r, false)
}

async fn stat_at(s: &mut HostState, fd: Fd, pf: PathFlags, path: String) -> R<DescriptorStat> {
    let (full, scope) = s.fs.resolve(fd.rep(), &path);
    let r = match scope {
        Scope::Tree => (s.filesystem().stat_at(fd, pf, path).await).map_err(Failure::from),
        Scope::Files(i) => files::stat(s, i, &path).await,
        Scope::Sealed => Err(Failure::Rule(SEALED)),
        Scope::Outside => Err(Failure::Rule(OUTSIDE)),
    };
    finish(s, "stat", || full, r, false)
}

async fn metadata_hash_at(
    s: &mut HostState,
    fd: Fd,
    pf: PathFlags,
    path: String,
) -> R<MetadataHashValue> {
    let (full, scope) = s.fs.resolve(fd.rep(), &path);
    let r = match scope {
        Scope::Tree => (s.filesystem().metadata_hash_at(fd, pf, path).await).map_err(Failure::from),
        Scope::Files(i) => files::metadata_hash(s, i, &path).await,
        Scope::Sealed => Err(Failure::Rule(SEALED)),
        Scope::Outside => Err(Failure::Rule(OUTSIDE)),
    };
    finish(s, "stat", || full, r, false)
}

async fn set_times_at(
    s: &mut HostState,
    fd: Fd,
    pf: PathFlags,
    path: String,
    a: NewTimestamp,
    m: NewTimestamp,
) -> R<()> {
    let (full, scope) = s.fs.resolve(fd.rep(), &path);
    let r = match scope {
        Scope::Tree => {
            (s.filesystem().set_times_at(fd, pf, path, a, m).await).map_err(Failure::from)
        }
        Scope::Files(i) => files::set_times(s, i, &path, a, m).await,
        Scope::Sealed => Err(Failure::Rule(SEALED)),
        Scope::Outside => Err(Failure::Rule(OUTSIDE)),
    };
    finish(s, "set-times", || full, r, false)
}

async fn readlink_at(s: &mut HostState, fd: Fd, path: String) -> R<String> {
    let (full, scope) = s.fs.resolve(fd.rep(), &path);
    let r = async {
        tree_only(scope, NO_LINKS)?;
        Ok(s.filesystem().readlink_at(fd, path).await?)
    }
    .await;
    finish(s, "readlink", || full, r, false)
}

async fn create_directory_at(s: &mut HostState, fd: Fd, path: String) -> R<()> {
    let (full, scope) = s.fs.resolve(fd.rep(), &path);
    let r = async {
        tree_only(scope, NO_CHANGES)?;
        Ok(s.filesystem().create_directory_at(fd, path).await?)
    }
    .await;
    finish(s, "create-dir", || full, r, false)
}

async fn remove_directory_at(s: &mut HostState, fd: Fd, path: String) -> R<()> {
    let (full, scope) = s.fs.resolve(fd.rep(), &path);
    let r = async {
        tree_only(scope, NO_CHANGES)?;
        Ok(s.filesystem().remove_directory_at(fd, path).await?)
    }
    .await;
    finish(s, "remove-dir", || full, r, false)
}

async fn unlink_file_at(s: &mut HostState, fd: Fd, path: String) -> R<()> {
    let (full, scope) = s.fs.resolve(fd.rep(), &path);
    let r = async {
        tree_only(scope, NO_CHANGES)?;
        Ok(s.filesystem().unlink_file_at(fd, path).await?)
    }
    .await;
    finish(s, "unlink", || full, r, false)
}

/// The event's path is `LINK -> TARGET`, the target as given (it is not resolved now).
async fn symlink_at(s: &mut HostState, fd: Fd, target: String, link: String) -> R<()> {
    let (full, scope) = s.fs.resolve(fd.rep(), &link);
    let event_path = format!("{full} -> {target}");
    let r = async {
        tree_only(scope, NO_CHANGES)?;
        super::links::check_target(&target)?;
        Ok(s.filesystem().symlink_at(fd, target, link).await?)
    }
    .await;
    finish(s, "symlink", || event_path, r, false)
}

/// The event's path is `FROM -> TO`; both directories must be in directory grants.
async fn rename_at(s: &mut HostState, fd: Fd, old: String, to: Fd, new: String) -> R<()> {
    let (from, scope) = s.fs.resolve(fd.rep(), &old);
    let (dest, to_scope) = s.fs.resolve(to.rep(), &new);
    let r = async {
        tree_only(scope, NO_CHANGES)?;
        tree_only(to_scope, NO_CHANGES)?;
        Ok(s.filesystem().rename_at(fd, old, to, new).await?)
    }
    .await;
    finish(s, "rename", || format!("{from} -> {dest}"), r, false)
}

/// The event's path is `FROM -> TO`; both directories must be in directory grants.
async fn link_at(
    s: &mut HostState,
    fd: Fd,
    pf: PathFlags,
    old: String,
    to: Fd,
    new: String,
) -> R<()> {
    let (from, scope) = s.fs.resolve(fd.rep(), &old);
    let (dest, to_scope) = s.fs.resolve(to.rep(), &new);
    let r = async {
        tree_only(scope, NO_CHANGES)?;
        tree_only(to_scope, NO_CHANGES)?;
        Ok(s.filesystem().link_at(fd, pf, old, to, new).await?)
    }
    .await;
    finish(s, "link", || format!("{from} -> {dest}"), r, false)
}

async fn read_directory(s: &mut HostState, fd: Fd) -> R<Resource<ReaddirIterator>> {
    let rep = fd.rep();
    let scope = s.fs.scope(rep);
    let r = async {
        tree_only(scope, NO_LISTING)?;
        Ok(s.filesystem().read_directory(fd).await?)
    }
    .await;
    finish(s, "read-dir", || s.fs.path(rep), r, false)
}

async fn set_times(s: &mut HostState, fd: Fd, a: NewTimestamp, m: NewTimestamp) -> R<()> {
    let rep = fd.rep();
    let scope = s.fs.scope(rep);
    let r = async {
        // A granted file's own times may change (if the grant allows writing); its
        // directory's may not, nor those of the empty `/`.
        if let Some(rule) = scope.no_object(NO_CHANGES) {
            return Err(Failure::Rule(rule));
        }
        Ok(s.filesystem().set_times(fd, a, m).await?)
    }
    .await;
    finish(s, "set-times", || s.fs.path(rep), r, false)
}

async fn set_size(s: &mut HostState, fd: Fd, size: Filesize) -> R<()> {
    let rep = fd.rep();
    s.writes.size(&s.fs.path(rep), size)?;
    let r = s.filesystem().set_size(fd, size).await;
    finish(
        s,
        "set-size",
        || s.fs.path(rep),
        r.map_err(Into::into),
        false,
    )
}

async fn write(s: &mut HostState, fd: Fd, buf: Vec<u8>, offset: Filesize) -> R<Filesize> {
    let rep = fd.rep();
    s.writes
        .charge(&s.fs.path(rep), Some(offset), buf.len() as u64)?;
    let r = s.filesystem().write(fd, buf, offset).await;
    finish(s, "write", || s.fs.path(rep), r.map_err(Into::into), true)
}

/// A file grant's directory has no metadata to give: its descriptor stands for the granted
/// files, not for the host directory they happen to sit in; nor has the empty `/`.
/// Refused and recorded.
async fn stat(s: &mut HostState, fd: Fd) -> R<DescriptorStat> {
    let rep = fd.rep();
    if let Some(rule) = s.fs.scope(rep).no_object(NO_METADATA) {
        return finish(
            s,
            "stat",
            || s.fs.path(rep),
            Err(Failure::Rule(rule)),
            false,
        );
    }
    let r = s.filesystem().stat(fd).await;
    finish(s, "stat", || s.fs.path(rep), r.map_err(Into::into), true)
}

async fn metadata_hash(s: &mut HostState, fd: Fd) -> R<MetadataHashValue> {
    let rep = fd.rep();
    if let Some(rule) = s.fs.scope(rep).no_object(NO_METADATA) {
        return finish(
            s,
            "stat",
            || s.fs.path(rep),
            Err(Failure::Rule(rule)),
            false,
        );
    }
    let r = s.filesystem().metadata_hash(fd).await;
    finish(s, "stat", || s.fs.path(rep), r.map_err(Into::into), true)
}

/// Whether `a` and `b` are one object. With a file grant's directory (or the empty `/`)
/// on either side the host is not asked (its answer would tell which host directory holds
/// the grants): only a descriptor is the same object as itself. Recorded as refused.
async fn is_same_object(s: &mut HostState, a: Fd, b: Fd) -> wasmtime::Result<bool> {
    let refused = [a.rep(), b.rep()]
        .into_iter()
        .find_map(|rep| Some((rep, s.fs.scope(rep).no_object(NO_METADATA)?)));
    match refused {
        None => s.filesystem().is_same_object(a, b).await,
        Some((rep, rule)) => {
            s.audit.record(AuditEvent::File {
                action: "is-same-object".into(),
                path: s.fs.path(rep),
                decision: Decision::Denied,
                reason: Some(format!("access: {rule}")),
            });
            // The guest got an answer, not an error: this refusal is no tool error's cause.
            s.audit.answered();
            Ok(a.rep() == b.rep())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn open_actions_follow_the_flags() {
        let none = DescriptorFlags::empty();
        assert_eq!(
            open_action(OpenFlags::empty(), DescriptorFlags::READ),
            "open-read"
        );
        assert_eq!(open_action(OpenFlags::TRUNCATE, none), "open-write");
        assert_eq!(
            open_action(OpenFlags::empty(), DescriptorFlags::WRITE),
            "open-write"
        );
        assert_eq!(
            open_action(
                OpenFlags::CREATE | OpenFlags::TRUNCATE,
                DescriptorFlags::WRITE
            ),
            "create"
        );
    }
}
