//! `toolgate mcp-bridge`: relays stdio ↔ the agent socket, so an MCP client
//! that only speaks stdio uses the daemon with
//! `{"command": "toolgate", "args": ["mcp-bridge"]}`. Bytes are copied as
//! they are; framing and validation stay the daemon's job.
//!
//! MCP clients start the bridge with a stripped environment (HOME, PATH,
//! USER, SHELL, TERM, LOGNAME), so it finds the engine from HOME alone,
//! through the data dir's discovery file ([`crate::discovery::locate`]).

use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::net::UnixStream;

use crate::discovery::Located;
use crate::spawn::{SpawnError, SpawnPlan};

/// Why the bridge stopped.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BridgeError {
    /// No daemon listens on the socket.
    #[error("no toolgate daemon is listening on {}: {source}; start one with `toolgate serve`, or pass --spawn", .path.display())]
    NoDaemon {
        /// The socket path.
        path: std::path::PathBuf,
        /// The connect error.
        source: std::io::Error,
    },
    /// `--spawn` could not bring an engine up.
    #[error(transparent)]
    Spawn(#[from] SpawnError),
    /// Relaying failed.
    #[error("relay failed: {0}")]
    Io(#[from] std::io::Error),
}

/// Connects to the engine at `target` (see [`crate::discovery::locate`]).
/// With `spawn`, when nothing answers there, it connects to the data dir's
/// engine, starting one first only if no live engine owns the data dir
/// (see [`crate::spawn`]).
///
/// # Errors
/// See [`BridgeError`].
pub async fn connect(
    target: &Located,
    spawn: Option<&SpawnPlan>,
) -> Result<UnixStream, BridgeError> {
    let source = match UnixStream::connect(&target.agent).await {
        Ok(s) => return Ok(s),
        Err(source) => source,
    };
    let Some(plan) = spawn else {
        return Err(BridgeError::NoDaemon {
            path: target.agent.clone(),
            source,
        });
    };
    let info = crate::spawn::engine(plan).await?;
    if info.agent_socket != target.agent {
        tracing::info!(
            "the engine of {} (pid {}) listens on {}; using it",
            plan.data_dir.display(),
            info.pid,
            info.agent_socket.display()
        );
    }
    Ok(UnixStream::connect(&info.agent_socket).await?)
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
