use super::*;
use crate::wire::{Decided, Risk};

const NOW: i64 = 1_700_000_000_000;

fn request(id: i64, tool: &str, risk: Risk, expires_in_ms: i64) -> Request {
    Request {
        id,
        call_id: id * 10,
        tool: tool.to_owned(),
        risk,
        reason: "`rm -rf /home/me/secret-project` is destructive".to_owned(),
        caller: "claude-desktop · pid 4".to_owned(),
        expires_ms: NOW + expires_in_ms,
    }
}

fn requested(seq: u64, r: Request) -> Envelope {
    Envelope {
        seq,
        ts_ms: NOW,
        event: Event::ApprovalRequested(r),
    }
}

fn decided(seq: u64, id: i64, status: &str) -> Envelope {
    Envelope {
        seq,
        ts_ms: NOW,
        event: Event::ApprovalDecided(Decided {
            id,
            status: status.to_owned(),
        }),
    }
}

fn snapshot(seq: u64, pending: Vec<Request>) -> Snapshot {
    Snapshot {
        seq,
        pending,
        team: None,
    }
}

fn shown_ids(notices: &[Notice]) -> Vec<i64> {
    notices
        .iter()
        .filter_map(|n| match n {
            Notice::Show(t) => Some(t.id),
            Notice::Close { .. } => None,
        })
        .collect()
}

#[test]
fn a_new_request_while_unfocused_shows_one_notification_with_tool_risk_and_seconds() {
    let mut s = DesktopState::new();
    let notices = s.apply(
        requested(1, request(7, "shell_exec", Risk::Critical, 41_200)),
        NOW,
    );
    let [Notice::Show(text)] = notices.as_slice() else {
        panic!("expected one notification, got {notices:?}")
    };
    assert_eq!(text.id, 7);
    assert_eq!(text.summary, "shell_exec needs a decision");
    assert_eq!(text.body, "Risk critical. Denied automatically in 42 s.");
}

#[test]
fn a_notification_never_carries_the_arguments_or_the_reason() {
    let mut s = DesktopState::new();
    let notices = s.apply(
        requested(1, request(7, "shell_exec", Risk::High, 5_000)),
        NOW,
    );
    let Notice::Show(text) = &notices[0] else {
        panic!("{notices:?}")
    };
    for shown in [&text.summary, &text.body] {
        assert!(!shown.contains("rm -rf"), "{shown}");
        assert!(!shown.contains("secret-project"), "{shown}");
    }
}

#[test]
fn no_notification_while_the_window_is_focused() {
    let mut s = DesktopState::new();
    s.set_focused(true);
    let notices = s.apply(
        requested(1, request(7, "shell_exec", Risk::High, 5_000)),
        NOW,
    );
    assert!(notices.is_empty(), "{notices:?}");
    assert_eq!(s.pending_count(), 1, "the request still counts");
    // Deciding it closes nothing, since nothing was shown.
    assert!(s.apply(decided(2, 7, "approved"), NOW).is_empty());
}

#[test]
fn a_request_seen_while_focused_is_not_announced_when_focus_leaves() {
    let mut s = DesktopState::new();
    s.set_focused(true);
    s.apply(requested(1, request(7, "t", Risk::High, 5_000)), NOW);
    s.set_focused(false);
    let notices = s.apply(requested(2, request(8, "u", Risk::High, 5_000)), NOW);
    assert_eq!(shown_ids(&notices), vec![8], "only the new one");
}

#[test]
fn a_decided_request_closes_its_notification_and_leaves_the_tray() {
    let mut s = DesktopState::new();
    s.apply(
        requested(1, request(7, "shell_exec", Risk::High, 5_000)),
        NOW,
    );
    assert_eq!(s.tray(NOW).icon, TrayIcon::Waiting);
    let notices = s.apply(decided(2, 7, "approved"), NOW);
    assert_eq!(notices, vec![Notice::Close { id: 7 }]);
    assert!(!s.is_pending(7));
    assert_eq!(s.tray(NOW).icon, TrayIcon::Idle);
}

#[test]
fn timed_out_and_expired_requests_close_like_decided_ones() {
    for status in ["timed_out", "expired", "denied"] {
        let mut s = DesktopState::new();
        s.apply(requested(1, request(7, "t", Risk::High, 5_000)), NOW);
        assert_eq!(
            s.apply(decided(2, 7, status), NOW),
            vec![Notice::Close { id: 7 }],
            "{status}"
        );
    }
}

#[test]
fn a_replayed_or_duplicate_request_is_announced_once() {
    let mut s = DesktopState::new();
    let r = request(7, "t", Risk::High, 5_000);
    assert_eq!(shown_ids(&s.apply(requested(1, r.clone()), NOW)), vec![7]);
    // The same envelope again (a reconnect replays from an older seq).
    assert!(s.apply(requested(1, r.clone()), NOW).is_empty());
    // The same request under a later seq (should never happen, but must
    // not notify twice).
    assert!(s.apply(requested(2, r), NOW).is_empty());
    assert_eq!(s.pending_count(), 1);
}

#[test]
fn envelopes_already_in_the_snapshot_change_nothing() {
    let mut s = DesktopState::new();
    s.apply_snapshot(snapshot(10, vec![request(7, "t", Risk::High, 5_000)]), NOW);
    // seq 9 happened before the snapshot: the request was decided then
    // requested again is not what the snapshot says; the snapshot wins.
    assert!(s.apply(decided(9, 7, "approved"), NOW).is_empty());
    assert!(s.is_pending(7));
    assert_eq!(s.seq(), 10);
    s.apply(decided(11, 7, "approved"), NOW);
    assert!(!s.is_pending(7));
    assert_eq!(s.seq(), 11);
}

#[test]
fn a_snapshot_announces_requests_new_to_the_shell_and_closes_vanished_ones() {
    let mut s = DesktopState::new();
    s.apply(requested(1, request(7, "a", Risk::High, 5_000)), NOW);
    s.apply(requested(2, request(8, "b", Risk::High, 5_000)), NOW);
    // After a reload: 7 ended while we were away, 8 still waits, 9 is new.
    let notices = s.apply_snapshot(
        snapshot(
            20,
            vec![
                request(8, "b", Risk::High, 5_000),
                request(9, "c", Risk::Low, 9_000),
            ],
        ),
        NOW,
    );
    assert_eq!(
        notices,
        vec![
            Notice::Close { id: 7 },
            Notice::Show(NoticeText {
                id: 9,
                summary: "c needs a decision".to_owned(),
                body: "Risk low. Denied automatically in 9 s.".to_owned(),
            }),
        ]
    );
    assert_eq!(s.pending_count(), 2);
    assert_eq!(s.seq(), 20);
}

#[test]
fn the_tooltip_counts_the_waiting_calls() {
    let mut s = DesktopState::new();
    assert_eq!(s.tray(NOW).tooltip, "toolgate — no calls waiting");
    s.apply(requested(1, request(1, "a", Risk::High, 5_000)), NOW);
    assert_eq!(s.tray(NOW).tooltip, "toolgate — 1 call waiting");
    s.apply(requested(2, request(2, "b", Risk::High, 5_000)), NOW);
    assert_eq!(s.tray(NOW).tooltip, "toolgate — 2 calls waiting");
}

#[test]
fn the_menu_lists_at_most_five_soonest_first_then_show_and_quit() {
    let mut s = DesktopState::new();
    // Seven requests, expiring in an order unlike their ids.
    let expiries = [70, 10, 50, 30, 60, 20, 40];
    for (i, secs) in expiries.iter().enumerate() {
        let id = i as i64 + 1;
        s.apply(
            requested(
                id as u64,
                request(id, &format!("tool{id}"), Risk::High, secs * 1000),
            ),
            NOW,
        );
    }
    let menu = s.tray(NOW).menu;
    let listed: Vec<i64> = menu
        .iter()
        .filter_map(|e| match e {
            MenuEntry::Request { id, .. } => Some(*id),
            _ => None,
        })
        .collect();
    assert_eq!(listed, vec![2, 6, 4, 7, 3], "soonest automatic deny first");
    assert_eq!(
        menu[5..],
        [
            MenuEntry::More { count: 2 },
            MenuEntry::Separator,
            MenuEntry::Show,
            MenuEntry::Quit
        ]
    );
    assert_eq!(
        menu[0],
        MenuEntry::Request {
            id: 2,
            label: "tool2 — high, denied in 10 s".to_owned()
        }
    );
}

#[test]
fn an_idle_menu_is_show_and_quit() {
    let s = DesktopState::new();
    let tray = s.tray(NOW);
    assert_eq!(tray.icon, TrayIcon::Idle);
    assert_eq!(tray.menu, vec![MenuEntry::Show, MenuEntry::Quit]);
}

#[test]
fn seconds_left_round_up_and_never_go_negative() {
    let mut s = DesktopState::new();
    s.apply(requested(1, request(1, "a", Risk::Medium, 300)), NOW);
    s.apply(requested(2, request(2, "b", Risk::Medium, -5_000)), NOW);
    let labels: Vec<String> = s
        .tray(NOW)
        .menu
        .into_iter()
        .filter_map(|e| match e {
            MenuEntry::Request { label, .. } => Some(label),
            _ => None,
        })
        .collect();
    assert_eq!(
        labels,
        vec!["b — medium, denied in 0 s", "a — medium, denied in 1 s"]
    );
}

#[test]
fn turning_notifications_off_closes_those_on_screen_and_shows_no_more() {
    let mut s = DesktopState::new();
    s.apply(requested(1, request(1, "a", Risk::High, 5_000)), NOW);
    s.apply(requested(2, request(2, "b", Risk::High, 5_000)), NOW);
    let closed = s.set_notifications(false);
    assert_eq!(
        closed,
        vec![Notice::Close { id: 1 }, Notice::Close { id: 2 }]
    );
    assert!(
        s.apply(requested(3, request(3, "c", Risk::High, 5_000)), NOW)
            .is_empty()
    );
    // Deciding a request whose notification was closed closes nothing more.
    assert!(s.apply(decided(4, 1, "approved"), NOW).is_empty());
    assert!(s.set_notifications(true).is_empty());
    assert_eq!(
        shown_ids(&s.apply(requested(5, request(4, "d", Risk::High, 5_000)), NOW)),
        vec![4]
    );
}

#[test]
fn menu_ids_round_trip_and_junk_is_refused() {
    for a in [
        Action::Approve(12),
        Action::Deny(-3),
        Action::Open(7),
        Action::OpenApprovals,
        Action::Show,
        Action::Quit,
    ] {
        assert_eq!(Action::parse(&a.id()), Some(a), "{}", a.id());
    }
    for junk in ["", "approve:", "approve:x", "deny:1:2", "nope", "quit:1"] {
        assert_eq!(Action::parse(junk), None, "{junk}");
    }
}

#[test]
fn opening_a_request_routes_the_console_to_it() {
    assert_eq!(
        Action::Open(12).route().as_deref(),
        Some("#/approvals?id=12")
    );
    assert_eq!(
        Action::OpenApprovals.route().as_deref(),
        Some("#/approvals")
    );
    assert_eq!(Action::Show.route(), None);
}
