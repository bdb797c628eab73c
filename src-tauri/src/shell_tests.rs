//! The shell's loop against an in-memory console: what arrives on the
//! stream reaches the tray and the notifier, and what the person does in
//! them reaches the console as a decision with the right decider.

use std::sync::Mutex as StdMutex;

use tokio::sync::mpsc;

use super::*;
use crate::client::EventStream;
use crate::state::{MenuEntry, TrayIcon};
use crate::wire::{
    Decided, Envelope, Event, Request, Risk, SliceChanged, Snapshot, TeamLine, TeamLineState,
    TeamLineStatus,
};

const NOW: i64 = 1_700_000_000_000;

fn clock() -> i64 {
    NOW
}

/// Snapshots handed out in order, one stream per subscription fed by the
/// test, decisions reported back.
struct FakeConsole {
    snapshots: StdMutex<Vec<Snapshot>>,
    streams: StdMutex<Vec<mpsc::UnboundedReceiver<Result<StreamItem, ClientError>>>>,
    subscribed: mpsc::UnboundedSender<u64>,
    decided: mpsc::UnboundedSender<(i64, Verdict, Via)>,
    stale: bool,
    /// What `GET /api/state/team` answers.
    team: StdMutex<Option<TeamLine>>,
}

impl ConsoleSource for FakeConsole {
    async fn team(&self) -> Result<Option<TeamLine>, ClientError> {
        Ok(self.team.lock().unwrap().clone())
    }

    async fn snapshot(&self) -> Result<Snapshot, ClientError> {
        let mut s = self.snapshots.lock().unwrap();
        Ok(if s.len() > 1 {
            s.remove(0)
        } else {
            s[0].clone()
        })
    }

    async fn events(&self, after: u64) -> Result<EventStream, ClientError> {
        let _ = self.subscribed.send(after);
        let rx = self.streams.lock().unwrap().remove(0);
        Ok(tokio_stream_from(rx))
    }

    async fn decide(&self, id: i64, verdict: Verdict, via: Via) -> Result<(), ClientError> {
        let _ = self.decided.send((id, verdict, via));
        if self.stale {
            return Err(ClientError::Refused {
                url: "x".into(),
                status: 409,
                code: "stale".into(),
                message: "already decided".into(),
                field: None,
            });
        }
        Ok(())
    }
}

fn tokio_stream_from(
    mut rx: mpsc::UnboundedReceiver<Result<StreamItem, ClientError>>,
) -> EventStream {
    futures::stream::poll_fn(move |cx| rx.poll_recv(cx)).boxed()
}

#[derive(Debug, PartialEq)]
enum Seen {
    Tray(TrayModel),
    Window(Option<String>),
    Quit,
    Shown(NoticeText),
    Closed(i64),
}

struct Recorder {
    seen: mpsc::UnboundedSender<Seen>,
    responders: Arc<StdMutex<Vec<(i64, Responder)>>>,
}

impl View for Recorder {
    fn render_tray(&self, model: &TrayModel) {
        let _ = self.seen.send(Seen::Tray(model.clone()));
    }
    fn show_window(&self, route: Option<&str>) {
        let _ = self.seen.send(Seen::Window(route.map(str::to_owned)));
    }
    fn quit(&self) {
        let _ = self.seen.send(Seen::Quit);
    }
}

impl Notifier for Recorder {
    fn show(&self, text: NoticeText, respond: Responder) {
        self.responders.lock().unwrap().push((text.id, respond));
        let _ = self.seen.send(Seen::Shown(text));
    }
    fn close(&self, id: i64) {
        let _ = self.seen.send(Seen::Closed(id));
    }
}

struct Rig {
    shell: Arc<Shell<FakeConsole>>,
    feed: Vec<mpsc::UnboundedSender<Result<StreamItem, ClientError>>>,
    subscribed: mpsc::UnboundedReceiver<u64>,
    decided: mpsc::UnboundedReceiver<(i64, Verdict, Via)>,
    seen: mpsc::UnboundedReceiver<Seen>,
    responders: Arc<StdMutex<Vec<(i64, Responder)>>>,
    stop: CancellationToken,
}

fn rig(snapshots: Vec<Snapshot>, streams: usize, stale: bool) -> Rig {
    let (feed, rxs): (Vec<_>, Vec<_>) = (0..streams).map(|_| mpsc::unbounded_channel()).unzip();
    let (sub_tx, subscribed) = mpsc::unbounded_channel();
    let (dec_tx, decided) = mpsc::unbounded_channel();
    let (seen_tx, seen) = mpsc::unbounded_channel();
    let responders = Arc::new(StdMutex::new(Vec::new()));
    let console = FakeConsole {
        snapshots: StdMutex::new(snapshots),
        streams: StdMutex::new(rxs),
        subscribed: sub_tx,
        decided: dec_tx,
        stale,
        team: StdMutex::new(None),
    };
    let view = Recorder {
        seen: seen_tx.clone(),
        responders: responders.clone(),
    };
    let notifier = Recorder {
        seen: seen_tx,
        responders: responders.clone(),
    };
    let shell = Shell::new(console, Box::new(view), Box::new(notifier), clock);
    let stop = CancellationToken::new();
    let (s, t) = (shell.clone(), stop.clone());
    tokio::spawn(async move { s.follow(t).await });
    Rig {
        shell,
        feed,
        subscribed,
        decided,
        seen,
        responders,
        stop,
    }
}

fn request(id: i64, tool: &str) -> Request {
    Request {
        id,
        call_id: id,
        tool: tool.to_owned(),
        risk: Risk::High,
        reason: String::new(),
        caller: String::new(),
        expires_ms: NOW + 30_000,
    }
}

fn requested(seq: u64, id: i64, tool: &str) -> Result<StreamItem, ClientError> {
    Ok(StreamItem::Envelope(Envelope {
        seq,
        ts_ms: NOW,
        event: Event::ApprovalRequested(request(id, tool)),
    }))
}

fn decided(seq: u64, id: i64) -> Result<StreamItem, ClientError> {
    Ok(StreamItem::Envelope(Envelope {
        seq,
        ts_ms: NOW,
        event: Event::ApprovalDecided(Decided {
            id,
            status: "approved".into(),
        }),
    }))
}

/// The next thing seen that is not a tray render, and the last tray
/// model before it.
async fn next_non_tray(seen: &mut mpsc::UnboundedReceiver<Seen>) -> Seen {
    loop {
        match within(seen.recv()).await {
            Some(Seen::Tray(_)) => {}
            Some(other) => return other,
            None => panic!("the shell stopped"),
        }
    }
}

async fn next_tray(seen: &mut mpsc::UnboundedReceiver<Seen>) -> TrayModel {
    loop {
        if let Some(Seen::Tray(t)) = within(seen.recv()).await {
            return t;
        }
    }
}

/// A deadline, not a synchronisation: the awaited thing is a signal.
async fn within<T>(f: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(10), f)
        .await
        .expect("nothing happened within 10 s")
}

#[tokio::test]
async fn a_streamed_request_reaches_the_tray_and_one_notification_and_its_decision_closes_it() {
    let mut r = rig(
        vec![Snapshot {
            seq: 4,
            pending: vec![],
            team: None,
        }],
        1,
        false,
    );
    assert_eq!(
        within(r.subscribed.recv()).await,
        Some(4),
        "subscribes after the snapshot"
    );
    assert_eq!(next_tray(&mut r.seen).await.icon, TrayIcon::Idle);

    r.feed[0].send(requested(5, 7, "shell_exec")).unwrap();
    let Seen::Shown(text) = next_non_tray(&mut r.seen).await else {
        panic!("no notification")
    };
    assert_eq!(text.summary, "shell_exec needs a decision");
    assert_eq!(r.shell.pending_count(), 1);

    r.feed[0].send(decided(6, 7)).unwrap();
    assert_eq!(next_non_tray(&mut r.seen).await, Seen::Closed(7));
    assert_eq!(r.shell.pending_count(), 0);
    r.stop.cancel();
}

#[tokio::test]
async fn nothing_is_notified_while_the_window_is_focused_but_the_tray_counts_it() {
    let mut r = rig(
        vec![Snapshot {
            seq: 0,
            pending: vec![],
            team: None,
        }],
        1,
        false,
    );
    within(r.subscribed.recv()).await;
    r.shell.set_focused(true);
    r.feed[0].send(requested(1, 7, "shell_exec")).unwrap();
    let tray = loop {
        let t = next_tray(&mut r.seen).await;
        if t.icon == TrayIcon::Waiting {
            break t;
        }
    };
    assert_eq!(tray.tooltip, "toolgate — 1 call waiting");
    assert_eq!(
        tray.label.as_deref(),
        Some("1"),
        "the count beside the icon"
    );
    // Unfocus and send a second request: only that one is notified, so
    // nothing was shown for the first.
    r.shell.set_focused(false);
    r.feed[0].send(requested(2, 8, "fs_write")).unwrap();
    let Seen::Shown(text) = next_non_tray(&mut r.seen).await else {
        panic!("no notification")
    };
    assert_eq!(text.id, 8);
    r.stop.cancel();
}

#[tokio::test]
async fn notification_buttons_decide_as_the_notification_and_activation_opens_the_request() {
    let mut r = rig(
        vec![Snapshot {
            seq: 0,
            pending: vec![],
            team: None,
        }],
        1,
        false,
    );
    within(r.subscribed.recv()).await;
    r.feed[0].send(requested(1, 7, "shell_exec")).unwrap();
    r.feed[0].send(requested(2, 8, "fs_write")).unwrap();
    r.feed[0].send(requested(3, 9, "http_get")).unwrap();
    for _ in 0..3 {
        next_non_tray(&mut r.seen).await;
    }
    let responders: Vec<(i64, Responder)> = std::mem::take(&mut *r.responders.lock().unwrap());
    let mut by_id: std::collections::HashMap<i64, Responder> = responders.into_iter().collect();
    (by_id.remove(&7).unwrap())(Response::Approve);
    assert_eq!(
        within(r.decided.recv()).await,
        Some((7, Verdict::Approve, Via::Notification))
    );
    (by_id.remove(&8).unwrap())(Response::Deny);
    assert_eq!(
        within(r.decided.recv()).await,
        Some((8, Verdict::Deny, Via::Notification))
    );
    (by_id.remove(&9).unwrap())(Response::Activate);
    assert_eq!(
        next_non_tray(&mut r.seen).await,
        Seen::Window(Some("#/approvals?id=9".into()))
    );
    r.stop.cancel();
}

#[tokio::test]
async fn tray_items_decide_as_the_tray_and_ended_requests_are_left_alone() {
    let mut r = rig(
        vec![Snapshot {
            seq: 3,
            pending: vec![request(7, "shell_exec")],
            team: None,
        }],
        1,
        false,
    );
    within(r.subscribed.recv()).await;
    let tray = next_tray(&mut r.seen).await;
    assert!(matches!(tray.menu[0], MenuEntry::Request { id: 7, .. }));
    r.shell.act(Action::Deny(7), Via::Tray).await;
    assert_eq!(
        within(r.decided.recv()).await,
        Some((7, Verdict::Deny, Via::Tray))
    );
    // Request 99 is not pending: nothing is sent.
    r.shell.act(Action::Approve(99), Via::Tray).await;
    r.shell.act(Action::Show, Via::Tray).await;
    r.shell.act(Action::Quit, Via::Tray).await;
    assert_eq!(
        next_non_tray(&mut r.seen).await,
        Seen::Shown(NoticeText {
            id: 7,
            summary: "shell_exec needs a decision".into(),
            body: "Risk high. Denied automatically in 30 s.".into(),
        })
    );
    assert_eq!(next_non_tray(&mut r.seen).await, Seen::Window(None));
    assert_eq!(next_non_tray(&mut r.seen).await, Seen::Quit);
    assert!(
        r.decided.try_recv().is_err(),
        "nothing decided for request 99"
    );
    r.stop.cancel();
}

#[tokio::test]
async fn a_stale_answer_is_not_an_error() {
    let mut r = rig(
        vec![Snapshot {
            seq: 1,
            pending: vec![request(7, "t")],
            team: None,
        }],
        1,
        true,
    );
    within(r.subscribed.recv()).await;
    r.shell.act(Action::Approve(7), Via::Tray).await;
    assert_eq!(
        within(r.decided.recv()).await,
        Some((7, Verdict::Approve, Via::Tray))
    );
    r.stop.cancel();
}

#[tokio::test(start_paused = true)]
async fn a_reload_fetches_a_new_snapshot_and_resubscribes_after_its_seq() {
    let mut r = rig(
        vec![
            Snapshot {
                seq: 2,
                pending: vec![request(7, "a")],
                team: None,
            },
            Snapshot {
                seq: 40,
                pending: vec![request(8, "b")],
                team: None,
            },
        ],
        2,
        false,
    );
    assert_eq!(within(r.subscribed.recv()).await, Some(2));
    r.feed[0].send(Ok(StreamItem::Reload)).unwrap();
    assert_eq!(within(r.subscribed.recv()).await, Some(40));
    // 7 vanished while we were behind: its notification closes; 8 is new.
    let mut seen = vec![];
    while seen.len() < 3 {
        seen.push(next_non_tray(&mut r.seen).await);
    }
    assert!(matches!(&seen[0], Seen::Shown(t) if t.id == 7), "{seen:?}");
    assert_eq!(seen[1], Seen::Closed(7));
    assert!(matches!(&seen[2], Seen::Shown(t) if t.id == 8), "{seen:?}");
    r.stop.cancel();
}

#[tokio::test(start_paused = true)]
async fn a_broken_stream_reconnects_from_the_last_applied_seq() {
    let mut r = rig(
        vec![Snapshot {
            seq: 2,
            pending: vec![],
            team: None,
        }],
        2,
        false,
    );
    assert_eq!(within(r.subscribed.recv()).await, Some(2));
    r.feed[0].send(requested(3, 7, "a")).unwrap();
    next_non_tray(&mut r.seen).await;
    // The connection drops.
    r.feed.remove(0);
    // The shell takes a fresh snapshot and resubscribes after its seq.
    assert_eq!(within(r.subscribed.recv()).await, Some(2));
    r.stop.cancel();
}

#[tokio::test]
async fn turning_notifications_off_closes_the_ones_on_screen() {
    let mut r = rig(
        vec![Snapshot {
            seq: 0,
            pending: vec![],
            team: None,
        }],
        1,
        false,
    );
    within(r.subscribed.recv()).await;
    r.feed[0].send(requested(1, 7, "a")).unwrap();
    next_non_tray(&mut r.seen).await;
    r.shell.set_notifications(false);
    assert_eq!(next_non_tray(&mut r.seen).await, Seen::Closed(7));
    r.stop.cancel();
}

fn team_line(state: &str, summary: &str) -> TeamLine {
    TeamLine {
        status: TeamLineStatus {
            state: TeamLineState {
                state: state.to_owned(),
            },
        },
        summary: summary.to_owned(),
    }
}

#[tokio::test]
async fn the_tray_says_when_the_team_database_is_away_and_follows_it_back() {
    let away = "The team database is unreachable (connection refused); this engine decides only its own requests until it is back.";
    let mut r = rig(
        vec![Snapshot {
            seq: 1,
            pending: vec![],
            team: Some(team_line("degraded", away)),
        }],
        1,
        false,
    );
    let tray = next_tray(&mut r.seen).await;
    assert_eq!(
        tray.tooltip,
        "toolgate — no calls waiting · team degraded, deciding alone"
    );
    assert_eq!(
        tray.menu.first(),
        Some(&MenuEntry::Note(format!("⚠ Team degraded: {away}")))
    );
    within(r.subscribed.recv()).await;
    // The database is back: the engine says so on the stream, the shell
    // reads the team again.
    *r.shell.console.team.lock().unwrap() = Some(team_line("online", "Online."));
    r.feed[0]
        .send(Ok(StreamItem::Envelope(Envelope {
            seq: 2,
            ts_ms: 0,
            event: Event::StateChanged(SliceChanged {
                slice: "team".into(),
            }),
        })))
        .unwrap();
    let tray = next_tray(&mut r.seen).await;
    assert_eq!(tray.tooltip, "toolgate — no calls waiting");
    assert!(!tray.menu.iter().any(|e| matches!(e, MenuEntry::Note(_))));
    r.stop.cancel();
}
