//! The engine's discovery file: how the bridge, the CLI and the desktop
//! find the running engine from HOME alone (docs/architecture/overview.md,
//! "Processes and discovery").
//!
//! MCP clients built on the official SDKs start `toolgate mcp-bridge` with
//! a stripped environment (HOME, PATH, USER, SHELL, TERM, LOGNAME), so the
//! bridge cannot count on `XDG_RUNTIME_DIR` to find the agent socket. The
//! data dir it can always find (from HOME), and the engine that owns a data
//! dir writes `<data_dir>/engine.json` there once its sockets listen: its
//! pid, sockets and HTTP endpoint (the path of the token file, never the
//! token). The file is `0600`, replaced atomically (temp file + rename, so a
//! reader never sees half of it) and removed on a clean shutdown. A file
//! left by a killed engine is stale: [`find_live`] believes a file only
//! when its pid is alive and its sockets accept a connection.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The discovery file's name in the data dir.
pub const FILE_NAME: &str = "engine.json";

/// What a running engine tells others about itself.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EngineInfo {
    /// The engine's process id.
    pub pid: u32,
    /// Its executable, if the OS told it.
    pub exe: Option<PathBuf>,
    /// Its version (`CARGO_PKG_VERSION`).
    pub version: String,
    /// When it started, in ms since the Unix epoch.
    pub started_ms: i64,
    /// The data dir it owns.
    pub data_dir: PathBuf,
    /// The agent socket (MCP).
    pub agent_socket: PathBuf,
    /// The control socket (the CLI's methods).
    pub control_socket: PathBuf,
    /// The localhost MCP-over-HTTP endpoint, if on.
    pub http: Option<HttpInfo>,
    /// Where the console is, if the HTTP endpoint is on.
    pub console: Option<ConsoleLocation>,
}

/// Where a running console is: its origin and the file holding its bearer
/// token (never the token).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConsoleLocation {
    /// `http://127.0.0.1:PORT`; the UI is at `/`, the API under `/api`.
    pub url: String,
    /// The console bearer token's file (`0600`).
    pub token_file: PathBuf,
}

/// Where the HTTP endpoint is. The token stays in its own `0600` file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HttpInfo {
    /// `http://127.0.0.1:PORT/mcp`.
    pub url: String,
    /// The file holding the bearer token.
    pub token_file: PathBuf,
}

/// Why the discovery file could not be written or read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DiscoveryError {
    /// Reading or writing the file failed.
    #[error("engine discovery file {}: {source}", .path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// The file is not an engine description.
    #[error("engine discovery file {} is unreadable: {source}", .path.display())]
    Parse {
        /// The file.
        path: PathBuf,
        /// The error.
        source: serde_json::Error,
    },
    /// Someone else owns the file: it is not trusted.
    #[error("engine discovery file {} belongs to uid {owner}, not to us; ignoring it", .path.display())]
    NotOurs {
        /// The file.
        path: PathBuf,
        /// Its owner.
        owner: u32,
    },
}

/// `<data_dir>/engine.json`.
pub fn file(data_dir: &Path) -> PathBuf {
    data_dir.join(FILE_NAME)
}

/// Writes `info` as the data dir's discovery file, replacing any other
/// (a stale one from a killed engine included): `0600`, via a temp file
/// and a rename, so a reader sees the old file or the new one, whole.
///
/// # Errors
/// [`DiscoveryError::Io`].
pub fn write(data_dir: &Path, info: &EngineInfo) -> Result<(), DiscoveryError> {
    let path = file(data_dir);
    let mut body = serde_json::to_vec_pretty(info).map_err(|e| DiscoveryError::Io {
        path: path.clone(),
        source: std::io::Error::other(e),
    })?;
    body.push(b'\n');
    crate::private_file::write(&path, &body).map_err(|source| DiscoveryError::Io { path, source })
}

/// The data dir's discovery file, if there is one. It says what an engine
/// wrote, not that the engine still runs: see [`find_live`].
///
/// # Errors
/// The file exists but cannot be read, parsed, or is not ours.
pub fn read(data_dir: &Path) -> Result<Option<EngineInfo>, DiscoveryError> {
    let path = file(data_dir);
    let io = |source| DiscoveryError::Io {
        path: path.clone(),
        source,
    };
    let bytes = match std::fs::read(&path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io(e)),
    };
    // The data dir is private; this is defence in depth against a file
    // planted by another user pointing us at their socket.
    let owner = std::fs::metadata(&path).map_err(io)?.uid();
    if owner != rustix::process::getuid().as_raw() {
        return Err(DiscoveryError::NotOurs { path, owner });
    }
    serde_json::from_slice(&bytes)
        .map(Some)
        .map_err(|source| DiscoveryError::Parse { path, source })
}

/// Whether a process with this pid runs (and is ours to signal).
pub fn pid_alive(pid: u32) -> bool {
    let Some(pid) = i32::try_from(pid)
        .ok()
        .and_then(rustix::process::Pid::from_raw)
    else {
        return false;
    };
    rustix::process::test_kill_process(pid).is_ok()
}

/// The pid named by the discovery file, if that process is alive: for
/// naming the owner of a data dir in an error. Not proof that it is the
/// engine (pids are reused); [`find_live`] is.
pub fn owner_pid(data_dir: &Path) -> Option<u32> {
    read(data_dir)
        .ok()
        .flatten()
        .map(|i| i.pid)
        .filter(|&p| pid_alive(p))
}

/// The engine that owns `data_dir`, if its discovery file names a live
/// process whose agent and control sockets both accept a connection. A
/// stale file (a killed engine, a reused pid, sockets gone) gives `None`;
/// an unreadable one is logged and gives `None`.
pub async fn find_live(data_dir: &Path) -> Option<EngineInfo> {
    let info = match read(data_dir) {
        Ok(info) => info?,
        Err(e) => {
            tracing::warn!("{e}");
            return None;
        }
    };
    if !pid_alive(info.pid) {
        return None;
    }
    for socket in [&info.agent_socket, &info.control_socket] {
        tokio::net::UnixStream::connect(socket).await.ok()?;
    }
    Some(info)
}

/// The published discovery file of this process's engine; dropping it
/// removes the file, if it is still ours.
#[derive(Debug)]
pub struct Published {
    data_dir: PathBuf,
    pid: u32,
}

impl Published {
    /// Writes `info` (see [`write`]) and returns the guard that removes it.
    ///
    /// # Errors
    /// See [`write`].
    pub fn new(info: &EngineInfo) -> Result<Self, DiscoveryError> {
        write(&info.data_dir, info)?;
        Ok(Self {
            data_dir: info.data_dir.clone(),
            pid: info.pid,
        })
    }

    /// The file.
    pub fn path(&self) -> PathBuf {
        file(&self.data_dir)
    }
}

impl Drop for Published {
    fn drop(&mut self) {
        // Only our own: once this engine let go of the data dir, another
        // may have started and written its file.
        if read(&self.data_dir)
            .ok()
            .flatten()
            .is_some_and(|i| i.pid == self.pid)
        {
            let _ = std::fs::remove_file(self.path());
        }
    }
}

/// How [`locate`] found the engine's sockets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// The `--socket` flag (or `TOOLGATE_SOCKET`).
    Flag,
    /// The data dir's discovery file, of a live engine.
    Discovery(Box<EngineInfo>),
    /// Nothing said otherwise: the default socket in the runtime dir.
    Default,
}

/// Where to reach the engine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Located {
    /// The agent socket.
    pub agent: PathBuf,
    /// The control socket.
    pub control: PathBuf,
    /// The control credential's file (in the engine's data dir).
    pub credential: PathBuf,
    /// How it was found.
    pub source: Source,
}

/// Decides where the engine of `data_dir` is, for the bridge and every CLI
/// command that talks to it: an explicit socket wins, else the discovery
/// file of a live engine, else `default_socket` (the runtime dir's, see
/// [`crate::paths::RuntimeEnv`]). The control socket sits beside an agent
/// socket found by flag or default.
pub async fn locate(flag: Option<&Path>, data_dir: &Path, default_socket: &Path) -> Located {
    let beside = |agent: &Path, source| Located {
        agent: agent.to_owned(),
        control: crate::paths::control_socket_for(agent),
        credential: crate::barrier::credential::file_in(data_dir),
        source,
    };
    if let Some(socket) = flag {
        return beside(socket, Source::Flag);
    }
    match find_live(data_dir).await {
        Some(info) => Located {
            agent: info.agent_socket.clone(),
            control: info.control_socket.clone(),
            credential: crate::barrier::credential::file_in(&info.data_dir),
            source: Source::Discovery(Box::new(info)),
        },
        None => beside(default_socket, Source::Default),
    }
}

#[cfg(test)]
#[path = "discovery_tests.rs"]
mod tests;
