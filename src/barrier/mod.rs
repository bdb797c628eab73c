//! The barrier between what toolgate governs and toolgate itself.
//!
//! toolgate's promise is that an agent cannot govern itself: nothing a
//! governed tool starts may decide an approval, change policy, rules, pins
//! or the config, read a credential, or write toolgate's data. Text checks
//! on arguments (`crate::guard::protect`) refuse the obvious attempts
//! early; the guarantee comes from the kernel, in three layers:
//!
//! 1. **Confinement** ([`warden`]): every process toolgate starts for a
//!    governed call — `shell_exec`, stdio upstream servers, and all they
//!    start — runs under a warden that hides toolgate's config, data and
//!    runtime dirs with Landlock and denies Unix sockets with seccomp.
//!    Landlock also keeps confined processes from tracing or reading the
//!    memory of any process outside their domain.
//! 2. **Credentials** ([`credential`]): the control socket serves only
//!    peers that present the control credential, a file in the data dir
//!    that confined processes cannot read; the console needs its own login
//!    link or bearer token, kept the same way and never logged.
//! 3. **Ancestry** ([`is_governed`]): a control peer with a warden among
//!    its ancestors is refused, credential or not.
//!
//! Where the kernel cannot confine, [`BarrierStatus`] says so (the console,
//! `toolgate doctor`), and shell-like tools are refused unless the config
//! chooses to run them unconfined. docs/self-protection.md has the whole
//! account, with what it costs and what stays out of reach.

mod caps;
pub mod credential;
mod landlock;
mod leash;
pub mod procfs;
mod rules;
mod seccomp;
pub mod shield;
pub mod status;
pub mod warden;

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

pub use leash::Leash;
pub use shield::{Reach, Shield};
pub use status::{BarrierLevel, BarrierStatus, Probe};
pub use warden::Stdin;

/// What to do when the kernel cannot confine governed processes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum WhenUnavailable {
    /// Refuse shell-like tools (the default: strict).
    #[default]
    Refuse,
    /// Run them unconfined; the console shows the barrier as off.
    Run,
}

/// The `[barrier]` settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BarrierSettings {
    /// When the kernel cannot confine.
    pub when_unavailable: WhenUnavailable,
    /// Governed processes may create Unix sockets.
    pub unix_sockets: bool,
    /// Places governed processes may read but not change.
    pub read_only: Vec<PathBuf>,
}

impl Default for BarrierSettings {
    /// Strict: refuse when unavailable, no Unix sockets, the shell startup
    /// and autostart files read-only ([`shield::DEFAULT_READ_ONLY`]).
    fn default() -> Self {
        Self {
            when_unavailable: WhenUnavailable::Refuse,
            unix_sockets: false,
            read_only: shield::DEFAULT_READ_ONLY
                .iter()
                .map(PathBuf::from)
                .collect(),
        }
    }
}

/// Why a governed program was not started.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BarrierError {
    /// The barrier is off and the config refuses to run unconfined.
    #[error("{summary}: {}", .gaps.join("; "))]
    Unavailable {
        /// The status's summary line.
        summary: String,
        /// What does not hold.
        gaps: Vec<String>,
    },
}

/// How one governed program is run.
#[derive(Debug, Clone, Copy)]
pub struct Spawn {
    /// Its stdin (see [`Stdin`]).
    pub stdin: Stdin,
    /// How long it may run on once toolgate lets go of it.
    pub grace: Duration,
    /// Unix sockets for this program (an upstream server that needs one);
    /// `None` takes `[barrier] unix_sockets`.
    pub unix_sockets: Option<bool>,
    /// Refused, as `[barrier] when_unavailable` says, when the kernel
    /// cannot confine it: a tool call's process. A configured server is
    /// started anyway (what the kernel gives still applies): its shell-like
    /// tools are refused by the guard stage instead, and the console says
    /// the barrier is off.
    pub confinement_required: bool,
}

impl Spawn {
    /// A tool call's process: stdin is `/dev/null`, no grace.
    pub fn call() -> Self {
        Self {
            stdin: Stdin::Null,
            grace: Duration::ZERO,
            unix_sockets: None,
            confinement_required: true,
        }
    }

    /// A tool call's process that reads an input: under a warden the input
    /// goes as one [`warden::feed_frame`] written to the warden's stdin
    /// (see [`Leash::hold`]); without one, straight to the program's stdin,
    /// which is then closed.
    pub fn fed() -> Self {
        Self {
            stdin: Stdin::Feed,
            ..Self::call()
        }
    }

    /// A long-running server speaking on stdin and stdout, which gets
    /// `grace` to exit once its stdin is closed.
    pub fn server(unix_sockets: Option<bool>, grace: Duration) -> Self {
        Self {
            stdin: Stdin::Inherit,
            grace,
            unix_sockets,
            confinement_required: false,
        }
    }
}

/// The barrier as this engine applies it: cheap to clone.
#[derive(Debug, Clone)]
pub struct Barrier {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    warden: Option<PathBuf>,
    shield: Shield,
    settings: BarrierSettings,
    status: BarrierStatus,
}

impl Barrier {
    /// The barrier for `shield`, run by the warden binary `warden` (`None`:
    /// this host has none). Starts one warden as a probe, which takes a few
    /// milliseconds, so the status says what a real warden achieved.
    pub fn start(warden: Option<PathBuf>, shield: Shield, settings: BarrierSettings) -> Self {
        let refuse = settings.when_unavailable == WhenUnavailable::Refuse;
        let status = match &warden {
            None => BarrierStatus::no_warden(
                "this program cannot start one (it is not a toolgate binary)",
                refuse,
            ),
            Some(exe) => match probe(exe, &shield, settings.unix_sockets) {
                Ok(p) => BarrierStatus::from_probe(&p, settings.unix_sockets, refuse),
                Err(e) => BarrierStatus::no_warden(&e, refuse),
            },
        };
        if status.level != BarrierLevel::Full {
            tracing::warn!("{}: {}", status.summary, status.gaps.join("; "));
        }
        Self::of(warden, shield, settings, status)
    }

    fn of(
        warden: Option<PathBuf>,
        shield: Shield,
        settings: BarrierSettings,
        status: BarrierStatus,
    ) -> Self {
        Self {
            inner: Arc::new(Inner {
                warden,
                shield,
                settings,
                status,
            }),
        }
    }

    /// A barrier that confines nothing and says so, for tests of what the
    /// tools do rather than how they are confined (and the engine
    /// builder's default, which hosts replace through `setup`).
    pub fn unconfined() -> Self {
        let settings = BarrierSettings {
            when_unavailable: WhenUnavailable::Run,
            ..BarrierSettings::default()
        };
        let status = BarrierStatus::no_warden("none was given (tests)", false);
        Self::of(None, Shield::new(), settings, status)
    }

    /// The warden binary of this process, if it can be one: the running
    /// executable, when it called [`warden::run_if_asked`] at start.
    pub fn own_warden() -> Option<PathBuf> {
        warden::hosts_warden()
            .then(std::env::current_exe)
            .and_then(Result::ok)
    }

    /// The warden a host should use: the `toolgate` CLI installed beside
    /// the running executable when there is one, else the executable itself
    /// when it can be a warden ([`Self::own_warden`]). The desktop app's
    /// binary links WebKit and GTK, and as a warden it loaded them for every
    /// governed process (80 ms each, against 6 ms for the CLI, measured side
    /// by side on debug builds); the CLI beside it starts in a few
    /// milliseconds. The probe at start checks whichever is chosen.
    pub fn preferred_warden() -> Option<PathBuf> {
        let beside = std::env::current_exe()
            .ok()
            .and_then(|exe| exe.parent().map(|dir| dir.join("toolgate")))
            .filter(|cli| cli.is_file());
        beside.or_else(Self::own_warden)
    }

    /// What holds on this machine.
    pub fn status(&self) -> &BarrierStatus {
        &self.inner.status
    }

    /// What governed processes may not reach.
    pub fn shield(&self) -> &Shield {
        &self.inner.shield
    }

    /// Whether shell-like tools are refused (the barrier is off and the
    /// config says to refuse).
    pub fn refuses_shell(&self) -> bool {
        self.inner.status.refuses_shell
    }

    /// Whether governed programs run under a warden (see [`Leash::of`]).
    pub fn has_warden(&self) -> bool {
        self.inner.warden.is_some()
    }

    /// The command that runs `program` confined, as `spawn` says; add its
    /// arguments, environment and working directory to it. It leads its
    /// own process group. Under a warden its stdin is a pipe, the lifeline:
    /// keep it (a [`Leash`] does) for as long as the program may run.
    ///
    /// # Errors
    /// The barrier is off, `spawn` requires confinement, and the config
    /// refuses to run unconfined.
    pub fn command(
        &self,
        program: impl AsRef<OsStr>,
        spawn: Spawn,
    ) -> Result<tokio::process::Command, BarrierError> {
        let inner = &self.inner;
        let require = spawn.confinement_required
            && inner.settings.when_unavailable == WhenUnavailable::Refuse;
        if require && !inner.status.confines() {
            return Err(BarrierError::Unavailable {
                summary: inner.status.summary.clone(),
                gaps: inner.status.gaps.clone(),
            });
        }
        let Some(warden) = &inner.warden else {
            // Allowed to run unconfined, and no warden to run under.
            let mut cmd = tokio::process::Command::new(program);
            cmd.process_group(0);
            if spawn.stdin == Stdin::Null {
                cmd.stdin(std::process::Stdio::null());
            }
            return Ok(cmd);
        };
        let plan = warden::Plan {
            shield: inner.shield.clone(),
            unix_sockets: spawn.unix_sockets.unwrap_or(inner.settings.unix_sockets),
            require,
            stdin: spawn.stdin,
            grace_ms: u64::try_from(spawn.grace.as_millis()).unwrap_or(u64::MAX),
        };
        let mut cmd = tokio::process::Command::new(warden);
        cmd.arg(warden::ARG)
            .arg(serde_json::to_string(&plan).unwrap_or_default())
            .arg("--")
            .arg(program)
            .stdin(std::process::Stdio::piped())
            .process_group(0);
        Ok(cmd)
    }
}

/// Runs `warden --probe` with `shield` and reads what it found.
fn probe(warden: &Path, shield: &Shield, unix_sockets: bool) -> Result<Probe, String> {
    let plan = warden::Plan {
        shield: shield.clone(),
        unix_sockets,
        require: false,
        stdin: Stdin::Null,
        grace_ms: 0,
    };
    let out = std::process::Command::new(warden)
        .arg(warden::ARG)
        .arg(serde_json::to_string(&plan).map_err(|e| e.to_string())?)
        .arg(warden::PROBE)
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| format!("cannot start the warden `{}`: {e}", warden.display()))?;
    serde_json::from_slice(&out.stdout).map_err(|_| {
        format!(
            "the warden `{}` gave no probe ({}): {}",
            warden.display(),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        )
    })
}

/// Whether the process `pid` runs under a warden: itself or an ancestor
/// was started as one by this warden binary. Such a process is governed,
/// and may not steer toolgate whatever it presents.
pub fn is_governed(pid: i32) -> bool {
    procfs::ancestor_where(pid, |p| {
        procfs::cmdline(p)
            .get(1)
            .is_some_and(|a| a.as_slice() == warden::ARG.as_bytes())
    })
    .is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Off, with the strict default: a tool call's process is refused, a
    /// configured server still starts (its shell-like tools are refused by
    /// the guard stage instead).
    #[test]
    fn off_and_strict_refuses_calls_but_starts_servers() {
        let b = Barrier::start(None, Shield::new(), BarrierSettings::default());
        assert_eq!(b.status().level, BarrierLevel::Off);
        assert!(b.refuses_shell());
        let e = b.command("sh", Spawn::call()).unwrap_err();
        assert!(e.to_string().contains("Barrier off"), "{e}");
        assert!(
            b.command("server", Spawn::server(None, Duration::ZERO))
                .is_ok()
        );
    }

    #[test]
    fn off_by_choice_runs_calls_unconfined() {
        let settings = BarrierSettings {
            when_unavailable: WhenUnavailable::Run,
            ..BarrierSettings::default()
        };
        let b = Barrier::start(None, Shield::new(), settings);
        assert!(!b.refuses_shell());
        assert!(b.command("sh", Spawn::call()).is_ok());
    }
}
