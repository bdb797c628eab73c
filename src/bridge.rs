//! `toolgate mcp-bridge`: relays stdio ↔ the agent socket, so an MCP client
//! that only speaks stdio uses the daemon with
//! `{"command": "toolgate", "args": ["mcp-bridge"]}`. Bytes are copied as
//! they are; framing and validation stay the daemon's job.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::net::UnixStream;

/// Why the bridge stopped.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BridgeError {
    /// No daemon listens on the socket.
    #[error("no toolgate daemon is listening on {}: {source}; start one with `toolgate serve`, or pass --spawn", .path.display())]
    NoDaemon {
        /// The socket path.
        path: PathBuf,
        /// The connect error.
        source: std::io::Error,
    },
    /// `--spawn` started a daemon that did not come up.
    #[error("started `toolgate serve` but it did not listen on {} within {}s", .path.display(), .waited.as_secs())]
    SpawnTimeout {
        /// The socket path.
        path: PathBuf,
        /// How long we waited.
        waited: Duration,
    },
    /// Starting the daemon failed.
    #[error("cannot start `toolgate serve`: {0}")]
    Spawn(std::io::Error),
    /// Relaying failed.
    #[error("relay failed: {0}")]
    Io(#[from] std::io::Error),
}

/// Connects to `socket`, starting a daemon first if `spawn` and none runs.
///
/// # Errors
/// See [`BridgeError`].
pub async fn connect(socket: &Path, spawn: bool) -> Result<UnixStream, BridgeError> {
    match UnixStream::connect(socket).await {
        Ok(s) => Ok(s),
        Err(source) if !spawn => Err(BridgeError::NoDaemon {
            path: socket.to_owned(),
            source,
        }),
        Err(_) => spawn_daemon(socket).await,
    }
}

async fn spawn_daemon(socket: &Path) -> Result<UnixStream, BridgeError> {
    let exe = std::env::current_exe().map_err(BridgeError::Spawn)?;
    std::process::Command::new(exe)
        .arg("serve")
        .arg("--socket")
        .arg(socket)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .process_group(0)
        .spawn()
        .map_err(BridgeError::Spawn)?;
    let waited = Duration::from_secs(10);
    let deadline = tokio::time::Instant::now() + waited;
    // Poll with a bounded deadline: the daemon binds in well under a second.
    while tokio::time::Instant::now() < deadline {
        if let Ok(s) = UnixStream::connect(socket).await {
            return Ok(s);
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Err(BridgeError::SpawnTimeout {
        path: socket.to_owned(),
        waited,
    })
}

/// Relays `input` → socket and socket → `output` until the socket closes.
/// When `input` ends, the socket's write side is shut so the daemon sees
/// EOF, and replies still in flight are relayed before returning.
///
/// # Errors
/// I/O errors on either side.
pub async fn relay<I, O>(stream: UnixStream, mut input: I, mut output: O) -> Result<(), BridgeError>
where
    I: AsyncRead + Unpin,
    O: AsyncWrite + Unpin,
{
    let (mut rd, mut wr) = stream.into_split();
    let up = async {
        tokio::io::copy(&mut input, &mut wr).await?;
        wr.shutdown().await
    };
    let down = async {
        tokio::io::copy(&mut rd, &mut output).await?;
        output.flush().await
    };
    let (u, d) = tokio::join!(up, down);
    d?;
    // A client that closed stdin early is normal; a broken upstream write
    // is only an error if replies also failed.
    if let Err(e) = u {
        tracing::debug!("stdin side ended with {e}");
    }
    Ok(())
}
