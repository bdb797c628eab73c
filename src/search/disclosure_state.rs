//! The engine's search and disclosure state: the index, the `[search]`
//! settings in force, and the modes people chose per client in the console.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};

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
        before != mode
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, DeferMode>> {
        self.chosen.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
