//! What the tray and the notifications show, derived from the console's
//! event stream: pure Rust, no Tauri types, so every rule is unit-tested
//! without a window (docs/architecture/overview.md, "Tray and
//! notifications": they are driven from the event stream in Rust).
//!
//! [`DesktopState`] takes the snapshot and the stream's envelopes, the
//! window's focus and the notifications setting, and answers with models
//! the glue renders: [`TrayModel`] (icon variant, tooltip, menu) and
//! [`Notice`] commands (show one per new request while the window is not
//! focused, close it once the request is decided). Time comes in as a
//! parameter (`now_ms`), never from the clock.

use std::collections::{BTreeSet, HashMap};

use crate::wire::{Envelope, Event, Request, Snapshot, TeamLine, risk_word};

/// How many pending requests the tray menu lists.
pub const MENU_REQUESTS: usize = 5;

/// The tray icon's variant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TrayIcon {
    /// Nothing waits.
    Idle,
    /// At least one call waits for a decision.
    Waiting,
}

/// What the tray shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrayModel {
    /// Which icon.
    pub icon: TrayIcon,
    /// `toolgate — 2 calls waiting`.
    pub tooltip: String,
    /// The label beside the icon: the count while calls wait. Linux tray
    /// hosts (StatusNotifierItem through libayatana) show no tooltip, so
    /// the count is said there too.
    pub label: Option<String>,
    /// The menu, top to bottom.
    pub menu: Vec<MenuEntry>,
}

/// One entry of the tray menu.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MenuEntry {
    /// A pending request: a submenu with Approve, Deny and Show.
    Request {
        /// The request.
        id: i64,
        /// `shell_exec — critical, denied in 42 s`.
        label: String,
    },
    /// `3 more waiting…`: shows the window on the approvals.
    More {
        /// How many are not listed.
        count: usize,
    },
    /// A line that only informs (greyed): the team database is away.
    Note(String),
    /// A line between groups.
    Separator,
    /// Show the window.
    Show,
    /// Quit the app.
    Quit,
}

/// What a menu item or a notification action asks for. Menu item ids are
/// the text form ([`Action::id`]), so the glue needs no table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Approve this request.
    Approve(i64),
    /// Deny this request.
    Deny(i64),
    /// Bring the window up on this request.
    Open(i64),
    /// Bring the window up on the approvals.
    OpenApprovals,
    /// Bring the window up.
    Show,
    /// Quit.
    Quit,
}

impl Action {
    /// The menu item id: `approve:12`, `deny:12`, `open:12`, `approvals`,
    /// `show`, `quit`.
    pub fn id(self) -> String {
        match self {
            Self::Approve(id) => format!("approve:{id}"),
            Self::Deny(id) => format!("deny:{id}"),
            Self::Open(id) => format!("open:{id}"),
            Self::OpenApprovals => "approvals".to_owned(),
            Self::Show => "show".to_owned(),
            Self::Quit => "quit".to_owned(),
        }
    }

    /// Reads a menu item id back; `None` for anything else.
    pub fn parse(id: &str) -> Option<Self> {
        let request = |rest: &str| rest.parse::<i64>().ok();
        match id.split_once(':') {
            Some(("approve", rest)) => request(rest).map(Self::Approve),
            Some(("deny", rest)) => request(rest).map(Self::Deny),
            Some(("open", rest)) => request(rest).map(Self::Open),
            Some(_) => None,
            None => match id {
                "approvals" => Some(Self::OpenApprovals),
                "show" => Some(Self::Show),
                "quit" => Some(Self::Quit),
                _ => None,
            },
        }
    }

    /// The console route the window shows for it (`#/approvals?id=12`),
    /// if it opens the window somewhere in particular.
    pub fn route(self) -> Option<String> {
        match self {
            Self::Open(id) => Some(format!("#/approvals?id={id}")),
            Self::OpenApprovals => Some("#/approvals".to_owned()),
            _ => None,
        }
    }
}

/// A desktop notification to show or close.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Notice {
    /// Show one for a new request.
    Show(NoticeText),
    /// Close the one of this request: it was decided, or notifications
    /// were turned off.
    Close {
        /// The request.
        id: i64,
    },
}

/// A notification's text: the tool, its risk and the seconds until it is
/// denied automatically. Never the arguments, nor the rule's reason (which
/// may quote them).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NoticeText {
    /// The request it is about.
    pub id: i64,
    /// `shell_exec needs a decision`.
    pub summary: String,
    /// `Risk critical. Denied automatically in 42 s.`
    pub body: String,
}

/// The shell's view of the engine: the pending requests and which of
/// them have a notification on screen.
#[derive(Debug, Clone, Default)]
pub struct DesktopState {
    /// Applied up to this sequence number.
    seq: u64,
    pending: HashMap<i64, Request>,
    /// Requests with a notification on screen.
    notified: BTreeSet<i64>,
    focused: bool,
    notifications_off: bool,
    /// The team link, when the engine is part of a team.
    team: Option<TeamLine>,
}

impl DesktopState {
    /// An empty state: nothing pending, window not focused, notifications
    /// on.
    pub fn new() -> Self {
        Self::default()
    }

    /// The sequence number the next stream subscription starts after.
    pub fn seq(&self) -> u64 {
        self.seq
    }

    /// How many calls wait.
    pub fn pending_count(&self) -> usize {
        self.pending.len()
    }

    /// Whether request `id` is pending (a tray or notification action on
    /// an ended request must do nothing).
    pub fn is_pending(&self, id: i64) -> bool {
        self.pending.contains_key(&id)
    }

    /// Replaces everything with a snapshot (at start, and after the stream
    /// said `reload`): requests it no longer has close their notification,
    /// requests new to this state are announced like stream events.
    pub fn apply_snapshot(&mut self, snapshot: Snapshot, now_ms: i64) -> Vec<Notice> {
        self.seq = snapshot.seq;
        self.team = snapshot.team;
        let fresh: HashMap<i64, Request> =
            snapshot.pending.into_iter().map(|r| (r.id, r)).collect();
        let mut notices: Vec<Notice> = self
            .pending
            .keys()
            .filter(|id| !fresh.contains_key(id))
            .copied()
            .collect::<BTreeSet<_>>()
            .into_iter()
            .filter_map(|id| self.forget(id))
            .collect();
        let mut new: Vec<Request> = fresh
            .into_values()
            .filter(|r| !self.pending.contains_key(&r.id))
            .collect();
        new.sort_by_key(|r| (r.expires_ms, r.id));
        notices.extend(new.into_iter().filter_map(|r| self.add(r, now_ms)));
        notices
    }

    /// Applies one stream envelope; envelopes at or before [`Self::seq`]
    /// (already in the snapshot, or replayed) change nothing.
    pub fn apply(&mut self, envelope: Envelope, now_ms: i64) -> Vec<Notice> {
        if envelope.seq <= self.seq {
            return Vec::new();
        }
        self.seq = envelope.seq;
        let notice = match envelope.event {
            Event::ApprovalRequested(r) if !self.pending.contains_key(&r.id) => self.add(r, now_ms),
            Event::ApprovalDecided(d) => self.forget(d.id),
            _ => None,
        };
        notice.into_iter().collect()
    }

    /// The team link as read again after a `state_changed` of the team.
    pub fn set_team(&mut self, team: Option<TeamLine>) {
        self.team = team;
    }

    /// The window gained or lost focus. No notification is shown while it
    /// is focused (the console shows the request); the ones on screen stay
    /// until their request ends.
    pub fn set_focused(&mut self, focused: bool) {
        self.focused = focused;
    }

    /// The "notifications" setting. Turning it off closes every
    /// notification on screen.
    pub fn set_notifications(&mut self, on: bool) -> Vec<Notice> {
        self.notifications_off = !on;
        if on {
            return Vec::new();
        }
        std::mem::take(&mut self.notified)
            .into_iter()
            .map(|id| Notice::Close { id })
            .collect()
    }

    /// Pending requests, soonest automatic deny first.
    pub fn pending(&self) -> Vec<&Request> {
        let mut v: Vec<&Request> = self.pending.values().collect();
        v.sort_by_key(|r| (r.expires_ms, r.id));
        v
    }

    /// What the tray shows now.
    pub fn tray(&self, now_ms: i64) -> TrayModel {
        let n = self.pending.len();
        let mut tooltip = match n {
            0 => "toolgate — no calls waiting".to_owned(),
            1 => "toolgate — 1 call waiting".to_owned(),
            n => format!("toolgate — {n} calls waiting"),
        };
        // Linux tray hosts show no tooltip: the menu says it too, first.
        let degraded = self.team.as_ref().filter(|t| t.is_degraded());
        let mut menu: Vec<MenuEntry> = Vec::new();
        if let Some(team) = degraded {
            tooltip.push_str(" · team degraded, deciding alone");
            menu.extend([
                MenuEntry::Note(format!("⚠ Team degraded: {}", team.summary)),
                MenuEntry::Separator,
            ]);
        }
        menu.extend(
            self.pending()
                .into_iter()
                .take(MENU_REQUESTS)
                .map(|r| MenuEntry::Request {
                    id: r.id,
                    label: format!(
                        "{} — {}, denied in {}",
                        r.tool,
                        risk_word(r.risk),
                        seconds_left(r, now_ms)
                    ),
                }),
        );
        if n > MENU_REQUESTS {
            menu.push(MenuEntry::More {
                count: n - MENU_REQUESTS,
            });
        }
        if n > 0 {
            menu.push(MenuEntry::Separator);
        }
        menu.extend([MenuEntry::Show, MenuEntry::Quit]);
        TrayModel {
            icon: if n == 0 {
                TrayIcon::Idle
            } else {
                TrayIcon::Waiting
            },
            tooltip,
            label: (n > 0).then(|| n.to_string()),
            menu,
        }
    }

    fn add(&mut self, r: Request, now_ms: i64) -> Option<Notice> {
        let id = r.id;
        let notice = (!self.focused && !self.notifications_off).then(|| {
            Notice::Show(NoticeText {
                id,
                summary: format!("{} needs a decision", r.tool),
                body: format!(
                    "Risk {}. Denied automatically in {}.",
                    risk_word(r.risk),
                    seconds_left(&r, now_ms)
                ),
            })
        });
        if notice.is_some() {
            self.notified.insert(id);
        }
        self.pending.insert(id, r);
        notice
    }

    fn forget(&mut self, id: i64) -> Option<Notice> {
        self.pending.remove(&id);
        self.notified.remove(&id).then_some(Notice::Close { id })
    }
}

/// `42 s`, rounded up (a request due in 0.3 s has not been denied yet).
fn seconds_left(r: &Request, now_ms: i64) -> String {
    let ms = r.expires_ms.saturating_sub(now_ms).max(0);
    format!("{} s", (ms + 999) / 1000)
}

#[cfg(test)]
#[path = "state_tests.rs"]
mod tests;
