use std::os::unix::fs::PermissionsExt;

use super::*;

fn mode(p: &Path) -> u32 {
    std::fs::symlink_metadata(p).unwrap().permissions().mode() & 0o777
}

#[test]
fn new_files_are_private_and_never_made_through_a_link() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("token");
    create_new(&path).unwrap().write_all(b"t").unwrap();
    assert_eq!(mode(&path), 0o600);
    let e = create_new(&path).unwrap_err();
    assert_eq!(e.kind(), io::ErrorKind::AlreadyExists);

    let target = dir.path().join("elsewhere");
    let link = dir.path().join("link");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    assert!(create_new(&link).is_err());
    let e = open(&link, true).unwrap_err();
    assert!(e.to_string().contains("symbolic link"), "{e}");
    assert!(!target.exists(), "the link's target was never created");
}

#[test]
fn an_existing_file_with_wider_bits_is_narrowed_when_opened() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.db-calls.jsonl");
    std::fs::write(&path, "row\n").unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    let mut f = open(&path, true).unwrap();
    f.write_all(b"more\n").unwrap();
    assert_eq!(mode(&path), 0o600);
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "row\nmore\n");

    let shm = dir.path().join("audit.db-shm");
    restrict(&shm).unwrap(); // absent: nothing to do
    std::fs::write(&shm, "").unwrap();
    std::fs::set_permissions(&shm, std::fs::Permissions::from_mode(0o644)).unwrap();
    restrict(&shm).unwrap();
    assert_eq!(mode(&shm), 0o600);
}

#[test]
fn a_directory_is_not_a_private_file() {
    let dir = tempfile::tempdir().unwrap();
    let e = open(dir.path(), false).unwrap_err();
    assert!(
        e.to_string().contains("regular file") || e.raw_os_error().is_some(),
        "{e}"
    );
}

#[test]
fn writing_replaces_a_planted_link_instead_of_following_it() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("victim");
    std::fs::write(&target, "untouched").unwrap();
    let path = dir.path().join("agent.sock.http");
    std::os::unix::fs::symlink(&target, &path).unwrap();
    write(&path, b"{\"token\":\"t\"}").unwrap();
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "untouched");
    assert!(!std::fs::symlink_metadata(&path).unwrap().is_symlink());
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "{\"token\":\"t\"}");
    assert_eq!(mode(&path), 0o600);
    // No temp file is left behind.
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names.len(), 2, "{names:?}");
}

#[test]
fn write_new_keeps_what_is_there() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("key");
    assert!(write_new(&path, b"first").unwrap());
    assert!(!write_new(&path, b"second").unwrap());
    assert_eq!(read(&path, 64).unwrap().unwrap(), b"first");
    assert_eq!(mode(&path), 0o600);
    assert!(read(&dir.path().join("none"), 64).unwrap().is_none());
    let e = read(&path, 2).unwrap_err();
    assert_eq!(e.kind(), io::ErrorKind::InvalidData, "{e}");
    // A link is not a key.
    let link = dir.path().join("link");
    std::os::unix::fs::symlink(&path, &link).unwrap();
    assert!(read(&link, 64).is_err());
    assert!(!write_new(&link, b"x").unwrap(), "something is there");
}

#[test]
fn the_data_dir_is_forced_private() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("a/data");
    super::dir(&data).unwrap();
    assert_eq!(mode(&data), 0o700);
    std::fs::set_permissions(&data, std::fs::Permissions::from_mode(0o755)).unwrap();
    super::dir(&data).unwrap();
    assert_eq!(mode(&data), 0o700);
    let file = dir.path().join("file");
    std::fs::write(&file, "").unwrap();
    assert!(super::dir(&file).is_err());
}
