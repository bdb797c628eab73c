//! `shell_exec`: run a command with `sh -c`, critical risk, always governed.
//!
//! Contract:
//! - The working directory is confined to the configured roots (argument
//!   `cwd`, default the first root; refused when no roots are configured).
//!   The default is declared on the guard, so a call that has no directory
//!   to run in is refused by the guard stage before any person is asked.
//!   This only decides where the command *starts*: a shell can reach
//!   anything the user can, which is why the tool is `Risk::Critical` and
//!   policy puts it in front of a person.
//! - The command runs under the barrier (`crate::barrier`): confined by its
//!   warden, which keeps it away from toolgate's own files, credentials and
//!   control plane, whatever it runs. When it exits, times out, or the call
//!   is dropped (cancelled by the pipeline), everything it started is
//!   killed, the daemons that left its process group (`setsid`, double
//!   forks) included ([`Leash`]); `kill_on_drop` alone would only kill the
//!   top process and leave its children running as orphans.
//! - stdout and stderr are captured separately, each bounded to
//!   [`OUTPUT_LIMIT`] bytes (the rest is drained and counted, so a chatty
//!   command never blocks on a full pipe).
//! - A non-zero exit is a result with `is_error: true` carrying the exit code
//!   and output (the model can read and act on it); a timeout is
//!   [`CallError::Timeout`].
//!
//! Unix only (process groups, `sh`).

use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::pin::pin;
use std::process::{ExitStatus, Stdio};
use std::sync::Arc;
use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};

use tokio::sync::oneshot;

use super::fs::BuiltTool;
use crate::barrier::warden::feed_frame;
use crate::barrier::{Barrier, Leash, Spawn};
use crate::context::CallContext;
use crate::error::CallError;
use crate::guard::path::PathRoots;
use crate::tool::{
    Annotations, GuardKind, Risk, ToolDef, ToolNameError, ToolResult, TypedTool, typed_tool,
};

/// Timeout when the caller gives none (and the configured maximum allows).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
/// Most bytes kept of each of stdout and stderr.
pub const OUTPUT_LIMIT: usize = 1024 * 1024;
/// How long to keep reading output after the group was killed. Only a
/// process that left the group (`setsid`) can still hold the pipes open then;
/// waiting for it would turn a finished command into a timeout.
const PIPE_GRACE: Duration = Duration::from_millis(500);

/// The `shell_exec` tool.
///
/// # Errors
/// The tool name breaks the naming rule (a bug in this module).
pub fn tool(
    roots: Arc<PathRoots>,
    max_timeout: Duration,
    barrier: Barrier,
) -> Result<BuiltTool, ToolNameError> {
    typed_tool(ShellExec::new(roots, max_timeout, barrier))
}

/// Run a shell command with `sh -c` and return its exit code, stdout and
/// stderr. The command is killed, with everything it started, when it runs
/// past its timeout. Output beyond 1 MiB per stream is dropped (the result
/// says how much).
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ShellExecArgs {
    /// The command line, run by `sh -c`.
    pub command: String,
    /// Working directory: relative to the first allowed root or absolute
    /// inside an allowed root (default: the first allowed root).
    pub cwd: Option<String>,
    /// Timeout in milliseconds (default 30000; capped by the configured
    /// maximum).
    #[schemars(range(min = 1))]
    pub timeout_ms: Option<u64>,
}

/// `shell_exec`, configured with the roots its `cwd` must stay in and the
/// longest timeout a caller may ask for.
#[derive(Debug)]
pub struct ShellExec {
    roots: Arc<PathRoots>,
    max_timeout: Duration,
    barrier: Barrier,
}

impl ShellExec {
    /// A shell that starts in `roots` and runs under `barrier`.
    pub fn new(roots: Arc<PathRoots>, max_timeout: Duration, barrier: Barrier) -> Self {
        Self {
            roots,
            max_timeout,
            barrier,
        }
    }

    /// The timeout for one call: what was asked, else the default, never
    /// more than the configured maximum.
    fn timeout(&self, asked_ms: Option<u64>) -> Duration {
        asked_ms
            .map_or(DEFAULT_TIMEOUT, Duration::from_millis)
            .min(self.max_timeout)
    }
}

impl TypedTool for ShellExec {
    type Args = ShellExecArgs;
    const NAME: &'static str = "shell_exec";

    fn configure(def: ToolDef) -> ToolDef {
        def.with_risk(Risk::Critical)
            .with_guard_default("cwd", GuardKind::Path, "")
            .with_guard("command", GuardKind::Command)
            .with_annotations(Annotations {
                title: Some("Run shell command".into()),
                read_only_hint: Some(false),
                destructive_hint: Some(true),
                open_world_hint: Some(true),
                ..Annotations::default()
            })
    }

    async fn run(&self, args: ShellExecArgs, _ctx: &CallContext) -> Result<ToolResult, CallError> {
        let cwd = self
            .roots
            .check(args.cwd.as_deref().unwrap_or(""))
            .map_err(|e| e.into_call_error("cwd"))?;
        run_command(
            &self.barrier,
            &args.command,
            &cwd.absolute(),
            self.timeout(args.timeout_ms),
        )
        .await
    }
}

/// One captured stream: the first [`OUTPUT_LIMIT`] bytes and a count of the
/// rest.
#[derive(Default)]
pub(crate) struct Captured {
    /// What was kept.
    pub bytes: Vec<u8>,
    /// How many more bytes came.
    pub dropped: u64,
}

impl Captured {
    /// Reads `r` to its end (or first error), keeping what fits.
    async fn fill(&mut self, r: Option<impl AsyncRead + Unpin>) {
        let Some(mut r) = r else { return };
        let mut chunk = [0u8; 8192];
        while let Ok(n @ 1..) = r.read(&mut chunk).await {
            let room = OUTPUT_LIMIT.saturating_sub(self.bytes.len()).min(n);
            self.bytes.extend_from_slice(&chunk[..room]);
            self.dropped += (n - room) as u64;
        }
    }
}

async fn run_command(
    barrier: &Barrier,
    command: &str,
    cwd: &Path,
    limit: Duration,
) -> Result<ToolResult, CallError> {
    let program = Program {
        name: "shell_exec",
        argv: &["sh".as_ref(), "-c".as_ref(), command.as_ref()],
        cwd,
        stdin: None,
        limit,
    };
    let ran = run_program(barrier, &program).await?;
    Ok(render(ran.status, &ran.out, &ran.err, ran.abandoned))
}

/// One governed program to run to its end: what `shell_exec` and plugin
/// command tools share, so both get the same barrier, output limit, group
/// kill and timeout.
pub(crate) struct Program<'a> {
    /// How errors name it.
    pub name: &'a str,
    /// The program and its arguments (no shell in between).
    pub argv: &'a [&'a std::ffi::OsStr],
    /// Where it starts.
    pub cwd: &'a Path,
    /// Bytes written to its stdin, which is then closed; `None`: stdin is
    /// `/dev/null`.
    pub stdin: Option<Vec<u8>>,
    /// How long it may run.
    pub limit: Duration,
}

/// How a [`Program`] ended.
pub(crate) struct Ran {
    pub status: ExitStatus,
    pub out: Captured,
    pub err: Captured,
    /// Output stopped being read because an escaped process held it.
    pub abandoned: bool,
}

/// Runs `p` under `barrier` to its end. Dropping the future (a cancelled
/// call) kills it and everything it started.
///
/// # Errors
/// The barrier refused it, it could not start, or it ran past its limit
/// ([`CallError::Timeout`]).
pub(crate) async fn run_program(barrier: &Barrier, p: &Program<'_>) -> Result<Ran, CallError> {
    let name = p.name;
    let Some((program, args)) = p.argv.split_first() else {
        return Err(CallError::tool_failed(format!(
            "{name} has no program to run"
        )));
    };
    let spawn = match p.stdin {
        Some(_) => Spawn::fed(),
        None => Spawn::call(),
    };
    let mut cmd = barrier
        .command(program, spawn)
        .map_err(|e| CallError::tool_failed(format!("{name} cannot run: {e}")))?;
    cmd.args(args.iter())
        .current_dir(p.cwd)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if p.stdin.is_some() {
        cmd.stdin(Stdio::piped());
    }
    let mut child = cmd.spawn().map_err(|e| {
        CallError::tool_failed(format!(
            "cannot start `{}` in `{}`: {e}",
            program.to_string_lossy(),
            p.cwd.display()
        ))
    })?;
    let warden = barrier.has_warden();
    let input = match &p.stdin {
        // Under a warden, its stdin: the input framed, then the lifeline.
        Some(bytes) if warden => child.stdin.take().map(|pipe| (pipe, feed_frame(bytes))),
        Some(bytes) => child.stdin.take().map(|pipe| (pipe, bytes.clone())),
        None => None,
    };
    // Declared after `child`, so it is dropped (and ends the program) first.
    let group = Leash::of(&mut child, warden);
    let (stdout, stderr) = (child.stdout.take(), child.stderr.take());
    let (mut out, mut err) = (Captured::default(), Captured::default());
    let feed = async {
        if let Some((mut pipe, bytes)) = input {
            // A program that exits without reading breaks the pipe: not
            // an error of the call, its exit status says what happened.
            let _ = pipe.write_all(&bytes).await;
            if warden {
                group.hold(pipe);
            }
        }
    };
    let finished = {
        let (exited_tx, exited_rx) = oneshot::channel::<()>();
        let waiter = async {
            let status = child.wait().await;
            // Background jobs die with the command; this also closes the
            // pipes they inherited, so the readers below reach their end.
            group.release();
            let _ = exited_tx.send(());
            status
        };
        let readers = async {
            let both = async { tokio::join!(out.fill(stdout), err.fill(stderr), feed) };
            let grace = async {
                let _ = exited_rx.await;
                tokio::time::sleep(PIPE_GRACE).await;
            };
            tokio::select! {
                _ = both => false,
                () = grace => true,
            }
        };
        let work = pin!(async { tokio::join!(waiter, readers) });
        match tokio::time::timeout(p.limit, work).await {
            Ok(done) => done,
            Err(_) => {
                group.cut();
                return Err(CallError::Timeout { after: p.limit });
            }
        }
    };
    let (status, abandoned) = finished;
    let status = status.map_err(|e| CallError::tool_failed(format!("waiting for {name}: {e}")))?;
    Ok(Ran {
        status,
        out,
        err,
        abandoned,
    })
}

fn render(status: ExitStatus, out: &Captured, err: &Captured, abandoned: bool) -> ToolResult {
    let mut text = match (status.code(), status.signal()) {
        (Some(code), _) => format!("exit code: {code}"),
        (None, Some(sig)) => format!("killed by signal {sig}"),
        (None, None) => "exit status unknown".to_owned(),
    };
    section(&mut text, "stdout", out);
    section(&mut text, "stderr", err);
    if out.bytes.is_empty() && err.bytes.is_empty() {
        text.push_str("\n(no output)");
    }
    if abandoned {
        text.push_str(
            "\n[stopped reading output: a process that left the command's process group still holds it open]",
        );
    }
    let mut r = if status.success() {
        ToolResult::text(text)
    } else {
        ToolResult::error(text)
    };
    r.meta.insert("exit_code".into(), json!(status.code()));
    r.meta.insert("signal".into(), json!(status.signal()));
    r.meta.insert("stdout_dropped".into(), json!(out.dropped));
    r.meta.insert("stderr_dropped".into(), json!(err.dropped));
    r
}

fn section(text: &mut String, name: &str, c: &Captured) {
    if c.bytes.is_empty() && c.dropped == 0 {
        return;
    }
    text.push_str(&format!("\n--- {name} ---\n"));
    text.push_str(&String::from_utf8_lossy(&c.bytes));
    if c.dropped > 0 {
        text.push_str(&format!(
            "\n[{} more bytes of {name} dropped; output is capped at {OUTPUT_LIMIT} bytes]",
            c.dropped
        ));
    }
}

#[cfg(test)]
#[path = "shell_tests.rs"]
mod tests;
