//! Files and directories only their owner may read: the data dir (`0700`)
//! and every file toolgate keeps in it or beside its sockets (`0600`): the
//! audit database and its journals, the discovery file, token files, the
//! argument-hash key, the spawned engine's log.
//!
//! Modes are set at creation (`open(2)` with the mode, never a later
//! `chmod` that leaves a window) and links are never followed
//! (`O_NOFOLLOW`): a link planted where a file will be written cannot
//! redirect a token or a key to a place someone else reads. A file that
//! exists with wider bits (made by an older version, or under another
//! umask) is narrowed through its open descriptor and a log line says so.
//! The process umask is left alone: the desktop app's threads and the
//! upstream servers toolgate starts inherit it, and their files are theirs
//! to decide (see `docs/architecture/decisions.md`, "Private files").

use std::fs::File;
use std::io::{self, Write};
use std::os::fd::OwnedFd;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use rustix::fs::{FileType, Mode, OFlags};

/// Mode of every private file.
pub const FILE_MODE: u32 = 0o600;

/// Mode of the data dir.
pub const DIR_MODE: u32 = 0o700;

/// Creates `path` for writing, `0600`; fails if anything is there already
/// (a file, or a link, which is not followed).
///
/// # Errors
/// `AlreadyExists`, or the OS error.
pub fn create_new(path: &Path) -> io::Result<File> {
    let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL;
    open_raw(path, flags).map(File::from)
}

/// Opens `path` to read and write (append only, with `append`), creating
/// it `0600` if missing. An existing file must be a regular file of ours,
/// reached without a link; wider bits are narrowed to `0600`.
///
/// # Errors
/// A link or something other than a regular file at `path`, a file of
/// another user, or the OS error.
pub fn open(path: &Path, append: bool) -> io::Result<File> {
    let mut flags = OFlags::RDWR | OFlags::CREATE;
    if append {
        flags |= OFlags::APPEND;
    }
    let fd = open_raw(path, flags)?;
    checked(path, &fd)?;
    Ok(File::from(fd))
}

/// Narrows an existing file to `0600` (SQLite's `-wal` and `-shm`, which
/// SQLite itself opens); an absent one is fine.
///
/// # Errors
/// As for [`open`].
pub fn restrict(path: &Path) -> io::Result<()> {
    match open_raw(path, OFlags::RDONLY) {
        Ok(fd) => checked(path, &fd).map(drop),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e),
    }
}

/// The contents of a private file, or `None` if there is none. Read
/// without following a link; wider bits are narrowed to `0600` first.
///
/// # Errors
/// As for [`open`], or the file is longer than `max` bytes.
pub fn read(path: &Path, max: u64) -> io::Result<Option<Vec<u8>>> {
    let fd = match open_raw(path, OFlags::RDONLY) {
        Ok(fd) => fd,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let size = checked(path, &fd)?;
    if size > max {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{} bytes, more than the {max} expected", size),
        ));
    }
    let mut buf = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
    io::Read::read_to_end(&mut File::from(fd), &mut buf)?;
    Ok(Some(buf))
}

/// Replaces `path` with `bytes` (`0600`), atomically: a temp file beside
/// it is written, then renamed over it, so a reader sees the old file or
/// the new one, whole. A link at `path` is replaced, never followed.
///
/// # Errors
/// The OS error; the temp file is removed.
pub fn write(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let tmp = temp_beside(path)?;
    let written = create_new(&tmp)
        .and_then(|mut f| f.write_all(bytes))
        .and_then(|()| std::fs::rename(&tmp, path));
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

/// Writes `bytes` to `path` (`0600`, synced) only if nothing is there, so
/// that of two processes creating it at once one wins and the other reads
/// the winner's; a reader never sees a part of it (the whole file is
/// hard-linked into place). `false`: something was there already.
///
/// # Errors
/// The OS error; the temp file is removed.
pub fn write_new(path: &Path, bytes: &[u8]) -> io::Result<bool> {
    let tmp = temp_beside(path)?;
    let written = create_new(&tmp).and_then(|mut f| {
        f.write_all(bytes)?;
        f.sync_all()
    });
    let placed = written.and_then(|()| match std::fs::hard_link(&tmp, path) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(false),
        // A file system without hard links: exclusive create, which a
        // reader may see half-written for a moment.
        Err(_) => create_new(path)
            .and_then(|mut f| f.write_all(bytes).and_then(|()| f.sync_all()))
            .map(|()| true)
            .or_else(|e| match e.kind() {
                io::ErrorKind::AlreadyExists => Ok(false),
                _ => Err(e),
            }),
    });
    let _ = std::fs::remove_file(&tmp);
    placed
}

/// Makes `dir` exist (with its parents) and forces it to `0700`. A data
/// dir found with wider bits (from an older version, or made by hand) is
/// narrowed, and a log line says so. A link to a directory is followed:
/// where the data dir lives is its owner's choice.
///
/// # Errors
/// It cannot be made, is not a directory, belongs to another user, or its
/// mode cannot be changed.
pub fn dir(dir: &Path) -> io::Result<()> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(DIR_MODE)
        .create(dir)?;
    let meta = std::fs::metadata(dir)?;
    if !meta.is_dir() {
        return Err(io::Error::other("not a directory"));
    }
    if meta.uid() != rustix::process::geteuid().as_raw() {
        return Err(not_ours(meta.uid()));
    }
    let mode = meta.permissions().mode() & 0o777;
    if mode != DIR_MODE {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(DIR_MODE))?;
        tracing::warn!(
            "{} had mode {mode:04o}; made it {DIR_MODE:04o} (its owner only)",
            dir.display()
        );
    }
    Ok(())
}

/// `open(2)` with `O_NOFOLLOW | O_CLOEXEC` and mode `0600`; a link at
/// `path` is refused with a message saying so.
fn open_raw(path: &Path, flags: OFlags) -> io::Result<OwnedFd> {
    let flags = flags | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    rustix::fs::open(path, flags, Mode::from_raw_mode(FILE_MODE)).map_err(|e| {
        if e == rustix::io::Errno::LOOP {
            io::Error::other(
                "a symbolic link is in the way; toolgate does not follow links to its private files",
            )
        } else {
            e.into()
        }
    })
}

/// Checks an opened file is a regular file of ours and narrows its mode to
/// `0600`; returns its size.
fn checked(path: &Path, fd: &OwnedFd) -> io::Result<u64> {
    let st = rustix::fs::fstat(fd)?;
    if FileType::from_raw_mode(st.st_mode) != FileType::RegularFile {
        return Err(io::Error::other("not a regular file"));
    }
    if st.st_uid != rustix::process::geteuid().as_raw() {
        return Err(not_ours(st.st_uid));
    }
    let mode = st.st_mode & 0o777;
    if mode != FILE_MODE {
        rustix::fs::fchmod(fd, Mode::from_raw_mode(FILE_MODE))?;
        tracing::warn!(
            "{} had mode {mode:04o}; made it {FILE_MODE:04o} (its owner only)",
            path.display()
        );
    }
    Ok(u64::try_from(st.st_size).unwrap_or(0))
}

fn not_ours(uid: u32) -> io::Error {
    io::Error::new(
        io::ErrorKind::PermissionDenied,
        format!("it belongs to uid {uid}, not to this user"),
    )
}

/// `.<name>.<pid>.<random>.tmp` beside `path`: unique to this write, and
/// in the same directory so the rename stays on one file system.
fn temp_beside(path: &Path) -> io::Result<PathBuf> {
    let name = path
        .file_name()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "no file name"))?;
    let mut tmp = std::ffi::OsString::from(".");
    tmp.push(name);
    tmp.push(format!(
        ".{}.{:016x}.tmp",
        std::process::id(),
        rand::random::<u64>()
    ));
    Ok(path.with_file_name(tmp))
}

#[cfg(test)]
#[path = "private_file_tests.rs"]
mod tests;
