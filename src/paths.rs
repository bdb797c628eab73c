//! Where toolgate keeps things, by the XDG base-directory rules (through the
//! `directories` crate): config in `~/.config/toolgate/`, data (the SQLite
//! audit log) in `~/.local/share/toolgate/`, the agent socket in the
//! runtime dir's `toolgate/` (`$XDG_RUNTIME_DIR`, else `/run/user/$UID`
//! when that is ours, else the data dir; docs/architecture/overview.md,
//! "Processes and discovery").
//!
//! MCP clients built on the official SDKs start `toolgate mcp-bridge` with
//! only HOME, PATH, USER, SHELL, TERM and LOGNAME, so the runtime dir must
//! be found without `XDG_RUNTIME_DIR` when it can be; the engine's
//! discovery file (`crate::discovery`) covers the rest.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use directories::{BaseDirs, ProjectDirs};

fn project() -> Option<ProjectDirs> {
    ProjectDirs::from("", "", "toolgate")
}

/// `~/.config/toolgate/config.toml`, if a home directory is known.
pub fn default_config_file() -> Option<PathBuf> {
    project().map(|p| p.config_dir().join("config.toml"))
}

/// `~/.local/share/toolgate`, or `./.toolgate` without a home directory.
pub fn default_data_dir() -> PathBuf {
    project().map_or_else(|| PathBuf::from(".toolgate"), |p| p.data_dir().to_owned())
}

/// What the runtime dir is decided from. The logic takes it as a value,
/// never reading the process's environment itself, so every case is
/// testable; [`RuntimeEnv::from_process`] reads the real one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuntimeEnv {
    /// `$XDG_RUNTIME_DIR`, if set.
    pub xdg_runtime_dir: Option<PathBuf>,
    /// Our real uid.
    pub uid: u32,
    /// Where the per-user runtime dirs live: `/run/user`.
    pub run_user: PathBuf,
}

impl RuntimeEnv {
    /// This process's environment and uid.
    pub fn from_process() -> Self {
        Self {
            xdg_runtime_dir: std::env::var_os("XDG_RUNTIME_DIR").map(PathBuf::from),
            uid: rustix::process::getuid().as_raw(),
            run_user: PathBuf::from("/run/user"),
        }
    }

    /// The base runtime dir: `$XDG_RUNTIME_DIR` when it is an absolute
    /// path (the XDG spec says to ignore a relative one), else
    /// `/run/user/$UID` when it is a directory we own that no one else can
    /// write to (the socket's directory sits inside it), else `None`.
    pub fn base(&self) -> Option<PathBuf> {
        if let Some(dir) = self.xdg_runtime_dir.as_ref().filter(|d| d.is_absolute()) {
            return Some(dir.clone());
        }
        let dir = self.run_user.join(self.uid.to_string());
        let meta = std::fs::symlink_metadata(&dir).ok()?;
        let private = meta.permissions().mode() & 0o022 == 0;
        (meta.is_dir() && meta.uid() == self.uid && private).then_some(dir)
    }

    /// `<base>/toolgate`, or `data_dir` when there is no runtime dir.
    pub fn toolgate_dir(&self, data_dir: &Path) -> PathBuf {
        self.base()
            .map_or_else(|| data_dir.to_owned(), |b| b.join("toolgate"))
    }
}

/// The runtime dir of this process (see [`RuntimeEnv::toolgate_dir`]),
/// falling back to the default data dir.
pub fn default_runtime_dir() -> PathBuf {
    RuntimeEnv::from_process().toolgate_dir(&default_data_dir())
}

/// The control socket beside an agent socket: `<agent>.ctl`. It carries the
/// CLI's inspect-and-steer methods, which agents never see.
pub fn control_socket_for(agent: &Path) -> PathBuf {
    beside(agent, ".ctl")
}

/// `<path><suffix>`, e.g. `agent.sock` → `agent.sock.http`.
pub fn beside(path: &Path, suffix: &str) -> PathBuf {
    let mut p = path.as_os_str().to_owned();
    p.push(suffix);
    p.into()
}

/// Expands a leading `~/` (or a lone `~`) to the home directory.
pub fn expand_home(path: &str) -> PathBuf {
    let home = || BaseDirs::new().map(|b| b.home_dir().to_owned());
    match path.strip_prefix("~/") {
        Some(rest) => home().map_or_else(|| PathBuf::from(path), |h| h.join(rest)),
        None if path == "~" => home().unwrap_or_else(|| PathBuf::from(path)),
        None => PathBuf::from(path),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn home_is_expanded_only_at_the_start() {
        let h = expand_home("~/x");
        assert!(h.is_absolute() && h.ends_with("x"), "{h:?}");
        assert_eq!(expand_home("a/~/b"), PathBuf::from("a/~/b"));
        assert_eq!(expand_home("/abs"), PathBuf::from("/abs"));
    }

    /// A fake `/run/user` in a temp dir, with `/run/user/<uid>` made with
    /// `mode` when given.
    fn env(xdg: Option<&str>, mode: Option<u32>) -> (tempfile::TempDir, RuntimeEnv) {
        let tmp = tempfile::tempdir().unwrap();
        let uid = rustix::process::getuid().as_raw();
        let run_user = tmp.path().join("run/user");
        std::fs::create_dir_all(&run_user).unwrap();
        if let Some(mode) = mode {
            let mine = run_user.join(uid.to_string());
            std::fs::create_dir(&mine).unwrap();
            std::fs::set_permissions(&mine, std::fs::Permissions::from_mode(mode)).unwrap();
        }
        let env = RuntimeEnv {
            xdg_runtime_dir: xdg.map(PathBuf::from),
            uid,
            run_user,
        };
        (tmp, env)
    }

    #[test]
    fn xdg_runtime_dir_wins_when_set() {
        let (_t, e) = env(Some("/xdg/run"), Some(0o700));
        assert_eq!(
            e.toolgate_dir(Path::new("/data")),
            PathBuf::from("/xdg/run/toolgate")
        );
    }

    #[test]
    fn a_relative_xdg_runtime_dir_is_ignored() {
        let (_t, e) = env(Some("rel/run"), None);
        assert_eq!(e.toolgate_dir(Path::new("/data")), PathBuf::from("/data"));
    }

    #[test]
    fn run_user_uid_is_used_when_it_is_ours_and_private() {
        let (_t, e) = env(None, Some(0o700));
        let want = e.run_user.join(e.uid.to_string()).join("toolgate");
        assert_eq!(e.toolgate_dir(Path::new("/data")), want);
    }

    #[test]
    fn run_user_uid_writable_by_others_is_not_used() {
        for mode in [0o770, 0o707, 0o777] {
            let (_t, e) = env(None, Some(mode));
            assert_eq!(
                e.toolgate_dir(Path::new("/data")),
                PathBuf::from("/data"),
                "mode {mode:o}"
            );
        }
    }

    #[test]
    fn run_user_of_another_uid_is_not_used() {
        let (_t, mut e) = env(None, Some(0o700));
        // The directory is named for our uid but we claim another: it is
        // then not found, and a directory of that name owned by us (not
        // by the claimed uid) must not count either.
        e.uid += 1;
        std::fs::create_dir(e.run_user.join(e.uid.to_string())).unwrap();
        assert_eq!(e.toolgate_dir(Path::new("/data")), PathBuf::from("/data"));
    }

    #[test]
    fn without_a_runtime_dir_the_data_dir_is_used() {
        let (_t, e) = env(None, None);
        assert_eq!(e.toolgate_dir(Path::new("/data")), PathBuf::from("/data"));
    }

    #[test]
    fn a_symlink_at_run_user_uid_is_not_followed() {
        let (t, e) = env(None, None);
        let real = t.path().join("elsewhere");
        std::fs::create_dir(&real).unwrap();
        std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o700)).unwrap();
        std::os::unix::fs::symlink(&real, e.run_user.join(e.uid.to_string())).unwrap();
        assert_eq!(e.toolgate_dir(Path::new("/data")), PathBuf::from("/data"));
    }

    #[test]
    fn the_control_socket_sits_beside_the_agent_socket() {
        assert_eq!(
            control_socket_for(Path::new("/r/agent.sock")),
            PathBuf::from("/r/agent.sock.ctl")
        );
    }
}
