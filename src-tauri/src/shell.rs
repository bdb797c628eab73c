//! The loop between the console and the desktop: follows the console's
//! stream into [`DesktopState`], renders its models through a [`View`] and a
//! [`Notifier`], and sends the person's tray and notification decisions
//! back. No Tauri types: the Tauri glue implements [`View`], notify-rust
//! implements [`Notifier`], and the tests implement both.

use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::Duration;

use futures::StreamExt;
use tokio_util::sync::CancellationToken;
use toolgate::wire::Via;

use crate::client::{ClientError, ConsoleSource, StreamItem};
use crate::state::{Action, DesktopState, Notice, NoticeText, TrayModel};
use crate::wire::{Event, Verdict};

/// What the window and the tray do for the shell.
pub trait View: Send + Sync + 'static {
    /// Shows this tray model (icon, tooltip, menu).
    fn render_tray(&self, model: &TrayModel);
    /// Brings the window up, on `route` of the console if given
    /// (`#/approvals?id=12`).
    fn show_window(&self, route: Option<&str>);
    /// Quits the app.
    fn quit(&self);
}

/// What a person did with a notification.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Response {
    /// Its Approve button.
    Approve,
    /// Its Deny button.
    Deny,
    /// The notification itself (the `default` action).
    Activate,
    /// Closed or expired without an action.
    Dismissed,
}

/// Called once with what became of a notification.
pub type Responder = Box<dyn FnOnce(Response) + Send>;

/// Shows and closes desktop notifications.
pub trait Notifier: Send + Sync + 'static {
    /// Shows `text`; `respond` is called once with what became of it.
    fn show(&self, text: NoticeText, respond: Responder);
    /// Closes request `id`'s notification, if one is on screen.
    fn close(&self, id: i64);
}

/// Reconnect delays after the console stream broke: doubling from the
/// first, capped at the last, reset once a snapshot arrives.
const BACKOFF: (Duration, Duration) = (Duration::from_millis(250), Duration::from_secs(5));

/// The shell: one per app.
pub struct Shell<C> {
    console: C,
    state: Mutex<DesktopState>,
    view: Box<dyn View>,
    notifier: Box<dyn Notifier>,
    clock: fn() -> i64,
    me: Weak<Self>,
}

impl<C> std::fmt::Debug for Shell<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shell").finish_non_exhaustive()
    }
}

/// Unix ms now.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

impl<C: ConsoleSource> Shell<C> {
    /// A shell over `console`, rendering through `view` and `notifier`,
    /// reading the time from `clock`.
    pub fn new(
        console: C,
        view: Box<dyn View>,
        notifier: Box<dyn Notifier>,
        clock: fn() -> i64,
    ) -> Arc<Self> {
        Arc::new_cyclic(|me| Self {
            console,
            state: Mutex::new(DesktopState::new()),
            view,
            notifier,
            clock,
            me: me.clone(),
        })
    }

    /// Follows the console until `stop`: a snapshot, then the stream after
    /// it; a `reload` or a broken connection starts over (after a backoff
    /// while the console does not answer).
    pub async fn follow(&self, stop: CancellationToken) {
        let mut delay = BACKOFF.0;
        // Said once per new reason: a console that is not serving the
        // stream yet would otherwise fill the log every few seconds.
        let mut last_error = String::new();
        while !stop.is_cancelled() {
            let run = self.follow_once();
            let ended = tokio::select! {
                () = stop.cancelled() => return,
                ended = run => ended,
            };
            match ended {
                Ok(true) => {
                    delay = BACKOFF.0;
                    last_error.clear();
                }
                Ok(false) => {}
                Err(e) => {
                    let e = e.to_string();
                    if e != last_error {
                        tracing::warn!("{e}; retrying until it answers");
                        last_error = e;
                    }
                }
            }
            tokio::select! {
                () = stop.cancelled() => return,
                () = tokio::time::sleep(delay) => {}
            }
            delay = (delay * 2).min(BACKOFF.1);
        }
    }

    /// One snapshot and the stream after it. `Ok(true)`: the snapshot
    /// arrived (the console answers), whatever ended the stream.
    async fn follow_once(&self) -> Result<bool, ClientError> {
        let snapshot = self.console.snapshot().await?;
        let notices = self.state().apply_snapshot(snapshot, (self.clock)());
        self.render(notices);
        let after = self.state().seq();
        let mut stream = self.console.events(after).await?;
        while let Some(item) = stream.next().await {
            match item? {
                StreamItem::Envelope(e) => {
                    let team = matches!(&e.event, Event::StateChanged(s) if s.is_team());
                    let notices = self.state().apply(e, (self.clock)());
                    if team {
                        let line = self.console.team().await?;
                        self.state().set_team(line);
                    }
                    self.render(notices);
                }
                StreamItem::Reload => break,
            }
        }
        Ok(true)
    }

    /// Does what a tray item or a notification asked. Approve and deny of
    /// a request that already ended do nothing (the console would answer
    /// `stale`; the state knows first).
    pub async fn act(&self, action: Action, via: Via) {
        let verdict = match action {
            Action::Approve(id) => (id, Verdict::Approve),
            Action::Deny(id) => (id, Verdict::Deny),
            Action::Quit => return self.view.quit(),
            other => return self.view.show_window(other.route().as_deref()),
        };
        let (id, verdict) = verdict;
        if !self.state().is_pending(id) {
            return;
        }
        match self.console.decide(id, verdict, via).await {
            Ok(()) => {}
            Err(e) if e.is_stale() => {}
            Err(e) => tracing::error!("cannot {} request {id}: {e}", verdict.as_str()),
        }
    }

    /// The window gained or lost focus.
    pub fn set_focused(&self, focused: bool) {
        self.state().set_focused(focused);
    }

    /// The notifications setting changed.
    pub fn set_notifications(&self, on: bool) {
        let notices = self.state().set_notifications(on);
        self.render(notices);
    }

    /// Renders the tray again (its countdowns move with the clock).
    pub fn refresh_tray(&self) {
        let model = self.state().tray((self.clock)());
        self.view.render_tray(&model);
    }

    /// How many calls wait.
    pub fn pending_count(&self) -> usize {
        self.state().pending_count()
    }

    fn render(&self, notices: Vec<Notice>) {
        self.refresh_tray();
        for notice in notices {
            match notice {
                Notice::Show(text) => {
                    let id = text.id;
                    let me = self.me.clone();
                    self.notifier.show(
                        text,
                        Box::new(move |r| {
                            if let Some(me) = me.upgrade() {
                                me.respond(id, r);
                            }
                        }),
                    );
                }
                Notice::Close { id } => self.notifier.close(id),
            }
        }
    }

    fn respond(self: Arc<Self>, id: i64, response: Response) {
        let action = match response {
            Response::Approve => Action::Approve(id),
            Response::Deny => Action::Deny(id),
            Response::Activate => Action::Open(id),
            Response::Dismissed => return,
        };
        tokio::spawn(async move { self.act(action, Via::Notification).await });
    }

    fn state(&self) -> MutexGuard<'_, DesktopState> {
        // The state is plain data: a panic while holding it cannot leave
        // it half-changed in a way worse than losing the shell.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[cfg(test)]
#[path = "shell_tests.rs"]
mod tests;
