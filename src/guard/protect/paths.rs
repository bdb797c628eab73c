//! Paths as the kernel sees them: resolution, and hard links into the
//! protected places.

use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path, PathBuf};

use super::places::{Entry, Place};

/// How many directory entries a hard-link search reads at most. toolgate's
/// dirs hold a handful of files; the bound only keeps a dir that someone
/// filled on purpose from making every such check slow.
const SCAN_LIMIT: usize = 10_000;

/// `path` resolved the way the kernel would: each existing component
/// canonicalised (symlinks followed), `..` applied to what it leads to;
/// the part that does not exist yet is appended as written (`..` there
/// climbs lexically). Relative paths are taken as they are.
pub(super) fn resolve(path: &Path) -> PathBuf {
    resolve_in(PathBuf::new(), path)
}

/// `rel` resolved like [`resolve`] from `base`, a directory already
/// resolved (a shell's working directory), without resolving `base` again.
pub(super) fn resolve_in(base: PathBuf, rel: &Path) -> PathBuf {
    let mut out = base;
    let mut exists = true;
    for c in rel.components() {
        match c {
            Component::Prefix(_) | Component::RootDir => {
                out = PathBuf::from(c.as_os_str());
                exists = true;
            }
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            Component::Normal(name) => {
                out.push(name);
                if exists {
                    match std::fs::canonicalize(&out) {
                        Ok(real) => out = real,
                        Err(_) => exists = false,
                    }
                }
            }
        }
    }
    out
}

/// The protected file that `path` is another name of, with the entry it
/// lies in. Only a file with more than one name can be one, so a single
/// `stat` settles the common case; only then are the protected places
/// searched for the same device and inode (read fresh: an editor's save
/// or a new audit database replaces the file).
pub(super) fn hard_link_target<'a>(
    entries: &'a [Entry],
    path: &Path,
) -> Option<(&'a Entry, PathBuf)> {
    let m = std::fs::metadata(path).ok()?;
    if !m.is_file() || m.nlink() < 2 {
        return None;
    }
    let id = (m.dev(), m.ino());
    let mut budget = SCAN_LIMIT;
    entries.iter().find_map(|e| {
        let found = if e.place.is_dir() {
            find_in_dir(&e.path, id, &mut budget)
        } else if e.place == Place::Sockets {
            find_beside(&e.path, id)
        } else {
            same_file(&e.path, id).then(|| e.path.clone())
        };
        found.map(|f| (e, f))
    })
}

fn same_file(path: &Path, (dev, ino): (u64, u64)) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|p| p.dev() == dev && p.ino() == ino)
}

/// A file named after `socket` beside it (`.ctl`, the `.http` token file)
/// with device and inode `id`.
fn find_beside(socket: &Path, id: (u64, u64)) -> Option<PathBuf> {
    let (dir, name) = (socket.parent()?, socket.file_name()?);
    std::fs::read_dir(dir)
        .ok()?
        .flatten()
        .filter(|f| {
            f.file_name()
                .as_encoded_bytes()
                .starts_with(name.as_encoded_bytes())
        })
        .find(|f| same_file(&f.path(), id))
        .map(|f| f.path())
}

/// A file under `dir` (symlinks not followed) with device and inode `id`.
fn find_in_dir(dir: &Path, id: (u64, u64), budget: &mut usize) -> Option<PathBuf> {
    let mut stack = vec![dir.to_owned()];
    while let Some(d) = stack.pop() {
        let Ok(read) = std::fs::read_dir(&d) else {
            continue;
        };
        for entry in read.flatten() {
            if *budget == 0 {
                return None;
            }
            *budget -= 1;
            let Ok(m) = entry.metadata() else { continue };
            if m.is_dir() {
                stack.push(entry.path());
            } else if m.dev() == id.0 && m.ino() == id.1 {
                return Some(entry.path());
            }
        }
    }
    None
}
