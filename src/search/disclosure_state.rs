//! The engine's search and disclosure state: the index, the `[search]`
//! settings in force, the modes people chose per client in the console,
//! and the tools they pinned as core.
//!
//! A person's choices outlive the engine: the daemon names its data dir,
//! and each kind is read from its own file there at start (`deferral.json`,
//! `core-pins.json`, `0600`) and written to it, whole and atomically, on
//! every change. Two files rather than one grown file, so an engine of an
//! older version still reads the deferral choices it knows. A file that
//! cannot be read or parsed is logged and ignored: its choices start empty,
//! and the config decides until a person chooses again.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};

use arc_swap::ArcSwap;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use super::ToolIndex;
use super::clients::Clients;
use super::core_tools::{CorePinError, CorePins};
use super::disclosure::{DeferMode, DisclosureConfig};
use crate::tool::ToolName;

/// Shared by every clone of an engine.
#[derive(Debug, Default)]
pub struct Disclosure {
    index: ToolIndex,
    config: ArcSwap<DisclosureConfig>,
    chosen: Mutex<BTreeMap<String, DeferMode>>,
    /// Swapped whole, so a plan reads them without waiting on a save.
    pins: Mutex<Arc<CorePins>>,
    clients: Arc<Clients>,
    /// The data dir the choices are kept in, once the daemon named it.
    dir: OnceLock<PathBuf>,
}

/// The deferral choices' file name in the data dir.
const FILE_NAME: &str = "deferral.json";

/// The core pins' file name in the data dir.
const PINS_FILE: &str = "core-pins.json";

/// Largest choices file read (a person chooses for a handful of clients,
/// and pins at most [`super::core_tools::MAX_PINS`] names of 64 bytes).
const MAX_FILE: u64 = 1024 * 1024;

/// `core-pins.json`: an object, so it can grow a field without a new file.
#[derive(Debug, Default, Serialize, Deserialize)]
struct PinsFile {
    /// Exact registry names, sorted.
    #[serde(default)]
    tools: Vec<String>,
}

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
        if changed && let Some(dir) = self.dir.get() {
            save(&dir.join(FILE_NAME), &*chosen);
        }
        changed
    }

    /// The tools a person pinned as core.
    pub fn pins(&self) -> Arc<CorePins> {
        self.pins_lock().clone()
    }

    /// Pins `tool` as core, or unpins it. Returns whether anything
    /// changed.
    ///
    /// # Errors
    /// Pinning more than [`super::core_tools::MAX_PINS`] tools.
    pub fn pin(&self, tool: &ToolName, pinned: bool) -> Result<bool, CorePinError> {
        let mut pins = self.pins_lock();
        let Some(next) = pins.with(tool, pinned)? else {
            return Ok(false);
        };
        if let Some(dir) = self.dir.get() {
            let file = PinsFile {
                tools: next.names().map(ToString::to_string).collect(),
            };
            save(&dir.join(PINS_FILE), &file);
        }
        *pins = Arc::new(next);
        Ok(true)
    }

    /// Keeps the choices and pins in `data_dir` from now on, starting from
    /// what is there. Only the first call counts.
    pub fn keep_in(&self, data_dir: &Path) {
        if self.dir.set(data_dir.to_owned()).is_err() {
            return;
        }
        *self.lock() = load(&data_dir.join(FILE_NAME), "deferral choices");
        let file: PinsFile = load(&data_dir.join(PINS_FILE), "core pins");
        *self.pins_lock() = Arc::new(valid_pins(file, &data_dir.join(PINS_FILE)));
    }

    fn lock(&self) -> MutexGuard<'_, BTreeMap<String, DeferMode>> {
        self.chosen.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn pins_lock(&self) -> MutexGuard<'_, Arc<CorePins>> {
        self.pins.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The pins of a file read back: each a valid tool name (others are logged
/// and dropped), at most [`super::core_tools::MAX_PINS`].
fn valid_pins(file: PinsFile, path: &Path) -> CorePins {
    let names = file.tools.into_iter().filter_map(|n| {
        ToolName::new(&n)
            .map_err(|e| tracing::warn!("{}: {e}; that pin is dropped", path.display()))
            .ok()
    });
    CorePins::from_names(names.take(super::core_tools::MAX_PINS))
}

/// `file` as a `T`; the default, logged, when it cannot be read or parsed.
fn load<T: DeserializeOwned + Default>(file: &Path, what: &str) -> T {
    let bytes = match crate::private_file::read(file, MAX_FILE) {
        Ok(Some(b)) => b,
        Ok(None) => return T::default(),
        Err(e) => {
            tracing::warn!("{}: {e}; {what} start empty", file.display());
            return T::default();
        }
    };
    serde_json::from_slice(&bytes).unwrap_or_else(|e| {
        tracing::warn!(
            "{}: not a file of {what} ({e}); they start empty",
            file.display()
        );
        T::default()
    })
}

/// Writes `value` to `file`, whole; a failure is logged, and the change
/// holds in memory until the engine stops.
fn save<T: Serialize + ?Sized>(file: &Path, value: &T) {
    let written = serde_json::to_vec_pretty(value)
        .map_err(std::io::Error::other)
        .and_then(|bytes| crate::private_file::write(file, &bytes));
    if let Err(e) = written {
        tracing::warn!(
            "{}: {e}; the change holds until the engine stops",
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

    fn name(n: &str) -> ToolName {
        ToolName::new(n).unwrap()
    }

    #[test]
    fn pins_kept_in_a_data_dir_come_back_beside_the_choices() {
        let dir = tempfile::tempdir().unwrap();
        let d = Disclosure::default();
        d.keep_in(dir.path());
        assert!(d.choose("cursor", Some(DeferMode::On)));
        assert_eq!(d.pin(&name("git__git_status"), true), Ok(true));
        assert_eq!(d.pin(&name("git__git_status"), true), Ok(false));
        assert_eq!(d.pin(&name("github__get_me"), true), Ok(true));
        assert_eq!(d.pin(&name("github__get_me"), false), Ok(true));

        let again = Disclosure::default();
        again.keep_in(dir.path());
        assert!(again.pins().contains("git__git_status"));
        assert!(!again.pins().contains("github__get_me"));
        assert_eq!(again.pins().len(), 1);
        assert_eq!(again.chosen("cursor"), Some(DeferMode::On));
        let meta = std::fs::metadata(dir.path().join(PINS_FILE)).unwrap();
        assert_eq!(
            std::os::unix::fs::PermissionsExt::mode(&meta.permissions()) & 0o777,
            0o600
        );
        let text = std::fs::read_to_string(dir.path().join(PINS_FILE)).unwrap();
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v, serde_json::json!({"tools": ["git__git_status"]}));
    }

    #[test]
    fn an_old_deferral_file_loads_and_bad_pins_are_ignored() {
        let dir = tempfile::tempdir().unwrap();
        // A deferral file from before pins existed, and no pins file.
        std::fs::write(dir.path().join(FILE_NAME), r#"{"cursor": "off"}"#).unwrap();
        let old = Disclosure::default();
        old.keep_in(dir.path());
        assert_eq!(old.chosen("cursor"), Some(DeferMode::Off));
        assert!(old.pins().is_empty());

        std::fs::write(dir.path().join(PINS_FILE), "[1, 2").unwrap();
        let corrupt = Disclosure::default();
        corrupt.keep_in(dir.path());
        assert!(corrupt.pins().is_empty(), "a corrupt file is ignored");
        assert_eq!(
            corrupt.chosen("cursor"),
            Some(DeferMode::Off),
            "the choices still load"
        );

        let body = r#"{"tools": ["ok__tool", "bad name", ""], "later": true}"#;
        std::fs::write(dir.path().join(PINS_FILE), body).unwrap();
        let mixed = Disclosure::default();
        mixed.keep_in(dir.path());
        let names: Vec<String> = mixed.pins().names().map(ToString::to_string).collect();
        assert_eq!(
            names,
            ["ok__tool"],
            "invalid names dropped, unknown fields ignored"
        );
    }
}
