//! The desktop app's own settings (notifications on/off, start at login),
//! kept in a small JSON file in the config dir
//! (`~/.config/toolgate/desktop.json`), apart from the engine's
//! `config.toml`: they belong to this app on this machine, not to the
//! engine, and `toolgate serve` never reads them.
//!
//! The file is written whole through a temp file and a rename, so a crash
//! leaves the old settings or the new ones. A missing file is the
//! defaults; a file that does not parse is an error naming the file and
//! what to do, never silently replaced.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The file's name in the config dir.
pub const FILE_NAME: &str = "desktop.json";

/// What a person sets in the console's Settings view, when it runs in the
/// desktop window.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DesktopSettings {
    /// Desktop notifications for approval requests while the window is
    /// not focused.
    pub notifications: bool,
    /// Start the app when the person logs in.
    pub start_at_login: bool,
}

impl Default for DesktopSettings {
    fn default() -> Self {
        Self {
            notifications: true,
            start_at_login: false,
        }
    }
}

/// A partial update, as the UI sends it: fields left out keep their value.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SettingsPatch {
    /// New value of [`DesktopSettings::notifications`].
    pub notifications: Option<bool>,
    /// New value of [`DesktopSettings::start_at_login`].
    pub start_at_login: Option<bool>,
}

impl DesktopSettings {
    /// These settings with `patch` applied.
    pub fn patched(self, patch: SettingsPatch) -> Self {
        Self {
            notifications: patch.notifications.unwrap_or(self.notifications),
            start_at_login: patch.start_at_login.unwrap_or(self.start_at_login),
        }
    }
}

/// Why the settings file could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum SettingsError {
    /// Reading or writing failed.
    #[error("desktop settings {}: {source}", .path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// The file is not valid settings.
    #[error("desktop settings {} are unreadable ({source}); fix or delete the file to get the defaults", .path.display())]
    Parse {
        /// The file.
        path: PathBuf,
        /// The error.
        source: serde_json::Error,
    },
}

/// The settings file of one config dir.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SettingsFile {
    path: PathBuf,
}

impl SettingsFile {
    /// `<dir>/desktop.json`.
    pub fn in_dir(dir: &Path) -> Self {
        Self {
            path: dir.join(FILE_NAME),
        }
    }

    /// The default location: next to the engine's `config.toml`.
    pub fn default_location() -> Option<Self> {
        toolgate::paths::default_config_file().and_then(|f| f.parent().map(Self::in_dir))
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The settings; the defaults when there is no file yet.
    ///
    /// # Errors
    /// The file exists but cannot be read or parsed.
    pub fn load(&self) -> Result<DesktopSettings, SettingsError> {
        match std::fs::read(&self.path) {
            Ok(bytes) => serde_json::from_slice(&bytes).map_err(|source| SettingsError::Parse {
                path: self.path.clone(),
                source,
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(DesktopSettings::default()),
            Err(source) => Err(self.io(source)),
        }
    }

    /// Writes `settings` whole (temp file + rename), creating the dir.
    ///
    /// # Errors
    /// The dir or the file cannot be written.
    pub fn save(&self, settings: &DesktopSettings) -> Result<(), SettingsError> {
        if let Some(dir) = self.path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| self.io(e))?;
        }
        let tmp = self
            .path
            .with_file_name(format!(".{FILE_NAME}.{}.tmp", std::process::id()));
        let mut body =
            serde_json::to_vec_pretty(settings).map_err(|e| self.io(std::io::Error::other(e)))?;
        body.push(b'\n');
        std::fs::write(&tmp, body)
            .and_then(|()| std::fs::rename(&tmp, &self.path))
            .map_err(|e| {
                let _ = std::fs::remove_file(&tmp);
                self.io(e)
            })
    }

    fn io(&self, source: std::io::Error) -> SettingsError {
        SettingsError::Io {
            path: self.path.clone(),
            source,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_file_is_the_defaults_notifications_on_no_autostart() {
        let dir = tempfile::tempdir().unwrap();
        let s = SettingsFile::in_dir(dir.path()).load().unwrap();
        assert_eq!(
            s,
            DesktopSettings {
                notifications: true,
                start_at_login: false
            }
        );
    }

    #[test]
    fn saved_settings_load_back_and_the_dir_is_created() {
        let dir = tempfile::tempdir().unwrap();
        let file = SettingsFile::in_dir(&dir.path().join("toolgate"));
        let s = DesktopSettings {
            notifications: false,
            start_at_login: true,
        };
        file.save(&s).unwrap();
        assert_eq!(file.load().unwrap(), s);
        let names: Vec<_> = std::fs::read_dir(dir.path().join("toolgate"))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(
            names,
            vec![std::ffi::OsString::from(FILE_NAME)],
            "no temp file left"
        );
    }

    #[test]
    fn a_broken_file_is_an_error_naming_it_and_is_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let file = SettingsFile::in_dir(dir.path());
        std::fs::write(file.path(), "{\"notifications\": maybe}").unwrap();
        let e = file.load().unwrap_err().to_string();
        assert!(e.contains("desktop.json"), "{e}");
        assert!(e.contains("fix or delete"), "{e}");
        assert_eq!(
            std::fs::read_to_string(file.path()).unwrap(),
            "{\"notifications\": maybe}"
        );
    }

    #[test]
    fn unknown_keys_are_refused_so_a_typo_is_not_silently_ignored() {
        let dir = tempfile::tempdir().unwrap();
        let file = SettingsFile::in_dir(dir.path());
        std::fs::write(file.path(), r#"{"notifcations": false}"#).unwrap();
        assert!(
            file.load()
                .unwrap_err()
                .to_string()
                .contains("notifcations")
        );
    }

    #[test]
    fn a_patch_changes_only_the_fields_it_names() {
        let s = DesktopSettings::default();
        let p: SettingsPatch = serde_json::from_str(r#"{"start_at_login": true}"#).unwrap();
        assert_eq!(
            s.patched(p),
            DesktopSettings {
                notifications: true,
                start_at_login: true
            }
        );
        assert!(serde_json::from_str::<SettingsPatch>(r#"{"sound": true}"#).is_err());
    }
}
