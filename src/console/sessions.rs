//! The console's sessions on disk, so that a browser tab open on the
//! console stays signed in when the engine restarts
//! (docs/architecture/decisions.md, "Console sessions survive a restart").
//!
//! Only what the engine keeps in memory is written: each session id's
//! SHA-256 digest (never the id) and where its session is shown, oldest
//! first, at most [`super::auth::MAX_SESSIONS`]. The file is `0600` in the
//! data dir and replaced whole on every change, so a reader sees the old
//! list or the new one. A digest does not sign anyone in: the cookie
//! carries the 256-bit id, which cannot be recovered from its digest.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::wire::Surface;

/// The file's name in the data dir.
pub const FILE_NAME: &str = "console-sessions.json";

/// The format written; a file of another version is not read.
const VERSION: u32 = 1;

/// Larger than any file of [`super::auth::MAX_SESSIONS`] entries; a bigger
/// one is not ours.
const MAX_BYTES: u64 = 64 * 1024;

/// A session as kept: the digest of its id and where it is shown.
pub type Entry = ([u8; 32], Surface);

/// Why the sessions file could not be read or written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SessionsError {
    /// Reading or writing the file failed.
    #[error("console sessions file {}: {source}", .path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// The file is not a list of console sessions.
    #[error("console sessions file {} is unreadable ({reason}); open tabs must sign in again with `toolgate console`", .path.display())]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    version: u32,
    sessions: Vec<Stored>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Stored {
    /// SHA-256 of the session id, hex.
    digest: String,
    surface: StoredSurface,
}

#[derive(Clone, Copy, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum StoredSurface {
    Browser,
    DesktopWindow,
}

impl From<Surface> for StoredSurface {
    fn from(s: Surface) -> Self {
        match s {
            Surface::Browser => Self::Browser,
            Surface::DesktopWindow => Self::DesktopWindow,
        }
    }
}

impl From<StoredSurface> for Surface {
    fn from(s: StoredSurface) -> Self {
        match s {
            StoredSurface::Browser => Self::Browser,
            StoredSurface::DesktopWindow => Self::DesktopWindow,
        }
    }
}

/// `<data_dir>/console-sessions.json`.
pub fn file(data_dir: &Path) -> PathBuf {
    data_dir.join(FILE_NAME)
}

/// The sessions kept in `path`, oldest first; none when there is no file.
///
/// # Errors
/// The file cannot be read, or is not a sessions file of this version.
pub fn load(path: &Path) -> Result<Vec<Entry>, SessionsError> {
    let bytes = crate::private_file::read(path, MAX_BYTES).map_err(|source| SessionsError::Io {
        path: path.to_owned(),
        source,
    })?;
    let Some(bytes) = bytes else {
        return Ok(Vec::new());
    };
    let corrupt = |reason: String| SessionsError::Corrupt {
        path: path.to_owned(),
        reason,
    };
    let file: File = serde_json::from_slice(&bytes).map_err(|e| corrupt(e.to_string()))?;
    if file.version != VERSION {
        return Err(corrupt(format!(
            "version {}, this engine reads {VERSION}",
            file.version
        )));
    }
    file.sessions
        .into_iter()
        .map(|s| {
            let mut digest = [0u8; 32];
            hex::decode_to_slice(&s.digest, &mut digest)
                .map_err(|e| corrupt(format!("a digest is not 64 hex digits: {e}")))?;
            Ok((digest, s.surface.into()))
        })
        .collect()
}

/// Replaces `path` with `sessions` (`0600`, atomically).
///
/// # Errors
/// The OS error.
pub fn save<'a>(
    path: &Path,
    sessions: impl IntoIterator<Item = &'a Entry>,
) -> Result<(), SessionsError> {
    let file = File {
        version: VERSION,
        sessions: sessions
            .into_iter()
            .map(|(digest, surface)| Stored {
                digest: hex::encode(digest),
                surface: (*surface).into(),
            })
            .collect(),
    };
    let io = |source| SessionsError::Io {
        path: path.to_owned(),
        source,
    };
    let mut body = serde_json::to_vec(&file).map_err(|e| io(std::io::Error::other(e)))?;
    body.push(b'\n');
    crate::private_file::write(path, &body).map_err(io)
}
