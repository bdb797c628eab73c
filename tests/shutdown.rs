//! Shutdown is bounded (docs/architecture/decisions.md, "Shutdown is
//! bounded: 5 seconds"): a real `toolgate serve`, raw socket clients as
//! separate connections, SIGTERM. Whatever the clients do, the daemon exits
//! 0 within the documented bound, pending approvals are closed as
//! `cancelled` and their agents told why, every call that started has its
//! audit row, no event row is dropped, and the socket files are gone.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::io::AsyncReadExt;
use tokio::process::Child;
use toolgate::audit::{AuditLog, CallRow};
use toolgate::daemon::{SHUTDOWN_BOUND, SHUTDOWN_GRACE};

use crate::common::daemon::Raw;
use crate::common::serve::{ready, serve_command};

/// Deadline for things that take no particular time (a failure, not a
/// measurement).
const SOON: Duration = Duration::from_secs(20);

/// A `toolgate serve` in a temp dir, its stderr collected.
struct Serve {
    dir: tempfile::TempDir,
    child: Child,
    stderr: tokio::task::JoinHandle<String>,
}

impl Serve {
    async fn start(config: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let mut child = serve_command(dir.path(), config)
            // toolgate's own info lines say what shutdown did.
            .env("TOOLGATE_LOG", "warn,toolgate=info")
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stderr = child.stderr.take().unwrap();
        let stderr = tokio::spawn(async move {
            let mut text = String::new();
            let _ = stderr.read_to_string(&mut text).await;
            text
        });
        ready(&mut child, SOON).await;
        Self { dir, child, stderr }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    async fn agent(&self) -> Raw {
        let mut c = Raw::connect(&self.path("agent.sock")).await;
        c.initialize().await;
        c
    }

    /// Sends SIGTERM; returns when the process exited, how long that took
    /// and its stderr.
    async fn terminate(mut self) -> Stopped {
        let pid = rustix::process::Pid::from_raw(self.child.id().unwrap() as i32).unwrap();
        let signalled = Instant::now();
        rustix::process::kill_process(pid, rustix::process::Signal::TERM).unwrap();
        let status = tokio::time::timeout(SOON, self.child.wait())
            .await
            .expect("the daemon exits")
            .unwrap();
        let took = signalled.elapsed();
        let stderr = self.stderr.await.unwrap();
        Stopped {
            dir: self.dir,
            status,
            took,
            signalled,
            stderr,
        }
    }
}

struct Stopped {
    dir: tempfile::TempDir,
    status: std::process::ExitStatus,
    took: Duration,
    signalled: Instant,
    stderr: String,
}

impl Stopped {
    /// The contract every shutdown keeps.
    fn assert_clean(&self) {
        assert!(self.status.success(), "{:?}\n{}", self.status, self.stderr);
        assert!(
            self.took <= SHUTDOWN_BOUND,
            "shutdown took {:?}, past the {SHUTDOWN_BOUND:?} bound\n{}",
            self.took,
            self.stderr
        );
        assert!(
            !self.stderr.contains("dropped"),
            "a row was dropped:\n{}",
            self.stderr
        );
        for f in ["agent.sock", "agent.sock.ctl", "agent.sock.http"] {
            assert!(!self.dir.path().join(f).exists(), "{f} left behind");
        }
    }

    async fn calls(&self) -> Vec<CallRow> {
        let log = AuditLog::open(&self.dir.path().join("data/audit.db"))
            .await
            .unwrap();
        log.recent_calls(10_000).await.unwrap()
    }

    fn db(&self) -> rusqlite::Connection {
        rusqlite::Connection::open(self.dir.path().join("data/audit.db")).unwrap()
    }
}

/// Every call the engine started has exactly one row: call ids are handed
/// out in order as calls start, so the rows' ids are 1..=n, each once.
fn assert_one_row_per_started_call(rows: &[CallRow]) {
    let mut ids: Vec<i64> = rows.iter().map(|r| r.call_id).collect();
    ids.sort_unstable();
    let n = i64::try_from(ids.len()).unwrap();
    assert_eq!(ids, (1..=n).collect::<Vec<_>>(), "{rows:#?}");
}

fn call(id: u64, tool: &str, args: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": tool, "arguments": args}})
}

// A client that never reads cannot hold shutdown up (it once took 29 s, the
// write stall timeout).
#[tokio::test]
async fn sigterm_with_a_client_that_never_reads_stops_within_the_bound_and_audits_every_call() {
    let d = Serve::start("[tools.shell_exec]\npolicy = \"allow\"\n").await;
    let mut agent = d.agent().await;
    // Calls that outlive the grace, and calls whose output (32 KiB each
    // after truncation, far more than the socket buffers hold) comes a
    // moment after they start: the daemon's writes to this client, which
    // reads nothing after the ping, stall.
    let mut id = 0;
    for _ in 0..3 {
        id += 1;
        agent
            .send_json(call(id, "shell_exec", json!({"command": "sleep 30"})))
            .await;
    }
    for n in 0..40 {
        id += 1;
        let command = format!("sleep 1; head -c {} /dev/zero | tr '\\0' x", 100_000 + n);
        agent
            .send_json(call(id, "shell_exec", json!({"command": command})))
            .await;
    }
    // Every call above has started once the ping is answered. On a loaded
    // machine starting 43 confined processes can take longer than the
    // one-second calls, so a call's reply may come before the ping's.
    agent
        .send_json(json!({"jsonrpc": "2.0", "id": 100, "method": "ping"}))
        .await;
    while agent.recv().await.expect("the ping is answered")["id"] != 100 {}
    let stopped = d.terminate().await;
    eprintln!(
        "SIGTERM → exit with a client that never reads: {:?}",
        stopped.took
    );
    stopped.assert_clean();
    drop(agent);
    let rows = stopped.calls().await;
    assert_one_row_per_started_call(&rows);
    assert_eq!(rows.len(), 43, "every call started: {rows:#?}");
    // The long ones were cut; the others finished or, held up behind the
    // stalled writes (their output unread), were cut too.
    for r in &rows {
        let cut = r.outcome == "cancelled";
        assert!(cut || r.outcome == "ok", "{r:?}");
        assert!(cut || !r.args.contains("sleep 30"), "{r:?}");
        assert!(
            !cut || r
                .error_message
                .as_deref()
                .is_some_and(|m| m.contains("toolgate is shutting down")),
            "{r:?}"
        );
    }
    // The writes did stall, and were abandoned at the deadline.
    assert!(
        stopped.stderr.contains("client stopped reading"),
        "{}",
        stopped.stderr
    );
}

/// An initialized HTTP session's open `GET /mcp` event stream.
async fn open_sse(d: &Serve) -> reqwest::Response {
    let info: Value =
        serde_json::from_slice(&std::fs::read(d.path("agent.sock.http")).unwrap()).unwrap();
    let (url, token) = (
        info["url"].as_str().unwrap(),
        info["token"].as_str().unwrap(),
    );
    let c = reqwest::Client::builder().no_proxy().build().unwrap();
    let init = c
        .post(url)
        .bearer_auth(token)
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "sse", "version": "1"}}}))
        .send()
        .await
        .unwrap();
    let sid = init.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_owned();
    let sse = c
        .get(url)
        .bearer_auth(token)
        .header("mcp-session-id", sid)
        .send()
        .await
        .unwrap();
    assert_eq!(sse.status(), 200);
    sse
}

/// The control socket's pending approval requests.
async fn pending(ctl: &mut Raw, id: u64) -> Vec<Value> {
    let r = ctl.request(id, "toolgate/approvals", json!({})).await;
    r["result"]["pending"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

// A pending approval is closed at once and its agent told why (SIGTERM once
// waited for the whole approval timeout, 120 s, and logged "an event row
// was dropped").
#[tokio::test]
async fn sigterm_with_a_pending_approval_tells_the_agent_and_stops_within_the_bound() {
    let d = Serve::start("").await;
    let marker = d.path("root/never");
    let mut agent = d.agent().await;
    agent
        .send_json(call(
            1,
            "shell_exec",
            json!({"command": format!("touch {}", marker.display())}),
        ))
        .await;
    let mut ctl = Raw::connect_control(&d.path("agent.sock.ctl"), &d.path("data")).await;
    let deadline = Instant::now() + SOON;
    let mut n = 0;
    let request = loop {
        n += 1;
        if let Some(r) = pending(&mut ctl, n).await.into_iter().next() {
            break r;
        }
        assert!(Instant::now() < deadline, "no approval request appeared");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let id = request["id"].as_i64().unwrap();
    assert_eq!(request["waiting"], true);
    // An HTTP client holds its server-to-client SSE stream open.
    let sse = open_sse(&d).await;

    let pid = d.child.id().unwrap();
    let reply = tokio::spawn(async move {
        let r = agent.recv().await.expect("the agent is answered");
        (r, Instant::now(), agent)
    });
    // The control client leaves: it must not hold the shutdown up.
    drop(ctl);
    let stopped = d.terminate().await;
    let (r, answered, agent) = reply.await.unwrap();
    eprintln!(
        "SIGTERM → agent told: {:?}; → exit: {:?} (pid {pid})",
        answered.duration_since(stopped.signalled),
        stopped.took
    );
    stopped.assert_clean();
    // Nothing ran: the only waiting call was answered at once, and the
    // open SSE stream held nothing up either.
    assert!(
        stopped.took < SHUTDOWN_GRACE,
        "shutdown waited for nothing yet took {:?}",
        stopped.took
    );
    drop((agent, sse));
    assert_eq!(r["id"], 1, "{r}");
    assert_eq!(r["result"]["isError"], true, "{r}");
    assert_eq!(r["result"]["_meta"]["toolgate/error"]["kind"], "cancelled");
    let text = r["result"]["content"][0]["text"].as_str().unwrap_or("");
    assert!(text.contains("toolgate is shutting down"), "{r}");
    assert!(!marker.exists(), "the tool never ran");

    let db = stopped.db();
    let (status, by): (String, String) = db
        .query_row(
            "SELECT status, decided_by FROM approval_requests WHERE id = ?1",
            [id],
            |row| Ok((row.get(0)?, row.get(1)?)),
        )
        .unwrap();
    assert_eq!((status.as_str(), by.as_str()), ("cancelled", "shutdown"));
    // Its closing reached the event table: no event row was dropped.
    let decided: i64 = db
        .query_row(
            "SELECT count(*) FROM events WHERE kind = 'approval_decided' \
             AND json_extract(body, '$.id') = ?1 AND json_extract(body, '$.status') = 'cancelled'",
            [id],
            |row| row.get(0),
        )
        .unwrap();
    assert_eq!(decided, 1);
    let rows = stopped.calls().await;
    assert_one_row_per_started_call(&rows);
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].outcome, "cancelled");
}
