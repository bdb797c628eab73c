//! Renders [`TrayModel`] with Tauri's tray icon: the icon variant, the
//! tooltip with the count, and the menu (up to five pending requests, each
//! a submenu with Approve / Deny / Show, then Show and Quit). Menu item ids
//! are [`Action::id`]s, so a click is parsed back with [`Action::parse`].

use tauri::image::Image;
use tauri::menu::{IsMenuItem, Menu, MenuItem, PredefinedMenuItem, Submenu};
use tauri::{Manager, Runtime};

use crate::state::{Action, MenuEntry, TrayIcon, TrayModel};

/// The tray's id.
pub const TRAY_ID: &str = "toolgate";

/// The icon of a variant (rendered from `icons/source.svg` by
/// `scripts/icons`).
pub fn icon(variant: TrayIcon) -> tauri::Result<Image<'static>> {
    Image::from_bytes(match variant {
        TrayIcon::Idle => include_bytes!("../../icons/tray-idle.png"),
        TrayIcon::Waiting => include_bytes!("../../icons/tray-waiting.png"),
    })
}

/// The menu of `model`.
///
/// # Errors
/// Tauri could not create a menu item.
pub fn menu<R: Runtime, M: Manager<R>>(app: &M, model: &TrayModel) -> tauri::Result<Menu<R>> {
    let item =
        |action: Action, text: &str| MenuItem::with_id(app, action.id(), text, true, None::<&str>);
    let menu = Menu::new(app)?;
    for entry in &model.menu {
        match entry {
            MenuEntry::Request { id, label } => {
                let approve = item(Action::Approve(*id), "Approve")?;
                let deny = item(Action::Deny(*id), "Deny")?;
                let open = item(Action::Open(*id), "Show in window")?;
                let items: [&dyn IsMenuItem<R>; 3] = [&approve, &deny, &open];
                menu.append(&Submenu::with_items(app, label, true, &items)?)?;
            }
            MenuEntry::More { count } => {
                menu.append(&item(
                    Action::OpenApprovals,
                    &format!("{count} more waiting…"),
                )?)?;
            }
            MenuEntry::Note(text) => {
                menu.append(&MenuItem::new(app, text, false, None::<&str>)?)?;
            }
            MenuEntry::Separator => menu.append(&PredefinedMenuItem::separator(app)?)?,
            MenuEntry::Show => menu.append(&item(Action::Show, "Show toolgate")?)?,
            MenuEntry::Quit => menu.append(&item(Action::Quit, "Quit toolgate")?)?,
        }
    }
    Ok(menu)
}
