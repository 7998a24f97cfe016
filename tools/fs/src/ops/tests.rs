use std::path::Path;

use super::*;

fn p(dir: &Path, name: &str) -> String {
    dir.join(name).to_string_lossy().into_owned()
}

fn tmp() -> tempfile::TempDir {
    tempfile::tempdir().expect("temporary directory")
}

#[test]
fn reads_text_files_within_the_limit() {
    let dir = tmp();
    let file = p(dir.path(), "notes.txt");
    fs::write(&file, "héllo\n").unwrap();
    assert_eq!(read(&file, None).unwrap(), "héllo\n");
    assert_eq!(read(&file, Some(7)).unwrap(), "héllo\n");

    let err = read(&file, Some(6)).unwrap_err();
    assert_eq!(
        err,
        Error::TooLarge(format!(
            "cannot read `{file}`: it is 7 bytes, over the limit of 6 (raise max-bytes, up \
             to 16777216)"
        ))
    );
    let err = read(&file, Some(MAX_BYTES + 1)).unwrap_err();
    assert_eq!(
        err,
        Error::TooLarge("max-bytes 16777217 is above the maximum of 16777216 bytes".into())
    );
}

#[test]
fn read_errors_are_classified() {
    let dir = tmp();
    let missing = p(dir.path(), "missing.txt");
    let Error::NotFound(msg) = read(&missing, None).unwrap_err() else {
        panic!("expected not-found");
    };
    assert!(
        msg.starts_with(&format!("cannot read `{missing}`: ")),
        "{msg}"
    );

    let binary = p(dir.path(), "blob.bin");
    fs::write(&binary, b"ok\xff\xfe").unwrap();
    assert_eq!(
        read(&binary, None).unwrap_err(),
        Error::NotUtf8(format!(
            "cannot read `{binary}` as text: it is not valid UTF-8 (first invalid byte at \
             offset 2)"
        ))
    );

    let here = dir.path().to_string_lossy().into_owned();
    assert_eq!(
        read(&here, None).unwrap_err(),
        Error::Other(format!(
            "cannot read `{here}`: it is a directory (use `list-dir`)"
        ))
    );
}

#[test]
fn lists_sorted_entries_with_kinds() {
    let dir = tmp();
    fs::write(dir.path().join("b.txt"), "12345").unwrap();
    fs::write(dir.path().join("A.md"), "").unwrap();
    fs::create_dir(dir.path().join("sub")).unwrap();
    #[cfg(unix)]
    std::os::unix::fs::symlink("b.txt", dir.path().join("link")).unwrap();

    let listed = list(&dir.path().to_string_lossy()).unwrap();
    let names: Vec<_> = listed.iter().map(|e| (e.name.as_str(), e.kind)).collect();
    let mut expected = vec![
        ("A.md", Kind::File),
        ("b.txt", Kind::File),
        ("sub", Kind::Directory),
    ];
    if cfg!(unix) {
        expected.insert(2, ("link", Kind::Symlink));
    }
    assert_eq!(names, expected);
    assert_eq!(listed[1].size, 5);

    let missing = p(dir.path(), "nope");
    assert!(matches!(list(&missing), Err(Error::NotFound(_))));
    let file = p(dir.path(), "b.txt");
    let Error::Other(msg) = list(&file).unwrap_err() else {
        panic!("expected other");
    };
    assert!(msg.starts_with(&format!("cannot list `{file}`: ")), "{msg}");
}

#[test]
fn stats_files_and_directories() {
    let dir = tmp();
    let file = p(dir.path(), "f.txt");
    fs::write(&file, "abc").unwrap();
    let meta = stat(&file).unwrap();
    assert_eq!(
        (meta.kind, meta.size, meta.readonly),
        (Kind::File, 3, Some(false))
    );
    let modified = meta.modified.expect("modification time");
    // Written moments ago: after 2020-01-01 and not in the far future.
    assert!(
        modified > 1_577_836_800 && modified < 32_503_680_000,
        "{modified}"
    );
    // A read-only grant (readonly: true) exists only in the sandbox; permission bits do not
    // stop root, which CI runs as, so that case is checked through the built component.

    let here = dir.path().to_string_lossy().into_owned();
    let meta = stat(&here).unwrap();
    assert_eq!((meta.kind, meta.readonly), (Kind::Directory, None));
    assert!(matches!(stat(&p(dir.path(), "x")), Err(Error::NotFound(_))));
}

#[test]
fn writes_in_each_mode() {
    let dir = tmp();
    let file = p(dir.path(), "out.txt");
    assert_eq!(write(&file, "héllo", WriteMode::Create), Ok(6));
    assert_eq!(
        write(&file, "x", WriteMode::Create).unwrap_err(),
        Error::Other(format!(
            "cannot create `{file}`: it already exists (use mode `overwrite` to replace it \
             or `append` to add to it)"
        ))
    );
    assert_eq!(write(&file, " world", WriteMode::Append), Ok(6));
    assert_eq!(fs::read_to_string(&file).unwrap(), "héllo world");
    assert_eq!(write(&file, "new", WriteMode::Overwrite), Ok(3));
    assert_eq!(fs::read_to_string(&file).unwrap(), "new");

    let appended = p(dir.path(), "fresh.log");
    assert_eq!(write(&appended, "1\n", WriteMode::Append), Ok(2));
    assert_eq!(fs::read_to_string(&appended).unwrap(), "1\n");

    let orphan = p(dir.path(), "no-such-dir/out.txt");
    assert!(matches!(
        write(&orphan, "x", WriteMode::Overwrite),
        Err(Error::NotFound(_))
    ));
}

#[test]
fn io_errors_map_to_cases() {
    let denied = io::Error::from(io::ErrorKind::PermissionDenied);
    assert!(matches!(
        io_error("read", "/x", &denied),
        Error::PermissionDenied(m) if m.starts_with("cannot read `/x`: the host does not allow it (")
    ));
    assert_eq!(
        io_error("read", "/x", &io::Error::other("boom")),
        Error::Other("cannot read `/x`: boom".into())
    );
}

#[test]
fn missing_paths_are_not_found() {
    let dir = tmp();
    let Error::NotFound(msg) = read(&p(dir.path(), "a/b/c"), None).unwrap_err() else {
        panic!("expected not-found");
    };
    assert!(msg.contains("a/b/c`: "), "{msg}");
    assert!(matches!(
        read("no-such-file", None),
        Err(Error::NotFound(_))
    ));
}
