//! A real `toolgate serve` in a temp dir of its own: its own HOME, XDG
//! dirs, data dir, config file and file root, HTTP on a free port. The
//! harness reads its endpoints as any client would: the socket from what
//! `serve` prints, the HTTP endpoint and console from the discovery file
//! and the token files it names.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use anyhow::{Context, bail};
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Child;

use crate::wait::until;

/// How long `serve` gets to print that it is ready.
const READY_WITHIN: Duration = Duration::from_secs(30);

/// Where a daemon listens.
#[derive(Debug, Clone)]
pub struct Endpoints {
    /// The agent socket.
    pub socket: PathBuf,
    /// The agents' MCP-over-HTTP URL (`http://127.0.0.1:PORT/mcp`).
    pub mcp_url: String,
    /// Its bearer token.
    pub mcp_token: String,
    /// The console's origin (`http://127.0.0.1:PORT`).
    pub origin: String,
    /// The console's bearer token.
    pub console_token: String,
}

/// A running (or stopped, between [`Daemon::kill9`] and
/// [`Daemon::restart`]) `toolgate serve`.
pub struct Daemon {
    dir: tempfile::TempDir,
    bin: PathBuf,
    child: Option<Child>,
    /// Its process id (the last one, once stopped).
    pub pid: u32,
    /// Where it listens.
    pub at: Endpoints,
}

impl Daemon {
    /// Starts `bin serve` with `config` (TOML) as its config file; `prepare`
    /// runs on the daemon's directory first (files in `root/`, fixtures).
    pub async fn start(
        bin: &Path,
        config: &str,
        prepare: impl FnOnce(&Path),
    ) -> anyhow::Result<Self> {
        let dir = tempfile::Builder::new()
            .prefix("tg-reliability-")
            .tempdir()?;
        let base = dir.path();
        for d in ["home", "root", "data", "run", "config", "share"] {
            std::fs::create_dir_all(base.join(d))?;
        }
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(base.join("run"), std::fs::Permissions::from_mode(0o700))?;
        std::fs::set_permissions(base.join("data"), std::fs::Permissions::from_mode(0o700))?;
        std::fs::write(base.join("config/config.toml"), config)?;
        prepare(base);
        let mut d = Self {
            dir,
            bin: bin.to_owned(),
            child: None,
            pid: 0,
            at: Endpoints {
                socket: PathBuf::new(),
                mcp_url: String::new(),
                mcp_token: String::new(),
                origin: String::new(),
                console_token: String::new(),
            },
        };
        d.launch().await?;
        Ok(d)
    }

    /// A daemon whose root holds the escape lists' layout (links to files
    /// and directories outside it, an `out` link to the outside dir), with
    /// that layout as its paths resolve.
    pub async fn with_escape_layout(
        bin: &Path,
        config: &str,
    ) -> anyhow::Result<(Self, crate::escapes::PathLayout)> {
        use crate::escapes::PathLayout;
        let d = Self::start(bin, config, |dir| {
            let l = PathLayout::create(dir);
            l.link_files();
            l.link_dirs();
            let _ = std::os::unix::fs::symlink(&l.outside, l.root.join("out"));
        })
        .await?;
        let layout = PathLayout {
            root: std::fs::canonicalize(d.root())?,
            outside: std::fs::canonicalize(d.dir().join("outside"))?,
        };
        Ok((d, layout))
    }

    /// The daemon's directory (`root/`, `data/`, `config/config.toml`, ...).
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// Its file root.
    pub fn root(&self) -> PathBuf {
        self.dir().join("root")
    }

    /// Its audit database.
    pub fn audit_db(&self) -> PathBuf {
        self.dir().join("data/audit.db")
    }

    /// `tool` with `args` over the socket and over HTTP (as clients named
    /// after `client`), then the console's snapshot: one request on each
    /// surface. Returns the socket's and the HTTP endpoint's replies.
    ///
    /// # Errors
    /// A surface did not answer.
    pub async fn each_surface(
        &self,
        client: &str,
        tool: &str,
        args: Value,
    ) -> anyhow::Result<[Value; 2]> {
        let mut a = crate::client::SocketAgent::connect(&self.at.socket, client).await?;
        let (socket, _) = a.call(tool, args.clone()).await?;
        let h = crate::client::HttpAgent::connect(&self.at, &format!("{client}-http")).await?;
        let (http, _) = h.call(1, tool, args).await?;
        crate::client::Console::new(&self.at).snapshot().await?;
        Ok([socket, http])
    }

    /// [`Self::each_surface`] with `fs_list` of the root, a call no policy
    /// holds. A daemon that has served nothing yet has not read most of
    /// its own program from disk; after this, the pages of code a load
    /// runs are mostly there already, so "idle" is a daemon at rest, and
    /// memory that stays after a load is memory it holds.
    ///
    /// # Errors
    /// A surface did not answer.
    pub async fn warm_up(&self) -> anyhow::Result<()> {
        let replies = self
            .each_surface("warm-up", "fs_list", serde_json::json!({"path": "."}))
            .await?;
        for (surface, r) in ["socket", "HTTP"].iter().zip(&replies) {
            anyhow::ensure!(answered(r), "{surface} fs_list answered {r}");
        }
        Ok(())
    }

    /// Everything it wrote to stderr, over every launch.
    pub fn stderr(&self) -> String {
        std::fs::read_to_string(self.dir().join("stderr.log")).unwrap_or_default()
    }

    async fn launch(&mut self) -> anyhow::Result<()> {
        let base = self.dir.path().to_owned();
        let stderr = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(base.join("stderr.log"))?;
        let mut cmd = crate::serve_env::serve(&self.bin, &base, "reliability");
        cmd.args(["--http-port", "0"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::from(stderr))
            .kill_on_drop(true);
        let mut child = cmd
            .spawn()
            .with_context(|| format!("cannot start {}", self.bin.display()))?;
        self.pid = child.id().context("no pid")?;
        let stdout = child.stdout.take().context("no stdout")?;
        let mut lines = BufReader::new(stdout).lines();
        let ready = async {
            let mut socket = None;
            while let Some(line) = lines.next_line().await? {
                if let Some(rest) = line.split_once("serving MCP on unix:") {
                    socket = Some(PathBuf::from(rest.1.trim()));
                }
                if line.starts_with("console: ") {
                    return Ok::<_, anyhow::Error>(socket);
                }
            }
            Ok(None)
        };
        let socket = match tokio::time::timeout(READY_WITHIN, ready).await {
            Ok(Ok(Some(s))) => s,
            other => {
                let _ = child.start_kill();
                bail!(
                    "toolgate serve was not ready within {READY_WITHIN:?} ({other:?}); stderr:\n{}",
                    self.stderr()
                );
            }
        };
        // Whatever it prints later is drained, so it never blocks on stdout.
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        self.child = Some(child);
        self.at = read_endpoints(&base.join("data"), socket)?;
        Ok(())
    }

    /// SIGKILL, and the child reaped.
    pub async fn kill9(&mut self) -> anyhow::Result<()> {
        if let Some(mut c) = self.child.take() {
            c.start_kill()?;
            c.wait().await?;
        }
        Ok(())
    }

    /// SIGTERM; waits (10 s at most) for it to exit. Returns its exit
    /// status, `None` if it had to be killed.
    pub async fn stop(&mut self) -> Option<std::process::ExitStatus> {
        let mut c = self.child.take()?;
        let pid = rustix::process::Pid::from_raw(i32::try_from(self.pid).ok()?)?;
        let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
        match tokio::time::timeout(Duration::from_secs(10), c.wait()).await {
            Ok(Ok(status)) => Some(status),
            _ => {
                let _ = c.start_kill();
                let _ = c.wait().await;
                None
            }
        }
    }

    /// Starts it again on the same dirs (after [`Self::kill9`] or
    /// [`Self::stop`]).
    pub async fn restart(&mut self) -> anyhow::Result<()> {
        self.launch().await
    }

    /// Whether its process still runs.
    pub fn running(&mut self) -> bool {
        self.child
            .as_mut()
            .is_some_and(|c| matches!(c.try_wait(), Ok(None)))
    }
}

/// The endpoints from the discovery file and the token files it names.
fn read_endpoints(data: &Path, socket: PathBuf) -> anyhow::Result<Endpoints> {
    let read_json = |p: &Path| -> anyhow::Result<Value> {
        let text = std::fs::read_to_string(p).with_context(|| format!("read {}", p.display()))?;
        Ok(serde_json::from_str(&text)?)
    };
    let engine = read_json(&data.join("engine.json"))?;
    let http = read_json(Path::new(
        engine["http"]["token_file"]
            .as_str()
            .context("no http token file")?,
    ))?;
    let console_file = PathBuf::from(
        engine["console"]["token_file"]
            .as_str()
            .context("no console token file")?,
    );
    Ok(Endpoints {
        socket,
        mcp_url: http["url"].as_str().context("no url")?.to_owned(),
        mcp_token: http["token"].as_str().context("no token")?.to_owned(),
        origin: engine["console"]["url"]
            .as_str()
            .context("no console url")?
            .to_owned(),
        console_token: std::fs::read_to_string(console_file)?.trim().to_owned(),
    })
}

/// Waits until the daemon at `pid` has no more than `limit` open file
/// descriptors (10 s at most); returns the last count.
pub async fn fds_settle(pid: u32, limit: usize) -> usize {
    let mut last = crate::procfs::fd_count(pid);
    let _ = until(Duration::from_secs(10), || {
        last = crate::procfs::fd_count(pid);
        std::future::ready((last <= limit).then_some(()))
    })
    .await;
    last
}

/// A JSON-RPC answer: a result (a refusal among them, where a section's
/// config hides the tool) or an error.
fn answered(r: &Value) -> bool {
    r["result"].is_object() || r["error"].is_object()
}
