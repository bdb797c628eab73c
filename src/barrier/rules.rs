//! A [`Shield`] as Landlock rules.
//!
//! Landlock only *allows*: a rule grants rights on a file or a directory
//! and everything beneath it, and what no rule grants is denied. "Everything
//! except toolgate's dirs" is therefore spelled as rules on every *sibling*
//! along the way down to each shielded place: for `~/.config/toolgate`,
//! every entry of `/` but the one leading to the home directory, every
//! entry of the home directory but `.config`, every entry of `.config` but
//! `toolgate`. The directories on the way (the *ancestors*) get no rule of
//! their own, only the right to list them ([`Grant::List`] on `/`), so a
//! governed process cannot create, rename or delete entries directly in
//! them: a right granted on an ancestor would reach the shielded place
//! beneath it too. docs/self-protection.md says what that costs.
//!
//! Symbolic links get no rule: the kernel checks the place a link resolves
//! to, and that place is covered on its own (it is a sibling, an ancestor
//! or beneath one).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use super::shield::{Reach, Shield};

/// The rights one rule grants.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Grant {
    /// Everything.
    Full,
    /// Read and execute.
    ReadExec,
    /// List directories (the rule on `/`, so the ancestors can be listed).
    List,
}

/// One rule: `grant` on `path` and everything beneath it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Rule {
    /// A file or directory.
    pub(super) path: PathBuf,
    /// Whether it is a directory (files take only file rights).
    pub(super) dir: bool,
    /// What is granted.
    pub(super) grant: Grant,
}

/// The rules that give a process everything but what `shield` keeps from
/// it. Directories that cannot be listed are skipped: what lies in them is
/// then denied, which errs on the safe side.
pub(super) fn rules(shield: &Shield) -> Vec<Rule> {
    let ancestors = ancestors(shield);
    let mut out = vec![Rule {
        path: PathBuf::from("/"),
        dir: true,
        // Nothing shielded: everything is granted.
        grant: if ancestors.is_empty() {
            Grant::Full
        } else {
            Grant::List
        },
    }];
    for dir in &ancestors {
        let Ok(entries) = std::fs::read_dir(dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if ancestors.contains(&path) || shield.contains(&path) {
                continue;
            }
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if kind.is_symlink() {
                continue;
            }
            if let Some(grant) = grant_for(shield.reach_of(&path)) {
                out.push(Rule {
                    path,
                    dir: kind.is_dir(),
                    grant,
                });
            }
        }
    }
    for (path, reach) in shield.places() {
        if ancestors.contains(path) {
            continue; // its entries were granted with its reach above
        }
        if let (Some(grant), Ok(meta)) = (grant_for(Some(reach)), std::fs::symlink_metadata(path))
            && !meta.file_type().is_symlink()
        {
            out.push(Rule {
                path: path.to_owned(),
                dir: meta.is_dir(),
                grant,
            });
        }
    }
    out
}

/// What a place with `reach` (`None`: not shielded) is granted.
fn grant_for(reach: Option<Reach>) -> Option<Grant> {
    match reach {
        None => Some(Grant::Full),
        Some(Reach::ReadOnly) => Some(Grant::ReadExec),
        Some(Reach::Hidden) => None,
    }
}

/// Every directory strictly above a shielded place, `/` included.
fn ancestors(shield: &Shield) -> BTreeSet<PathBuf> {
    shield
        .places()
        .flat_map(|(p, _)| p.ancestors().skip(1).map(Path::to_owned))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The rules under `root`, as (relative path, grant), sorted.
    fn under(root: &Path, rules: &[Rule]) -> Vec<(String, Grant)> {
        let mut v: Vec<_> = rules
            .iter()
            .filter_map(|r| {
                let rel = r.path.strip_prefix(root).ok()?;
                Some((rel.display().to_string(), r.grant))
            })
            .collect();
        v.sort_by(|a, b| a.0.cmp(&b.0));
        v
    }

    fn tree(root: &Path, files: &[&str]) {
        for f in files {
            let p = root.join(f);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            if f.ends_with('/') {
                std::fs::create_dir_all(&p).unwrap();
            } else {
                std::fs::write(&p, "x").unwrap();
            }
        }
    }

    #[test]
    fn siblings_along_the_way_are_granted_and_the_hidden_place_is_not() {
        let t = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(t.path()).unwrap();
        tree(
            &root,
            &[
                "home/.bashrc",
                "home/proj/a.rs",
                "home/.config/git/config",
                "home/.config/toolgate/config.toml",
                "home/.config/toolgate/plugins/p/plugin.toml",
                "home/.local/share/toolgate/audit.db",
                "home/.local/share/other/x",
                "other/",
            ],
        );
        std::os::unix::fs::symlink(root.join("home/.config/toolgate"), root.join("home/tg"))
            .unwrap();
        let shield = Shield::new()
            .hiding([
                root.join("home/.config/toolgate"),
                root.join("home/.local/share/toolgate"),
            ])
            .read_only([
                root.join("home/.bashrc"),
                root.join("home/.config/toolgate/plugins"),
            ]);
        let got = under(&root, &rules(&shield));
        let want: Vec<(String, Grant)> = [
            ("home/.bashrc", Grant::ReadExec),
            ("home/.config/git", Grant::Full),
            ("home/.config/toolgate/plugins", Grant::ReadExec),
            ("home/.local/share/other", Grant::Full),
            ("home/proj", Grant::Full),
            ("other", Grant::Full),
        ]
        .into_iter()
        .map(|(p, g)| (p.to_owned(), g))
        .collect();
        assert_eq!(got, want);
        // `/` may be listed, nothing more.
        assert!(
            rules(&shield)
                .iter()
                .any(|r| r.path == Path::new("/") && r.grant == Grant::List)
        );
    }

    #[test]
    fn a_hidden_place_that_does_not_exist_yet_stays_out_of_reach() {
        let t = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(t.path()).unwrap();
        tree(&root, &["home/proj/x"]);
        let shield = Shield::new().hiding([root.join("home/.config/toolgate")]);
        let got = under(&root, &rules(&shield));
        // `.config` does not exist: it is an ancestor, never granted, so it
        // cannot be created, and neither can anything beneath it.
        assert_eq!(got, vec![("home/proj".to_owned(), Grant::Full)]);
    }
}
