//! The command a client's config and an agent's hook settings start
//! toolgate with.
//!
//! `toolgate` when `toolgate` on the `PATH` is this very executable, so a
//! config stays valid across upgrades that replace the file in place;
//! otherwise the absolute path of this executable, so a client started
//! with a different `PATH` (a desktop app launched from a menu) still
//! finds it.

use std::path::{Path, PathBuf};

/// The resolved toolgate command for this process (see the module docs).
pub fn resolve() -> String {
    let exe = std::env::current_exe().ok();
    let path = std::env::var_os("PATH");
    resolve_with(exe.as_deref(), path.as_deref())
}

/// [`resolve`] with the executable and `PATH` given, for tests.
pub fn resolve_with(exe: Option<&Path>, path: Option<&std::ffi::OsStr>) -> String {
    let Some(exe) = exe else {
        return "toolgate".to_owned();
    };
    let exe_real = std::fs::canonicalize(exe).unwrap_or_else(|_| exe.to_owned());
    if let Some(found) = path.and_then(|p| on_path("toolgate", p))
        && std::fs::canonicalize(&found).is_ok_and(|f| f == exe_real)
    {
        return "toolgate".to_owned();
    }
    exe_real.to_string_lossy().into_owned()
}

/// The first executable called `name` in `path`.
fn on_path(name: &str, path: &std::ffi::OsStr) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    std::env::split_paths(path)
        .map(|dir| dir.join(name))
        .find(|p| {
            std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bare_name_only_when_path_finds_this_executable() {
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("bin");
        std::fs::create_dir(&bin).unwrap();
        let exe = bin.join("toolgate");
        std::fs::write(&exe, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&exe, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
        let path = std::ffi::OsString::from(format!("/nonexistent:{}", bin.display()));
        assert_eq!(resolve_with(Some(&exe), Some(&path)), "toolgate");
        let other = dir.path().join("other-toolgate");
        std::fs::copy(&exe, &other).unwrap();
        let abs = resolve_with(Some(&other), Some(&path));
        assert_eq!(abs, other.canonicalize().unwrap().to_string_lossy());
        assert_eq!(
            resolve_with(Some(&other), None),
            other.canonicalize().unwrap().to_string_lossy()
        );
    }
}
