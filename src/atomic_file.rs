//! Replacing a file so that a reader (the config watcher, an editor, a
//! client starting up) sees the old bytes or the new ones, never half:
//! a temporary file in the same directory, synced, renamed over the old
//! one, and the directory synced so the rename itself is durable. The new
//! file keeps the old one's permission bits and, where we may, its owner
//! (`0600` for a new file: configs name secrets). A symlinked file is
//! written where the link points, so the link (a dotfile manager's)
//! survives.

use std::io::Write;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// Replaces the file at `path` (or where its link points) with `bytes`
/// and returns the path written.
///
/// # Errors
/// The write, sync or rename failed; the old file is then untouched and
/// the temporary file removed.
pub fn replace(path: &Path, bytes: &[u8]) -> std::io::Result<PathBuf> {
    let real = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_owned());
    let dir = match real.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_owned(),
        _ => PathBuf::from("."),
    };
    let old = std::fs::metadata(&real).ok();
    let mode = old
        .as_ref()
        .map_or(0o600, |m| m.permissions().mode() & 0o7777);
    let name = real
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = dir.join(format!(".{name}.{:016x}.tmp", rand::random::<u64>()));
    let result = (|| {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(mode)
            .open(&tmp)?;
        f.write_all(bytes)?;
        // The umask may have narrowed `mode` at creation.
        f.set_permissions(std::fs::Permissions::from_mode(mode))?;
        if let Some(m) = &old {
            keep_owner(&f, m);
        }
        f.sync_all()?;
        std::fs::rename(&tmp, &real)?;
        std::fs::File::open(&dir)?.sync_all()
    })();
    if let Err(e) = result {
        let _ = std::fs::remove_file(&tmp);
        return Err(e);
    }
    Ok(real)
}

/// Gives the new file the old one's owner and group where we may (root,
/// or a group we belong to); otherwise it stays ours, which it was.
fn keep_owner(f: &std::fs::File, old: &std::fs::Metadata) {
    use rustix::fs::{Gid, Uid};
    let (uid, gid) = (old.uid(), old.gid());
    let me = rustix::process::geteuid().as_raw();
    if uid == me && gid == rustix::process::getegid().as_raw() {
        return;
    }
    let uid = (uid != me).then(|| Uid::from_raw(uid));
    if let Err(e) = rustix::fs::fchown(f, uid, Some(Gid::from_raw(gid))) {
        tracing::debug!("could not keep the owner of a rewritten file: {e}");
    }
}
