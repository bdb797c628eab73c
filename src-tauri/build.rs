//! Tauri's build step, with the config at the repo root (`tauri.conf.json`) and
//! the two desktop-settings commands declared as the app's own permissions
//! (`allow-get-desktop-settings`, `allow-set-desktop-settings`), so a
//! capability can grant them to the console's remote origin and nothing
//! else.

fn main() {
    let attributes = tauri_build::Attributes::new()
        .config_path("../tauri.conf.json")
        .app_manifest(
            tauri_build::AppManifest::new()
                .commands(&["get_desktop_settings", "set_desktop_settings"]),
        );
    if let Err(e) = tauri_build::try_build(attributes) {
        // A build script has no other way to fail with a message.
        panic!("tauri-build: {e:#}");
    }
}
