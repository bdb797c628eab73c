//! Secret arguments and argument hashes, end to end: a real daemon, real
//! clients on its sockets, and the audit database read back raw.

use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};
use toolgate::events::Event;
use toolgate::tool::ToolResult;

use crate::common::daemon::TestDaemon;
use crate::common::register;

/// Asks a person for every call of `vault`.
const ASK_VAULT: &str = r#"
[[policy.rules]]
tool = "vault"
verdict = "ask"
"#;

/// A schema with secrets where only a full walk finds them: pydantic's
/// `Optional[SecretStr]` (`anyOf`), array `items`, and a `$ref` to `$defs`.
fn vault_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "user": {"type": "string"},
            "token": {
                "anyOf": [{"type": "string", "format": "password", "writeOnly": true}, {"type": "null"}],
                "default": null,
                "title": "Token"
            },
            "keys": {"type": "array", "items": {"type": "string", "writeOnly": true}},
            "creds": {"$ref": "#/$defs/Creds"}
        },
        "$defs": {"Creds": {"type": "object", "properties": {
            "name": {"type": "string"},
            "password": {"type": "string", "format": "password", "writeOnly": true}
        }}}
    })
}

const SECRETS: [&str; 4] = [
    "tok-9f8e7d6c",
    "key-one-5a4b",
    "key-two-3c2d",
    "pw-1a2b3c4d",
];

fn vault_args() -> Value {
    json!({
        "user": "ann",
        "token": SECRETS[0],
        "keys": [SECRETS[1], SECRETS[2]],
        "creds": {"name": "svc", "password": SECRETS[3]}
    })
}

fn register_vault(d: &TestDaemon) {
    register(&d.engine, "vault", vault_schema(), |_| async {
        Ok(ToolResult::text("opened"))
    });
}

/// Every secret that appears in `text`.
fn leaked(text: &str) -> Vec<&'static str> {
    SECRETS
        .iter()
        .copied()
        .filter(|s| text.contains(s))
        .collect()
}

/// Waits for the next approval request and returns its id.
async fn next_request(events: &mut tokio::sync::broadcast::Receiver<Event>) -> i64 {
    tokio::time::timeout(Duration::from_secs(20), async {
        loop {
            if let Ok(Event::ApprovalRequested { id, .. }) = events.recv().await {
                return id;
            }
        }
    })
    .await
    .expect("an approval request within 20 s")
}

/// Every text cell of every table of the database at `db`.
fn all_cells(db: &Path) -> String {
    let conn = rusqlite::Connection::open(db).unwrap();
    let tables: Vec<String> = conn
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table'")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let mut out = String::new();
    for t in tables {
        let mut stmt = conn.prepare(&format!("SELECT * FROM \"{t}\"")).unwrap();
        let n = stmt.column_count();
        let mut rows = stmt.query([]).unwrap();
        while let Some(row) = rows.next().unwrap() {
            for i in 0..n {
                if let Ok(text) = row.get::<_, String>(i) {
                    out.push_str(&text);
                    out.push('\n');
                }
            }
        }
    }
    out
}

#[tokio::test]
async fn nested_secrets_never_reach_the_audit_database_or_the_approval_a_person_sees() {
    let d = TestDaemon::start(ASK_VAULT).await;
    register_vault(&d);
    let mut events = d.engine.subscribe();
    let mut agent = d.raw().await;
    agent.initialize().await;
    let call = tokio::spawn(async move { agent.call(1, "vault", vault_args()).await });
    let id = next_request(&mut events).await;

    // The request as the approval API and the control socket show it.
    let approvals = d.engine.approvals().expect("approvals");
    let pending = approvals.pending();
    assert_eq!(pending.len(), 1);
    let shown = &pending[0].args;
    assert_eq!(shown["user"], "ann", "what is not secret stays readable");
    assert_eq!(shown["token"], "[redacted]");
    assert_eq!(shown["keys"], json!(["[redacted]", "[redacted]"]));
    assert_eq!(
        shown["creds"],
        json!({"name": "svc", "password": "[redacted]"})
    );
    let mut ctl = d.control().await;
    let listed = ctl.request(2, "toolgate/approvals", json!({})).await;
    assert!(listed["result"].is_object(), "{listed}");
    assert_eq!(leaked(&listed.to_string()), Vec::<&str>::new(), "{listed}");
    let one = approvals.get(id).await.unwrap();
    assert_eq!(
        leaked(&serde_json::to_string(&one).unwrap()),
        Vec::<&str>::new()
    );

    approvals.approve(id, None).await.unwrap();
    let reply = call.await.unwrap();
    assert_eq!(reply["result"]["isError"], false, "{reply}");

    // A call refused by validation still has its row: the secret it sent
    // in the wrong shape is neither in the arguments nor in the message.
    let mut agent = d.raw().await;
    agent.initialize().await;
    let bad = json!({"user": "ann", "keys": [{"k": "key-bad-7e6f"}]});
    let reply = agent.call(3, "vault", bad).await;
    assert_eq!(reply["result"]["isError"], true, "{reply}");
    assert!(reply.to_string().contains("redacted"), "{reply}");
    assert!(!reply.to_string().contains("key-bad-7e6f"), "{reply}");

    let dir = d.stop().await;
    let data = dir.path().join("data");
    let cells = all_cells(&data.join("audit.db"));
    assert!(cells.contains("[redacted]"), "the rows are there: {cells}");
    assert_eq!(leaked(&cells), Vec::<&str>::new(), "{cells}");
    assert!(!cells.contains("key-bad-7e6f"), "{cells}");
    // Nor in any file of the data dir: the database, its WAL, the journal.
    for entry in std::fs::read_dir(&data).unwrap() {
        let path = entry.unwrap().path();
        let bytes = std::fs::read(&path).unwrap_or_default();
        let text = String::from_utf8_lossy(&bytes);
        assert_eq!(leaked(&text), Vec::<&str>::new(), "{}", path.display());
    }
}

/// The `args_hash` of the newest call of `tool` in the data dir's log.
fn args_hash(data_dir: &Path, tool: &str) -> String {
    let conn = rusqlite::Connection::open(data_dir.join("audit.db")).unwrap();
    conn.query_row(
        "SELECT args_hash FROM calls WHERE tool = ?1 ORDER BY id DESC LIMIT 1",
        [tool],
        |r| r.get(0),
    )
    .unwrap()
}

#[tokio::test]
async fn argument_hashes_are_keyed_per_data_dir_and_kept_across_restarts() {
    use std::os::unix::fs::PermissionsExt;
    let args = json!({"user": "ann", "token": "1234"});
    let call_vault = |d: &TestDaemon| {
        let args = args.clone();
        let socket = d.socket.clone();
        async move {
            let mut agent = crate::common::daemon::Raw::connect(&socket).await;
            agent.initialize().await;
            agent.call(1, "vault", args).await
        }
    };

    // First data dir: a person approves this exact call, remembered by its
    // hash (`args` scope).
    let d = TestDaemon::start(ASK_VAULT).await;
    register_vault(&d);
    let key = d.data_dir().join("args-hash.key");
    let mode = std::fs::metadata(&key).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let mut events = d.engine.subscribe();
    let call = tokio::spawn(call_vault(&d));
    let id = next_request(&mut events).await;
    let approvals = d.engine.approvals().unwrap();
    approvals.approve(id, Some("args")).await.unwrap();
    assert_eq!(call.await.unwrap()["result"]["isError"], false);
    let dir = d.stop().await;
    let first = args_hash(&dir.path().join("data"), "vault");

    // The same call in another data dir hashes differently.
    let other = TestDaemon::start("").await;
    register_vault(&other);
    assert_eq!(call_vault(&other).await["result"]["isError"], false);
    let other_dir = other.stop().await;
    let second = args_hash(&other_dir.path().join("data"), "vault");
    assert_ne!(
        first, second,
        "an unkeyed hash would be the same everywhere"
    );

    // The first data dir after a restart: the same key, so the same hash,
    // and the remembered rule still covers the call (no one is asked).
    let key_before = std::fs::read(dir.path().join("data/args-hash.key")).unwrap();
    let d = TestDaemon::start_again(dir, ASK_VAULT).await;
    register_vault(&d);
    let mut events = d.engine.subscribe();
    let reply = tokio::time::timeout(Duration::from_secs(20), call_vault(&d))
        .await
        .expect("the remembered rule lets the call run without asking");
    assert_eq!(reply["result"]["isError"], false, "{reply}");
    assert!(
        std::iter::from_fn(|| events.try_recv().ok())
            .all(|e| !matches!(e, Event::ApprovalRequested { .. })),
        "nobody was asked again"
    );
    let dir = d.stop().await;
    assert_eq!(args_hash(&dir.path().join("data"), "vault"), first);
    assert_eq!(
        std::fs::read(dir.path().join("data/args-hash.key")).unwrap(),
        key_before
    );
}

/// The token the keychain holds for the leaky fixture server.
const UPSTREAM_TOKEN: &str = "ghp_leaky0123456789";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_keychain_secret_an_upstream_prints_is_scrubbed_from_everything_people_see() {
    use crate::upstream_support::{Harness, spec, stdio, wait_for};
    use toolgate::control::{Control, EngineInfo, EngineMode};
    use toolgate::secrets::{MemoryStore, Secret, SecretName, SecretStore};

    let h = Harness::new().await;
    let info = EngineInfo::now(EngineMode::Serve, "/tmp", "/tmp/agent.sock", None);
    let control = Control::builder(h.engine.clone(), info)
        .upstreams(h.up.clone())
        .start()
        .await
        .expect("control");
    let mut events = h.engine.subscribe();
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/leaky_server.sh"
    );
    let mut server = spec(
        "leaky",
        stdio("sh", &[script], &[("API_TOKEN", "keyring:leaky-token")]),
    );
    server.max_retries = Some(0);
    let problems =
        h.up.apply_configured(vec![server], || {
            let store = MemoryStore::new();
            let name = SecretName::new("leaky-token").unwrap();
            store.set(&name, &Secret::new(UPSTREAM_TOKEN)).unwrap();
            Box::new(store) as Box<dyn SecretStore>
        })
        .await;
    assert!(problems.is_empty(), "{problems:?}");
    h.ready("leaky", 1, Duration::from_secs(30)).await;

    // Its tool's error quotes the token: the agent and the audit row get
    // it scrubbed.
    let e = h
        .call("leaky__whoami", json!({}))
        .await
        .expect_err("the tool fails");
    assert!(e.to_string().contains("rejected key [redacted]"), "{e}");
    assert!(!e.to_string().contains(UPSTREAM_TOKEN), "{e}");

    // It then dies with the token in its last stderr line; its status
    // error (which quotes that line) and the ring hold neither.
    let c = control.clone();
    wait_for(Duration::from_secs(30), "the dying words in stderr", || {
        c.server_stderr("leaky", 0)
            .is_ok_and(|p| p.lines.iter().any(|l| l.text.contains("giving up")))
    })
    .await
    .unwrap();
    wait_for(Duration::from_secs(30), "a status error", || {
        c.servers().iter().any(|s| {
            s.last_error
                .as_deref()
                .is_some_and(|e| e.contains("stderr"))
        })
    })
    .await
    .unwrap();
    let page = control.server_stderr("leaky", 0).unwrap();
    let lines: Vec<&str> = page.lines.iter().map(|l| l.text.as_str()).collect();
    assert!(
        lines.contains(&"booting with API_TOKEN=[redacted]"),
        "{lines:?}"
    );
    assert!(
        lines.contains(&"fatal: giving up on key [redacted]"),
        "{lines:?}"
    );
    let statuses = serde_json::to_string(&control.servers()).unwrap();
    assert!(statuses.contains("[redacted]"), "{statuses}");
    assert!(!statuses.contains(UPSTREAM_TOKEN), "{statuses}");
    let seen: Vec<String> = std::iter::from_fn(|| events.try_recv().ok())
        .map(|e| serde_json::to_string(&e).unwrap())
        .collect();
    assert!(seen.iter().any(|e| e.contains("server_status")), "{seen:?}");
    assert!(seen.iter().all(|e| !e.contains(UPSTREAM_TOKEN)), "{seen:?}");
    let audit = h.engine.audit().expect("audit");
    audit.flush().await;
    let rows = serde_json::to_string(&audit.recent_calls(10).await.unwrap()).unwrap();
    assert!(rows.contains("leaky__whoami"), "{rows}");
    assert!(!rows.contains(UPSTREAM_TOKEN), "{rows}");
    h.up.shutdown().await;
}
