//! Notifications observed for real: Debian's `dunst` on
//! a private D-Bus session, the shell's own notifier and loop, and
//! `dbus-monitor` as the witness of what went over the bus.
//!
//! The test runs itself again inside `xvfb-run -a dbus-run-session` with
//! dunst started there (dunst needs a display), so nothing of the caller's
//! own desktop is involved; the inner run sees `TOOLGATE_NOTIFY_SESSION=1`.
//! Without those programs it says which packages to install and passes,
//! except under `CI=true`, where it fails.
//!
//! What it shows: a request while the window is unfocused gives exactly one
//! notification naming the tool, with Approve / Deny buttons (dunst lists
//! the `actions` capability); one while focused gives none; dunst's own
//! default action (`dunstctl action 0`) brings the window up on the
//! request; the Approve button's `ActionInvoked` decides as
//! `notification`; a decided request's notification is closed through
//! `CloseNotification`.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::sync::mpsc as std_mpsc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use toolgate::wire::Via;
use toolgate_desktop::client::{ClientError, ConsoleSource, EventStream, StreamItem};
use toolgate_desktop::notify::Freedesktop;
use toolgate_desktop::shell::{Shell, View};
use toolgate_desktop::state::TrayModel;
use toolgate_desktop::wire::{Decided, Envelope, Event, Request, Risk, Snapshot, Verdict};

const NOW: i64 = 1_700_000_000_000;

fn clock() -> i64 {
    NOW
}

const TEST: &str =
    "one_notification_per_request_naming_the_tool_with_actions_and_none_while_focused";

/// Whether this run is inside the private session; if not, runs this test
/// again inside one (and asserts it passed) or says what is missing.
fn in_private_session() -> bool {
    if std::env::var("TOOLGATE_NOTIFY_SESSION").is_ok_and(|v| v == "1") {
        return true;
    }
    let tools = [
        "xvfb-run",
        "dbus-run-session",
        "dunst",
        "dunstctl",
        "dbus-monitor",
        "dbus-send",
    ];
    let missing: Vec<&str> = tools
        .into_iter()
        .filter(|t| {
            Command::new("sh")
                .args(["-c", &format!("command -v {t}")])
                .output()
                .map_or(true, |o| !o.status.success())
        })
        .collect();
    if !missing.is_empty() {
        let msg = format!("missing {missing:?}: apt-get install -y xvfb xauth dbus dbus-x11 dunst");
        assert!(std::env::var("CI").map_or(true, |v| v != "true"), "{msg}");
        eprintln!("skipped: {msg}");
        return false;
    }
    // Wait (bounded) until our dunst owns the notification name (asking
    // the name itself would have D-Bus start a second dunst), then run
    // this test in the session.
    let script = r#"
        dunst >"$TMPDIR_LOG" 2>&1 &
        i=0
        until dbus-send --session --print-reply --dest=org.freedesktop.DBus /org/freedesktop/DBus \
                org.freedesktop.DBus.NameHasOwner string:org.freedesktop.Notifications 2>/dev/null \
                | grep -q 'boolean true'; do
            i=$((i + 1)); [ "$i" -gt 100 ] && { cat "$TMPDIR_LOG" >&2; exit 1; }
            sleep 0.1
        done
        TOOLGATE_NOTIFY_SESSION=1 exec "$0" --exact "$1" --nocapture --test-threads=1
    "#;
    let log = tempfile::NamedTempFile::new().unwrap();
    let out = Command::new("xvfb-run")
        .args(["-a", "dbus-run-session", "--", "sh", "-c", script])
        .arg(std::env::current_exe().unwrap())
        .arg(TEST)
        .env("TMPDIR_LOG", log.path())
        .output()
        .expect("xvfb-run");
    let text = format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success(),
        "the test failed in its private session:\n{text}"
    );
    assert!(
        text.contains("1 passed"),
        "the inner run ran no test:\n{text}"
    );
    false
}

struct Console {
    stream: Mutex<Option<mpsc::UnboundedReceiver<Result<StreamItem, ClientError>>>>,
    decided: mpsc::UnboundedSender<(i64, Verdict, Via)>,
}

impl ConsoleSource for Console {
    async fn snapshot(&self) -> Result<Snapshot, ClientError> {
        Ok(Snapshot {
            seq: 0,
            pending: vec![],
            team: None,
        })
    }

    async fn team(&self) -> Result<Option<toolgate_desktop::wire::TeamLine>, ClientError> {
        Ok(None)
    }

    async fn events(&self, _after: u64) -> Result<EventStream, ClientError> {
        let rx = self.stream.lock().unwrap().take();
        Ok(match rx {
            Some(mut rx) => futures::stream::poll_fn(move |cx| rx.poll_recv(cx)).boxed(),
            // Reconnects after the test is done get a stream that stays
            // open: nothing more happens.
            None => futures::stream::pending().boxed(),
        })
    }

    async fn decide(&self, id: i64, verdict: Verdict, via: Via) -> Result<(), ClientError> {
        let _ = self.decided.send((id, verdict, via));
        Ok(())
    }
}

struct Window {
    routes: mpsc::UnboundedSender<Option<String>>,
    tooltips: mpsc::UnboundedSender<String>,
}

impl View for Window {
    fn render_tray(&self, model: &TrayModel) {
        let _ = self.tooltips.send(model.tooltip.clone());
    }
    fn show_window(&self, route: Option<&str>) {
        let _ = self.routes.send(route.map(str::to_owned));
    }
    fn quit(&self) {}
}

fn requested(seq: u64, id: i64, tool: &str) -> Result<StreamItem, ClientError> {
    Ok(StreamItem::Envelope(Envelope {
        seq,
        ts_ms: NOW,
        event: Event::ApprovalRequested(Request {
            id,
            call_id: id,
            tool: tool.to_owned(),
            risk: Risk::Critical,
            reason: "quotes `secret-arg-value`".to_owned(),
            caller: "agent".to_owned(),
            expires_ms: NOW + 60_000,
        }),
    }))
}

/// `dbus-monitor` on the notification interface, read line by line on a
/// thread; killed on drop.
struct Monitor {
    child: Child,
    lines: std_mpsc::Receiver<String>,
}

impl Drop for Monitor {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Monitor {
    fn start() -> Self {
        let mut child = Command::new("dbus-monitor")
            .args([
                "--session",
                "interface='org.freedesktop.Notifications'",
                "type='method_return'",
            ])
            .stdout(Stdio::piped())
            .spawn()
            .expect("dbus-monitor (apt: dbus)");
        let out = child.stdout.take().unwrap();
        let (tx, lines) = std_mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    return;
                }
            }
        });
        let m = Self { child, lines };
        // dbus-monitor has become a monitor once its own name is lost.
        m.until(|l| l.contains("member=NameLost"));
        m
    }

    /// Every line up to and including the first that `done` accepts.
    fn until(&self, done: impl Fn(&str) -> bool) -> Vec<String> {
        let deadline = Instant::now() + Duration::from_secs(20);
        let mut seen = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = self.lines.recv_timeout(left).unwrap_or_else(|_| {
                panic!(
                    "dbus-monitor saw nothing more; so far:\n{}",
                    seen.join("\n")
                )
            });
            let last = done(&line);
            seen.push(line);
            if last {
                return seen;
            }
        }
    }
}

/// The `Notify` calls in a monitor transcript, each as its block of lines.
fn notify_calls(lines: &[String]) -> Vec<String> {
    let mut calls = Vec::new();
    let mut current: Option<String> = None;
    for l in lines {
        if l.starts_with("method call") || l.starts_with("method return") || l.starts_with("signal")
        {
            calls.extend(current.take());
            if l.starts_with("method call") && l.contains("member=Notify") {
                current = Some(String::new());
            }
        }
        if let Some(c) = &mut current {
            c.push_str(l);
            c.push('\n');
        }
    }
    calls.extend(current);
    calls
}

fn dunstctl(args: &[&str]) -> String {
    let out = Command::new("dunstctl")
        .args(args)
        .output()
        .expect("dunstctl");
    assert!(out.status.success(), "dunstctl {args:?}: {out:?}");
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// The id dunst gave the notification whose `Notify` call had `serial`.
fn server_id(lines: &[String], serial: &str) -> u32 {
    let at = lines
        .iter()
        .position(|l| {
            l.starts_with("method return") && l.ends_with(&format!("reply_serial={serial}"))
        })
        .unwrap_or_else(|| {
            panic!(
                "Notify (serial {serial}) was not answered:\n{}",
                lines.join("\n")
            )
        });
    lines
        .get(at + 1)
        .and_then(|l| l.trim().strip_prefix("uint32 "))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no notification id after line {at}:\n{}", lines.join("\n")))
}

fn serial_of(call: &str) -> String {
    call.split_whitespace()
        .find_map(|w| w.strip_prefix("serial="))
        .expect("a serial")
        .to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_notification_per_request_naming_the_tool_with_actions_and_none_while_focused() {
    if !in_private_session() {
        return;
    }
    let monitor = Monitor::start();
    let (feed, rx) = mpsc::unbounded_channel();
    let (decided_tx, mut decided) = mpsc::unbounded_channel();
    let (window_tx, mut window) = mpsc::unbounded_channel();
    let (tooltip_tx, mut tooltips) = mpsc::unbounded_channel();
    let console = Console {
        stream: Mutex::new(Some(rx)),
        decided: decided_tx,
    };
    let shell = Shell::new(
        console,
        Box::new(Window {
            routes: window_tx,
            tooltips: tooltip_tx,
        }),
        Box::new(Freedesktop::start()),
        clock,
    );
    let stop = CancellationToken::new();
    let (s, t) = (shell.clone(), stop.clone());
    tokio::spawn(async move { s.follow(t).await });
    // The tray's tooltip is rendered after each applied event: the signal
    // that the shell has taken a request in.
    let mut applied = async |tooltip: &str| {
        tokio::time::timeout(Duration::from_secs(20), async {
            while tooltips.recv().await.as_deref() != Some(tooltip) {}
        })
        .await
        .unwrap_or_else(|_| panic!("the shell never showed `{tooltip}`"));
    };

    feed.send(requested(1, 1, "shell_exec")).unwrap();
    applied("toolgate — 1 call waiting").await;
    shell.set_focused(true);
    feed.send(requested(2, 2, "focused_tool")).unwrap();
    applied("toolgate — 2 calls waiting").await;
    shell.set_focused(false);
    // The sentinel: once its Notify is on the bus, every earlier one is.
    feed.send(requested(3, 3, "sentinel_tool")).unwrap();

    let lines = tokio::task::spawn_blocking(move || {
        let lines = monitor.until(|l| l.contains("sentinel_tool needs a decision"));
        // And its answer, for the ids.
        let more = monitor.until(|l| l.starts_with("method return"));
        let more2 = monitor.until(|l| l.trim().starts_with("uint32"));
        (monitor, [lines, more, more2].concat())
    })
    .await
    .unwrap();
    let (monitor, lines) = lines;
    let calls = notify_calls(&lines);
    let named = |tool: &str| {
        calls
            .iter()
            .filter(|c| c.contains(&format!("\"{tool} needs a decision\"")))
            .count()
    };
    assert_eq!(
        named("shell_exec"),
        1,
        "exactly one for the request:\n{calls:#?}"
    );
    assert_eq!(named("focused_tool"), 0, "none while focused:\n{calls:#?}");
    let shell_call = calls.iter().find(|c| c.contains("shell_exec")).unwrap();
    for word in [
        "\"approve\"",
        "\"Approve\"",
        "\"deny\"",
        "\"Deny\"",
        "\"default\"",
    ] {
        assert!(shell_call.contains(word), "no {word} action:\n{shell_call}");
    }
    assert!(
        shell_call.contains("Risk critical. Denied automatically in 60 s."),
        "{shell_call}"
    );
    assert!(
        !lines.join("\n").contains("secret-arg-value"),
        "the reason is never shown"
    );
    let first_id = server_id(&lines, &serial_of(shell_call.lines().next().unwrap()));
    assert_eq!(
        dunstctl(&["count", "displayed"]),
        "2",
        "shell_exec and sentinel_tool on screen"
    );

    // Approve from the notification: the server's ActionInvoked signal
    // (sent here as dunst sends it for a button) decides as `notification`.
    let status = Command::new("dbus-send")
        .args([
            "--session",
            "--type=signal",
            "/org/freedesktop/Notifications",
            "org.freedesktop.Notifications.ActionInvoked",
            &format!("uint32:{first_id}"),
            "string:approve",
        ])
        .status()
        .unwrap();
    assert!(status.success());
    let d = tokio::time::timeout(Duration::from_secs(20), decided.recv())
        .await
        .expect("the approve action reached the console");
    assert_eq!(d, Some((1, Verdict::Approve, Via::Notification)));

    // The engine announces the decision: the notification is closed.
    feed.send(Ok(StreamItem::Envelope(Envelope {
        seq: 4,
        ts_ms: NOW,
        event: Event::ApprovalDecided(Decided {
            id: 1,
            status: "approved".into(),
        }),
    })))
    .unwrap();
    let (monitor, closing) = tokio::task::spawn_blocking(move || {
        let l = monitor.until(|l| l.contains("member=CloseNotification"));
        let id = monitor.until(|l| l.trim().starts_with("uint32"));
        (monitor, [l, id].concat())
    })
    .await
    .unwrap();
    assert_eq!(
        closing.last().unwrap().trim(),
        format!("uint32 {first_id}"),
        "closes the approved request's notification"
    );

    // dunst's own default action on the notification left (the sentinel)
    // brings the window up on its request.
    let out = tokio::task::spawn_blocking(|| dunstctl(&["action", "0"]))
        .await
        .unwrap();
    let route = tokio::time::timeout(Duration::from_secs(20), window.recv())
        .await
        .unwrap_or_else(|_| panic!("no window after `dunstctl action 0` ({out})"));
    assert_eq!(route, Some(Some("#/approvals?id=3".to_owned())));
    drop(monitor);
    stop.cancel();
}
