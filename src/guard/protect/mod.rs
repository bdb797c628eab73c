//! toolgate protects itself from the tools it governs: a governed tool
//! must not approve its own calls, widen its own policy, or read the files
//! and tokens that would let it.
//!
//! Contract:
//! - **Protected places** ([`OwnFiles`]): the config file and a config dir
//!   of toolgate's own, the data dir (audit log, approvals, rules, pins,
//!   the engine's log with the console's login link, the discovery file),
//!   the runtime dir, the sockets and every token file. Governed tools may
//!   neither read nor change anything in them: the same rule the OS
//!   barrier enforces for the processes toolgate spawns.
//! - **Checked by the guard stage, before policy** ([`Protected`]), so such
//!   a call is refused outright with a reason naming what it touched, and
//!   never put in front of a person: a person asked "run `toolgate
//!   approve 7`?" is exactly the confusion this prevents.
//! - What is checked: every path-guarded argument, resolved by the path
//!   guard (symlinks and `..` included; its default when absent), and by
//!   device and inode when the file has other names (hard links); every
//!   command line of a shell-like tool ([`Protected::check_command`],
//!   read as the shell would: see `command`); and, for tools whose meaning
//!   toolgate cannot know, every string argument
//!   ([`Protected::check_text`]).
//! - **These are early, friendly refusals, not the guarantee.** A shell
//!   can always obfuscate (base64, a script written first and run later, a
//!   program that finds the socket by itself); the guarantee for spawned
//!   processes is the OS barrier. The check happens before the tool runs;
//!   a path swapped for a symlink or a hard link in between is not checked
//!   again. See `docs/architecture/decisions.md`, "Self-protection: early
//!   refusals by shell words".

mod command;
mod control;
mod expand;
mod glob;
mod paths;
mod places;
mod refusal;
mod text;
mod words;

use std::path::{Path, PathBuf};

pub use control::{CONTROL_SUBCOMMANDS, HARMLESS_SUBCOMMANDS};
pub use places::OwnFiles;
pub use refusal::Refusal;

use expand::ShellEnv;
use paths::resolve;
use places::Entry;
use text::Needles;

/// The protected set, ready for the guard stage.
#[derive(Debug, Clone, Default)]
pub struct Protected {
    entries: Vec<Entry>,
    needles: Needles,
    env: ShellEnv,
}

impl Protected {
    /// Resolves `own` and prepares what text is searched for: the
    /// spellings of each place (see [`Needles::new`]; `roots` are where a
    /// command may run) and the environment words are expanded in.
    pub fn new(own: &OwnFiles, roots: &[PathBuf]) -> Self {
        let entries = places::entries(own);
        let paths: Vec<&Path> = entries.iter().map(|e| e.path.as_path()).collect();
        let env = ShellEnv::from_process(&paths);
        let needles = Needles::new(&entries, env.home.as_deref(), roots);
        Self {
            entries,
            needles,
            env,
        }
    }

    /// Whether anything is protected.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Checks a path a tool will read or change, already resolved (the
    /// path guard's [`Confined::absolute`](super::path::Confined::absolute)).
    ///
    /// # Errors
    /// The path is in a protected place, or is another name (a hard link)
    /// of a file in one.
    pub fn check_path(&self, path: &Path) -> Result<(), Refusal> {
        if let Some(e) = self.entries.iter().find(|e| e.covers(path)) {
            return Err(Refusal::Touches {
                path: path.to_owned(),
                what: e.place.what(),
                protected: e.path.clone(),
                why: e.place.why(),
            });
        }
        match paths::hard_link_target(&self.entries, path) {
            Some((e, target)) => Err(Refusal::HardLink {
                path: path.to_owned(),
                target,
                what: e.place.what(),
                protected: e.path.clone(),
                why: e.place.why(),
            }),
            None => Ok(()),
        }
    }

    /// Checks free text (a string argument of a tool toolgate cannot read)
    /// for a protected path: written out, through `~`, `~name` or a
    /// variable, as a glob that could name one, or as an absolute path
    /// that resolves into one.
    ///
    /// # Errors
    /// The text names a protected place.
    pub fn check_text(&self, text: &str) -> Result<(), Refusal> {
        if let Some(r) = self.needles.find(&self.entries, text) {
            return Err(r);
        }
        for token in text.split(text::is_separator) {
            let expanded = self.env.expand(token);
            if !expanded.starts_with('/') {
                continue;
            }
            if glob::is_glob(&expanded) {
                if let Some(r) = self.glob_names(Path::new(&expanded)) {
                    return Err(r.mentioned_as(token));
                }
                continue;
            }
            self.check_path(&resolve(Path::new(&expanded)))
                .map_err(|r| r.mentioned_as(token))?;
        }
        Ok(())
    }

    /// Checks a shell command line run in an unknown directory; see
    /// [`Self::check_command_in`].
    ///
    /// # Errors
    /// See [`Refusal`].
    pub fn check_command(&self, command: &str) -> Result<(), Refusal> {
        self.check_command_in(command, None)
    }

    /// Checks a shell command line run in `cwd` (when known), read the
    /// way the shell would: refused when it runs toolgate for anything but
    /// [`HARMLESS_SUBCOMMANDS`] (as the command, or with a control
    /// subcommand after it through `env`, `sudo`, `sh -c '…'`, a script's
    /// argv), names a control method (`toolgate/approve`), or names a
    /// protected path in any spelling a shell expands: `~`, `~name`,
    /// `$HOME`, `${HOME}`, quoted pieces, globs, relative to where a `cd`
    /// went; and [`Self::check_text`] on the line as written.
    ///
    /// # Errors
    /// See [`Refusal`].
    pub fn check_command_in(&self, command: &str, cwd: Option<&Path>) -> Result<(), Refusal> {
        control::check_methods(command)?;
        command::Reader::new(self, cwd).line(command)?;
        self.check_text(command)
    }

    /// The refusal for a glob that could name a protected place.
    fn glob_names(&self, pattern: &Path) -> Option<Refusal> {
        self.entries
            .iter()
            .find(|e| glob::could_name(pattern, &e.path))
            .map(|e| Refusal::Touches {
                path: pattern.to_owned(),
                what: e.place.what(),
                protected: e.path.clone(),
                why: e.place.why(),
            })
    }
}

#[cfg(test)]
mod tests;
