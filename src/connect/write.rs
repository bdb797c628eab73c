//! Replacing a client's file the way a person can trust: atomically, with
//! the old file's permission bits and owner ([`crate::atomic_file`]), and
//! a timestamped copy of the old bytes left beside it
//! (`<name>.toolgate-backup-20261205T102233Z`). A symlinked file is
//! written where the link points, so dotfile managers keep their links.

use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// What a write did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Written {
    /// The file written (the link's target for a symlink).
    pub path: PathBuf,
    /// The backup of the old bytes, if there was an old file.
    pub backup: Option<PathBuf>,
}

/// Replaces `path` with `bytes` (see the module docs). A missing file is
/// created `0600`, its directory made if needed.
///
/// # Errors
/// The backup, write, sync or rename failed; the old file is untouched.
pub fn replace(path: &Path, bytes: &[u8]) -> std::io::Result<Written> {
    let real = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_owned());
    if let Some(dir) = real.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    let backup = match std::fs::metadata(&real) {
        Ok(_) => Some(backup(&real)?),
        Err(_) => None,
    };
    let path = crate::atomic_file::replace(&real, bytes)?;
    Ok(Written { path, backup })
}

/// Copies `real` to a new timestamped name beside it, mode kept.
fn backup(real: &Path) -> std::io::Result<PathBuf> {
    let stamp = utc_stamp(SystemTime::now());
    let base = format!("{}.toolgate-backup-{stamp}", real.display());
    let mut candidate = PathBuf::from(&base);
    let mut n = 2;
    while std::fs::symlink_metadata(&candidate).is_ok() {
        candidate = PathBuf::from(format!("{base}-{n}"));
        n += 1;
    }
    let bytes = std::fs::read(real)?;
    let mode = std::fs::metadata(real)?.permissions().mode() & 0o7777;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .open(&candidate)?;
    f.write_all(&bytes)?;
    f.set_permissions(std::fs::Permissions::from_mode(mode))?;
    f.sync_all()?;
    Ok(candidate)
}

/// `20261205T102233Z` for `t` (UTC).
pub fn utc_stamp(t: SystemTime) -> String {
    let secs = t
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (y, m, d) = civil_from_days(days as i64);
    format!(
        "{y:04}{m:02}{d:02}T{:02}{:02}{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// Howard Hinnant's days-to-civil-date algorithm (proleptic Gregorian).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stamps_are_utc_calendar_dates() {
        let t = SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_796_466_153);
        assert_eq!(utc_stamp(t), "20261205T102233Z");
        assert_eq!(utc_stamp(SystemTime::UNIX_EPOCH), "19700101T000000Z");
    }

    #[test]
    fn a_replaced_file_keeps_its_mode_and_leaves_a_backup() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("mcp.json");
        std::fs::write(&p, "old").unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).unwrap();
        let link = dir.path().join("link.json");
        std::os::unix::fs::symlink(&p, &link).unwrap();
        let w = replace(&link, b"new").unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "new");
        assert!(std::fs::symlink_metadata(&link).unwrap().is_symlink());
        let mode = std::fs::metadata(&p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let b = w.backup.unwrap();
        assert_eq!(std::fs::read_to_string(&b).unwrap(), "old");
        assert!(b.to_string_lossy().contains("mcp.json.toolgate-backup-"));
        let w2 = replace(&p, b"newer").unwrap();
        assert_ne!(w2.backup.unwrap(), b);
        let fresh = replace(&dir.path().join("sub/new.json"), b"x").unwrap();
        assert!(fresh.backup.is_none());
    }
}
