//! The console over the real control service: a real daemon, real agents on
//! its socket, the console API over HTTP. The snapshot and the stream agree
//! (resume by sequence number, reload when the client cannot be given every
//! event), decisions record who made them (session, bearer, the desktop
//! shell's tray), call details keep the output raw and as the model saw it,
//! the audit query and its export, the policy test, and a live stream ends
//! when the engine stops.

use std::time::Duration;

use futures::StreamExt;
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::common::console_client as client;
use crate::common::daemon::TestDaemon;

const WAIT: Duration = Duration::from_secs(20);

/// A GET with the console's bearer token.
pub(crate) async fn get(d: &TestDaemon, path: &str) -> reqwest::Response {
    client()
        .get(format!("{}{path}", d.origin()))
        .bearer_auth(d.console.bearer())
        .send()
        .await
        .unwrap()
}

pub(crate) async fn get_json(d: &TestDaemon, path: &str) -> Value {
    let r = get(d, path).await;
    assert_eq!(r.status(), StatusCode::OK, "GET {path}");
    r.json().await.unwrap()
}

/// One server-sent event: `id`, `event` and `data` lines.
#[derive(Debug, Default, Clone)]
pub(crate) struct Frame {
    pub(crate) id: Option<u64>,
    pub(crate) event: String,
    pub(crate) data: String,
}

/// Reads server-sent events as they arrive (the stream never ends by
/// itself while the engine runs).
pub(crate) struct Sse {
    body: futures::stream::BoxStream<'static, reqwest::Result<Vec<u8>>>,
    buf: String,
}

impl Sse {
    pub(crate) async fn open(d: &TestDaemon, query: &str, last_id: Option<u64>) -> Self {
        let mut req = client()
            .get(format!("{}/api/events{query}", d.origin()))
            .bearer_auth(d.console.bearer());
        if let Some(id) = last_id {
            req = req.header("last-event-id", id.to_string());
        }
        let r = req.send().await.unwrap();
        assert_eq!(r.status(), StatusCode::OK);
        Self {
            body: r.bytes_stream().map(|b| b.map(|b| b.to_vec())).boxed(),
            buf: String::new(),
        }
    }

    /// The next frame (keep-alive comments skipped); `None` when the
    /// stream ended.
    pub(crate) async fn next(&mut self) -> Option<Frame> {
        loop {
            if let Some(end) = self.buf.find("\n\n") {
                let raw: String = self.buf.drain(..end + 2).collect();
                let mut f = Frame::default();
                for line in raw.lines() {
                    match line.split_once(": ") {
                        Some(("id", v)) => f.id = v.parse().ok(),
                        Some(("event", v)) => f.event = v.to_owned(),
                        Some(("data", v)) => f.data = v.to_owned(),
                        _ => {}
                    }
                }
                if !f.event.is_empty() {
                    return Some(f);
                }
                continue;
            }
            let chunk = tokio::time::timeout(WAIT, self.body.next())
                .await
                .expect("an event in time")?
                .unwrap();
            self.buf.push_str(&String::from_utf8_lossy(&chunk));
        }
    }

    /// Frames until one whose event has `type` `kind`.
    pub(crate) async fn until(&mut self, kind: &str) -> (Frame, Value) {
        loop {
            let f = self.next().await.expect("the stream goes on");
            let v: Value = serde_json::from_str(&f.data).unwrap();
            if v["event"]["type"] == kind {
                return (f, v);
            }
        }
    }
}

#[tokio::test]
async fn the_stream_continues_the_snapshot_and_resumes_from_the_last_id() {
    let d = TestDaemon::start("").await;
    let snap = get_json(&d, "/api/snapshot").await;
    let seq = snap["seq"].as_u64().expect("a sequence number");
    assert_eq!(snap["engine"]["mode"], "serve", "{}", snap["engine"]);
    assert_eq!(snap["pending"], json!([]));

    let mut live = Sse::open(&d, &format!("?after={seq}"), None).await;
    let (id, call) = crate::approval::ask(&d, "echo streamed").await;
    let (asked, env) = live.until("approval_requested").await;
    let first = asked.id.expect("every event has an id");
    assert!(first > seq, "after the snapshot: {first} > {seq}");
    assert_eq!(env["seq"], first);
    assert!(env["ts_ms"].as_i64().unwrap() > 0);
    assert_eq!(env["event"]["id"], id);
    // The snapshot now shows it pending, at a later position.
    let snap = get_json(&d, "/api/snapshot").await;
    assert_eq!(snap["pending"][0]["id"], id, "{}", snap["pending"]);
    // ...and its call in flight, which the audit log has no row for yet.
    let waiting = &snap["in_flight"][0];
    assert_eq!(waiting["tool"], "shell_exec", "{}", snap["in_flight"]);
    assert_eq!(waiting["call_id"], snap["pending"][0]["call_id"]);
    assert!(snap["seq"].as_u64().unwrap() >= first);

    // A reconnect with Last-Event-ID gets what came after it, in order,
    // without the event it already has.
    let mut again = Sse::open(&d, &format!("?after={seq}"), Some(first)).await;
    let approve = client()
        .post(format!("{}/api/approvals/{id}/approve", d.origin()))
        .bearer_auth(d.console.bearer())
        .header("origin", d.origin())
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(approve.status(), StatusCode::OK);
    let next = again.next().await.unwrap();
    assert!(next.id.unwrap() > first, "{next:?}");
    let (done, env) = again.until("call_finished").await;
    assert!(done.id.unwrap() > next.id.unwrap() || done.id == next.id);
    assert_eq!(env["event"]["tool"], "shell_exec", "{env}");
    tokio::time::timeout(WAIT, call).await.unwrap().unwrap();

    // Asking for events after a position the engine never reached (it
    // restarted, and numbering began again): reload, then the end.
    let mut ahead = Sse::open(&d, "?after=999999999", None).await;
    let f = ahead.next().await.expect("a reload");
    assert_eq!(f.event, "reload");
    let newest: Value = serde_json::from_str(&f.data).unwrap();
    assert!(newest["seq"].as_u64().unwrap() >= done.id.unwrap());
    assert!(
        ahead.next().await.is_none(),
        "the stream ends after a reload"
    );
    d.stop().await;
}

#[tokio::test]
async fn the_desktop_shell_decides_as_its_tray_and_a_browser_as_itself() {
    let d = TestDaemon::start("").await;
    let c = client();
    let origin = d.origin();
    let (id, call) = crate::approval::ask(&d, "echo from-the-tray").await;

    // A browser session cannot say it is the tray.
    let cookie = crate::common::session_cookie(&d.console.login_url()).await;
    let r = c
        .post(format!("{origin}/api/approvals/{id}/approve"))
        .header("cookie", &cookie)
        .header("origin", &origin)
        .json(&json!({"decider": "tray"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let e: Value = r.json().await.unwrap();
    assert_eq!(e["error"]["field"], "decider", "{e}");
    let still = get_json(&d, &format!("/api/approvals/{id}")).await;
    assert_eq!(still["request"]["status"], "pending", "nothing changed");

    // The shell, with the bearer token, can.
    let r = c
        .post(format!("{origin}/api/approvals/{id}/approve"))
        .bearer_auth(d.console.bearer())
        .header("origin", &origin)
        .json(&json!({"decider": "tray"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    let decided: Value = r.json().await.unwrap();
    assert_eq!(decided["decided_by"], "tray", "{decided}");
    let result = tokio::time::timeout(WAIT, call).await.unwrap().unwrap();
    assert!(crate::approval::text_of(&result).contains("from-the-tray"));
    let stored =
        serde_json::to_value(d.engine.approvals().unwrap().get(id).await.unwrap()).unwrap();
    assert_eq!(stored["decided_by"], "tray", "{stored}");
    d.stop().await;
}

#[tokio::test]
async fn call_details_keep_the_output_raw_and_as_the_model_saw_it() {
    let d = TestDaemon::start("[pipeline]\nmax_output_bytes = 256\n").await;
    std::fs::write(d.root().join("long.txt"), "x".repeat(2000)).unwrap();
    let mut agent = d.raw().await;
    agent.initialize().await;
    let path = d.root().join("long.txt");
    let reply = agent
        .call(1, "fs_read", json!({"path": path.display().to_string()}))
        .await;
    let call_id = reply["result"]["_meta"]["toolgate/callId"]
        .as_i64()
        .unwrap_or_else(|| panic!("a call id in {reply}"));

    let detail = get_json(&d, &format!("/api/calls/{call_id}")).await;
    assert_eq!(detail["summary"]["tool"], "fs_read", "{detail}");
    let output = &detail["output"];
    let raw = output["raw"][0]["text"].as_str().unwrap();
    let seen = output["seen"][0]["text"].as_str().unwrap();
    assert!(raw.contains(&"x".repeat(2000)), "raw is whole");
    assert!(!seen.contains(&"x".repeat(2000)), "seen is cut: {seen}");
    assert_eq!(output["truncated"], true, "{output}");

    let r = get(&d, "/api/calls/987654").await;
    assert_eq!(r.status(), StatusCode::NOT_FOUND);
    d.stop().await;
}

#[tokio::test]
async fn the_audit_pages_filters_and_exports() {
    let d = TestDaemon::start("").await;
    let mut agent = d.raw().await;
    agent.initialize().await;
    for (i, name) in ["a.txt", "b.txt", "c.txt"].into_iter().enumerate() {
        std::fs::write(d.root().join(name), name).unwrap();
        let path = d.root().join(name).display().to_string();
        agent
            .call(i as u64 + 1, "fs_read", json!({"path": path}))
            .await;
    }
    agent
        .call(9, "fs_read", json!({"path": "/nowhere/at/all"}))
        .await;

    let page = get_json(&d, "/api/audit?tool=fs_*&limit=2").await;
    let rows = page["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 2, "{page}");
    let next = page["next_before"].as_i64().expect("another page");
    let rest = get_json(&d, &format!("/api/audit?tool=fs_read&before={next}")).await;
    assert_eq!(rest["rows"].as_array().unwrap().len(), 2, "{rest}");
    let ok = get_json(&d, "/api/audit?outcome=ok").await;
    assert_eq!(ok["rows"].as_array().unwrap().len(), 3, "{ok}");

    let bad = get(&d, "/api/audit?limit=9000").await;
    assert_eq!(bad.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let e: Value = bad.json().await.unwrap();
    assert_eq!(e["error"]["field"], "limit", "{e}");
    let unknown = get(&d, "/api/audit?colour=red").await;
    assert_eq!(unknown.status(), StatusCode::UNPROCESSABLE_ENTITY);

    let csv = get(&d, "/api/audit/export?format=csv&tool=fs_read").await;
    assert_eq!(csv.status(), StatusCode::OK);
    assert!(
        csv.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/csv")
    );
    assert!(
        csv.headers()["content-disposition"]
            .to_str()
            .unwrap()
            .contains("toolgate-audit.csv")
    );
    let text = csv.text().await.unwrap();
    assert_eq!(
        text.lines().count(),
        1 + 4,
        "a header and four rows:\n{text}"
    );
    let jsonl = get(&d, "/api/audit/export?format=jsonl")
        .await
        .text()
        .await
        .unwrap();
    for line in jsonl.lines() {
        let row: Value = serde_json::from_str(line).unwrap();
        assert!(row["tool"].is_string(), "{row}");
    }
    let bad = get(&d, "/api/audit/export?format=xml").await;
    assert_eq!(bad.status(), StatusCode::UNPROCESSABLE_ENTITY);
    d.stop().await;
}

#[tokio::test]
async fn the_policy_test_says_what_would_happen_and_changes_nothing() {
    let d = TestDaemon::start("").await;
    let test = |body: Value| {
        let d = &d;
        async move {
            client()
                .post(format!("{}/api/policy/test", d.origin()))
                .bearer_auth(d.console.bearer())
                .header("origin", d.origin())
                .json(&body)
                .send()
                .await
                .unwrap()
        }
    };
    let r = test(json!({"tool": "shell_exec", "args": {"command": "rm -rf /tmp/x"}})).await;
    assert_eq!(r.status(), StatusCode::OK);
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["verdict"], "ask", "{v}");
    assert!(v["rule"].as_str().is_some_and(|r| !r.is_empty()), "{v}");

    let v: Value = test(json!({"tool": "fs_read", "args": {"path": "/etc/hosts"}}))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(v["verdict"], "allow", "{v}");

    let r = test(json!({"tool": "no_such_tool"})).await;
    assert_eq!(r.status(), StatusCode::NOT_FOUND);
    let r = test(json!({"tool": "fs_read", "args": [1, 2]})).await;
    assert_eq!(r.status(), StatusCode::UNPROCESSABLE_ENTITY);
    // Nothing was asked, run or recorded.
    assert!(d.engine.approvals().unwrap().pending().is_empty());
    let audit = get_json(&d, "/api/audit").await;
    assert_eq!(audit["rows"], json!([]), "{audit}");
    d.stop().await;
}

#[tokio::test]
async fn a_live_stream_ends_when_the_engine_stops() {
    let d = TestDaemon::start("").await;
    let mut live = Sse::open(&d, "", None).await;
    let started = std::time::Instant::now();
    let stop = tokio::spawn(d.stop());
    // Whatever comes, the stream ends: the browser then reconnects and
    // finds the engine gone or restarted.
    tokio::time::timeout(toolgate::daemon::SHUTDOWN_BOUND, async {
        while live.next().await.is_some() {}
    })
    .await
    .expect("the stream ends within the shutdown bound");
    tokio::time::timeout(WAIT, stop).await.unwrap().unwrap();
    assert!(
        started.elapsed() < toolgate::daemon::SHUTDOWN_BOUND,
        "ended in {:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn a_decision_in_the_desktop_window_is_recorded_as_the_window_s() {
    let d = TestDaemon::start("").await;
    let c = client();
    let origin = d.origin();
    // The desktop app mints its window's link on the control socket.
    let mut ctl = d.control().await;
    let link = ctl
        .request(1, "toolgate/console/login", json!({"for": "desktop"}))
        .await;
    let url = link["result"]["url"]
        .as_str()
        .unwrap_or_else(|| panic!("{link}"));
    let cookie = crate::common::session_cookie(url).await;
    let bad = ctl
        .request(2, "toolgate/console/login", json!({"for": "phone"}))
        .await;
    assert!(
        bad["error"]["message"].as_str().unwrap().contains("`for`"),
        "{bad}"
    );

    let (id, call) = crate::approval::ask(&d, "echo from-the-window").await;
    let r = c
        .post(format!("{origin}/api/approvals/{id}/approve"))
        .header("cookie", &cookie)
        .header("origin", &origin)
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    let decided: Value = r.json().await.unwrap();
    let by = decided["decided_by"].as_str().unwrap();
    assert!(by.starts_with("desktop window "), "{decided}");
    tokio::time::timeout(WAIT, call).await.unwrap().unwrap();
    d.stop().await;
}
