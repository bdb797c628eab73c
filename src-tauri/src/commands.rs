//! The only IPC the window has: the desktop settings, read and changed by
//! the console's Settings view when it runs in the desktop window
//! (docs/architecture/overview.md, "Window"). Granted to the console's origin
//! `http://127.0.0.1:*` and nothing else by
//! `src-tauri/capabilities/desktop-settings.json`.
//!
//! From the UI (`window.__TAURI_INTERNALS__` exists only in the window):
//! ```js
//! const t = window.__TAURI_INTERNALS__;
//! const s = await t.invoke('get_desktop_settings');
//! //  -> {notifications: true, start_at_login: false}
//! const s2 = await t.invoke('set_desktop_settings', {patch: {start_at_login: true}});
//! //  -> the settings after the change; rejects with a message string
//! ```

use std::sync::Mutex;

use tauri::State;

use crate::settings::{DesktopSettings, SettingsFile, SettingsPatch};

/// Applies settings to the running app (notifications on the shell, start
/// at login through the autostart plugin). A closure so the mock-runtime
/// tests can record instead.
pub type Apply = Box<dyn Fn(&DesktopSettings) -> Result<(), String> + Send + Sync>;

/// The settings and where they live, managed by the app.
pub struct SettingsState {
    file: SettingsFile,
    current: Mutex<DesktopSettings>,
    apply: Apply,
}

impl std::fmt::Debug for SettingsState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SettingsState")
            .field("file", &self.file)
            .field("current", &self.current)
            .finish_non_exhaustive()
    }
}

impl SettingsState {
    /// `current` as loaded from `file`, changed through `apply`.
    pub fn new(file: SettingsFile, current: DesktopSettings, apply: Apply) -> Self {
        Self {
            file,
            current: Mutex::new(current),
            apply,
        }
    }

    /// The settings now.
    pub fn get(&self) -> DesktopSettings {
        *self.current.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Applies `patch`: to the app first (so a start-at-login that cannot
    /// be set is not saved as set), then to the file.
    ///
    /// # Errors
    /// A message for the UI: what failed and which file.
    pub fn set(&self, patch: SettingsPatch) -> Result<DesktopSettings, String> {
        let mut current = self.current.lock().unwrap_or_else(|p| p.into_inner());
        let next = current.patched(patch);
        (self.apply)(&next)?;
        self.file.save(&next).map_err(|e| e.to_string())?;
        *current = next;
        Ok(next)
    }
}

/// `get_desktop_settings`: the desktop settings.
#[tauri::command]
pub fn get_desktop_settings(state: State<'_, SettingsState>) -> DesktopSettings {
    state.get()
}

/// `set_desktop_settings {patch}`: changes the fields `patch` names and
/// answers the settings after the change.
#[tauri::command]
pub fn set_desktop_settings(
    state: State<'_, SettingsState>,
    patch: SettingsPatch,
) -> Result<DesktopSettings, String> {
    state.set(patch)
}
