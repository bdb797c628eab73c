//! Desktop notifications through the freedesktop notification server
//! (notify-rust over zbus). tauri-plugin-notification has no action
//! buttons on Linux desktop (docs/architecture/decisions.md, "The desktop
//! app is a console client of its own engine"), so this talks to the
//! server directly: Approve and Deny buttons when the server lists the
//! `actions` capability, the `default` action (clicking the notification)
//! brings the window up on the request, and a notification is closed
//! through its handle once its request is decided elsewhere.
//!
//! One task owns every handle and takes commands in order, so a close
//! that follows a show always finds the notification it closes.

use std::collections::HashMap;
use std::sync::Arc;

use notify_rust::{Notification, NotificationHandle, NotificationResponse, Timeout};
use tokio::sync::mpsc;

use crate::shell::{Notifier, Responder, Response};
use crate::state::NoticeText;

/// The app name the server shows (and dunst rules match on).
pub const APP_NAME: &str = "toolgate";

enum Command {
    Show(NoticeText, Responder),
    Close(i64),
    /// The server closed a notification (dismissed, expired): forget its
    /// handle. After an action it is kept, so the decision that follows
    /// still closes it where the server leaves it on screen.
    Closed(i64, u32),
}

/// Notifications on the session bus's notification server.
#[derive(Debug, Clone)]
pub struct Freedesktop {
    tx: mpsc::UnboundedSender<Command>,
}

impl Freedesktop {
    /// Starts the notifier's task on the current tokio runtime.
    pub fn start() -> Self {
        let (tx, rx) = mpsc::unbounded_channel();
        tokio::spawn(run(rx, tx.clone()));
        Self { tx }
    }
}

impl Notifier for Freedesktop {
    fn show(&self, text: NoticeText, respond: Responder) {
        let _ = self.tx.send(Command::Show(text, respond));
    }

    fn close(&self, id: i64) {
        let _ = self.tx.send(Command::Close(id));
    }
}

/// Whether the server can show buttons; asked once, the first time a
/// notification is shown (the server may start after the app).
async fn has_actions() -> bool {
    match tokio::task::spawn_blocking(notify_rust::get_capabilities).await {
        Ok(Ok(caps)) => caps.iter().any(|c| c == "actions"),
        Ok(Err(e)) => {
            tracing::warn!("notification server capabilities: {e}");
            false
        }
        Err(_) => false,
    }
}

async fn run(mut rx: mpsc::UnboundedReceiver<Command>, tx: mpsc::UnboundedSender<Command>) {
    let mut actions: Option<bool> = None;
    let mut on_screen: HashMap<i64, Arc<NotificationHandle>> = HashMap::new();
    while let Some(cmd) = rx.recv().await {
        match cmd {
            Command::Show(text, respond) => {
                let buttons = match actions {
                    Some(b) => b,
                    None => *actions.insert(has_actions().await),
                };
                let id = text.id;
                match notification(&text, buttons).show_async().await {
                    Ok(handle) => {
                        let handle = Arc::new(handle);
                        on_screen.insert(id, handle.clone());
                        tokio::spawn(wait(id, handle, respond, tx.clone()));
                    }
                    Err(e) => tracing::warn!("cannot show a notification: {e}"),
                }
            }
            Command::Close(id) => {
                if let Some(handle) = on_screen.remove(&id) {
                    handle.close_async().await;
                }
            }
            Command::Closed(id, server_id) => {
                if on_screen.get(&id).is_some_and(|h| h.id() == server_id) {
                    on_screen.remove(&id);
                }
            }
        }
    }
}

/// The notification for `text`: never the arguments (see
/// [`NoticeText`]), no timeout (the engine's own deadline ends the request,
/// and its decision closes the notification).
fn notification(text: &NoticeText, buttons: bool) -> Notification {
    let mut n = Notification::new();
    n.appname(APP_NAME)
        .summary(&text.summary)
        .body(&text.body)
        .timeout(Timeout::Never);
    if buttons {
        n.action("default", "Show")
            .action("approve", "Approve")
            .action("deny", "Deny");
    }
    n
}

async fn wait(
    id: i64,
    handle: Arc<NotificationHandle>,
    respond: Responder,
    tx: mpsc::UnboundedSender<Command>,
) {
    let mut response = Response::Dismissed;
    handle
        .wait_for_action_async(|r| {
            response = match r {
                NotificationResponse::Action(a) if a == "approve" => Response::Approve,
                NotificationResponse::Action(a) if a == "deny" => Response::Deny,
                NotificationResponse::Default => Response::Activate,
                _ => Response::Dismissed,
            }
        })
        .await;
    if response == Response::Dismissed {
        let _ = tx.send(Command::Closed(id, handle.id()));
    }
    respond(response);
}
