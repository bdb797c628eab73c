//! What toolgate protects: its config, data and runtime dirs, its sockets
//! and token files, as the host that runs the engine knows them.

use std::path::{Path, PathBuf};

/// What a protected path is. Every place is off limits to governed tools
/// for reading and writing alike: the same rule the OS barrier enforces
/// for the processes toolgate spawns (`docs/architecture/decisions.md`,
/// "Self-protection: early refusals by shell words").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Place {
    /// The config file in use (a header or env value may be a credential
    /// written literally instead of a `keyring:` reference).
    ConfigFile,
    /// A config dir that is toolgate's own (`~/.config/toolgate`).
    ConfigDir,
    /// The data dir: audit log, approvals, remembered rules, pins, the
    /// engine's log (with the console's login link) and discovery file.
    DataDir,
    /// toolgate's own runtime dir: sockets and tokens.
    RuntimeDir,
    /// The agent socket and every file beside it whose name starts with
    /// the socket's (`.ctl`, the `.http` token file).
    Sockets,
    /// A file holding a token.
    TokenFile,
}

impl Place {
    /// In words, for reasons.
    pub(super) fn what(self) -> &'static str {
        match self {
            Self::ConfigFile => "config file",
            Self::ConfigDir => "config dir",
            Self::DataDir => "data dir",
            Self::RuntimeDir => "runtime dir (sockets and tokens)",
            Self::Sockets => "sockets and token files",
            Self::TokenFile => "token file",
        }
    }

    /// Why a governed tool may not even read it.
    pub(super) fn why(self) -> &'static str {
        match self {
            Self::ConfigFile | Self::ConfigDir => "it may hold credentials",
            Self::DataDir => {
                "it holds the audit log, approvals, rules and the engine's log with the console's login link"
            }
            Self::RuntimeDir | Self::Sockets | Self::TokenFile => {
                "it holds toolgate's sockets and tokens"
            }
        }
    }

    /// A directory protected with everything in it.
    pub(super) fn is_dir(self) -> bool {
        matches!(self, Self::ConfigDir | Self::DataDir | Self::RuntimeDir)
    }
}

/// toolgate's own files on this machine, as the host that runs the engine
/// knows them (the daemon: its config file, data dir and socket). Turned
/// into a [`Protected`](super::Protected) by
/// [`Protected::new`](super::Protected::new).
#[derive(Debug, Clone, Default)]
pub struct OwnFiles {
    pub(super) places: Vec<(Place, PathBuf)>,
}

impl OwnFiles {
    /// Nothing protected.
    pub fn none() -> Self {
        Self::default()
    }

    /// The default locations (XDG): `~/.config/toolgate`, the data dir and
    /// the runtime dir, whether or not this process uses them (another
    /// toolgate on this machine might).
    pub fn defaults() -> Self {
        let mut own = Self::none()
            .data_dir(crate::paths::default_data_dir())
            .runtime_dir(crate::paths::default_runtime_dir());
        if let Some(config) = crate::paths::default_config_file() {
            own = own.config_file(config);
        }
        own
    }

    /// What `toolgate serve` uses: the defaults, plus its config file, data
    /// dir and agent socket.
    pub fn for_daemon(config: Option<&Path>, data_dir: &Path, socket: &Path) -> Self {
        let mut own = Self::defaults().data_dir(data_dir).socket(socket);
        if let Some(config) = config {
            own = own.config_file(config);
        }
        own
    }

    fn add(mut self, place: Place, path: impl AsRef<Path>) -> Self {
        self.places.push((place, path.as_ref().to_owned()));
        self
    }

    /// The config file. Its directory is protected whole when it is
    /// toolgate's own (called `toolgate`, as `~/.config/toolgate`); a config
    /// file placed in a shared directory (`--config /tmp/x.toml`) does not
    /// make the whole directory off limits.
    pub fn config_file(self, path: impl AsRef<Path>) -> Self {
        let path = path.as_ref();
        let this = match own_dir(path) {
            Some(dir) => self.add(Place::ConfigDir, dir),
            None => self,
        };
        this.add(Place::ConfigFile, path)
    }

    /// The data dir.
    pub fn data_dir(self, path: impl AsRef<Path>) -> Self {
        self.add(Place::DataDir, path)
    }

    /// A runtime dir that is toolgate's alone.
    pub fn runtime_dir(self, path: impl AsRef<Path>) -> Self {
        self.add(Place::RuntimeDir, path)
    }

    /// The agent socket: it and the files named after it (control socket,
    /// HTTP token file). Its directory is protected whole when it is
    /// toolgate's own (called `toolgate`, as `$XDG_RUNTIME_DIR/toolgate`);
    /// a socket placed in a shared directory (`--socket /tmp/a.sock`) does
    /// not make the whole directory off limits.
    pub fn socket(self, socket: &Path) -> Self {
        let this = match own_dir(socket) {
            Some(dir) => self.runtime_dir(dir),
            None => self,
        };
        this.add(Place::Sockets, socket)
    }

    /// A file that holds a token, wherever it is.
    pub fn token_file(self, path: impl AsRef<Path>) -> Self {
        self.add(Place::TokenFile, path)
    }

    /// What the barrier hides from governed processes (`crate::barrier`):
    /// every place, and the files named after a socket (`.ctl`, `.http`).
    pub fn hidden_paths(&self) -> Vec<PathBuf> {
        let mut out = Vec::new();
        for (place, path) in &self.places {
            match place {
                Place::Sockets => out
                    .extend(["", ".ctl", ".http"].map(|suffix| crate::paths::beside(path, suffix))),
                _ => out.push(path.clone()),
            }
        }
        out
    }
}

/// The directory of `file` when it is toolgate's own: named `toolgate`.
fn own_dir(file: &Path) -> Option<&Path> {
    file.parent()
        .filter(|d| d.file_name().is_some_and(|n| n == "toolgate"))
}

/// One protected path, resolved.
#[derive(Debug, Clone)]
pub(super) struct Entry {
    pub(super) place: Place,
    /// Resolved the way the kernel would (symlinks, `..`), so a request
    /// that reaches it by another spelling still matches; or the spelling
    /// as configured, kept beside the resolved one when they differ.
    pub(super) path: PathBuf,
}

impl Entry {
    /// Whether `path` (resolved) lies in this entry.
    pub(super) fn covers(&self, path: &Path) -> bool {
        match self.place {
            Place::ConfigFile | Place::TokenFile => path == self.path,
            Place::ConfigDir | Place::DataDir | Place::RuntimeDir => path.starts_with(&self.path),
            Place::Sockets => {
                path.parent() == self.path.parent()
                    && match (path.file_name(), self.path.file_name()) {
                        (Some(p), Some(s)) => {
                            p.as_encoded_bytes().starts_with(s.as_encoded_bytes())
                        }
                        _ => false,
                    }
            }
        }
    }
}

/// The resolved entries of `own`, each once.
pub(super) fn entries(own: &OwnFiles) -> Vec<Entry> {
    let mut entries: Vec<Entry> = Vec::new();
    for (place, path) in &own.places {
        let Ok(abs) = std::path::absolute(path) else {
            continue;
        };
        let resolved = super::paths::resolve(&abs);
        // The spelling as given, when it differs (a configured path through
        // a symlink), is kept too, so text that writes it that way is
        // recognised.
        let given = (abs != resolved).then_some(abs);
        for path in std::iter::once(resolved).chain(given) {
            if !entries.iter().any(|e| e.place == *place && e.path == path) {
                entries.push(Entry {
                    place: *place,
                    path,
                });
            }
        }
    }
    entries
}
