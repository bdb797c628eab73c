//! Stdio servers: a child process speaking MCP on stdin/stdout, run under
//! the barrier's warden like every process toolgate starts for agents
//! (`crate::barrier`): a server cannot reach toolgate's own files or
//! control plane either, whatever its tools do.
//!
//! The child is spawned as the leader of its own process group
//! (`process_group(0)`), so toolgate can end it *and everything it spawned*
//! with one signal to the group: `npx`-style launchers otherwise leave the
//! real server behind as an orphan. Its stderr goes to the server's ring
//! buffer. rmcp's `TokioChildProcess` kills the leader when dropped; the
//! supervisor kills the group.

use std::collections::BTreeMap;
use std::process::Stdio;
use std::time::Duration;

use rmcp::ClientHandler;
use rmcp::ServiceExt;
use rmcp::transport::TokioChildProcess;

use super::{Connection, kill_group};
use crate::barrier::{Barrier, Spawn};
use crate::upstream::errors::UpstreamError;
use crate::upstream::stderr::StderrLog;

/// What to run.
pub(super) struct StdioCommand<'a> {
    pub(super) command: &'a str,
    pub(super) args: &'a [String],
    pub(super) env: &'a BTreeMap<String, String>,
    pub(super) cwd: Option<&'a str>,
}

/// Spawns the server and completes the handshake within `timeout`; on any
/// failure the whole process group is killed before returning.
pub(super) async fn connect<H: ClientHandler>(
    handler: H,
    c: StdioCommand<'_>,
    stderr: &StderrLog,
    timeout: Duration,
    barrier: &Barrier,
    spawn: Spawn,
) -> Result<Connection<H>, UpstreamError> {
    let mut cmd = barrier
        .command(c.command, spawn)
        .map_err(|e| UpstreamError::Spawn {
            command: c.command.to_owned(),
            source: std::io::Error::new(std::io::ErrorKind::PermissionDenied, e.to_string()),
        })?;
    cmd.args(c.args).envs(c.env).kill_on_drop(true);
    if let Some(dir) = c.cwd {
        cmd.current_dir(dir);
    }
    let (transport, err) = TokioChildProcess::builder(cmd)
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|source| UpstreamError::Spawn {
            command: c.command.to_owned(),
            source,
        })?;
    let pid = transport.id();
    if let Some(err) = err {
        tokio::spawn(stderr.clone().pump(err));
    }
    let result = match tokio::time::timeout(timeout, handler.serve(transport)).await {
        Ok(Ok(service)) => Ok(Connection { service, pid }),
        Ok(Err(e)) => Err(UpstreamError::Handshake(e.to_string())),
        Err(_) => Err(UpstreamError::ConnectTimeout(timeout)),
    };
    if result.is_err() {
        pid.into_iter().for_each(kill_group);
    }
    result
}
