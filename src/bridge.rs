//! `toolgate mcp-bridge`: relays stdio ↔ the agent socket, so an MCP client
//! that only speaks stdio uses the daemon with
//! `{"command": "toolgate", "args": ["mcp-bridge"]}`. Bytes are copied as
//! they are; framing and validation stay the daemon's job.
//!
//! MCP clients start the bridge with a stripped environment (HOME, PATH,
//! USER, SHELL, TERM, LOGNAME), so it finds the engine from HOME alone,
//! through the data dir's discovery file ([`crate::discovery::locate`]).

use std::future::Future;
use std::os::fd::BorrowedFd;

use rustix::event::{PollFd, PollFlags, poll};
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

/// The notification that names the client behind the bridge
/// (`mcp-bridge --client Cursor`): the engine then calls the caller
/// "Cursor" in approvals, Live and the audit, whatever name the client's
/// own `initialize` gives. It is sent before anything the client says, and
/// like that name it is the client's say only: it labels, it never grants
/// (see `docs/agent-protocol.md`, "Client label").
pub const CLIENT_LABEL_METHOD: &str = "notifications/toolgate/client";

/// Sends [`CLIENT_LABEL_METHOD`] with `label` on `stream`; call it before
/// [`relay`].
///
/// # Errors
/// The socket write failed.
pub async fn announce_label(stream: &mut UnixStream, label: &str) -> Result<(), BridgeError> {
    let line = serde_json::json!({
        "jsonrpc": "2.0",
        "method": CLIENT_LABEL_METHOD,
        "params": {"label": label},
    });
    let mut bytes = line.to_string().into_bytes();
    bytes.push(b'\n');
    stream.write_all(&bytes).await?;
    Ok(())
}

/// Relays `input` → socket and socket → `output` until the socket closes.
/// When `input` ends, the socket's write side is shut so the daemon sees
/// EOF, and replies still in flight are relayed before returning.
///
/// # Errors
/// I/O errors on either side.
pub async fn relay<I, O>(stream: UnixStream, input: I, output: O) -> Result<(), BridgeError>
where
    I: AsyncRead + Unpin,
    O: AsyncWrite + Unpin,
{
    relay_until(stream, input, output, std::future::pending()).await
}

/// Like [`relay`], but returns as soon as `output_gone` resolves (see
/// [`reader_gone`]): the client that reads `output` is gone, so nobody
/// wants the replies still in flight. Returning closes the socket, and
/// the daemon, seeing it hang up, cancels the calls this client left
/// (a pending approval among them). Without this, an MCP client that died
/// with a call waiting for approval would leave the bridge waiting for a
/// reply nobody reads, and the request pending.
///
/// # Errors
/// I/O errors on either side.
pub async fn relay_until<I, O, G>(
    stream: UnixStream,
    mut input: I,
    mut output: O,
    output_gone: G,
) -> Result<(), BridgeError>
where
    I: AsyncRead + Unpin,
    O: AsyncWrite + Unpin,
    G: Future<Output = ()>,
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
    let (u, d) = tokio::select! {
        both = async { tokio::join!(up, down) } => both,
        () = output_gone => {
            tracing::debug!("the client stopped reading; closing the connection");
            return Ok(());
        }
    };
    d?;
    // A client that closed stdin early is normal; a broken upstream write
    // is only an error if replies also failed.
    if let Err(e) = u {
        tracing::debug!("stdin side ended with {e}");
    }
    Ok(())
}

/// A future that resolves once nobody reads `fd` any more: the read end of
/// the pipe is closed, or the socket's peer hung up (`POLLERR` or
/// `POLLHUP`). Anything else (a terminal, a file) never resolves.
///
/// The wait is a `poll(2)` on a thread of its own rather than the tokio
/// reactor: registering the descriptor there would need it non-blocking,
/// which would change the very stdout that `tokio::io::stdout` writes to
/// with blocking writes. The thread ends with the process.
///
/// # Errors
/// The descriptor could not be duplicated or the thread not started.
pub fn reader_gone(fd: BorrowedFd<'_>) -> std::io::Result<impl Future<Output = ()> + use<>> {
    let fd = fd.try_clone_to_owned()?;
    let (tx, rx) = tokio::sync::oneshot::channel();
    std::thread::Builder::new()
        .name("toolgate-stdout-watch".into())
        .spawn(move || {
            // No events asked for: poll reports only errors and hang-ups.
            let mut fds = [PollFd::new(&fd, PollFlags::empty())];
            loop {
                match poll(&mut fds, None) {
                    Ok(_) if fds[0].revents().intersects(PollFlags::ERR | PollFlags::HUP) => {
                        let _ = tx.send(());
                        return;
                    }
                    Ok(_) | Err(rustix::io::Errno::INTR) => {}
                    Err(_) => return,
                }
            }
        })?;
    Ok(async move {
        if rx.await.is_err() {
            // The watch gave up (an invalid descriptor): never resolve.
            std::future::pending::<()>().await;
        }
    })
}
