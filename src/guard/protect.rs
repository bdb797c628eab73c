//! toolgate protects itself from the tools it governs (DESIGN.md, "toolgate
//! protects itself"; issue 13, item 7): a governed tool must not approve its
//! own calls, widen its own policy, or read the tokens that would let it.
//!
//! Contract:
//! - **Protected places** ([`OwnFiles`]): the data dir (audit log,
//!   approvals, remembered rules, pins) may be read but never written; the
//!   config file (it may hold a credential written literally), the runtime
//!   dir, the sockets and every token file (the HTTP endpoint's
//!   `<socket>.http`, any file in a protected dir whose name says `token`
//!   or ends in `.http`) may not even be read.
//! - **Checked by the guard stage, before policy** ([`Protected`]), so such
//!   a call is refused outright with a reason naming the protected path,
//!   and never put in front of a person: a person asked "run `toolgate
//!   approve 7`?" is exactly the confusion this prevents.
//! - What is checked: every path-guarded argument, resolved by the path
//!   guard (symlinks and `..` included; its default when absent); every
//!   command-guarded argument ([`Protected::check_command`]: a `toolgate`
//!   word followed by a steering subcommand, a control method name, or a
//!   protected path anywhere in it); and, for tools whose meaning toolgate
//!   cannot know (upstream, plugin and agent tools that are not read-only),
//!   every string argument ([`Protected::check_text`]). Paths in text are
//!   matched as written (absolute, `~/`, `$HOME/`, relative to a root when
//!   the relative form names a `toolgate` directory, the socket's file
//!   name) and, for absolute ones, resolved the way the kernel would.
//!   Hard links to the config file or a token file are recognised by
//!   device and inode.
//! - **Limits.** A shell can always obfuscate (`t''oolgate`, variables,
//!   base64, a chain of relative `cd`s), and a tool running as the same
//!   user can reach the 0600 control socket: the text checks catch the
//!   direct forms, the path checks make the file-level protection exact
//!   for the built-in file tools, and `shell_exec` stays `critical`, so a
//!   person sees every command that passes. The check happens before the
//!   tool runs; a path swapped for a symlink in between (inside a root) is
//!   not re-checked at open time.

use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path, PathBuf};

use aho_corasick::AhoCorasick;

/// `toolgate` subcommands that steer toolgate itself: decide approvals,
/// change remembered rules, read or change secrets, approve quarantined
/// tool definitions, reset breakers. A governed tool never runs them.
pub const CONTROL_SUBCOMMANDS: [&str; 6] =
    ["approve", "deny", "rules", "secret", "pins", "breakers"];

/// What a protected path is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Place {
    /// The config file: no access (a header or env value may be a
    /// credential written literally instead of a `keyring:` reference).
    ConfigFile,
    /// The data dir: readable (except token files), never written.
    DataDir,
    /// toolgate's own runtime dir: sockets and tokens only, no access.
    RuntimeDir,
    /// The agent socket and every file beside it whose name starts with
    /// the socket's (`.ctl`, the `.http` token file): no access.
    Sockets,
    /// A file holding a token: no access.
    TokenFile,
}

impl Place {
    fn what(self) -> &'static str {
        match self {
            Self::ConfigFile => "config file",
            Self::DataDir => "data dir",
            Self::RuntimeDir => "runtime dir (sockets and tokens)",
            Self::Sockets => "sockets and token files",
            Self::TokenFile => "token file",
        }
    }

    /// Holds secrets, so not even reading is allowed.
    fn secret(self) -> bool {
        !matches!(self, Self::DataDir)
    }

    /// Why reading it is refused too.
    fn why_secret(self) -> &'static str {
        match self {
            Self::ConfigFile => "it may hold credentials",
            _ => "it holds toolgate's sockets and tokens",
        }
    }
}

/// How a tool uses a path: only toolgate's own read-only tools are trusted
/// to only read (an upstream server's `readOnlyHint` is a claim, not a
/// guarantee; MCP says to treat it as untrusted).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// The tool only reads.
    Read,
    /// The tool may change what the path names.
    Write,
}

impl Access {
    /// The access of `def`'s tool.
    pub fn of(def: &crate::tool::ToolDef) -> Self {
        if def.source == crate::tool::Source::Builtin
            && def.annotations.read_only_hint == Some(true)
        {
            Self::Read
        } else {
            Self::Write
        }
    }
}

/// toolgate's own files on this machine, as the host that runs the engine
/// knows them (the daemon: its config file, data dir and socket). Turned
/// into a [`Protected`] by [`Protected::new`].
#[derive(Debug, Clone, Default)]
pub struct OwnFiles {
    places: Vec<(Place, PathBuf)>,
}

impl OwnFiles {
    /// Nothing protected.
    pub fn none() -> Self {
        Self::default()
    }

    /// The default locations (XDG): `~/.config/toolgate/config.toml`, the
    /// data dir and the runtime dir, whether or not this process uses them
    /// (another toolgate on this machine might).
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

    /// The config file.
    pub fn config_file(self, path: impl AsRef<Path>) -> Self {
        self.add(Place::ConfigFile, path)
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
        let own_dir = socket
            .parent()
            .filter(|d| d.file_name().is_some_and(|n| n == "toolgate"));
        let this = match own_dir {
            Some(dir) => self.runtime_dir(dir),
            None => self,
        };
        this.add(Place::Sockets, socket)
    }

    /// A file that holds a token, wherever it is.
    pub fn token_file(self, path: impl AsRef<Path>) -> Self {
        self.add(Place::TokenFile, path)
    }

    /// What the barrier hides from governed processes: the data and
    /// runtime dirs, the sockets and the files named after them, token
    /// files, and the config file's directory when it is toolgate's own
    /// (`~/.config/toolgate`, which also holds plugins) or else the config
    /// file alone.
    pub fn hidden_paths(&self) -> Vec<PathBuf> {
        let mut out = Vec::new();
        for (place, path) in &self.places {
            match place {
                Place::ConfigFile => {
                    let own_dir = path
                        .parent()
                        .filter(|d| d.file_name().is_some_and(|n| n == "toolgate"));
                    out.push(own_dir.unwrap_or(path).to_owned());
                }
                Place::Sockets => out
                    .extend(["", ".ctl", ".http"].map(|suffix| crate::paths::beside(path, suffix))),
                Place::DataDir | Place::RuntimeDir | Place::TokenFile => out.push(path.clone()),
            }
        }
        out
    }
}

/// One protected path, resolved.
#[derive(Debug, Clone)]
struct Entry {
    place: Place,
    /// Resolved the way the kernel would (symlinks, `..`), so a request
    /// that reaches it by another spelling still matches.
    path: PathBuf,
}

/// Why a call was refused; the message names the protected path.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Refusal {
    /// A change to a protected place.
    #[error(
        "`{}` is protected: toolgate's {what} `{}`; governed tools may not change toolgate's own files",
        .path.display(), .protected.display()
    )]
    Write {
        /// The path asked for, resolved.
        path: PathBuf,
        /// What the protected place is.
        what: &'static str,
        /// The protected place.
        protected: PathBuf,
    },
    /// Any access to a place holding secrets.
    #[error(
        "`{}` is protected: toolgate's {what} `{}`; governed tools may not read or change it: {why}",
        .path.display(), .protected.display()
    )]
    Secret {
        /// The path asked for, resolved.
        path: PathBuf,
        /// What the protected place is.
        what: &'static str,
        /// The protected place.
        protected: PathBuf,
        /// Why reading is refused too.
        why: &'static str,
    },
    /// A protected path named in free text (a command, an upstream tool's
    /// argument).
    #[error(
        "it names `{found}`, toolgate's {what} `{}`; governed tools may not touch toolgate's own files",
        .protected.display()
    )]
    Mention {
        /// The text that named it.
        found: String,
        /// What the protected place is.
        what: &'static str,
        /// The protected place.
        protected: PathBuf,
    },
    /// A command that would steer toolgate itself.
    #[error(
        "it runs `{command}`, which steers toolgate itself; governed tools may not approve calls, change policy or secrets: a person runs such commands in their own terminal"
    )]
    Control {
        /// What was found, e.g. `toolgate approve`.
        command: String,
    },
}

/// A spelling of a protected path to look for in text.
#[derive(Debug, Clone)]
struct Needle {
    entry: usize,
    /// The spelling may be followed by more name characters (the socket's
    /// name is the prefix of the control socket's and the token file's).
    prefix: bool,
}

/// The protected set, ready for the guard stage.
#[derive(Debug, Clone, Default)]
pub struct Protected {
    entries: Vec<Entry>,
    /// Every spelling of every entry, searched in one pass.
    needles: Option<AhoCorasick>,
    needle_info: Vec<Needle>,
    home: Option<PathBuf>,
}

impl Protected {
    /// Resolves `own` and prepares the spellings to look for in text,
    /// including each path relative to each of `roots` when that form
    /// names a `toolgate` directory (a command run inside a root may use
    /// it).
    pub fn new(own: &OwnFiles, roots: &[PathBuf]) -> Self {
        let home = directories::BaseDirs::new().map(|b| b.home_dir().to_owned());
        let mut entries: Vec<Entry> = Vec::new();
        for (place, path) in &own.places {
            let Ok(abs) = std::path::absolute(path) else {
                continue;
            };
            let resolved = resolve(&abs);
            // The spelling as given, when it differs (a configured path
            // through a symlink), is kept too, so text that writes it that
            // way is recognised.
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
        let mut patterns: Vec<String> = Vec::new();
        let mut needle_info = Vec::new();
        let mut push = |text: String, entry: usize, prefix: bool| {
            if !text.is_empty() && !patterns.contains(&text) {
                patterns.push(text);
                needle_info.push(Needle { entry, prefix });
            }
        };
        for (i, e) in entries.iter().enumerate() {
            let prefix = e.place == Place::Sockets;
            let text = e.path.to_string_lossy().into_owned();
            push(text, i, prefix);
            if let Some(rel) = home.as_deref().and_then(|h| e.path.strip_prefix(h).ok()) {
                let rel = rel.to_string_lossy();
                for home_form in ["~", "$HOME", "${HOME}"] {
                    push(format!("{home_form}/{rel}"), i, prefix);
                }
            }
            for root in roots {
                if let Ok(rel) = e.path.strip_prefix(root)
                    && rel.components().any(|c| c.as_os_str() == "toolgate")
                {
                    push(rel.to_string_lossy().into_owned(), i, prefix);
                }
            }
            if prefix && let Some(name) = e.path.file_name() {
                push(name.to_string_lossy().into_owned(), i, true);
            }
        }
        let needles = (!patterns.is_empty())
            .then(|| AhoCorasick::new(&patterns).ok())
            .flatten();
        Self {
            entries,
            needles,
            needle_info,
            home,
        }
    }

    /// Whether anything is protected.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Checks a path a tool will use, already resolved (the path guard's
    /// [`Confined::absolute`](super::path::Confined::absolute)).
    ///
    /// # Errors
    /// The path is in a protected place and `access` is not allowed there.
    pub fn check_path(&self, path: &Path, access: Access) -> Result<(), Refusal> {
        // Only a file with more than one name can be another name of a
        // protected file; one `stat` settles that for all entries.
        let linked = std::fs::metadata(path)
            .ok()
            .filter(|m| m.is_file() && m.nlink() > 1);
        for e in &self.entries {
            let hard_link = linked.as_ref().is_some_and(|m| same_file(e, m));
            if !covers(e, path) && !hard_link {
                continue;
            }
            let token =
                matches!(e.place, Place::DataDir) && path.file_name().is_some_and(secret_name);
            if e.place.secret() || token {
                let why = if token {
                    Place::TokenFile.why_secret()
                } else {
                    e.place.why_secret()
                };
                return Err(Refusal::Secret {
                    path: path.to_owned(),
                    what: e.place.what(),
                    protected: e.path.clone(),
                    why,
                });
            }
            if access == Access::Write {
                return Err(Refusal::Write {
                    path: path.to_owned(),
                    what: e.place.what(),
                    protected: e.path.clone(),
                });
            }
        }
        Ok(())
    }

    /// Checks free text (a string argument of a tool that may change
    /// things) for a protected path, written out or as an absolute path
    /// that resolves into one.
    ///
    /// # Errors
    /// The text names a protected place.
    pub fn check_text(&self, text: &str) -> Result<(), Refusal> {
        if let Some(r) = self.mentioned(text) {
            return Err(r);
        }
        for token in text.split(is_separator) {
            let Some(path) = self.expand(token) else {
                continue;
            };
            self.check_path(&resolve(&path), Access::Write)
                .map_err(|r| self.mention(token, r))?;
        }
        Ok(())
    }

    /// Checks a shell command line: [`Self::check_text`], plus a
    /// `toolgate` word followed by a steering subcommand
    /// ([`CONTROL_SUBCOMMANDS`]) anywhere after it (through `env`, `sudo`,
    /// `sh -c '…'`, a full path), or a control method's name
    /// (`toolgate/approve`, as sent to the control socket by hand).
    ///
    /// # Errors
    /// See [`Refusal`].
    pub fn check_command(&self, command: &str) -> Result<(), Refusal> {
        check_control(command)?;
        self.check_text(command)
    }

    fn mentioned(&self, text: &str) -> Option<Refusal> {
        let ac = self.needles.as_ref()?;
        let bytes = text.as_bytes();
        for m in ac.find_overlapping_iter(text) {
            let info = &self.needle_info[m.pattern().as_usize()];
            let before_ok = m.start() == 0 || !is_name_byte(bytes[m.start() - 1]);
            let after_ok = info.prefix || bytes.get(m.end()).is_none_or(|b| !is_name_byte(*b));
            if before_ok && after_ok {
                let e = &self.entries[info.entry];
                return Some(Refusal::Mention {
                    found: text[m.start()..m.end()].to_owned(),
                    what: e.place.what(),
                    protected: e.path.clone(),
                });
            }
        }
        None
    }

    fn mention(&self, token: &str, r: Refusal) -> Refusal {
        match r {
            Refusal::Write {
                what, protected, ..
            }
            | Refusal::Secret {
                what, protected, ..
            } => Refusal::Mention {
                found: token.to_owned(),
                what,
                protected,
            },
            other => other,
        }
    }

    /// An absolute path from a token (`/…`, `~/…`, `$HOME/…`, `${HOME}/…`).
    fn expand(&self, token: &str) -> Option<PathBuf> {
        if token.starts_with('/') {
            return Some(PathBuf::from(token));
        }
        let home = self.home.as_deref()?;
        ["~/", "$HOME/", "${HOME}/"]
            .iter()
            .find_map(|p| token.strip_prefix(p))
            .map(|rest| home.join(rest))
    }
}

/// Whether `path` lies in entry `e`.
fn covers(e: &Entry, path: &Path) -> bool {
    match e.place {
        Place::ConfigFile | Place::TokenFile => path == e.path,
        Place::DataDir | Place::RuntimeDir => path.starts_with(&e.path),
        Place::Sockets => {
            path.parent() == e.path.parent()
                && match (path.file_name(), e.path.file_name()) {
                    (Some(p), Some(s)) => p.as_encoded_bytes().starts_with(s.as_encoded_bytes()),
                    _ => false,
                }
        }
    }
}

/// Whether `m` is a hard link to protected file `e`: same device and
/// inode (read fresh: an editor's save replaces the file).
fn same_file(e: &Entry, m: &std::fs::Metadata) -> bool {
    matches!(e.place, Place::ConfigFile | Place::TokenFile)
        && std::fs::metadata(&e.path).is_ok_and(|p| p.dev() == m.dev() && p.ino() == m.ino())
}

/// A file name that says it holds a token.
fn secret_name(name: &std::ffi::OsStr) -> bool {
    let name = name.to_string_lossy().to_ascii_lowercase();
    name.ends_with(".http") || name.contains("token")
}

/// Characters that can continue a file name, so a match of `/x/data` in
/// `/x/database` is not one.
fn is_name_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-')
}

/// Where a path-like token in text ends: whitespace, quotes and the shell's
/// operators, and `=`/`:`/`,` (`--config=/x`, `PATH=/a:/b`, JSON arrays).
fn is_separator(c: char) -> bool {
    c.is_whitespace()
        || matches!(
            c,
            '\'' | '"'
                | '`'
                | ';'
                | '|'
                | '&'
                | '<'
                | '>'
                | '('
                | ')'
                | '='
                | ':'
                | ','
                | '['
                | ']'
        )
}

/// `path` resolved the way the kernel would: each existing component
/// canonicalised (symlinks followed), `..` applied to what it leads to;
/// the part that does not exist yet is appended as written (`..` there
/// climbs lexically). Relative paths are taken as they are.
fn resolve(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    let mut exists = true;
    for c in path.components() {
        match c {
            Component::Prefix(_) | Component::RootDir => out.push(c.as_os_str()),
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            Component::Normal(name) => {
                out.push(name);
                if exists {
                    match std::fs::canonicalize(&out) {
                        Ok(real) => out = real,
                        Err(_) => exists = false,
                    }
                }
            }
        }
    }
    out
}

/// A word of a command line for [`check_control`]: letters, digits and
/// the characters of file names and options. Everything else (spaces,
/// quotes, operators, `=`) separates words, so quoting, `sh -c '…'` and
/// `VAR=toolgate` all come apart into the same words.
fn words(command: &str) -> impl Iterator<Item = &str> {
    command
        .split(|c: char| !(c.is_alphanumeric() || matches!(c, '.' | '_' | '-' | '/' | '+')))
        .filter(|w| !w.is_empty())
}

/// A `toolgate` word (any path to it) followed later by a steering
/// subcommand, or a control method name.
fn check_control(command: &str) -> Result<(), Refusal> {
    let mut seen_toolgate = false;
    for word in words(command) {
        if let Some(method) = word.split("toolgate/").nth(1)
            && CONTROL_SUBCOMMANDS
                .iter()
                .any(|s| method == *s || method.starts_with(&format!("{s}/")))
        {
            return Err(Refusal::Control {
                command: format!("toolgate/{method}"),
            });
        }
        let base = word.rsplit('/').next().unwrap_or(word);
        if base == "toolgate" {
            seen_toolgate = true;
        } else if seen_toolgate && CONTROL_SUBCOMMANDS.contains(&base) {
            return Err(Refusal::Control {
                command: format!("toolgate {base}"),
            });
        }
    }
    Ok(())
}

#[cfg(test)]
#[path = "protect_tests.rs"]
mod tests;
