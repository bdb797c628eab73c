//! One file per upstream transport. Each turns its part of a
//! [`TransportSpec`] into a running rmcp client service, so everything above
//! this module (supervision, tool import, calls) is transport-agnostic:
//! rmcp's `Transport` trait is the one trait all four implement (no trait
//! of our own beside it), directly (`sse`) or through rmcp's adapters
//! (`stdio`, HTTP, `(Sink, Stream)` for `ws`).
//!
//! [`TransportSpec`]: crate::config::servers::TransportSpec

mod headers;
mod redirect;
mod sse;
mod stdio;
mod streamable_http;
mod ws;

use std::time::Duration;

use rmcp::ClientHandler;
use rmcp::service::{RoleClient, RunningService};

use super::errors::UpstreamError;
use super::stderr::StderrLog;
use crate::barrier::{Barrier, Spawn};
use crate::config::servers::{ServerSpec, TransportSpec};

pub use redirect::RedirectRefused;
pub use sse::SseClientTransport;
pub use ws::ws_transport;

/// A live connection to one server.
pub(crate) struct Connection<H: ClientHandler> {
    /// The rmcp client.
    pub(crate) service: RunningService<RoleClient, H>,
    /// The child's pid, which is also its process-group id (stdio only).
    pub(crate) pid: Option<u32>,
}

/// Connects to `spec`'s server and completes the MCP handshake within
/// `timeout`.
pub(crate) async fn connect<H: ClientHandler>(
    spec: &ServerSpec,
    handler: H,
    stderr: &StderrLog,
    timeout: Duration,
    barrier: &Barrier,
    stop_grace: Duration,
) -> Result<Connection<H>, UpstreamError> {
    let auth = spec.auth.as_ref();
    match &spec.transport {
        TransportSpec::Stdio {
            command,
            args,
            env,
            cwd,
        } => {
            let cmd = stdio::StdioCommand {
                command,
                args,
                env,
                cwd: cwd.as_deref(),
            };
            // The server and all it starts run confined, like a tool call;
            // after its stdin closes it gets the stop grace to exit.
            let spawn = Spawn::server(spec.unix_sockets, stop_grace);
            stdio::connect(handler, cmd, stderr, timeout, barrier, spawn).await
        }
        TransportSpec::Sse { url, headers } => {
            let h = headers::header_map(headers, auth)?;
            within(timeout, sse::connect(handler, url, h)).await
        }
        TransportSpec::StreamableHttp { url, headers } => {
            let h = headers::header_map(headers, auth)?;
            within(timeout, streamable_http::connect(handler, url, h)).await
        }
        TransportSpec::Websocket { url, headers } => {
            let h = headers::header_map(headers, auth)?;
            within(timeout, ws::connect(handler, url, h)).await
        }
    }
}

async fn within<T>(
    timeout: Duration,
    fut: impl Future<Output = Result<T, UpstreamError>>,
) -> Result<T, UpstreamError> {
    tokio::time::timeout(timeout, fut)
        .await
        .unwrap_or(Err(UpstreamError::ConnectTimeout(timeout)))
}

/// Ends a process group: SIGKILL to every member. Used after the leader
/// has exited or failed to stop, so helpers it spawned (`npx` → `node`)
/// are not left behind as orphans.
pub(crate) fn kill_group(pgid: u32) {
    if let Some(pid) = i32::try_from(pgid)
        .ok()
        .and_then(rustix::process::Pid::from_raw)
    {
        // ESRCH (group already gone) is the normal case.
        let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
    }
}
