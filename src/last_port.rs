//! The port a data dir's engine served HTTP on last, so that a restarted
//! engine comes back on the same origin: a console tab left open on it
//! reconnects by itself, and a bookmarked console URL keeps working
//! (docs/architecture/decisions.md, "A restarted engine keeps its port").
//!
//! `<data_dir>/http.port` holds the port in decimal (`0600`). The daemon
//! tries it first when asked for any free port, and takes another only when
//! it is taken. The file is a hint, never a reason to fail: one that is
//! missing or unreadable means "no port yet".

use std::path::{Path, PathBuf};

/// The file's name in the data dir.
pub const FILE_NAME: &str = "http.port";

/// `<data_dir>/http.port`.
pub fn file(data_dir: &Path) -> PathBuf {
    data_dir.join(FILE_NAME)
}

/// The port remembered for `data_dir`; `None` when there is none or the
/// file does not hold a port (logged).
pub fn read(data_dir: &Path) -> Option<u16> {
    let path = file(data_dir);
    let bytes = match crate::private_file::read(&path, 16) {
        Ok(b) => b?,
        Err(e) => {
            tracing::warn!("{}: {e}; picking a free port", path.display());
            return None;
        }
    };
    let port = std::str::from_utf8(&bytes)
        .ok()
        .and_then(|s| s.trim().parse::<u16>().ok())
        .filter(|p| *p != 0);
    if port.is_none() {
        tracing::warn!(
            "{} does not hold a port number; picking a free port",
            path.display()
        );
    }
    port
}

/// Remembers `port` for `data_dir`'s next engine; a failure is logged (the
/// next engine then picks a free port).
pub fn write(data_dir: &Path, port: u16) {
    let path = file(data_dir);
    if let Err(e) = crate::private_file::write(&path, format!("{port}\n").as_bytes()) {
        tracing::warn!(
            "cannot remember the HTTP port in {}: {e}; the next engine may pick another",
            path.display()
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_port_is_remembered_privately_and_junk_is_no_port() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(read(dir.path()), None);
        write(dir.path(), 43210);
        assert_eq!(read(dir.path()), Some(43210));
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(file(dir.path()))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        for junk in ["", "0", "70000", "http://x", "12 34"] {
            std::fs::write(file(dir.path()), junk).unwrap();
            assert_eq!(read(dir.path()), None, "{junk:?}");
        }
    }
}
