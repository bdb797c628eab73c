//! What the barrier keeps governed processes away from: toolgate's own
//! places (hidden: no access at all) and files a person runs later outside
//! toolgate (read-only: shell startup files, autostart entries).
//!
//! A [`Shield`] is plain data: the engine builds it from the config and
//! the paths it uses, and hands it to the warden on its command line (see
//! [`super::warden`]), which turns it into kernel rules
//! ([`super::rules`]).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// How much of a place a governed process may touch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Reach {
    /// Read and execute, never change.
    ReadOnly,
    /// Nothing: not read, not written, not executed.
    Hidden,
}

/// Files a person's own programs run later, outside toolgate: a governed
/// process that changed them would act as the person the next time a
/// terminal opens, git runs, an ssh connection starts, a command is looked
/// up on `PATH` or the session starts. Read-only by default; `[barrier]
/// read_only` replaces the list.
pub const DEFAULT_READ_ONLY: [&str; 20] = [
    "~/.bashrc",
    "~/.bash_profile",
    "~/.bash_login",
    "~/.bash_logout",
    "~/.profile",
    "~/.zshrc",
    "~/.zshenv",
    "~/.zprofile",
    "~/.zlogin",
    "~/.config/fish",
    "~/.config/autostart",
    "~/.config/systemd",
    "~/.config/environment.d",
    "~/.pam_environment",
    "~/.bash_aliases",
    "~/.gitconfig",
    "~/.config/git",
    "~/.ssh",
    "~/.local/bin",
    "~/bin",
];

/// The places a governed process may not change, each with its reach.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shield {
    places: BTreeMap<PathBuf, Reach>,
}

impl Shield {
    /// Nothing shielded.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds `path` with `reach`; a path given twice keeps the stricter.
    pub fn with(mut self, path: impl AsRef<Path>, reach: Reach) -> Self {
        let path = resolve(path.as_ref());
        if reach == Reach::Hidden {
            // What a hidden place holds is hidden with it.
            if self.reach_of(&path) == Some(Reach::Hidden) {
                return self;
            }
            self.places
                .retain(|p, r| !(*r == Reach::Hidden && p.starts_with(&path) && *p != path));
        }
        let slot = self.places.entry(path).or_insert(reach);
        *slot = (*slot).max(reach);
        self
    }

    /// Hides every path in `paths`.
    pub fn hiding<P: AsRef<Path>>(self, paths: impl IntoIterator<Item = P>) -> Self {
        paths
            .into_iter()
            .fold(self, |s, p| s.with(p, Reach::Hidden))
    }

    /// Makes every path in `paths` read-only.
    pub fn read_only<P: AsRef<Path>>(self, paths: impl IntoIterator<Item = P>) -> Self {
        paths
            .into_iter()
            .fold(self, |s, p| s.with(p, Reach::ReadOnly))
    }

    /// The places, sorted by path.
    pub fn places(&self) -> impl Iterator<Item = (&Path, Reach)> {
        self.places.iter().map(|(p, r)| (p.as_path(), *r))
    }

    /// The hidden places.
    pub fn hidden(&self) -> impl Iterator<Item = &Path> {
        self.places()
            .filter(|(_, r)| *r == Reach::Hidden)
            .map(|(p, _)| p)
    }

    /// The reach of the closest shielded place at or above `path`.
    pub fn reach_of(&self, path: &Path) -> Option<Reach> {
        path.ancestors().find_map(|a| self.places.get(a).copied())
    }

    /// Whether `path` is shielded itself.
    pub fn contains(&self, path: &Path) -> bool {
        self.places.contains_key(path)
    }
}

/// `path` as the kernel resolves it: the longest prefix that exists is
/// canonicalised (symlinks, `..`), the rest appended as written. A place
/// that does not exist yet is shielded where it would be created.
fn resolve(path: &Path) -> PathBuf {
    let path = crate::paths::expand_home(&path.to_string_lossy());
    let mut rest: Vec<std::ffi::OsString> = Vec::new();
    let mut head = path.as_path();
    loop {
        if let Ok(mut real) = std::fs::canonicalize(head) {
            for part in rest.iter().rev() {
                match part.to_str() {
                    Some("..") => {
                        real.pop();
                    }
                    Some(".") => {}
                    _ => real.push(part),
                }
            }
            return real;
        }
        match (head.parent(), head.components().next_back()) {
            (Some(parent), Some(last)) => {
                rest.push(last.as_os_str().to_owned());
                head = parent;
            }
            _ => return path,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stricter_reach_wins_whatever_the_order() {
        let dir = tempfile::tempdir().unwrap();
        let a = Shield::new().read_only([dir.path()]).hiding([dir.path()]);
        let b = Shield::new().hiding([dir.path()]).read_only([dir.path()]);
        assert_eq!(a, b);
        assert_eq!(a.reach_of(dir.path()), Some(Reach::Hidden));
    }

    #[test]
    fn paths_are_resolved_through_symlinks_and_may_not_exist_yet() {
        let dir = tempfile::tempdir().unwrap();
        let real = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::create_dir(real.join("data")).unwrap();
        std::os::unix::fs::symlink(real.join("data"), real.join("link")).unwrap();
        let s = Shield::new().hiding([real.join("link/sub/../x"), real.join("new/deeper")]);
        let got: Vec<_> = s.hidden().map(Path::to_owned).collect();
        assert!(got.contains(&real.join("data/x")), "{got:?}");
        assert!(got.contains(&real.join("new/deeper")), "{got:?}");
    }

    #[test]
    fn a_hidden_place_beneath_a_hidden_one_is_not_listed_twice() {
        let s = Shield::new()
            .hiding(["/nonexistent-tg/data/agent.sock"])
            .hiding(["/nonexistent-tg/data"])
            .hiding(["/nonexistent-tg/data/console.token"]);
        let hidden: Vec<_> = s.hidden().collect();
        assert_eq!(hidden, [Path::new("/nonexistent-tg/data")]);
    }

    #[test]
    fn reach_is_inherited_from_the_closest_place_above() {
        let s = Shield::new()
            .hiding(["/nonexistent-tg/data"])
            .read_only(["/nonexistent-tg/data/plugins"]);
        let p = Path::new("/nonexistent-tg/data/plugins/x/run");
        assert_eq!(s.reach_of(p), Some(Reach::ReadOnly));
        assert_eq!(
            s.reach_of(Path::new("/nonexistent-tg/data/audit.db")),
            Some(Reach::Hidden)
        );
        assert_eq!(s.reach_of(Path::new("/nonexistent-tg/other")), None);
    }
}
