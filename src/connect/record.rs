//! What connect (or a hook install) needs to undo itself, kept in
//! toolgate's data dir (`connect/<client>.json`, `connect/<client>.hooks.json`),
//! private (`0600` in a `0700` dir) because it holds the client's
//! original file, secrets included, until disconnect restores it.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::{ClientId, ConnectEnv, ConnectError};

/// One undo record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Record {
    /// Format version (1).
    pub version: u32,
    /// Whose.
    pub client: ClientId,
    /// When (UTC, `20261205T102233Z`).
    pub at: String,
    /// Every file written.
    pub files: Vec<FileRecord>,
    /// `[[servers]]` names connect added to toolgate's config.
    #[serde(default)]
    pub toolgate_servers: Vec<String>,
    /// `[[servers]]` names that were in toolgate's config already and that
    /// this client's entries now rely on (not removed by its disconnect,
    /// and kept by other clients' disconnects).
    #[serde(default)]
    pub reused_servers: Vec<String>,
    /// Keychain names connect stored.
    #[serde(default)]
    pub secrets: Vec<String>,
    /// The hook command installed (hook records).
    #[serde(default)]
    pub hook_command: Option<String>,
}

/// One file as it was and as toolgate left it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FileRecord {
    /// The file.
    pub path: PathBuf,
    /// Its bytes before (`None`: it did not exist).
    pub original: Option<String>,
    /// SHA-256 of what toolgate wrote: equal on disconnect means nobody
    /// touched it since, so the original goes back byte for byte.
    pub written_sha256: String,
    /// The server maps changed, as key paths, with the entry names moved
    /// out of each (in file order).
    #[serde(default)]
    pub maps: Vec<MapRecord>,
    /// The backup left beside the file.
    #[serde(default)]
    pub backup: Option<PathBuf>,
}

/// One server map changed in a file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MapRecord {
    /// Keys from the root to the map.
    pub keys: Vec<String>,
    /// Entries moved out, in file order.
    pub moved: Vec<String>,
}

/// Hex SHA-256 of `text`.
pub fn sha256(text: &str) -> String {
    hex::encode(Sha256::digest(text.as_bytes()))
}

/// Where `client`'s MCP record lives.
pub fn mcp_path(env: &ConnectEnv, client: ClientId) -> PathBuf {
    env.records_dir().join(format!("{}.json", client.id()))
}

/// Where `client`'s hooks record lives.
pub fn hooks_path(env: &ConnectEnv, client: ClientId) -> PathBuf {
    env.records_dir()
        .join(format!("{}.hooks.json", client.id()))
}

/// The record at `path`, if there is one.
///
/// # Errors
/// [`ConnectError::Record`] when it cannot be read or parsed.
pub fn load(path: &Path) -> Result<Option<Record>, ConnectError> {
    let err = |message: String| ConnectError::Record {
        path: path.to_owned(),
        message,
    };
    let bytes = crate::private_file::read(path, 64 << 20).map_err(|e| err(e.to_string()))?;
    match bytes {
        None => Ok(None),
        Some(b) => serde_json::from_slice(&b)
            .map(Some)
            .map_err(|e| err(e.to_string())),
    }
}

/// Writes `record` to `path`, private.
///
/// # Errors
/// [`ConnectError::Record`].
pub fn save(path: &Path, record: &Record) -> Result<(), ConnectError> {
    let err = |message: String| ConnectError::Record {
        path: path.to_owned(),
        message,
    };
    if let Some(dir) = path.parent() {
        crate::private_file::dir(dir).map_err(|e| err(e.to_string()))?;
    }
    let bytes = serde_json::to_vec_pretty(record).map_err(|e| err(e.to_string()))?;
    crate::private_file::write(path, &bytes).map_err(|e| err(e.to_string()))
}

/// Every MCP record in `env`'s records dir but `client`'s.
///
/// # Errors
/// [`ConnectError::Record`] when one cannot be read.
pub fn others(env: &ConnectEnv, client: ClientId) -> Result<Vec<Record>, ConnectError> {
    let mut out = Vec::new();
    for c in ClientId::ALL.into_iter().filter(|c| *c != client) {
        out.extend(load(&mcp_path(env, c))?);
    }
    Ok(out)
}

/// Removes the record at `path` (gone already is fine).
///
/// # Errors
/// [`ConnectError::Record`].
pub fn remove(path: &Path) -> Result<(), ConnectError> {
    match std::fs::remove_file(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(ConnectError::Record {
            path: path.to_owned(),
            message: e.to_string(),
        }),
    }
}
