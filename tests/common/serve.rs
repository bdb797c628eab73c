//! `toolgate serve` as a process of its own, on a temp dir of its own:
//! the way a user runs it, for the tests that signal it, kill it or read
//! its memory from `/proc`.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// The `toolgate` binary this test run built.
pub(crate) const TOOLGATE: &str = env!("CARGO_BIN_EXE_toolgate");

/// `toolgate serve` with its agent socket, data dir, config (written from
/// `config`) and file root all in `dir`; stdout piped for its ready line,
/// killed when dropped. Callers add their own flags, log level and stderr.
pub(crate) fn serve_command(dir: &Path, config: &str) -> Command {
    std::fs::create_dir_all(dir.join("root")).unwrap();
    std::fs::write(dir.join("config.toml"), config).unwrap();
    let mut cmd = Command::new(TOOLGATE);
    cmd.arg("serve")
        .arg("--socket")
        .arg(dir.join("agent.sock"))
        .arg("--data-dir")
        .arg(dir.join("data"))
        .arg("--config")
        .arg(dir.join("config.toml"))
        .arg("--root")
        .arg(dir.join("root"))
        .stdout(Stdio::piped())
        .kill_on_drop(true);
    cmd
}

/// Waits up to `within` for the ready line `serve` prints first and
/// checks it.
pub(crate) async fn ready(child: &mut Child, within: Duration) {
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let ready = tokio::time::timeout(within, lines.next_line())
        .await
        .expect("ready line")
        .unwrap()
        .unwrap_or_default();
    assert!(ready.contains("serving MCP on unix:"), "{ready}");
}
