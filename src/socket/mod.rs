//! The agent socket: a Unix domain socket only its owner can use.
//!
//! Defence in depth, because anything that reaches the socket can ask for
//! tool calls: the socket's directory is created `0700`, the socket itself
//! is `0600`, and every peer's uid is read from the kernel (`SO_PEERCRED`)
//! and compared with ours before a single byte is read; a mismatch is
//! refused and logged. The peer's pid, uid and executable become the
//! caller identity the pipeline and the audit log see; the agent cannot
//! claim another. On the agent socket, a peer that is toolgate's own stdio
//! bridge stands for the MCP client that started it ([`peer`]).
//!
//! A peer that hangs up (closes or dies) is noticed at once, even while
//! none of its calls has anything to say ([`hangup`]): its calls are
//! cancelled and its pending approvals closed.

mod hangup;
mod peer;

pub use hangup::hangup;
pub use peer::BridgeExes;

use std::io;
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use tokio::net::{UnixListener, UnixStream};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::context::{Caller, Session};
use crate::mcp::McpServer;

/// Why the socket could not be set up.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SocketError {
    /// Another daemon answers on the path.
    #[error("another toolgate is already serving on {}; stop it first or pass --socket with another path", .0.display())]
    AlreadyRunning(PathBuf),
    /// Something that is not a socket sits at the path.
    #[error("{} exists and is not a socket; refusing to replace it", .0.display())]
    NotASocket(PathBuf),
    /// I/O while preparing or binding.
    #[error("cannot listen on {}: {source}", .path.display())]
    Io {
        /// The socket path.
        path: PathBuf,
        /// The error.
        source: io::Error,
    },
}

/// A bound agent socket.
#[derive(Debug)]
pub struct AgentSocket {
    listener: UnixListener,
    path: PathBuf,
    /// Refuse peers that run under a warden (the control socket).
    refuse_governed: bool,
    /// Which peers are toolgate's stdio bridge, on the agent socket;
    /// `None` takes every peer as it is (the control socket).
    bridges: Option<BridgeExes>,
}

impl AgentSocket {
    /// Binds `path`: creates its directory (`0700`) if missing, replaces a
    /// stale socket file left by a dead daemon, refuses if a live daemon
    /// answers there, and makes the socket `0600`.
    ///
    /// # Errors
    /// See [`SocketError`].
    pub fn bind(path: &Path) -> Result<Self, SocketError> {
        let io_err = |source| SocketError::Io {
            path: path.to_owned(),
            source,
        };
        if let Some(dir) = path
            .parent()
            .filter(|d| !d.as_os_str().is_empty() && !d.exists())
        {
            std::fs::create_dir_all(dir).map_err(io_err)?;
            std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
                .map_err(io_err)?;
        }
        match std::fs::symlink_metadata(path) {
            Ok(meta) if !meta.file_type().is_socket() => {
                return Err(SocketError::NotASocket(path.to_owned()));
            }
            Ok(_) => {
                if std::os::unix::net::UnixStream::connect(path).is_ok() {
                    return Err(SocketError::AlreadyRunning(path.to_owned()));
                }
                tracing::info!("replacing stale socket {}", path.display());
                std::fs::remove_file(path).map_err(io_err)?;
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(io_err(e)),
        }
        let listener = UnixListener::bind(path).map_err(io_err)?;
        // The directory is private already; this closes the socket too, in
        // case the user chose a shared directory with --socket.
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).map_err(io_err)?;
        Ok(Self {
            listener,
            path: path.to_owned(),
            refuse_governed: false,
            bridges: None,
        })
    }

    /// Refuses every peer that runs under a warden, itself or through an
    /// ancestor (see [`crate::barrier::is_governed`]): a process toolgate
    /// governs never steers it, whatever credential it presents. For the
    /// control socket; agents are governed by definition.
    pub fn refusing_governed(mut self) -> Self {
        self.refuse_governed = true;
        self
    }

    /// Takes a peer running one of `bridges` for the MCP client that
    /// started it (the agent socket; see [`BridgeExes`]).
    pub fn with_bridges(mut self, bridges: BridgeExes) -> Self {
        self.bridges = Some(bridges);
        self
    }

    /// The socket path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Accepts connections until `shutdown`; then waits for every
    /// connection to end (see [`McpServer::serve_with_hangup`]: the daemon
    /// bounds how long its calls and writes may take) and removes the
    /// socket file.
    pub async fn serve(self, server: McpServer, shutdown: CancellationToken) {
        let tasks = TaskTracker::new();
        let owner = rustix::process::getuid().as_raw();
        loop {
            let stream = tokio::select! {
                () = shutdown.cancelled() => break,
                accepted = self.listener.accept() => match accepted {
                    Ok((stream, _)) => stream,
                    Err(e) => {
                        tracing::warn!("accept failed: {e}");
                        continue;
                    }
                },
            };
            let Some(caller) = admit(&stream, owner, self.bridges.as_ref()) else {
                continue;
            };
            if self.refuse_governed
                && let Some(pid) = caller.pid.filter(|p| crate::barrier::is_governed(*p))
            {
                tracing::warn!(
                    "refused a control connection from pid {pid}: it runs under a warden, so toolgate governs it"
                );
                continue;
            }
            let session = Session::new(next_session_id(caller.pid), caller);
            let (server, shutdown) = (server.clone(), shutdown.clone());
            match hangup(&stream) {
                Ok(gone) => tasks.spawn(async move {
                    server
                        .serve_with_hangup(stream, session, shutdown, gone)
                        .await;
                }),
                Err(e) => {
                    tracing::warn!(
                        "cannot watch a connection for hang-ups ({e}); its calls run to the end if it leaves"
                    );
                    tasks.spawn(async move { server.serve(stream, session, shutdown).await })
                }
            };
        }
        tasks.close();
        tasks.wait().await;
        let _ = std::fs::remove_file(&self.path);
    }
}

/// The caller identity of an accepted peer, or `None` (logged) if its uid
/// is not ours.
fn admit(stream: &UnixStream, owner: u32, bridges: Option<&BridgeExes>) -> Option<Caller> {
    let cred = match stream.peer_cred() {
        Ok(c) => c,
        Err(e) => {
            tracing::warn!("refused a connection whose credentials could not be read: {e}");
            return None;
        }
    };
    if cred.uid() != owner {
        tracing::warn!(
            "refused a connection from uid {} (pid {}): only uid {owner} may use this socket",
            cred.uid(),
            cred.pid().map_or_else(|| "?".into(), |p| p.to_string())
        );
        return None;
    }
    Some(peer::caller_of(cred.pid(), cred.uid(), bridges))
}

fn next_session_id(pid: Option<i32>) -> String {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    match pid {
        Some(p) => format!("sock-{n}-pid{p}"),
        None => format!("sock-{n}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn socket_and_new_directory_are_owner_only() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run/toolgate/agent.sock");
        let s = AgentSocket::bind(&path).unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&path), 0o600);
        assert_eq!(mode(path.parent().unwrap()), 0o700);
        drop(s);
    }

    #[tokio::test]
    async fn a_live_socket_is_not_replaced_but_a_stale_one_is() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.sock");
        let live = AgentSocket::bind(&path).unwrap();
        let e = AgentSocket::bind(&path).unwrap_err();
        assert!(matches!(e, SocketError::AlreadyRunning(_)), "{e}");
        drop(live); // the file stays behind, like after a crash
        assert!(path.exists());
        AgentSocket::bind(&path).unwrap();
    }

    #[tokio::test]
    async fn a_regular_file_is_never_deleted() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("important.txt");
        std::fs::write(&path, "keep me").unwrap();
        assert!(matches!(
            AgentSocket::bind(&path).unwrap_err(),
            SocketError::NotASocket(_)
        ));
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "keep me");
    }
}
