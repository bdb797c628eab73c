//! Where toolgate keeps things, by the XDG base-directory rules (through the
//! `directories` crate): config in `~/.config/toolgate/`, data (the SQLite
//! audit log) in `~/.local/share/toolgate/`, the agent socket in
//! `$XDG_RUNTIME_DIR/toolgate/`.

use std::path::PathBuf;

use directories::{BaseDirs, ProjectDirs};

fn project() -> Option<ProjectDirs> {
    ProjectDirs::from("", "", "toolgate")
}

/// `~/.config/toolgate/config.toml`, if a home directory is known.
pub fn default_config_file() -> Option<PathBuf> {
    project().map(|p| p.config_dir().join("config.toml"))
}

/// `~/.local/share/toolgate`, or `./.toolgate` without a home directory.
pub fn default_data_dir() -> PathBuf {
    project().map_or_else(|| PathBuf::from(".toolgate"), |p| p.data_dir().to_owned())
}

/// `$XDG_RUNTIME_DIR/toolgate`, falling back to the data dir.
pub fn default_runtime_dir() -> PathBuf {
    project()
        .and_then(|p| p.runtime_dir().map(ToOwned::to_owned))
        .unwrap_or_else(default_data_dir)
}

/// Expands a leading `~/` (or a lone `~`) to the home directory.
pub fn expand_home(path: &str) -> PathBuf {
    let home = || BaseDirs::new().map(|b| b.home_dir().to_owned());
    match path.strip_prefix("~/") {
        Some(rest) => home().map_or_else(|| PathBuf::from(path), |h| h.join(rest)),
        None if path == "~" => home().unwrap_or_else(|| PathBuf::from(path)),
        None => PathBuf::from(path),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn home_is_expanded_only_at_the_start() {
        let h = expand_home("~/x");
        assert!(h.is_absolute() && h.ends_with("x"), "{h:?}");
        assert_eq!(expand_home("a/~/b"), PathBuf::from("a/~/b"));
        assert_eq!(expand_home("/abs"), PathBuf::from("/abs"));
    }
}
