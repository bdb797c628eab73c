//! Everything connect reads from the world, as one value: the home and
//! config dirs the clients use, the projects whose project-scope files
//! count, toolgate's own config and data dir, the resolved toolgate
//! command, and where to look for running processes. The engine never
//! reads the process environment itself, so tests run in a temporary
//! HOME and the console passes what its person chose.

use std::path::{Path, PathBuf};

/// See the module docs.
#[derive(Debug, Clone)]
pub struct ConnectEnv {
    /// `$HOME`.
    pub home: PathBuf,
    /// `$XDG_CONFIG_HOME`, else `~/.config` (VS Code, Zed and Claude
    /// Desktop, Electron or XDG apps, keep their settings there).
    pub xdg_config_home: PathBuf,
    /// `$CODEX_HOME`, else `~/.codex`.
    pub codex_home: PathBuf,
    /// Project directories whose project-scope files are read and edited
    /// (absolute). The CLI passes `--project DIR`, default the current one.
    pub projects: Vec<PathBuf>,
    /// toolgate's config file (created if missing).
    pub toolgate_config: PathBuf,
    /// toolgate's data dir; undo records live in `connect/` under it.
    pub data_dir: PathBuf,
    /// Whether `data_dir` is the one `toolgate mcp-bridge` finds by
    /// itself; if not, the bridge entry carries `TOOLGATE_DATA_DIR`.
    pub data_dir_is_default: bool,
    /// The command clients start toolgate with ([`super::command::resolve`]).
    pub toolgate_command: String,
    /// Where running processes are looked for (`/proc`).
    pub proc_root: PathBuf,
}

impl ConnectEnv {
    /// The process's own environment, with the config file and data dir
    /// as the CLI resolved them.
    pub fn from_process(
        projects: Vec<PathBuf>,
        toolgate_config: Option<PathBuf>,
        data_dir: Option<PathBuf>,
    ) -> Self {
        let home = std::env::var_os("HOME")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("/"));
        let var = |name: &str| {
            std::env::var_os(name)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
                .filter(|p| p.is_absolute())
        };
        let default_data = crate::paths::default_data_dir();
        let data_dir = data_dir.unwrap_or_else(|| default_data.clone());
        Self {
            xdg_config_home: var("XDG_CONFIG_HOME").unwrap_or_else(|| home.join(".config")),
            codex_home: var("CODEX_HOME").unwrap_or_else(|| home.join(".codex")),
            projects: projects.into_iter().map(|p| absolute(&p)).collect(),
            toolgate_config: toolgate_config
                .or_else(crate::paths::default_config_file)
                .unwrap_or_else(|| home.join(".config/toolgate/config.toml")),
            data_dir_is_default: data_dir == default_data,
            data_dir,
            toolgate_command: super::command::resolve(),
            proc_root: PathBuf::from("/proc"),
            home,
        }
    }

    /// Everything under `home`: the clients' files, toolgate's config and
    /// data dir as their defaults would be there, `toolgate` as the
    /// command, no project and no running client (a `/proc` that does not
    /// exist). What tests and throwaway previews work in, so they never
    /// touch the real HOME.
    pub fn in_home(home: &Path) -> Self {
        Self {
            home: home.to_owned(),
            xdg_config_home: home.join(".config"),
            codex_home: home.join(".codex"),
            projects: Vec::new(),
            toolgate_config: home.join(".config/toolgate/config.toml"),
            data_dir: home.join(".local/share/toolgate"),
            data_dir_is_default: true,
            toolgate_command: "toolgate".into(),
            proc_root: home.join("no-proc"),
        }
    }

    /// Where the undo records are kept.
    pub fn records_dir(&self) -> PathBuf {
        self.data_dir.join("connect")
    }
}

/// `p` made absolute against the current directory, `.` and `..` taken
/// out lexically (the directory may not exist yet).
pub fn absolute(p: &Path) -> PathBuf {
    let joined = if p.is_absolute() {
        p.to_owned()
    } else {
        std::env::current_dir()
            .unwrap_or_else(|_| PathBuf::from("/"))
            .join(p)
    };
    let mut out = PathBuf::new();
    for c in joined.components() {
        match c {
            std::path::Component::CurDir => {}
            std::path::Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}
