//! Escapes from file grants and writes to read-only ones, made with raw `wasi:filesystem`
//! calls (the `misbehave` tool's `raw-*` operations), so every attempt reaches the host's
//! gate rather than being stopped by wasi-libc in the guest.
//!
//! Each test asserts the WASI error code the tool got, that the secret's text appears
//! nowhere in the outcome (result, stdout, stderr, logs, events), the recorded denial,
//! and, for writes, that the host file system did not change.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use toolhost_runtime::{
    AuditEvent, CallError, CallOutcome, Capabilities, Decision, FileGrant, Limits,
};

use super::{assert_denial_recorded, assert_event, attack};

/// What the secret file holds; it must never reach the tool or its outcome.
pub(super) const SECRET: &str = "TOP-SECRET-7f3a91";

/// `root/secret.txt` (the secret) beside `root/inside/` (`note.txt`, `sub/`), which the
/// tests grant as `/data`.
pub(super) struct Tree {
    pub(super) root: tempfile::TempDir,
}

impl Tree {
    pub(super) fn new() -> Tree {
        let root = tempfile::tempdir().unwrap();
        std::fs::write(root.path().join("secret.txt"), SECRET).unwrap();
        let inside = root.path().join("inside");
        std::fs::create_dir_all(inside.join("sub")).unwrap();
        std::fs::write(inside.join("note.txt"), "hello").unwrap();
        Tree { root }
    }

    pub(super) fn inside(&self) -> PathBuf {
        self.root.path().join("inside")
    }

    pub(super) fn secret(&self) -> PathBuf {
        self.root.path().join("secret.txt")
    }

    /// `inside/` as `/data`.
    pub(super) fn grant(&self, write: bool) -> Capabilities {
        toolhost_tests::grant_dir(&self.inside(), write)
    }
}

pub(super) fn misbehave(op: &str, args: Value, caps: &Capabilities) -> CallOutcome {
    attack("misbehave", op, args, caps, &Limits::default())
}

/// Asserts the call was denied (the sandbox refused a file, then the tool failed) with the
/// tool's error naming WASI error `code`, and that `SECRET` appears nowhere in the outcome.
#[track_caller]
fn assert_refused(out: &CallOutcome, code: &str) {
    match &out.result {
        Err(CallError::Denied { reason }) => {
            assert!(
                reason.starts_with("the sandbox refused `")
                    && reason.ends_with(&format!(": {code}")),
                "expected `{code}`, got {reason}"
            );
        }
        other => panic!("expected a denial naming `{code}`, got {other:?}"),
    }
    assert_no_secret(out);
}

#[track_caller]
pub(super) fn assert_no_secret(out: &CallOutcome) {
    let everything = format!("{out:?}");
    assert!(
        !everything.contains(SECRET),
        "the secret leaked: {everything}"
    );
}

/// Asserts a denied file event for `action` on exactly `path`, whose reason starts with
/// `reason`.
#[track_caller]
pub(super) fn assert_file_denied(out: &CallOutcome, action: &str, path: &str, reason: &str) {
    assert_denial_recorded(out);
    assert_event(out, |e| match e {
        AuditEvent::File {
            action: a,
            path: p,
            decision: Decision::Denied,
            reason: Some(r),
        } => a == action && p == path && r.starts_with(reason),
        _ => false,
    });
}

#[test]
fn dotdot_out_of_a_grant() {
    let t = Tree::new();
    let out = misbehave(
        "raw-read",
        json!({"path": "../secret.txt"}),
        &t.grant(false),
    );
    assert_refused(&out, "not-permitted");
    assert_file_denied(&out, "open-read", "/data/../secret.txt", "not-permitted");
}

#[test]
fn dotdot_from_a_subdirectory_out_of_a_grant() {
    let t = Tree::new();
    let out = misbehave(
        "raw-read",
        json!({"path": "sub/../../secret.txt"}),
        &t.grant(true),
    );
    assert_refused(&out, "not-permitted");
    assert_file_denied(
        &out,
        "open-read",
        "/data/sub/../../secret.txt",
        "not-permitted",
    );
}

#[test]
fn absolute_host_path_out_of_a_grant() {
    let t = Tree::new();
    let secret = t.secret().display().to_string();
    let out = misbehave("raw-read", json!({ "path": secret }), &t.grant(false));
    assert_refused(&out, "not-permitted");
    assert_file_denied(
        &out,
        "open-read",
        &format!("/data/{secret}"),
        "not-permitted",
    );
}

#[test]
fn absolute_etc_passwd() {
    let t = Tree::new();
    let out = misbehave("raw-read", json!({"path": "/etc/passwd"}), &t.grant(false));
    assert_refused(&out, "not-permitted");
    assert!(!format!("{out:?}").contains("root:"), "{out:?}");
    assert_file_denied(&out, "open-read", "/data//etc/passwd", "not-permitted");
}

#[test]
fn proc_self_environ() {
    let t = Tree::new();
    let out = misbehave(
        "raw-read",
        json!({"path": "/proc/self/environ"}),
        &t.grant(false),
    );
    assert_refused(&out, "not-permitted");
    // The host process's environment: any of its variables would show as `NAME=`.
    assert!(!format!("{out:?}").contains("PATH="), "{out:?}");
    assert_file_denied(
        &out,
        "open-read",
        "/data//proc/self/environ",
        "not-permitted",
    );
}

#[test]
fn symlink_planted_inside_pointing_out() {
    let t = Tree::new();
    symlink(&t.secret(), &t.inside().join("absolute-link"));
    symlink(
        Path::new("../secret.txt"),
        &t.inside().join("relative-link"),
    );
    for link in ["absolute-link", "relative-link"] {
        let out = misbehave("raw-read", json!({ "path": link }), &t.grant(false));
        assert_refused(&out, "not-permitted");
        assert_file_denied(&out, "open-read", &format!("/data/{link}"), "not-permitted");
        // wasi-libc's `open` follows the link the same way, and is refused the same way.
        let path = format!("/data/{link}");
        let out = misbehave("read-file", json!({ "path": path }), &t.grant(false));
        assert!(
            matches!(out.result, Err(CallError::Denied { .. })),
            "{out:?}"
        );
        assert_no_secret(&out);
        assert_file_denied(&out, "open-read", &path, "not-permitted");
    }
}

#[cfg(unix)]
fn symlink(target: &Path, link: &Path) {
    std::os::unix::fs::symlink(target, link).unwrap();
}

/// Runs a mutation `op` in a read-only grant of a fresh tree; asserts `not-permitted`, the
/// denied `action` on `path`, and that the tree is unchanged.
#[track_caller]
fn read_only(op: &str, args: Value, action: &str, path: &str) {
    let t = Tree::new();
    let before = snapshot(t.root.path());
    let out = misbehave(op, args, &t.grant(false));
    assert_refused(&out, "not-permitted");
    assert_file_denied(&out, action, path, "not-permitted");
    assert_eq!(
        snapshot(t.root.path()),
        before,
        "{op} changed the read-only tree"
    );
}

/// Every entry below `dir`, with its contents (files), target (links) and modification
/// time.
fn snapshot(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let meta = std::fs::symlink_metadata(&path).unwrap();
        let what = if meta.is_dir() {
            out.extend(snapshot(&path));
            "dir".to_string()
        } else if meta.is_symlink() {
            format!("-> {}", std::fs::read_link(&path).unwrap().display())
        } else {
            std::fs::read_to_string(&path).unwrap()
        };
        out.push(format!(
            "{} {what} {:?}",
            path.display(),
            meta.modified().unwrap()
        ));
    }
    out.sort();
    out
}

#[test]
fn read_only_write() {
    let args = json!({"path": "note.txt", "content": "overwritten"});
    read_only("raw-write", args, "create", "/data/note.txt");
}

#[test]
fn read_only_create() {
    let args = json!({"path": "new.txt", "content": "x"});
    read_only("raw-write", args, "create", "/data/new.txt");
}

#[test]
fn read_only_rename() {
    let args = json!({"from": "note.txt", "to": "moved.txt"});
    read_only(
        "raw-rename",
        args,
        "rename",
        "/data/note.txt -> /data/moved.txt",
    );
}

#[test]
fn read_only_delete() {
    read_only(
        "raw-unlink",
        json!({"path": "note.txt"}),
        "unlink",
        "/data/note.txt",
    );
}

#[test]
fn read_only_truncate() {
    read_only(
        "raw-truncate",
        json!({"path": "note.txt"}),
        "open-write",
        "/data/note.txt",
    );
}

#[test]
fn read_only_set_times() {
    read_only(
        "raw-set-times",
        json!({"path": "note.txt"}),
        "set-times",
        "/data/note.txt",
    );
}

#[test]
fn read_only_mkdir() {
    read_only(
        "raw-mkdir",
        json!({"path": "newdir"}),
        "create-dir",
        "/data/newdir",
    );
}

#[test]
fn read_only_symlink() {
    // A target that stays inside: what refuses it is the grant being read-only.
    let args = json!({"target": "note.txt", "link": "link"});
    read_only("raw-symlink", args, "symlink", "/data/link -> note.txt");
}

/// `root/etc/` holds `app.conf` (granted as `/config/app.conf`) and `sibling.txt` (the
/// secret); `root/secret.txt` is the secret too.
struct FileTree {
    tree: Tree,
}

impl FileTree {
    fn new() -> FileTree {
        let tree = Tree::new();
        let etc = tree.root.path().join("etc");
        std::fs::create_dir(&etc).unwrap();
        std::fs::write(etc.join("app.conf"), "granted").unwrap();
        std::fs::write(etc.join("sibling.txt"), SECRET).unwrap();
        FileTree { tree }
    }

    fn conf(&self) -> PathBuf {
        self.tree.root.path().join("etc/app.conf")
    }

    fn grant(&self, write: bool) -> Capabilities {
        let grant: FileGrant =
            toolhost_runtime::policy::file_grant(&self.conf(), "/config/app.conf", write).unwrap();
        Capabilities::none().files(vec![grant])
    }

    fn conf_text(&self) -> String {
        std::fs::read_to_string(self.conf()).unwrap()
    }
}

#[test]
fn file_grant_reads_the_granted_file() {
    let t = FileTree::new();
    let out = misbehave("raw-read", json!({"path": "app.conf"}), &t.grant(false));
    assert_eq!(out.result, Ok(json!("granted")));
    let out = misbehave(
        "read-file",
        json!({"path": "/config/app.conf"}),
        &t.grant(false),
    );
    assert_eq!(out.result, Ok(json!("granted")));
    assert_event(&out, |e| {
        matches!(e, AuditEvent::File { action, path, decision: Decision::Allowed, reason: None }
            if action == "open-read" && path == "/config/app.conf")
    });
}

#[test]
fn file_grant_hides_its_siblings() {
    let t = FileTree::new();
    let out = misbehave("raw-read", json!({"path": "sibling.txt"}), &t.grant(true));
    assert_refused(&out, "access");
    assert_file_denied(&out, "open-read", "/config/sibling.txt", "access");
    // Through wasi-libc, the same path reaches the same gate.
    let out = misbehave(
        "read-file",
        json!({"path": "/config/sibling.txt"}),
        &t.grant(true),
    );
    assert!(
        matches!(out.result, Err(CallError::Denied { .. })),
        "{out:?}"
    );
    assert_no_secret(&out);
    assert_file_denied(&out, "open-read", "/config/sibling.txt", "access");
}

#[test]
fn file_grant_cannot_be_listed() {
    let t = FileTree::new();
    let out = misbehave("raw-list", json!({"path": "."}), &t.grant(false));
    assert_refused(&out, "access");
    assert!(!format!("{out:?}").contains("sibling.txt"), "{out:?}");
    assert_file_denied(&out, "read-dir", "/config", "access");
}

#[test]
fn file_grant_dotdot() {
    let t = FileTree::new();
    for path in [
        "../secret.txt",
        "../etc/sibling.txt",
        "./sibling.txt",
        "app.conf/../sibling.txt",
    ] {
        let out = misbehave("raw-read", json!({ "path": path }), &t.grant(false));
        assert_refused(&out, "access");
        assert_file_denied(&out, "open-read", &format!("/config/{path}"), "access");
    }
}

#[test]
fn file_grant_read_only_refuses_writes() {
    let t = FileTree::new();
    for (op, args, action) in [
        (
            "raw-write",
            json!({"path": "app.conf", "content": "x"}),
            "create",
        ),
        ("raw-truncate", json!({"path": "app.conf"}), "open-write"),
        ("raw-set-times", json!({"path": "app.conf"}), "set-times"),
    ] {
        let out = misbehave(op, args, &t.grant(false));
        assert_refused(&out, "not-permitted");
        assert_file_denied(&out, action, "/config/app.conf", "not-permitted");
        assert_eq!(t.conf_text(), "granted", "{op}");
    }
}

#[test]
fn file_grant_read_write_writes_the_file() {
    let t = FileTree::new();
    let args = json!({"path": "app.conf", "content": "raw"});
    let out = misbehave("raw-write", args, &t.grant(true));
    assert_eq!(out.result, Ok(Value::Null));
    assert_eq!(t.conf_text(), "raw");
    let args = json!({"path": "/config/app.conf", "content": "through libc"});
    let out = misbehave("write-file", args, &t.grant(true));
    assert_eq!(out.result, Ok(Value::Null));
    assert_eq!(t.conf_text(), "through libc");
}

#[test]
fn file_grant_cannot_create_next_to_it() {
    let t = FileTree::new();
    let args = json!({"path": "new.conf", "content": "x"});
    let out = misbehave("raw-write", args, &t.grant(true));
    assert_refused(&out, "access");
    assert_file_denied(&out, "create", "/config/new.conf", "access");
    assert!(!t.tree.root.path().join("etc/new.conf").exists());
}

#[test]
fn file_grant_read_write_cannot_change_its_directory() {
    let t = FileTree::new();
    for (op, args, action, path) in [
        (
            "raw-unlink",
            json!({"path": "app.conf"}),
            "unlink",
            "/config/app.conf",
        ),
        (
            "raw-rename",
            json!({"from": "app.conf", "to": "moved.conf"}),
            "rename",
            "/config/app.conf -> /config/moved.conf",
        ),
        ("raw-mkdir", json!({"path": "d"}), "create-dir", "/config/d"),
        (
            "raw-symlink",
            json!({"target": "sibling.txt", "link": "l"}),
            "symlink",
            "/config/l -> sibling.txt",
        ),
    ] {
        let before = snapshot(t.tree.root.path());
        let out = misbehave(op, args, &t.grant(true));
        assert_refused(&out, "access");
        assert_file_denied(&out, action, path, "access");
        assert_eq!(snapshot(t.tree.root.path()), before, "{op}");
    }
}

#[test]
fn file_grant_does_not_follow_a_swapped_in_symlink() {
    let t = FileTree::new();
    let caps = t.grant(false);
    // The grant was checked; now the file becomes a link to the secret.
    std::fs::remove_file(t.conf()).unwrap();
    symlink(&t.tree.secret(), &t.conf());
    let out = misbehave("raw-read", json!({"path": "app.conf"}), &caps);
    // Not a refusal but the filesystem's own answer to a final symlink: the tool's error.
    match &out.result {
        Err(CallError::ToolError { value }) => {
            assert_eq!(value, &json!("open-at app.conf: loop"));
        }
        other => panic!("expected the tool's error, got {other:?}"),
    }
    assert_no_secret(&out);
}

/// A guest-made symlink whose target leaves the grant is refused, relative or absolute;
/// one that stays below its directory is made.
#[test]
fn symlink_made_inside_a_grant_cannot_point_out() {
    let t = Tree::new();
    for target in [
        "../secret.txt",
        "sub/../../secret.txt",
        "/etc/passwd",
        &t.secret().display().to_string(),
    ] {
        let out = misbehave(
            "raw-symlink",
            json!({"target": target, "link": "out"}),
            &t.grant(true),
        );
        assert_refused(&out, "access");
        assert_file_denied(
            &out,
            "symlink",
            &format!("/data/out -> {target}"),
            "access: a symlink's target must be a relative path below",
        );
        assert!(
            std::fs::symlink_metadata(t.inside().join("out")).is_err(),
            "{target}: a link was made"
        );
    }
    let out = misbehave(
        "raw-symlink",
        json!({"target": "sub/../note.txt", "link": "odd"}),
        &t.grant(true),
    );
    assert_refused(&out, "access");
    // Benign: a link below its own directory.
    let out = misbehave(
        "raw-symlink",
        json!({"target": "note.txt", "link": "alias"}),
        &t.grant(true),
    );
    assert_eq!(out.result, Ok(Value::Null));
    assert_event(&out, |e| {
        matches!(e, AuditEvent::File { action, path, decision: Decision::Allowed, .. }
            if action == "symlink" && path == "/data/alias -> note.txt")
    });
    assert_eq!(
        std::fs::read_to_string(t.inside().join("alias")).unwrap(),
        "hello"
    );
}

/// Path-less questions about a file grant's directory never reach the host directory.
#[test]
fn file_grant_directory_gives_away_no_metadata() {
    let t = FileTree::new();
    let out = misbehave("dir-metadata", json!({}), &t.grant(false));
    assert_eq!(
        out.result,
        Ok(json!([
            "stat: access",
            "hash: access",
            "same-as-itself: true"
        ]))
    );
    assert_file_denied(
        &out,
        "stat",
        "/config",
        "access: a file grant's directory has no metadata",
    );
    assert_event(&out, |e| {
        matches!(e, AuditEvent::File { action, path, decision: Decision::Denied, .. }
            if action == "is-same-object" && path == "/config")
    });
    let stats = out
        .report
        .events
        .iter()
        .filter(|e| matches!(e, AuditEvent::File { action, decision: Decision::Denied, .. } if action == "stat"))
        .count();
    assert_eq!(stats, 2, "stat and metadata-hash");
    // Benign: the same questions on a directory grant are answered by the host.
    let out = misbehave("dir-metadata", json!({}), &t.tree.grant(false));
    let answers = out.result.unwrap();
    assert!(
        answers[0].as_str().unwrap().starts_with("stat: links "),
        "{answers}"
    );
    assert!(
        answers[1].as_str().unwrap().starts_with("hash: ") && answers[1] != "hash: access",
        "{answers}"
    );
}

fn written_limit(out: &CallOutcome) -> String {
    match &out.result {
        Err(CallError::WriteLimit { detail }) => {
            assert_event(
                out,
                |e| matches!(e, AuditEvent::Limit { limit, .. } if limit == "written"),
            );
            detail.clone()
        }
        other => panic!("expected a write limit, got {other:?}"),
    }
}

#[test]
fn bulk_writes_stop_at_the_write_budget() {
    let t = Tree::new();
    let out = misbehave(
        "write-bulk",
        json!({"path": "bulk.bin", "mib": 300}),
        &t.grant(true),
    );
    let detail = written_limit(&out);
    assert!(
        detail.contains("over the limit of 67108864 bytes (`max_written_bytes`)")
            || detail.contains("(`max_file_bytes`)"),
        "{detail}"
    );
    let size = std::fs::metadata(t.inside().join("bulk.bin"))
        .unwrap()
        .len();
    assert!(size <= 64 << 20, "{size}");
    // Benign: a small write goes through and its volume is recorded.
    let out = misbehave(
        "write-bulk",
        json!({"path": "small.bin", "mib": 2}),
        &t.grant(true),
    );
    assert_eq!(out.result, Ok(json!(2 << 20)));
    assert_event(&out, |e| *e == AuditEvent::Written { bytes: 2 << 20 });
    // A tighter policy cap stops it.
    let tight = Limits::default().max_written_bytes(1 << 20);
    let out = attack(
        "misbehave",
        "write-bulk",
        json!({"path": "small.bin", "mib": 2}),
        &t.grant(true),
        &tight,
    );
    assert!(written_limit(&out).contains("1048576 bytes"));
}

#[test]
fn sparse_files_stop_at_the_file_size_cap() {
    let t = Tree::new();
    for how in ["set-size", "write-at"] {
        let out = misbehave(
            "sparse",
            json!({"path": "sparse.bin", "size": 1u64 << 40, "how": how}),
            &t.grant(true),
        );
        let detail = written_limit(&out);
        assert!(
            detail.contains("`/data/sparse.bin` would reach 1099511627776 bytes")
                && detail.contains("(`max_file_bytes`)"),
            "{how}: {detail}"
        );
        let size = std::fs::metadata(t.inside().join("sparse.bin"))
            .unwrap()
            .len();
        assert_eq!(size, 0, "{how}");
    }
    // Benign: a file within the cap.
    let out = misbehave(
        "sparse",
        json!({"path": "fine.bin", "size": 4096, "how": "write-at"}),
        &t.grant(true),
    );
    assert_eq!(out.result, Ok(Value::Null));
    assert_eq!(
        std::fs::metadata(t.inside().join("fine.bin"))
            .unwrap()
            .len(),
        4096
    );
}
