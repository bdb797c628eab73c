//! Hot reload of the config file: one TOML file, hot-reloaded
//! (docs/architecture/overview.md, "Configuration and secrets").
//!
//! Contract:
//! - The *directory* holding the file is watched, not the file: editors and
//!   `toolgate import > …` replace files by atomic rename, which ends a watch
//!   on the old inode (docs/architecture/decisions.md, "Measured facts
//!   behind the stack"). Events are filtered on the file name;
//!   `Access(_)` events (open/close noise) are ignored; any create, modify or
//!   remove of the name re-reads and re-validates the whole file.
//! - Each new *valid* config is published on a [`tokio::sync::watch`]
//!   channel. A file that no longer parses or validates (or was removed)
//!   never replaces the running config: the last good one stays and the
//!   error is published on the status channel, so a person sees it in the UI
//!   and `toolgate serve`'s log. Reloading never panics and never stops the
//!   watcher.
//! - A rewrite with byte-identical content publishes no new config (so an
//!   editor's "save" without changes restarts no upstream server), but does
//!   clear a previous error.
//! - A write made through [`ConfigWriter`] (the console's policy editor) is
//!   in force before the file changes: the writer records the text, so the
//!   watcher's reload of it finds the same bytes and publishes nothing. The
//!   policy version therefore moves once per console edit, not twice.
//!
//! Reloading runs on the debouncer's own thread (reading and validating a
//! config takes microseconds), so no async runtime is needed to start it.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use notify_debouncer_full::notify::{EventKind, RecursiveMode};
use notify_debouncer_full::{
    DebounceEventResult, Debouncer, RecommendedCache, new_debouncer, notify::RecommendedWatcher,
};
use tokio::sync::watch;

use super::{Config, ConfigError};

/// Events closer together than this are handled as one reload; long enough
/// to merge an editor's truncate-and-write, short enough to feel immediate.
pub const DEBOUNCE: Duration = Duration::from_millis(200);

/// Adjustments applied to every loaded config before it is published (the
/// CLI's `--root`, `--data-dir`, `--strict` overrides), so a reload does not
/// silently drop them.
pub type Overrides = Box<dyn Fn(&mut Config) + Send + Sync + 'static>;

/// The outcome of the latest reload, for a person to see.
#[derive(Debug, Clone)]
pub enum ReloadStatus {
    /// Running on the config given to [`ConfigWatcher::start`]; nothing
    /// reloaded yet.
    Initial,
    /// The file was re-read and is in force.
    Applied {
        /// Counts published configs; the initial one is 0.
        generation: u64,
    },
    /// The file was re-read and rejected; the previous config stays in force.
    Rejected {
        /// The generation still in force.
        kept_generation: u64,
        /// Why (with the key path and line).
        error: Arc<ConfigError>,
    },
}

/// Why watching could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WatchError {
    /// The config path has no file name or parent directory.
    #[error("cannot watch {0}: not a file path")]
    NotAFile(PathBuf),
    /// The directory could not be created.
    #[error("cannot create config directory {path}: {source}")]
    CreateDir {
        /// The directory.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The OS watcher failed (inotify limits, missing directory).
    #[error("cannot watch {path}: {source}")]
    Notify {
        /// The directory.
        path: PathBuf,
        /// notify's error.
        source: notify_debouncer_full::notify::Error,
    },
}

/// A running watch. Dropping it stops watching; the receivers then see the
/// channel closed after their last value.
pub struct ConfigWatcher {
    config: watch::Receiver<Arc<Config>>,
    status: watch::Receiver<ReloadStatus>,
    checks: watch::Receiver<u64>,
    writer: ConfigWriter,
    _debouncer: Debouncer<RecommendedWatcher, RecommendedCache>,
}

/// Writes the config file on behalf of the running engine, so the watcher
/// does not reload what is already in force. Cloning shares it.
#[derive(Clone)]
pub struct ConfigWriter {
    path: PathBuf,
    last_text: Arc<Mutex<Option<String>>>,
    config: Arc<watch::Sender<Arc<Config>>>,
}

impl std::fmt::Debug for ConfigWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConfigWriter")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

impl ConfigWriter {
    /// The file it writes.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Replaces the file with `text` atomically (see [`crate::policy::document::save`])
    /// and records `config`, the already-validated form of `text`, as the
    /// one in force, without waking the config's subscribers: the caller
    /// applies it itself.
    ///
    /// # Errors
    /// The write failed; the file and the recorded config are unchanged.
    pub fn write(&self, text: &str, config: Config) -> std::io::Result<()> {
        // Held across the write: the reload handler takes it before
        // reading the file, so it sees either the old text with the old
        // record or the new text with the new one.
        let mut last = self
            .last_text
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        crate::policy::document::save(&self.path, text)?;
        *last = Some(text.to_owned());
        self.config.send_if_modified(|c| {
            *c = Arc::new(config);
            false
        });
        Ok(())
    }
}

impl std::fmt::Debug for ConfigWatcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConfigWatcher")
            .field("status", &*self.status.borrow())
            .finish_non_exhaustive()
    }
}

/// What the reload handler keeps between events.
struct Reloader {
    path: PathBuf,
    overrides: Overrides,
    config: Arc<watch::Sender<Arc<Config>>>,
    status: watch::Sender<ReloadStatus>,
    checks: watch::Sender<u64>,
    generation: u64,
    last_text: Arc<Mutex<Option<String>>>,
}

impl ConfigWatcher {
    /// Starts watching `path`, with `initial` (already loaded from it, with
    /// `overrides` applied) as generation 0. Creates the file's directory if
    /// missing, so the default `~/.config/toolgate/` can be watched before
    /// the first config is written.
    ///
    /// # Errors
    /// See [`WatchError`].
    pub fn start(path: &Path, initial: Config, overrides: Overrides) -> Result<Self, WatchError> {
        let (dir, _) = split(path)?;
        std::fs::create_dir_all(&dir).map_err(|source| WatchError::CreateDir {
            path: dir.clone(),
            source,
        })?;
        let (config_tx, config) = watch::channel(Arc::new(initial));
        let config_tx = Arc::new(config_tx);
        let (status_tx, status) = watch::channel(ReloadStatus::Initial);
        let (checks_tx, checks) = watch::channel(0);
        let last_text = Arc::new(Mutex::new(std::fs::read_to_string(path).ok()));
        let writer = ConfigWriter {
            path: path.to_owned(),
            last_text: last_text.clone(),
            config: config_tx.clone(),
        };
        let mut reloader = Reloader {
            path: path.to_owned(),
            overrides,
            config: config_tx,
            status: status_tx,
            checks: checks_tx,
            generation: 0,
            last_text,
        };
        let mut debouncer = new_debouncer(DEBOUNCE, None, move |res: DebounceEventResult| {
            reloader.handle(res);
        })
        .map_err(|source| WatchError::Notify {
            path: dir.clone(),
            source,
        })?;
        debouncer
            .watch(&dir, RecursiveMode::NonRecursive)
            .map_err(|source| WatchError::Notify { path: dir, source })?;
        Ok(Self {
            config,
            status,
            checks,
            writer,
            _debouncer: debouncer,
        })
    }

    /// Counts the times the file was re-read, whether or not anything was
    /// published: lets a test wait until a write has been looked at.
    pub fn checks(&self) -> watch::Receiver<u64> {
        self.checks.clone()
    }

    /// A writer whose writes this watcher does not reload.
    pub fn writer(&self) -> ConfigWriter {
        self.writer.clone()
    }

    /// The config in force; `changed()` fires on each new valid config.
    pub fn config(&self) -> watch::Receiver<Arc<Config>> {
        self.config.clone()
    }

    /// The latest reload outcome; `changed()` fires after every reload.
    pub fn status(&self) -> watch::Receiver<ReloadStatus> {
        self.status.clone()
    }
}

fn split(path: &Path) -> Result<(PathBuf, std::ffi::OsString), WatchError> {
    let name = path.file_name().map(ToOwned::to_owned);
    let dir = path.parent().map(|d| {
        if d.as_os_str().is_empty() {
            Path::new(".").to_owned()
        } else {
            d.to_owned()
        }
    });
    match (dir, name) {
        (Some(d), Some(n)) => Ok((d, n)),
        _ => Err(WatchError::NotAFile(path.to_owned())),
    }
}

impl Reloader {
    fn handle(&mut self, res: DebounceEventResult) {
        match res {
            Ok(events) => {
                let name = self.path.file_name();
                let relevant = events.iter().any(|ev| {
                    !matches!(ev.event.kind, EventKind::Access(_))
                        && ev.event.paths.iter().any(|p| p.file_name() == name)
                });
                if relevant {
                    self.reload();
                }
            }
            // A watcher error (e.g. inotify queue overflow) may have hidden
            // a change: re-read to be sure.
            Err(errors) => {
                for e in &errors {
                    tracing::warn!(error = %e, "config watcher error; re-reading the config");
                }
                self.reload();
            }
        }
    }

    fn reload(&mut self) {
        self.reload_once();
        self.checks.send_modify(|n| *n += 1);
    }

    fn reload_once(&mut self) {
        let last_text = self.last_text.clone();
        let mut last_text = last_text.lock().unwrap_or_else(PoisonError::into_inner);
        let text = match std::fs::read_to_string(&self.path) {
            Ok(t) => t,
            Err(source) => {
                return self.reject(ConfigError::Read {
                    path: self.path.clone(),
                    source,
                });
            }
        };
        if last_text.as_deref() == Some(text.as_str()) {
            // Same bytes as the config in force: clear a stale error only.
            if matches!(*self.status.borrow(), ReloadStatus::Rejected { .. }) {
                self.status.send_replace(ReloadStatus::Applied {
                    generation: self.generation,
                });
            }
            return;
        }
        match Config::parse(&text, &self.path) {
            Ok(mut config) => {
                (self.overrides)(&mut config);
                self.generation += 1;
                *last_text = Some(text);
                self.config.send_replace(Arc::new(config));
                tracing::info!(path = %self.path.display(), generation = self.generation, "config reloaded");
                self.status.send_replace(ReloadStatus::Applied {
                    generation: self.generation,
                });
            }
            Err(e) => self.reject(e),
        }
    }

    fn reject(&mut self, error: ConfigError) {
        tracing::warn!(%error, "config change rejected; keeping the last good config");
        self.status.send_replace(ReloadStatus::Rejected {
            kept_generation: self.generation,
            error: Arc::new(error),
        });
    }
}

#[cfg(test)]
#[path = "watch_tests.rs"]
mod tests;
