//! Plugins: a person's own tools and hooks, from folders in
//! `<config dir>/plugins/`, each with a `plugin.toml`
//! (docs/plugins.md).
//!
//! - [`manifest`]: the file format.
//! - [`set`]: loading the folders into the engine (tools into the
//!   registry, hooks into the pipeline) and what a person sees of each.
//! - [`watch`]: the watcher that reloads on every change, so a plugin
//!   added, changed or removed is in force within a second.
//! - [`command`] and [`hook`]: what runs a plugin's programs, under the
//!   same barrier as `shell_exec`.

pub mod command;
pub mod hook;
pub mod manifest;
pub mod set;
pub mod watch;

use std::path::{Path, PathBuf};

pub use set::{PluginSet, PluginView};
pub use watch::PluginWatcher;

/// The folder name, beside the config file.
pub const DIR: &str = "plugins";

/// The plugin directory of the config file `config_file`.
pub fn dir_for(config_file: &Path) -> PathBuf {
    config_file
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
        .join(DIR)
}
