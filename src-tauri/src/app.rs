//! The Tauri app: the window (splash until the console answers, then the
//! console itself), the tray, single instance, start at login, and the
//! lifecycle: closing the window hides it and the engine keeps running;
//! Quit (or SIGTERM / SIGINT) stops an in-app engine gracefully and leaves
//! an attached one alone.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

use tauri::tray::{MouseButton, MouseButtonState, TrayIconBuilder, TrayIconEvent};
use tauri::{
    AppHandle, Manager, RunEvent, Runtime, WebviewUrl, WebviewWindow, WebviewWindowBuilder,
    WindowEvent, Wry,
};
use tauri_plugin_autostart::ManagerExt as _;
use tokio::sync::Mutex as AsyncMutex;
use tokio_util::sync::CancellationToken;
use toolgate::wire::Via;
use url::Url;

use crate::client::HttpConsole;
use crate::commands::{self, SettingsState};
use crate::engine::{Engine, LinkError, Place};
use crate::notify::Freedesktop;
use crate::settings::{DesktopSettings, SettingsFile};
use crate::shell::{Shell, View, now_ms};
use crate::state::{Action, DesktopState};
use crate::tray;

/// The window's label (the capability names it).
pub const MAIN: &str = "main";

/// The argument autostart launches the app with: start in the tray.
pub const HIDDEN_ARG: &str = "--hidden";

/// How often the tray's countdowns are redrawn while calls wait.
const TRAY_TICK: std::time::Duration = std::time::Duration::from_secs(5);

/// The shell's parts, managed by the app.
#[derive(Default)]
struct Desktop {
    engine: AsyncMutex<Option<Engine>>,
    shell: OnceLock<Arc<Shell<HttpConsole>>>,
    /// The window shows the console (not the splash).
    console_shown: AtomicBool,
    stop: CancellationToken,
}

/// The app's commands and window behaviour on a new builder.
pub fn builder<R: Runtime>() -> tauri::Builder<R> {
    configure(tauri::Builder::<R>::new())
}

/// Adds the app's commands and window behaviour to `b`, for any runtime:
/// the real one in [`run`], tauri's mock runtime (`mock_builder()`) in
/// tests.
pub fn configure<R: Runtime>(b: tauri::Builder<R>) -> tauri::Builder<R> {
    b.invoke_handler(tauri::generate_handler![
        commands::get_desktop_settings,
        commands::set_desktop_settings
    ])
    .on_window_event(on_window_event)
}

/// Closing the main window hides it (the engine keeps running in the
/// tray); focus reaches the shell, which shows no notification while the
/// window is focused.
fn on_window_event<R: Runtime>(window: &tauri::Window<R>, event: &WindowEvent) {
    if window.label() != MAIN {
        return;
    }
    match event {
        WindowEvent::CloseRequested { api, .. } => {
            api.prevent_close();
            let _ = window.hide();
        }
        WindowEvent::Focused(focused) => {
            if let Some(shell) = window
                .try_state::<Desktop>()
                .and_then(|d| d.shell.get().cloned())
            {
                shell.set_focused(*focused);
            }
        }
        _ => {}
    }
}

/// Runs the desktop app.
pub fn run() {
    let launched = std::time::Instant::now();
    init_tracing();
    let hidden = std::env::args().any(|a| a == HIDDEN_ARG);
    let app = builder::<Wry>()
        // Measured, never asserted: from launch to each page in the
        // window having loaded (the splash, then the console).
        .on_page_load(move |_, page| {
            if page.event() == tauri::webview::PageLoadEvent::Finished {
                tracing::info!(
                    "{} loaded {} ms after launch",
                    page.url().scheme(),
                    launched.elapsed().as_millis()
                );
            }
        })
        .plugin(tauri_plugin_single_instance::init(|app, _args, _cwd| {
            show_window(app, None);
        }))
        .plugin(
            tauri_plugin_autostart::Builder::new()
                .arg(HIDDEN_ARG)
                .build(),
        )
        .manage(Desktop::default())
        .setup(move |app| {
            let (file, settings) = load_settings();
            // The settings file is what the person chose: the login entry
            // follows it (it may have been removed, or the app moved).
            if let Err(e) = set_start_at_login(app.handle(), settings.start_at_login) {
                tracing::warn!("{e}");
            }
            app.manage(SettingsState::new(
                file,
                settings,
                apply_settings(app.handle().clone()),
            ));
            open_window(app.handle(), hidden)?;
            if let Err(e) = build_tray(app.handle()) {
                // No tray host (a bare X session): the window still works.
                tracing::warn!("no tray icon: {e}");
            }
            let handle = app.handle().clone();
            tauri::async_runtime::spawn(async move { start(handle).await });
            let handle = app.handle().clone();
            tauri::async_runtime::spawn(async move { quit_on_signal(handle).await });
            Ok(())
        })
        .build(tauri::generate_context!("../tauri.conf.json"));
    let app = match app {
        Ok(app) => app,
        Err(e) => {
            eprintln!("toolgate-desktop: {e}");
            std::process::exit(1);
        }
    };
    app.run(|app, event| match event {
        // The window is hidden, never closed; only Quit ends the app.
        RunEvent::ExitRequested {
            code: None, api, ..
        } => api.prevent_exit(),
        RunEvent::Exit => stop(app),
        _ => {}
    });
}

fn init_tracing() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init();
}

/// The settings file and its settings; a broken file is reported and the
/// defaults used, the file left for the person to fix.
fn load_settings() -> (SettingsFile, DesktopSettings) {
    let file = SettingsFile::default_location()
        .unwrap_or_else(|| SettingsFile::in_dir(std::path::Path::new(".toolgate")));
    let settings = file.load().unwrap_or_else(|e| {
        tracing::error!("{e}");
        DesktopSettings::default()
    });
    (file, settings)
}

/// Applies changed settings to the running app.
fn apply_settings(app: AppHandle) -> commands::Apply {
    Box::new(move |s: &DesktopSettings| {
        if let Some(shell) = app.state::<Desktop>().shell.get() {
            shell.set_notifications(s.notifications);
        }
        set_start_at_login(&app, s.start_at_login)
    })
}

/// Makes the login entry (an XDG autostart `.desktop` file on Linux,
/// launching with [`HIDDEN_ARG`]) match `on`.
fn set_start_at_login(app: &AppHandle, on: bool) -> Result<(), String> {
    let autostart = app.autolaunch();
    let changed = match (on, autostart.is_enabled().unwrap_or(false)) {
        (true, false) => autostart.enable(),
        (false, true) => autostart.disable(),
        _ => Ok(()),
    };
    changed.map_err(|e| format!("cannot change start at login: {e}"))
}

fn open_window(app: &AppHandle, hidden: bool) -> tauri::Result<WebviewWindow> {
    WebviewWindowBuilder::new(app, MAIN, WebviewUrl::App("index.html".into()))
        .title("toolgate")
        .inner_size(1200.0, 800.0)
        .min_inner_size(720.0, 480.0)
        .visible(!hidden)
        .build()
}

fn build_tray(app: &AppHandle) -> tauri::Result<()> {
    let model = DesktopState::new().tray(now_ms());
    TrayIconBuilder::with_id(tray::TRAY_ID)
        .icon(tray::icon(model.icon)?)
        .tooltip("toolgate — starting")
        .menu(&tray::menu(app, &model)?)
        .show_menu_on_left_click(false)
        .on_menu_event(|app, event| on_menu(app, event.id().as_ref()))
        .on_tray_icon_event(|tray, event| {
            if let TrayIconEvent::Click {
                button: MouseButton::Left,
                button_state: MouseButtonState::Up,
                ..
            } = event
            {
                show_window(tray.app_handle(), None);
            }
        })
        .build(app)?;
    Ok(())
}

fn on_menu(app: &AppHandle, id: &str) {
    let Some(action) = Action::parse(id) else {
        return;
    };
    match app.state::<Desktop>().shell.get().cloned() {
        Some(shell) => {
            tauri::async_runtime::spawn(async move { shell.act(action, Via::Tray).await });
        }
        // Before the console answers only Show and Quit are in the menu.
        None if action == Action::Quit => app.exit(0),
        None => show_window(app, None),
    }
}

/// Finds or starts the engine, then shows its console and follows it.
async fn start(app: AppHandle) {
    let place = Place::from_env();
    let engine = match Engine::start_or_attach(&place).await {
        Ok(engine) => engine,
        Err(e) => {
            tracing::error!("{e}");
            splash(&app, "toolgate could not start its engine", &e.to_string());
            return;
        }
    };
    let mode = engine.mode().clone();
    tracing::info!("{}", mode.describe());
    if let Some(w) = app.get_webview_window(MAIN) {
        let _ = w.set_title(&mode.title());
    }
    let link = engine.console_link().await;
    let socket = engine.agent_socket().display().to_string();
    let desktop = app.state::<Desktop>();
    *desktop.engine.lock().await = Some(engine);
    let link = match link {
        Ok(link) => link,
        Err(e) => {
            tracing::warn!("{e}");
            let why = match e {
                LinkError::NoConsole(_) => {
                    "This engine serves no console (it runs without HTTP, or this build has none)."
                        .to_owned()
                }
                other => format!("{other}."),
            };
            splash(
                &app,
                &mode.describe(),
                &format!("{why} Agents connect on unix:{socket}."),
            );
            return;
        }
    };
    let console = match HttpConsole::new(link.base.clone(), &link.bearer) {
        Ok(c) => c,
        Err(e) => return splash(&app, &mode.describe(), &e.to_string()),
    };
    let view = TauriView { app: app.clone() };
    let shell = Shell::new(
        console,
        Box::new(view),
        Box::new(Freedesktop::start()),
        now_ms,
    );
    let settings = app.state::<SettingsState>().get();
    shell.set_notifications(settings.notifications);
    if let Some(w) = app.get_webview_window(MAIN) {
        shell.set_focused(w.is_focused().unwrap_or(false));
        if let Err(e) = w.navigate(link.login) {
            tracing::error!("cannot open the console: {e}");
        }
        desktop.console_shown.store(true, Ordering::SeqCst);
    }
    let _ = desktop.shell.set(shell.clone());
    let stop = desktop.stop.clone();
    let ticker = {
        let (shell, stop) = (shell.clone(), stop.clone());
        async move {
            let mut tick = tokio::time::interval(TRAY_TICK);
            loop {
                tokio::select! {
                    () = stop.cancelled() => return,
                    _ = tick.tick() => if shell.pending_count() > 0 { shell.refresh_tray() },
                }
            }
        }
    };
    tauri::async_runtime::spawn(ticker);
    shell.follow(stop).await;
}

/// Shows a status on the splash page (the window before the console).
fn splash(app: &AppHandle, status: &str, detail: &str) {
    let fragment = url::form_urlencoded::Serializer::new(String::new())
        .append_pair("status", status)
        .append_pair("detail", detail)
        .append_pair("settled", "1")
        .finish();
    let Some(w) = app.get_webview_window(MAIN) else {
        return;
    };
    // The splash's own URL, whatever scheme the platform serves it on.
    let mut url = w
        .url()
        .ok()
        .filter(|u| u.scheme() != "http")
        .unwrap_or_else(|| Url::parse("tauri://localhost/index.html").expect("a valid URL"));
    url.set_fragment(Some(&fragment));
    if let Err(e) = w.navigate(url) {
        tracing::error!("cannot show the status: {e}");
    }
}

/// Brings the window up, on a console route if the console is shown.
fn show_window<R: Runtime>(app: &AppHandle<R>, route: Option<&str>) {
    let Some(w) = app.get_webview_window(MAIN) else {
        return;
    };
    let _ = w.show();
    let _ = w.unminimize();
    let _ = w.set_focus();
    let console = app
        .try_state::<Desktop>()
        .is_some_and(|d| d.console_shown.load(Ordering::SeqCst));
    if let (Some(route), true) = (route, console) {
        // A JSON string literal: the route cannot break out of it.
        let js = format!(
            "location.hash = {};",
            serde_json::to_string(route).unwrap_or_default()
        );
        let _ = w.eval(js);
    }
}

/// Stops what runs: the shell's loops, then an in-app engine, within its
/// bound. Called once, as the app exits.
fn stop(app: &AppHandle) {
    let desktop = app.state::<Desktop>();
    desktop.stop.cancel();
    let engine = tauri::async_runtime::block_on(async { desktop.engine.lock().await.take() });
    if let Some(engine) = engine {
        tauri::async_runtime::block_on(engine.stop());
    }
}

/// SIGTERM and SIGINT quit like the tray's Quit: the engine stops
/// gracefully and leaves no socket or discovery file.
async fn quit_on_signal(app: AppHandle) {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut term), Ok(mut int)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) else {
        tracing::warn!("cannot install signal handlers; only Quit stops the engine cleanly");
        return;
    };
    tokio::select! {
        _ = term.recv() => {}
        _ = int.recv() => {}
    }
    tracing::info!("quitting on a signal");
    app.exit(0);
}

/// The window and tray as the shell sees them.
struct TauriView {
    app: AppHandle,
}

impl View for TauriView {
    fn render_tray(&self, model: &crate::state::TrayModel) {
        let Some(t) = self.app.tray_by_id(tray::TRAY_ID) else {
            return;
        };
        let rendered = tray::icon(model.icon)
            .and_then(|icon| t.set_icon(Some(icon)))
            .and_then(|()| t.set_tooltip(Some(&model.tooltip)))
            .and_then(|()| t.set_title(model.label.as_deref()))
            .and_then(|()| tray::menu(&self.app, model))
            .and_then(|menu| t.set_menu(Some(menu)));
        if let Err(e) = rendered {
            tracing::warn!("cannot update the tray: {e}");
        }
    }

    fn show_window(&self, route: Option<&str>) {
        show_window(&self.app, route);
    }

    fn quit(&self) {
        self.app.exit(0);
    }
}

#[cfg(test)]
#[path = "app_tests.rs"]
mod tests;
