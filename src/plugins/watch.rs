//! Watching the plugin directory: any change under it reloads the
//! [`PluginSet`] (which applies only what changed), so a plugin added,
//! changed or removed is in force within a second, with no restart.
//!
//! Like the config watcher ([`crate::config::watch`]): debounced by
//! [`crate::config::watch::DEBOUNCE`], `Access(_)` events ignored, and a
//! watcher error (an overflowed queue may have hidden a change) reloads
//! too. The directory is created if missing, so a first plugin dropped in
//! later is seen. Reloading runs on the debouncer's thread: it reads a few
//! small files and swaps the registry.

use std::path::PathBuf;

use notify_debouncer_full::notify::{EventKind, RecursiveMode};
use notify_debouncer_full::{
    DebounceEventResult, Debouncer, RecommendedCache, new_debouncer, notify::RecommendedWatcher,
};
use tokio::sync::watch;

use super::PluginSet;
use crate::config::watch::{DEBOUNCE, WatchError};

/// A running watch; dropping it stops watching (the loaded plugins stay).
pub struct PluginWatcher {
    checks: watch::Receiver<u64>,
    _debouncer: Debouncer<RecommendedWatcher, RecommendedCache>,
}

impl std::fmt::Debug for PluginWatcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PluginWatcher")
            .field("checks", &*self.checks.borrow())
            .finish_non_exhaustive()
    }
}

impl PluginWatcher {
    /// Loads `set`'s directory and watches it.
    ///
    /// # Errors
    /// The directory could not be created or watched.
    pub fn start(set: PluginSet) -> Result<Self, WatchError> {
        let dir: PathBuf = set.dir();
        std::fs::create_dir_all(&dir).map_err(|source| WatchError::CreateDir {
            path: dir.clone(),
            source,
        })?;
        let (checks_tx, checks) = watch::channel(0u64);
        set.reload();
        let handler = set.clone();
        let mut debouncer = new_debouncer(DEBOUNCE, None, move |res: DebounceEventResult| {
            let relevant = match &res {
                Ok(events) => events
                    .iter()
                    .any(|ev| !matches!(ev.event.kind, EventKind::Access(_))),
                Err(errors) => {
                    for e in errors {
                        tracing::warn!(error = %e, "plugin watcher error; reading the plugins again");
                    }
                    true
                }
            };
            if relevant {
                handler.reload();
                checks_tx.send_modify(|n| *n += 1);
            }
        })
        .map_err(|source| WatchError::Notify {
            path: dir.clone(),
            source,
        })?;
        debouncer
            .watch(&dir, RecursiveMode::Recursive)
            .map_err(|source| WatchError::Notify { path: dir, source })?;
        Ok(Self {
            checks,
            _debouncer: debouncer,
        })
    }

    /// Counts reloads caused by changes: lets a test wait until a change
    /// was looked at.
    pub fn checks(&self) -> watch::Receiver<u64> {
        self.checks.clone()
    }
}
