use std::fs;
use std::os::unix::fs::symlink;

use super::*;
use crate::error::ErrorKind;

/// A root with `sub/file.txt`, plus a sibling `outside/secret.txt` that is
/// not part of the root.
struct Fixture {
    _tmp: tempfile::TempDir,
    root: PathBuf,
    outside: PathBuf,
    roots: PathRoots,
}

fn fixture() -> Fixture {
    let tmp = tempfile::tempdir().unwrap();
    let base = fs::canonicalize(tmp.path()).unwrap();
    let root = base.join("root");
    let outside = base.join("outside");
    fs::create_dir_all(root.join("sub")).unwrap();
    fs::create_dir_all(&outside).unwrap();
    fs::write(root.join("sub/file.txt"), "in").unwrap();
    fs::write(outside.join("secret.txt"), "out").unwrap();
    let roots = PathRoots::new(std::slice::from_ref(&root)).unwrap();
    Fixture {
        _tmp: tmp,
        root,
        outside,
        roots,
    }
}

fn rel(f: &Fixture, p: &str) -> PathBuf {
    f.roots.check(p).unwrap().relative().to_path_buf()
}

#[test]
fn relative_paths_resolve_against_the_first_root() {
    let f = fixture();
    assert_eq!(rel(&f, "sub/file.txt"), Path::new("sub/file.txt"));
    assert_eq!(rel(&f, "./sub/./file.txt"), Path::new("sub/file.txt"));
    assert_eq!(rel(&f, ""), Path::new("."));
    assert_eq!(rel(&f, "."), Path::new("."));
    let c = f.roots.check("sub/file.txt").unwrap();
    assert_eq!(c.root(), f.root);
    assert_eq!(c.absolute(), f.root.join("sub/file.txt"));
    assert_eq!(f.roots.check(".").unwrap().absolute(), f.root);
}

#[test]
fn dot_dot_inside_the_root_is_allowed() {
    let f = fixture();
    assert_eq!(rel(&f, "sub/../sub/file.txt"), Path::new("sub/file.txt"));
    assert_eq!(rel(&f, "sub/.."), Path::new("."));
}

#[test]
fn dot_dot_above_the_root_is_refused() {
    let f = fixture();
    for p in ["..", "../outside/secret.txt", "sub/../../x", "sub/../.."] {
        let e = f.roots.check(p).unwrap_err();
        assert!(matches!(e, PathError::Escapes { .. }), "{p}: {e:?}");
        assert!(e.is_refusal());
    }
    let msg = f.roots.check("../x").unwrap_err().to_string();
    assert_eq!(
        msg,
        format!(
            "path `../x` escapes the allowed roots ({})",
            f.root.display()
        )
    );
}

#[test]
fn absolute_paths_must_lie_under_a_root() {
    let f = fixture();
    let inside = f.root.join("sub/file.txt");
    assert_eq!(rel(&f, inside.to_str().unwrap()), Path::new("sub/file.txt"));
    assert_eq!(rel(&f, f.root.to_str().unwrap()), Path::new("."));
    for p in [
        "/etc/passwd".to_owned(),
        f.outside.join("secret.txt").display().to_string(),
        // A sibling whose name starts with the root's name is not inside.
        format!("{}-evil/x", f.root.display()),
    ] {
        let e = f.roots.check(&p).unwrap_err();
        assert!(matches!(e, PathError::Outside { .. }), "{p}: {e:?}");
    }
    let escape = format!("{}/../outside/secret.txt", f.root.display());
    assert!(matches!(
        f.roots.check(&escape),
        Err(PathError::Escapes { .. })
    ));
}

#[test]
fn absolute_paths_pick_the_matching_root() {
    let f = fixture();
    let roots = PathRoots::new(&[f.root.clone(), f.outside.clone()]).unwrap();
    let c = roots
        .check(f.outside.join("secret.txt").to_str().unwrap())
        .unwrap();
    assert_eq!(c.root(), f.outside);
    assert_eq!(c.relative(), Path::new("secret.txt"));
    // Relative paths still use the first root only.
    assert!(roots.check("secret.txt").unwrap().root() == f.root);
}

#[test]
fn configured_spelling_of_a_symlinked_root_matches() {
    let f = fixture();
    let alias = f.outside.join("alias");
    symlink(&f.root, &alias).unwrap();
    let roots = PathRoots::new(std::slice::from_ref(&alias)).unwrap();
    assert_eq!(roots.roots(), std::slice::from_ref(&f.root));
    let c = roots
        .check(alias.join("sub/file.txt").to_str().unwrap())
        .unwrap();
    assert_eq!(c.absolute(), f.root.join("sub/file.txt"));
}

#[test]
fn nul_bytes_and_missing_roots_are_refused() {
    let f = fixture();
    assert!(matches!(
        f.roots.check("sub/\0file"),
        Err(PathError::NulByte { .. })
    ));
    let e = PathRoots::empty().check("x").unwrap_err();
    assert!(matches!(e, PathError::NoRoots { .. }));
    assert!(e.is_refusal());
}

#[test]
fn roots_must_exist_and_be_directories() {
    let f = fixture();
    assert!(matches!(
        PathRoots::new(&[f.root.join("nope")]),
        Err(PathError::RootUnusable { .. })
    ));
    assert!(matches!(
        PathRoots::new(&[f.root.join("sub/file.txt")]),
        Err(PathError::RootNotDir { .. })
    ));
}

#[test]
fn symlinks_leading_outside_are_refused_on_any_component() {
    let f = fixture();
    symlink(&f.outside, f.root.join("abs_out")).unwrap();
    symlink("../outside", f.root.join("rel_out")).unwrap();
    symlink("../../outside/secret.txt", f.root.join("sub/deep_out")).unwrap();
    for p in [
        "abs_out",
        "abs_out/secret.txt",
        "rel_out/secret.txt",
        "rel_out/new.txt",
        "sub/deep_out",
    ] {
        let e = f.roots.check(p).unwrap_err();
        assert!(matches!(e, PathError::SymlinkEscape { .. }), "{p}: {e:?}");
    }
    let msg = f.roots.check("rel_out/secret.txt").unwrap_err().to_string();
    assert!(
        msg.contains("through symlink `rel_out` -> `../outside`"),
        "{msg}"
    );
}

#[test]
fn symlinks_staying_inside_are_followed() {
    let f = fixture();
    symlink("sub", f.root.join("alias")).unwrap();
    symlink("../sub/file.txt", f.root.join("sub/self")).unwrap();
    symlink("sub/not-yet.txt", f.root.join("dangling")).unwrap();
    assert_eq!(rel(&f, "alias/file.txt"), Path::new("sub/file.txt"));
    assert_eq!(rel(&f, "sub/self"), Path::new("sub/file.txt"));
    assert_eq!(rel(&f, "dangling"), Path::new("sub/not-yet.txt"));
}

#[test]
fn absolute_symlinks_inside_are_refused_like_the_sandbox_does() {
    let f = fixture();
    symlink(f.root.join("sub"), f.root.join("abs_in")).unwrap();
    let e = f.roots.check("abs_in/file.txt").unwrap_err();
    assert!(matches!(e, PathError::AbsoluteSymlink { .. }), "{e:?}");
    // And the capability handle indeed refuses it.
    assert!(
        f.roots
            .dir(&f.roots.check(".").unwrap())
            .open("abs_in/file.txt")
            .is_err()
    );
}

#[test]
fn symlink_loops_end() {
    let f = fixture();
    symlink("b", f.root.join("a")).unwrap();
    symlink("a", f.root.join("b")).unwrap();
    assert!(matches!(
        f.roots.check("a/x"),
        Err(PathError::SymlinkLoop { .. })
    ));
}

#[test]
fn the_missing_tail_may_not_climb() {
    let f = fixture();
    assert_eq!(rel(&f, "new/dir/file"), Path::new("new/dir/file"));
    let e = f.roots.check("new/../../outside").unwrap_err();
    assert!(
        matches!(&e, PathError::DotDotAfterMissing { missing, .. } if missing == Path::new("new")),
        "{e:?}"
    );
}

#[test]
fn climbing_out_of_a_file_is_a_file_system_error() {
    let f = fixture();
    let e = f.roots.check("sub/file.txt/..").unwrap_err();
    assert!(matches!(e, PathError::Io { .. }), "{e:?}");
    assert!(!e.is_refusal());
    let e = f.roots.check("sub/file.txt/x").unwrap_err();
    assert!(matches!(e, PathError::Io { .. }), "{e:?}");
}

#[test]
fn refusals_become_guard_denials_and_the_rest_tool_failures() {
    let f = fixture();
    let e = f.roots.check("../x").unwrap_err().into_call_error("path");
    assert_eq!(e.kind(), ErrorKind::GuardDenied);
    assert!(
        e.to_string()
            .starts_with("argument `path` refused: path `../x` escapes")
    );
    let e = f
        .roots
        .check("sub/file.txt/x")
        .unwrap_err()
        .into_call_error("path");
    assert_eq!(e.kind(), ErrorKind::ToolFailed);
}

// Before: an 8 MiB path was walked (a step per component, 8 bytes per
// `../`) and copied whole into its refusal, whose message was longer still.
#[test]
fn a_path_longer_than_any_the_system_opens_is_refused_unwalked() {
    let f = fixture();
    let long = "../".repeat(1 << 20);
    let e = f.roots.check(&long).unwrap_err();
    assert!(
        matches!(&e, PathError::TooLong { path, len } if *len == 3 << 20 && path.len() <= MAX_PATH),
        "{:.200}",
        e.to_string()
    );
    assert!(e.is_refusal());
    let message = e.to_string();
    assert!(message.len() < MAX_PATH + 100, "{} bytes", message.len());
    assert!(message.contains("is 3145728 bytes long; a path can have at most 4095"));
    // So is one with a NUL byte, and its refusal quotes as little.
    let nul = format!("{long}\0");
    let e = f.roots.check(&nul).unwrap_err();
    assert!(matches!(e, PathError::NulByte { .. }));
    assert!(
        e.to_string().len() < 2 * MAX_PATH,
        "{}",
        e.to_string().len()
    );
    // The longest path there can be still resolves.
    let longest = format!("sub/file.txt{}", "/.".repeat((MAX_PATH - 12) / 2));
    assert!(longest.len() <= MAX_PATH);
    assert_eq!(rel(&f, &longest), Path::new("sub/file.txt"));
}
