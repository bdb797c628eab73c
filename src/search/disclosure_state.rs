//! The engine's search and disclosure state: the index, the `[search]`
//! settings in force, and the modes people chose per client in the console.
//!
//! A person's choices outlive the engine: the daemon names a file in its
//! data dir (`deferral.json`, `0600`), they are read from it at start and
//! written to it, whole and atomically, on every change. A file that cannot
//! be read or parsed is logged and ignored: the choices start empty, and
//! the config decides until a person chooses again.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use arc_swap::ArcSwap;

use super::ToolIndex;
use super::clients::Clients;
use super::disclosure::{DeferMode, DisclosureConfig};

/// Shared by every clone of an engine.
#[derive(Debug, Default)]
pub struct Disclosure {
    index: ToolIndex,
    config: ArcSwap<DisclosureConfig>,
    chosen: Mutex<BTreeMap<String, DeferMode>>,
    clients: Arc<Clients>,
    /// Where the choices are kept, once the daemon named it.
    file: OnceLock<PathBuf>,
}

/// The choices file's name in the data dir.
const FILE_NAME: &str = "deferral.json";

/// Largest choices file read (a person chooses for a handful of clients).
const MAX_FILE: u64 = 1024 * 1024;

impl Disclosure {
    /// With `config` in force.
    pub fn new(config: DisclosureConfig) -> Self {
        Self {
            config: ArcSwap::from_pointee(config),
            ..Self::default()
        }
    }

    /// The index over the registry's tools.
    pub fn index(&self) -> &ToolIndex {
        &self.index
    }

    /// The `[search]` settings in force.
    pub fn config(&self) -> Arc<DisclosureConfig> {
        self.config.load_full()
    }

    /// Puts new `[search]` settings in force (a config reload).
    pub fn set_config(&self, config: DisclosureConfig) {
        self.config.store(Arc::new(config));
    }

    /// The agent clients connected now.
    pub fn clients(&self) -> &Arc<Clients> {
        &self.clients
    }

    /// The mode a person chose for `client` in the console, if any.
    pub fn chosen(&self, client: &str) -> Option<DeferMode> {
        self.lock().get(client).copied()
    }

    /// Every client's chosen mode.
    pub fn all_chosen(&self) -> BTreeMap<String, DeferMode> {
        self.lock().clone()
    }

    /// Chooses `mode` for `client` (`None` goes back to the config).
    /// Returns whether anything changed.
    pub fn choose(&self, client: &str, mode: Option<DeferMode>) -> bool {
        let mut chosen = self.lock();
        let before = chosen.get(client).copied();
        match mode {
            Some(m) => chosen.insert(client.to_owned(), m),
            None => chosen.remove(client),
        };
        let changed = before != mode;
        if changed && let Some(file) = self.file.get() {
            save(file, &chosen);
        }
        changed
    }

    /// Keeps the choices in `data_dir` from now on, starting from what is
    /// there. Only the first call counts.
    pub fn keep_in(&self, data_dir: &Path) {
        let file = data_dir.join(FILE_NAME);
        *self.lock() = load(&file);
        let _ = self.file.set(file);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, DeferMode>> {
        self.chosen.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

fn load(file: &Path) -> BTreeMap<String, DeferMode> {
    let bytes = match crate::private_file::read(file, MAX_FILE) {
        Ok(Some(b)) => b,
        Ok(None) => return BTreeMap::new(),
        Err(e) => {
            tracing::warn!("{}: {e}; deferral choices start empty", file.display());
            return BTreeMap::new();
        }
    };
    serde_json::from_slice(&bytes).unwrap_or_else(|e| {
        tracing::warn!(
            "{}: not a deferral choices file ({e}); they start empty",
            file.display()
        );
        BTreeMap::new()
    })
}

fn save(file: &Path, chosen: &BTreeMap<String, DeferMode>) {
    let written = serde_json::to_vec_pretty(chosen)
        .map_err(std::io::Error::other)
        .and_then(|bytes| crate::private_file::write(file, &bytes));
    if let Err(e) = written {
        tracing::warn!(
            "{}: {e}; the choice holds until the engine stops",
            file.display()
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn choices_kept_in_a_data_dir_come_back_and_a_bad_file_is_ignored() {
        let dir = tempfile::tempdir().unwrap();
        let d = Disclosure::default();
        d.keep_in(dir.path());
        assert!(d.choose("cursor", Some(DeferMode::On)));
        assert!(d.choose("claude-code", Some(DeferMode::Off)));
        assert!(d.choose("claude-code", None));
        let again = Disclosure::default();
        again.keep_in(dir.path());
        assert_eq!(again.chosen("cursor"), Some(DeferMode::On));
        assert_eq!(again.chosen("claude-code"), None);
        let mode = std::fs::metadata(dir.path().join(FILE_NAME)).unwrap();
        assert_eq!(
            std::os::unix::fs::PermissionsExt::mode(&mode.permissions()) & 0o777,
            0o600
        );

        std::fs::write(dir.path().join(FILE_NAME), "{not json").unwrap();
        let broken = Disclosure::default();
        broken.keep_in(dir.path());
        assert!(broken.all_chosen().is_empty());
    }
}
