//! Path confinement: every file-system path an agent names must stay inside
//! one of the configured roots, symlinks included (pipeline stage 7;
//! PraisonAI's `resolve_within_root`).
//!
//! Contract:
//! - Relative paths resolve against the *first* root; absolute paths must lie
//!   (lexically) under some root, as configured or as canonicalised.
//! - NUL bytes are refused, and so is any `..` that climbs above the root.
//! - Every existing component is resolved the way the kernel would, symlinks
//!   included: a symlink whose target leaves the root is refused, wherever it
//!   sits in the path (`root/link/x` as well as `root/link`). Absolute symlink
//!   targets are refused even when they point inside, because the sandboxed
//!   open below never follows them and the early check must not promise what
//!   the enforcement will not do.
//! - The part of the path that does not exist yet may hold no `..`.
//!
//! [`PathRoots::check`] is the *early, explainable* refusal, used by the
//! guard stage and by tools before they touch anything. It is not the
//! enforcement: between the check and the open a component can be swapped
//! for a symlink. Tools therefore open through the root's [`cap_std::fs::Dir`]
//! ([`PathRoots::dir`]), which resolves beneath the root on every open
//! (`openat2` with `RESOLVE_BENEATH` on Linux, a userspace walk elsewhere), so
//! a swapped-in symlink still cannot lead outside.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::fmt;
use std::io;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use cap_std::ambient_authority;
use cap_std::fs::Dir;

use crate::error::{CallError, Fault};

/// Longest path the kernel opens (Linux's `PATH_MAX`, less its NUL). A
/// longer one is refused before it is walked: walking it would copy it
/// (an 8 MiB argument made 8 MiB of steps) only to fail at the open.
pub const MAX_PATH: usize = 4095;

/// Same bound as Linux's `MAXSYMLINKS`: a longer chain is almost certainly a
/// loop, and following it further only burns time.
const MAX_SYMLINK_HOPS: u32 = 40;

/// Why a root could not be configured or a path was refused. Messages are
/// written for the model: they name the path and the roots so it can pick a
/// path that works.
#[derive(Debug, thiserror::Error)]
pub enum PathError {
    /// A configured root does not exist or cannot be read.
    #[error("root `{}` cannot be used: {source}", .root.display())]
    RootUnusable {
        /// The root as configured.
        root: PathBuf,
        /// What the file system said.
        source: io::Error,
    },
    /// A configured root is not a directory.
    #[error("root `{}` is not a directory", .root.display())]
    RootNotDir {
        /// The root as configured.
        root: PathBuf,
    },
    /// No roots are configured, so no path is allowed.
    #[error("{}no file-system roots are configured; {NO_ROOTS_FIX}", shown(.path))]
    NoRoots {
        /// The requested path.
        path: String,
    },
    /// The path is longer than any the system opens.
    #[error("path `{path}` is {len} bytes long; a path can have at most {MAX_PATH}")]
    TooLong {
        /// The requested path, cut to [`MAX_PATH`].
        path: String,
        /// Its length in bytes.
        len: usize,
    },
    /// The path contains a NUL byte (which would truncate it at the OS level).
    #[error("path {path:?} contains a NUL byte")]
    NulByte {
        /// The requested path.
        path: String,
    },
    /// An absolute path that is not under any root.
    #[error("path `{path}` is outside the allowed roots ({})", list(.roots))]
    Outside {
        /// The requested path.
        path: String,
        /// The allowed roots.
        roots: Vec<PathBuf>,
    },
    /// A `..` climbs above the root.
    #[error("path `{path}` escapes the allowed roots ({})", list(.roots))]
    Escapes {
        /// The requested path.
        path: String,
        /// The allowed roots.
        roots: Vec<PathBuf>,
    },
    /// A symlink on the path leads outside the root.
    #[error(
        "path `{path}` escapes the allowed roots ({}) through symlink `{}` -> `{}`",
        list(.roots), .link.display(), .target.display()
    )]
    SymlinkEscape {
        /// The requested path.
        path: String,
        /// The symlink, relative to its root.
        link: PathBuf,
        /// The symlink's target as stored in the link.
        target: PathBuf,
        /// The allowed roots.
        roots: Vec<PathBuf>,
    },
    /// A symlink on the path has an absolute target inside the root; the
    /// sandboxed open never follows absolute symlinks, so neither does the
    /// check.
    #[error(
        "path `{path}` goes through symlink `{}` with absolute target `{}`; only relative symlinks are followed inside the allowed roots",
        .link.display(), .target.display()
    )]
    AbsoluteSymlink {
        /// The requested path.
        path: String,
        /// The symlink, relative to its root.
        link: PathBuf,
        /// The symlink's target.
        target: PathBuf,
    },
    /// A `..` follows a component that does not exist, so where it leads
    /// cannot be checked.
    #[error(
        "path `{path}` uses `..` after `{}`, which does not exist",
        .missing.display()
    )]
    DotDotAfterMissing {
        /// The requested path.
        path: String,
        /// The first missing component, relative to its root.
        missing: PathBuf,
    },
    /// The path goes through too many symlinks (probably a loop).
    #[error("path `{path}` goes through more than {MAX_SYMLINK_HOPS} symlinks")]
    SymlinkLoop {
        /// The requested path.
        path: String,
    },
    /// The file system refused to look at a component (not a directory,
    /// permission denied, ...). Not a refusal by the guard.
    #[error("cannot resolve path `{path}`: {source}")]
    Io {
        /// The requested path.
        path: String,
        /// What the file system said.
        source: io::Error,
    },
}

/// How to fix [`PathError::NoRoots`]: the config key and the flag.
pub const NO_ROOTS_FIX: &str = "add the directories tools may use as `roots = [\"~/projects\"]` under `[builtin]` in toolgate's config.toml, or start toolgate with `--root DIR`";

/// `path `x` refused: ` for a path the caller gave; nothing for the empty
/// path a tool uses by default (the first root), which the caller never
/// wrote.
fn shown(path: &str) -> String {
    if path.is_empty() {
        String::new()
    } else {
        format!("path `{path}` refused: ")
    }
}

/// The requested path as an error keeps it: whole unless it is longer than
/// any path can be, so a refusal never holds a copy of a huge argument.
fn quoted(path: &str) -> String {
    crate::events::cut_text(path, MAX_PATH).into_owned()
}

fn list(roots: &[PathBuf]) -> String {
    roots
        .iter()
        .map(|r| r.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

impl PathError {
    /// Whether the guard refused the path (an escape attempt or a path it
    /// cannot vouch for), as opposed to the file system failing to resolve
    /// it. Refusals become [`CallError::GuardDenied`]; the rest are ordinary
    /// tool failures.
    pub fn is_refusal(&self) -> bool {
        !matches!(
            self,
            Self::Io { .. } | Self::RootUnusable { .. } | Self::RootNotDir { .. }
        )
    }

    /// The call error for a refusal of argument `arg`: `GuardDenied` for
    /// refusals, `ToolFailed` otherwise, so the breaker never counts an
    /// escape attempt as the tool failing. A path that cannot be resolved
    /// (a file where a directory is needed, an unreadable directory) is the
    /// caller's; an unusable root is the tool's (its configuration broke).
    pub fn into_call_error(self, arg: &str) -> CallError {
        if self.is_refusal() {
            return CallError::GuardDenied {
                arg: arg.to_owned(),
                reason: self.to_string(),
            };
        }
        let fault = match &self {
            Self::Io { source, .. } => Fault::of_io(source.kind()),
            _ => Fault::Tool,
        };
        CallError::tool_error(fault, self.to_string())
    }
}

/// One configured root.
struct Root {
    canonical: PathBuf,
    /// The root as configured (made absolute), so a path written with the
    /// configured spelling matches even when the root sits behind a symlink.
    given: PathBuf,
    dir: Arc<Dir>,
}

/// The directories an agent may touch, each with a capability handle that
/// all file access goes through.
pub struct PathRoots {
    roots: Vec<Root>,
    canonical: Vec<PathBuf>,
}

impl fmt::Debug for PathRoots {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("PathRoots").field(&self.canonical).finish()
    }
}

impl PathRoots {
    /// Opens every root. Roots are canonicalised once here, so later checks
    /// compare against the real location.
    ///
    /// # Errors
    /// A root that does not exist or cannot be opened
    /// ([`PathError::RootUnusable`]) or is not a directory
    /// ([`PathError::RootNotDir`]).
    pub fn new(roots: &[PathBuf]) -> Result<Self, PathError> {
        let mut out = Self::empty();
        for root in roots {
            let r = open_root(root)?;
            out.canonical.push(r.canonical.clone());
            out.roots.push(r);
        }
        Ok(out)
    }

    /// No roots: every path is refused. The safe default when nothing is
    /// configured.
    pub fn empty() -> Self {
        Self {
            roots: Vec::new(),
            canonical: Vec::new(),
        }
    }

    /// The canonical roots, in configured order (the first is the default
    /// for relative paths).
    pub fn roots(&self) -> &[PathBuf] {
        &self.canonical
    }

    /// Checks `requested` against the roots and resolves it to a path
    /// beneath one of them. Cheap enough for the guard stage: one `lstat`
    /// per existing component.
    ///
    /// # Errors
    /// See [`PathError`]; [`PathError::is_refusal`] tells refusals from
    /// file-system failures.
    pub fn check(&self, requested: &str) -> Result<Confined, PathError> {
        if requested.contains('\0') {
            return Err(PathError::NulByte {
                path: quoted(requested),
            });
        }
        if requested.len() > MAX_PATH {
            return Err(PathError::TooLong {
                path: quoted(requested),
                len: requested.len(),
            });
        }
        if self.roots.is_empty() {
            return Err(PathError::NoRoots {
                path: requested.to_owned(),
            });
        }
        let (index, rest) = self.split_root(requested)?;
        let root = &self.roots[index];
        let relative = Resolver::new(self, requested, &root.canonical).resolve(rest)?;
        Ok(Confined {
            root: root.canonical.clone(),
            relative,
            dir: Arc::clone(&root.dir),
        })
    }

    /// The capability handle to open `c` through. Opening `c.relative()` in
    /// it can never leave the root, whatever changed since the check.
    pub fn dir<'a>(&'a self, c: &'a Confined) -> &'a Dir {
        c.dir()
    }

    /// Which root `requested` belongs to, and the part of it below that root.
    fn split_root<'p>(&self, requested: &'p str) -> Result<(usize, &'p Path), PathError> {
        let path = Path::new(requested);
        if !path.is_absolute() {
            return Ok((0, path));
        }
        self.roots
            .iter()
            .enumerate()
            .find_map(|(i, r)| {
                path.strip_prefix(&r.canonical)
                    .or_else(|_| path.strip_prefix(&r.given))
                    .ok()
                    .map(|rest| (i, rest))
            })
            .ok_or_else(|| PathError::Outside {
                path: requested.to_owned(),
                roots: self.canonical.clone(),
            })
    }
}

fn open_root(root: &Path) -> Result<Root, PathError> {
    let unusable = |source| PathError::RootUnusable {
        root: root.to_path_buf(),
        source,
    };
    let canonical = std::fs::canonicalize(root).map_err(unusable)?;
    if !std::fs::metadata(&canonical).map_err(unusable)?.is_dir() {
        return Err(PathError::RootNotDir {
            root: root.to_path_buf(),
        });
    }
    let given = std::path::absolute(root).map_err(unusable)?;
    let dir = Dir::open_ambient_dir(&canonical, ambient_authority()).map_err(unusable)?;
    Ok(Root {
        canonical,
        given,
        dir: Arc::new(dir),
    })
}

/// A path that passed [`PathRoots::check`]: which root, and where beneath it.
/// The relative path has every symlink that existed at check time resolved,
/// so the open acts on the very file the check looked at.
#[derive(Clone)]
pub struct Confined {
    root: PathBuf,
    relative: PathBuf,
    dir: Arc<Dir>,
}

impl fmt::Debug for Confined {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Confined")
            .field("root", &self.root)
            .field("relative", &self.relative)
            .finish()
    }
}

impl Confined {
    /// The canonical root the path lies under.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The path relative to [`Confined::root`]; `.` for the root itself.
    /// This is what to pass to the root's [`Dir`].
    pub fn relative(&self) -> &Path {
        &self.relative
    }

    /// The absolute path, for messages and for APIs that need one (a child
    /// process's working directory). Opening it directly bypasses the
    /// capability handle, so file access should use [`Confined::dir`].
    pub fn absolute(&self) -> PathBuf {
        if self.relative == Path::new(".") {
            self.root.clone()
        } else {
            self.root.join(&self.relative)
        }
    }

    /// The root's capability handle (the same as [`PathRoots::dir`]).
    pub fn dir(&self) -> &Dir {
        &self.dir
    }
}

/// One step of a path still to be walked.
enum Step {
    Parent,
    Name(OsString),
}

/// Walks a path beneath a root the way the kernel would, symlinks
/// included, but refusing instead of leaving the root.
struct Resolver<'a> {
    roots: &'a PathRoots,
    requested: &'a str,
    root: &'a Path,
    /// Resolved so far, relative to the root, free of symlinks.
    current: PathBuf,
    /// Whether `current` is a directory (`..` out of a file fails, as in
    /// the kernel).
    current_is_dir: bool,
    /// The first component that does not exist, once one was seen.
    missing: Option<PathBuf>,
    /// The last symlink followed, for the escape message.
    via: Option<(PathBuf, PathBuf)>,
    hops: u32,
}

impl<'a> Resolver<'a> {
    fn new(roots: &'a PathRoots, requested: &'a str, root: &'a Path) -> Self {
        Self {
            roots,
            requested,
            root,
            current: PathBuf::new(),
            current_is_dir: true,
            missing: None,
            via: None,
            hops: 0,
        }
    }

    fn resolve(mut self, rest: &Path) -> Result<PathBuf, PathError> {
        let mut queue = steps(rest);
        while let Some(step) = queue.pop_front() {
            match step {
                Step::Parent => self.parent()?,
                Step::Name(name) => {
                    if let Some(target) = self.name(name)? {
                        for s in steps(&target).into_iter().rev() {
                            queue.push_front(s);
                        }
                    }
                }
            }
        }
        if self.current.as_os_str().is_empty() {
            self.current.push(".");
        }
        Ok(self.current)
    }

    fn parent(&mut self) -> Result<(), PathError> {
        if let Some(missing) = &self.missing {
            return Err(PathError::DotDotAfterMissing {
                path: self.requested.to_owned(),
                missing: missing.clone(),
            });
        }
        if !self.current_is_dir {
            return Err(self.io(io::ErrorKind::NotADirectory.into()));
        }
        if self.current.pop() {
            return Ok(());
        }
        Err(match self.via.take() {
            Some((link, target)) => self.symlink_escape(link, target),
            None => PathError::Escapes {
                path: self.requested.to_owned(),
                roots: self.roots.canonical.clone(),
            },
        })
    }

    /// Steps into `name`; returns the symlink target to walk next if `name`
    /// is a (relative) symlink.
    fn name(&mut self, name: OsString) -> Result<Option<PathBuf>, PathError> {
        let next = self.current.join(&name);
        if self.missing.is_some() {
            self.current = next;
            return Ok(None);
        }
        let full = self.root.join(&next);
        match std::fs::symlink_metadata(&full) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                self.missing = Some(next.clone());
                self.current = next;
                Ok(None)
            }
            Err(source) => Err(self.io(source)),
            Ok(m) if m.file_type().is_symlink() => {
                let target = std::fs::read_link(&full).map_err(|e| self.io(e))?;
                self.follow(next, target).map(Some)
            }
            Ok(m) => {
                self.current = next;
                self.current_is_dir = m.is_dir();
                Ok(None)
            }
        }
    }

    fn follow(&mut self, link: PathBuf, target: PathBuf) -> Result<PathBuf, PathError> {
        self.hops += 1;
        if self.hops > MAX_SYMLINK_HOPS {
            return Err(PathError::SymlinkLoop {
                path: self.requested.to_owned(),
            });
        }
        if target.is_absolute() {
            return Err(if target.starts_with(self.root) {
                PathError::AbsoluteSymlink {
                    path: self.requested.to_owned(),
                    link,
                    target,
                }
            } else {
                self.symlink_escape(link, target)
            });
        }
        self.via = Some((link, target.clone()));
        Ok(target)
    }

    fn symlink_escape(&self, link: PathBuf, target: PathBuf) -> PathError {
        PathError::SymlinkEscape {
            path: self.requested.to_owned(),
            link,
            target,
            roots: self.roots.canonical.clone(),
        }
    }

    fn io(&self, source: io::Error) -> PathError {
        PathError::Io {
            path: self.requested.to_owned(),
            source,
        }
    }
}

/// The steps of a relative path; `.` is dropped. A root or prefix component
/// cannot occur (absolute targets are handled before this).
fn steps(path: &Path) -> VecDeque<Step> {
    path.components()
        .filter_map(|c| match c {
            Component::ParentDir => Some(Step::Parent),
            Component::Normal(n) => Some(Step::Name(n.to_os_string())),
            Component::CurDir | Component::RootDir | Component::Prefix(_) => None,
        })
        .collect()
}

#[cfg(test)]
#[path = "path_tests.rs"]
mod tests;
