//! Globs in paths (`config.tom?`, `toolg*`, `[t]oolgate`, `{a,toolgate}`):
//! the shell expands them against what exists, so a glob counts when it
//! *could* name a protected place or something in it, whether or not it
//! would today.

use std::path::{Component, Path};

use globset::{GlobBuilder, GlobMatcher};

/// Whether `word` has glob characters the shell would expand.
pub(super) fn is_glob(word: &str) -> bool {
    word.contains(['*', '?', '[', '{'])
}

/// Whether the absolute glob `pattern` could match `protected` or a path
/// under it: its first components match the protected path's components
/// one by one (a `**` component matches whatever follows; a component that
/// does not start with `.` never matches a name that does, as in the
/// shell). A glob that only reaches a parent of a protected place
/// (`~/.c*`) does not count, like a plain parent directory.
pub(super) fn could_name(pattern: &Path, protected: &Path) -> bool {
    let mut wanted = protected.components();
    for c in lexical(pattern) {
        let Some(p) = wanted.next() else {
            return true;
        };
        let text = c.to_string_lossy();
        if text == "**" {
            return true;
        }
        if !component_matches(&text, &p.as_os_str().to_string_lossy()) {
            return false;
        }
    }
    wanted.next().is_none()
}

/// `pattern`'s components with `.` dropped and `..` applied.
fn lexical(pattern: &Path) -> Vec<std::ffi::OsString> {
    let mut out: Vec<std::ffi::OsString> = Vec::new();
    for c in pattern.components() {
        match c {
            Component::ParentDir => {
                if out.len() > 1 {
                    out.pop();
                }
            }
            Component::CurDir => {}
            other => out.push(other.as_os_str().to_owned()),
        }
    }
    out
}

/// One component against one name; a component that is not a valid glob
/// is compared as written.
fn component_matches(pattern: &str, name: &str) -> bool {
    if !is_glob(pattern) {
        return pattern == name;
    }
    if name.starts_with('.') && !pattern.starts_with('.') {
        return false;
    }
    match matcher(pattern) {
        Some(m) => m.is_match(name),
        None => pattern == name,
    }
}

fn matcher(pattern: &str) -> Option<GlobMatcher> {
    GlobBuilder::new(pattern)
        .literal_separator(true)
        .backslash_escape(true)
        .build()
        .ok()
        .map(|g| g.compile_matcher())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_glob_counts_when_it_could_name_the_place_or_something_in_it() {
        let dir = Path::new("/home/a/.config/toolgate");
        for p in [
            "/home/a/.config/toolg*",
            "/home/a/.config/[t]oolgate/config.toml",
            "/home/a/.config/toolgate/config.tom?",
            "/home/a/.config/{x,toolgate}/*",
            "/home/a/**/config.toml",
            "/home/*/.config/toolgate",
            "/home/a/x/../.config/toolg?te",
            "/home/a/.config/*",
        ] {
            assert!(could_name(Path::new(p), dir), "{p}");
        }
        for p in [
            "/home/a/.c*",
            "/home/a/*/toolgate",
            "/home/a/.config/tool",
            "/home/a/.config/x*",
            "/home/a/.cache/toolg*",
            "/home/a/.config/[",
        ] {
            assert!(!could_name(Path::new(p), dir), "{p}");
        }
        let file = Path::new("/tmp/t/config.toml");
        assert!(could_name(Path::new("/tmp/t/config.tom?"), file));
        assert!(!could_name(Path::new("/tmp/t/*.json"), file));
    }
}
