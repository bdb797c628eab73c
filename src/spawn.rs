//! `mcp-bridge --spawn`: starting an engine for a data dir that has none,
//! fully detached from the client that asked (docs/architecture/overview.md,
//! "Processes and discovery").
//!
//! The engine is started as `toolgate serve --detach --data-dir D --socket
//! S …`: stdin from `/dev/null`, stdout and stderr appended to
//! `<data_dir>/engine.log` (`0600`), so it holds none of the client's pipes
//! (an MCP client waits for EOF on them; an engine that inherited one kept
//! the client from finishing). `--detach` makes the engine call
//! [`detach`] first thing, which puts it in a session of its own: the
//! client's terminal, its process group and signals sent to them are no
//! longer its. That is `setsid(2)` called by the engine itself, because
//! this crate forbids `unsafe` and so has no `pre_exec`; `process_group(0)`
//! alone would leave it in the client's session.
//!
//! It never makes a second engine on a data dir: the engine takes the data
//! dir's audit log as its writer before binding anything, so of two
//! starters only one wins; a detached loser exits with success (the data
//! dir has its engine) and every bridge waiting connects to the winner,
//! found through the discovery file.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::Duration;

use crate::discovery::{self, EngineInfo};

/// The log of a spawned engine: `<data_dir>/engine.log`.
pub const LOG_FILE: &str = "engine.log";

/// How often the spawner looks for the new engine's discovery file. Polling
/// with a deadline: the engine is another process, and its file appears in
/// well under a second.
const POLL: Duration = Duration::from_millis(20);

/// How to start an engine.
#[derive(Debug, Clone)]
pub struct SpawnPlan {
    /// The `toolgate` executable.
    pub exe: PathBuf,
    /// The data dir the engine is to own; its log goes there too.
    pub data_dir: PathBuf,
    /// The agent socket it listens on.
    pub socket: PathBuf,
    /// More arguments for `serve` (`--config`, `--root`, …).
    pub extra_args: Vec<OsString>,
    /// How long to wait for it to answer.
    pub wait: Duration,
}

impl SpawnPlan {
    /// A plan with the default wait (10 s: an engine starts in well under
    /// a second; upstream servers start after it answers).
    pub fn new(exe: PathBuf, data_dir: PathBuf, socket: PathBuf) -> Self {
        Self {
            exe,
            data_dir,
            socket,
            extra_args: Vec::new(),
            wait: Duration::from_secs(10),
        }
    }

    /// The spawned engine's log file.
    pub fn log_file(&self) -> PathBuf {
        self.data_dir.join(LOG_FILE)
    }
}

/// Why no engine could be started.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SpawnError {
    /// The data dir or the log file could not be prepared.
    #[error("cannot prepare {}: {source}", .path.display())]
    Prepare {
        /// The path.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// The process could not be started.
    #[error("cannot start `{} serve`: {source}", .exe.display())]
    Start {
        /// The executable.
        exe: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// The engine exited with an error before answering.
    #[error("the spawned engine exited ({status}) before it answered; see {}", .log.display())]
    Exited {
        /// Its exit status.
        status: ExitStatus,
        /// Its log.
        log: PathBuf,
    },
    /// No engine answered in time.
    #[error("no engine answered for {} within {}s after `toolgate serve` was started; see {}", .data_dir.display(), .waited.as_secs(), .log.display())]
    Timeout {
        /// The data dir.
        data_dir: PathBuf,
        /// How long it waited.
        waited: Duration,
        /// The spawned engine's log.
        log: PathBuf,
    },
}

/// Makes this process the leader of a new session: called by `toolgate
/// serve --detach` before anything else (see the module doc for why the
/// engine does it itself).
///
/// # Errors
/// `setsid(2)` failed (the process already leads a process group).
pub fn detach() -> std::io::Result<()> {
    rustix::process::setsid()?;
    Ok(())
}

/// The engine of the plan's data dir: the live one if there is one,
/// otherwise one started now (detached) and waited for until its
/// discovery file names it and its sockets answer.
///
/// # Errors
/// See [`SpawnError`]; each names the log file to read.
pub async fn engine(plan: &SpawnPlan) -> Result<EngineInfo, SpawnError> {
    if let Some(info) = discovery::find_live(&plan.data_dir).await {
        return Ok(info);
    }
    let child = start(plan)?;
    wait_for(plan, child).await
}

/// Starts `toolgate serve --detach …` with its stdio away from ours.
fn start(plan: &SpawnPlan) -> Result<Child, SpawnError> {
    let log = open_log(plan)?;
    let err_log = log.try_clone().map_err(|source| SpawnError::Prepare {
        path: plan.log_file(),
        source,
    })?;
    Command::new(&plan.exe)
        .arg("serve")
        .arg("--detach")
        .arg("--data-dir")
        .arg(&plan.data_dir)
        .arg("--socket")
        .arg(&plan.socket)
        .args(&plan.extra_args)
        .stdin(Stdio::null())
        .stdout(log)
        .stderr(err_log)
        .spawn()
        .map_err(|source| SpawnError::Start {
            exe: plan.exe.clone(),
            source,
        })
}

/// `<data_dir>/engine.log` for appending, `0600`, never through a link;
/// the data dir is made private (`0700`), as the audit log makes it.
fn open_log(plan: &SpawnPlan) -> Result<std::fs::File, SpawnError> {
    let prepare = |path: &Path| {
        let path = path.to_owned();
        move |source| SpawnError::Prepare { path, source }
    };
    crate::private_file::dir(&plan.data_dir).map_err(prepare(&plan.data_dir))?;
    let path = plan.log_file();
    crate::private_file::open(&path, true).map_err(prepare(&path))
}

/// Waits until the data dir has a live engine: ours, or, if ours lost the
/// race to another starter (it then exits with success), the winner.
async fn wait_for(plan: &SpawnPlan, mut child: Child) -> Result<EngineInfo, SpawnError> {
    let deadline = tokio::time::Instant::now() + plan.wait;
    loop {
        if let Some(info) = discovery::find_live(&plan.data_dir).await {
            reap(child);
            return Ok(info);
        }
        if let Ok(Some(status)) = child.try_wait()
            && !status.success()
        {
            return Err(SpawnError::Exited {
                status,
                log: plan.log_file(),
            });
        }
        if tokio::time::Instant::now() >= deadline {
            reap(child);
            return Err(SpawnError::Timeout {
                data_dir: plan.data_dir.clone(),
                waited: plan.wait,
                log: plan.log_file(),
            });
        }
        tokio::time::sleep(POLL).await;
    }
}

/// The engine stays our child until we exit; a thread waits for it, so if
/// it stops first it leaves no zombie behind while we run. The thread never
/// holds up our own exit.
fn reap(mut child: Child) {
    let spawned = std::thread::Builder::new()
        .name("toolgate-reap".into())
        .spawn(move || {
            let _ = child.wait();
        });
    if let Err(e) = spawned {
        tracing::debug!("cannot start the reaper thread: {e}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    /// A plan that runs `exe` (which ignores the `serve …` arguments) for
    /// a data dir that does not exist yet.
    fn plan(dir: &Path, exe: &str, wait: Duration) -> SpawnPlan {
        SpawnPlan {
            wait,
            ..SpawnPlan::new(PathBuf::from(exe), dir.join("data"), dir.join("agent.sock"))
        }
    }

    fn mode(p: &Path) -> u32 {
        std::fs::metadata(p).unwrap().permissions().mode() & 0o777
    }

    #[tokio::test]
    async fn an_engine_that_fails_to_start_is_reported_with_its_log() {
        let dir = tempfile::tempdir().unwrap();
        let plan = plan(dir.path(), "false", Duration::from_secs(30));
        let e = engine(&plan).await.unwrap_err();
        assert!(matches!(e, SpawnError::Exited { .. }), "{e}");
        assert!(e.to_string().contains("data/engine.log"), "{e}");
        // The data dir and the log were made private.
        assert_eq!(mode(&plan.data_dir), 0o700);
        assert_eq!(mode(&plan.log_file()), 0o600);
    }

    #[tokio::test]
    async fn an_engine_that_never_answers_times_out_naming_its_log() {
        let dir = tempfile::tempdir().unwrap();
        // `true` exits with success, as a loser of a start race does; no
        // winner ever answers.
        let plan = plan(dir.path(), "true", Duration::from_millis(300));
        let e = engine(&plan).await.unwrap_err();
        assert!(matches!(e, SpawnError::Timeout { .. }), "{e}");
        let msg = e.to_string();
        assert!(
            msg.contains("no engine answered for") && msg.contains("data/engine.log"),
            "{msg}"
        );
    }

    #[tokio::test]
    async fn a_missing_executable_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let plan = plan(dir.path(), "/nonexistent/toolgate", Duration::from_secs(1));
        let e = engine(&plan).await.unwrap_err();
        assert!(e.to_string().contains("/nonexistent/toolgate"), "{e}");
    }
}
