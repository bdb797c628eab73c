//! The Tauri glue under tauri's mock runtime (no display): the settings
//! commands through the IPC with the app's real capabilities (from
//! `tauri.conf.json` and `capabilities/`) and the tray menu built from a
//! model. The window's close-to-hide is not here: the mock runtime never
//! delivers `CloseRequested` to a window's listeners (its dispatcher drops
//! them), so it is checked on the real app under Xvfb (scripts/smoke).

use std::sync::{Arc, Mutex};

use tauri::test::{INVOKE_KEY, MockRuntime, get_ipc_response, mock_builder};
use tauri::webview::InvokeRequest;
use tauri::{App, WebviewUrl, WebviewWindowBuilder};

use super::*;
use crate::settings::SettingsFile;
use crate::state::{MenuEntry, TrayIcon, TrayModel};

type Applied = Arc<Mutex<Vec<DesktopSettings>>>;

/// The app as `run` configures it, on the mock runtime, with the real
/// context (capabilities included) and settings in a temp dir.
fn app(dir: &std::path::Path) -> (App<MockRuntime>, Applied) {
    let applied: Applied = Arc::default();
    let record = applied.clone();
    let apply: commands::Apply = Box::new(move |s| {
        record.lock().unwrap().push(*s);
        Ok(())
    });
    let state = SettingsState::new(SettingsFile::in_dir(dir), DesktopSettings::default(), apply);
    let app = configure(mock_builder())
        .manage(state)
        .build(tauri::generate_context!("../tauri.conf.json", test = true))
        .expect("the mock app builds");
    (app, applied)
}

fn main_window(app: &App<MockRuntime>) -> tauri::WebviewWindow<MockRuntime> {
    let url = WebviewUrl::External("http://127.0.0.1:4321/".parse().unwrap());
    WebviewWindowBuilder::new(app, MAIN, url).build().unwrap()
}

fn invoke(
    w: &tauri::WebviewWindow<MockRuntime>,
    origin: &str,
    cmd: &str,
    body: serde_json::Value,
) -> Result<serde_json::Value, serde_json::Value> {
    get_ipc_response(
        w,
        InvokeRequest {
            cmd: cmd.into(),
            callback: tauri::ipc::CallbackFn(0),
            error: tauri::ipc::CallbackFn(1),
            url: origin.parse().unwrap(),
            body: tauri::ipc::InvokeBody::from(body),
            headers: Default::default(),
            invoke_key: INVOKE_KEY.to_string(),
        },
    )
    .map(|b| b.deserialize::<serde_json::Value>().unwrap())
}

#[test]
fn the_console_origin_reads_the_desktop_settings() {
    let dir = tempfile::tempdir().unwrap();
    let (app, _) = app(dir.path());
    let w = main_window(&app);
    let got = invoke(
        &w,
        "http://127.0.0.1:4321/",
        "get_desktop_settings",
        serde_json::json!({}),
    );
    assert_eq!(
        got,
        Ok(serde_json::json!({"notifications": true, "start_at_login": false}))
    );
}

#[test]
fn setting_a_field_applies_it_saves_it_and_answers_the_new_settings() {
    let dir = tempfile::tempdir().unwrap();
    let (app, applied) = app(dir.path());
    let w = main_window(&app);
    let got = invoke(
        &w,
        "http://127.0.0.1:4321/",
        "set_desktop_settings",
        serde_json::json!({"patch": {"notifications": false}}),
    );
    let off = DesktopSettings {
        notifications: false,
        start_at_login: false,
    };
    assert_eq!(got, Ok(serde_json::to_value(off).unwrap()));
    assert_eq!(*applied.lock().unwrap(), vec![off]);
    assert_eq!(SettingsFile::in_dir(dir.path()).load().unwrap(), off);
}

#[test]
fn a_bad_patch_is_refused_with_a_message_and_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (app, applied) = app(dir.path());
    let w = main_window(&app);
    let got = invoke(
        &w,
        "http://127.0.0.1:4321/",
        "set_desktop_settings",
        serde_json::json!({"patch": {"sound": true}}),
    );
    let e = got.expect_err("an unknown field is refused");
    assert!(e.to_string().contains("sound"), "{e}");
    assert!(applied.lock().unwrap().is_empty());
    assert!(!SettingsFile::in_dir(dir.path()).path().exists());
}

#[test]
fn pages_of_other_origins_cannot_call_the_settings_commands() {
    let dir = tempfile::tempdir().unwrap();
    let (app, applied) = app(dir.path());
    let w = main_window(&app);
    for origin in [
        "http://localhost:4321/",
        "http://evil.example/",
        "https://127.0.0.1:4321/",
        "tauri://localhost/",
    ] {
        let got = invoke(
            &w,
            origin,
            "set_desktop_settings",
            serde_json::json!({"patch": {"start_at_login": true}}),
        );
        assert!(got.is_err(), "{origin} was let in: {got:?}");
    }
    assert!(applied.lock().unwrap().is_empty(), "nothing was applied");
}

#[test]
fn the_console_origin_gets_no_other_command() {
    let dir = tempfile::tempdir().unwrap();
    let (app, _) = app(dir.path());
    let w = main_window(&app);
    for cmd in [
        "plugin:autostart|enable",
        "plugin:window|close",
        "plugin:webview|create_webview_window",
    ] {
        let got = invoke(&w, "http://127.0.0.1:4321/", cmd, serde_json::json!({}));
        assert!(got.is_err(), "{cmd} was allowed: {got:?}");
    }
}

#[test]
fn the_tray_menu_has_a_submenu_per_request_then_show_and_quit() {
    let dir = tempfile::tempdir().unwrap();
    let (app, _) = app(dir.path());
    let model = TrayModel {
        icon: TrayIcon::Waiting,
        tooltip: "toolgate — 6 calls waiting".into(),
        label: Some("6".into()),
        menu: vec![
            MenuEntry::Request {
                id: 12,
                label: "shell_exec — critical, denied in 40 s".into(),
            },
            MenuEntry::More { count: 5 },
            MenuEntry::Separator,
            MenuEntry::Show,
            MenuEntry::Quit,
        ],
    };
    let menu = tray::menu(app.handle(), &model).unwrap();
    let items = menu.items().unwrap();
    assert_eq!(items.len(), 5);
    let sub = items[0].as_submenu().expect("a request is a submenu");
    assert_eq!(sub.text().unwrap(), "shell_exec — critical, denied in 40 s");
    let inner: Vec<(String, String)> = sub
        .items()
        .unwrap()
        .iter()
        .map(|i| {
            let m = i.as_menuitem().unwrap();
            (m.id().0.clone(), m.text().unwrap())
        })
        .collect();
    assert_eq!(
        inner,
        vec![
            ("approve:12".into(), "Approve".into()),
            ("deny:12".into(), "Deny".into()),
            ("open:12".into(), "Show in window".into()),
        ]
    );
    let more = items[1].as_menuitem().unwrap();
    assert_eq!(
        (more.id().0.as_str(), more.text().unwrap().as_str()),
        ("approvals", "5 more waiting…")
    );
    assert!(items[2].as_predefined_menuitem().is_some());
    assert_eq!(items[3].id().0, "show");
    assert_eq!(items[4].id().0, "quit");
    for i in &items {
        if let Some(m) = i.as_menuitem() {
            assert!(Action::parse(&m.id().0).is_some(), "{}", m.id().0);
        }
    }
}

#[test]
fn both_tray_icons_decode() {
    for v in [TrayIcon::Idle, TrayIcon::Waiting] {
        let icon = tray::icon(v).unwrap();
        assert_eq!((icon.width(), icon.height()), (64, 64));
    }
}
