//! An agent and a person on a daemon's sockets, acting at once: the agent
//! sends calls and waits for the one it wants while others are
//! outstanding; the person, on the control socket with the control
//! credential, approves what waits for them.

use std::collections::HashMap;
use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
use tokio::net::unix::OwnedWriteHalf;
use tokio::sync::mpsc;

use super::daemon::Raw;

/// A deadline for a reply or a request to appear.
pub(crate) const WITHIN: Duration = Duration::from_secs(60);

/// An agent's connection to the agent socket. Replies are read by a task
/// of their own, so a test can wait for one while others are outstanding
/// and a person acts meanwhile.
pub(crate) struct Agent {
    wr: OwnedWriteHalf,
    replies: mpsc::UnboundedReceiver<Value>,
    early: HashMap<u64, Value>,
    next: u64,
}

impl Agent {
    pub(crate) async fn connect(socket: &Path) -> Self {
        let mut raw = Raw::connect(socket).await;
        raw.initialize().await;
        let Raw { mut rd, wr } = raw;
        let (tx, replies) = mpsc::unbounded_channel();
        tokio::spawn(async move {
            let mut line = String::new();
            while rd.read_line(&mut line).await.is_ok_and(|n| n > 0) {
                if let Ok(v) = serde_json::from_str::<Value>(&line)
                    && v.get("id").is_some()
                    && tx.send(v).is_err()
                {
                    return;
                }
                line.clear();
            }
        });
        Self {
            wr,
            replies,
            early: HashMap::new(),
            next: 100,
        }
    }

    /// Sends a call without waiting; returns its JSON-RPC id.
    pub(crate) async fn send_call(&mut self, tool: &str, args: &Value) -> u64 {
        self.next += 1;
        let line = json!({"jsonrpc": "2.0", "id": self.next, "method": "tools/call",
                          "params": {"name": tool, "arguments": args}});
        self.wr
            .write_all(format!("{line}\n").as_bytes())
            .await
            .unwrap();
        self.next
    }

    /// The reply to call `id`, within [`WITHIN`], while nobody acts.
    pub(crate) async fn reply(&mut self, id: u64) -> Value {
        tokio::time::timeout(WITHIN, async {
            loop {
                if let Some(v) = self.early.remove(&id) {
                    return v;
                }
                let v = self.replies.recv().await.expect("the connection is open");
                self.stash(v);
            }
        })
        .await
        .unwrap_or_else(|_| panic!("no reply to call {id} within {WITHIN:?}"))
    }

    fn stash(&mut self, v: Value) {
        let id = v["id"].as_u64().expect("a numeric id");
        self.early.insert(id, v);
    }
}

/// A person at the control socket with the control credential, as the CLI
/// and the console are.
pub(crate) struct Person {
    raw: Raw,
    next: u64,
}

impl Person {
    pub(crate) async fn connect(control_socket: &Path, data_dir: &Path) -> Self {
        Self {
            raw: Raw::connect_control(control_socket, data_dir).await,
            next: 0,
        }
    }

    pub(crate) async fn request(&mut self, method: &str, params: Value) -> Value {
        self.next += 1;
        let r = self.raw.request(self.next, method, params).await;
        assert!(r.get("result").is_some(), "{method}: {r}");
        r["result"].clone()
    }

    pub(crate) async fn pending(&mut self) -> Vec<Value> {
        let r = self.request("toolgate/approvals", json!({})).await;
        r["pending"].as_array().cloned().unwrap_or_default()
    }

    pub(crate) async fn approve(&mut self, request: i64) {
        self.request("toolgate/approve", json!({"id": request}))
            .await;
    }

    pub(crate) async fn deny(&mut self, request: i64) {
        self.request("toolgate/deny", json!({"id": request})).await;
    }

    /// The request for `tool` with exactly `args`, once it waits.
    pub(crate) async fn request_for(&mut self, tool: &str, args: &Value) -> i64 {
        let deadline = tokio::time::Instant::now() + WITHIN;
        loop {
            if let Some(p) = self
                .pending()
                .await
                .into_iter()
                .find(|p| p["tool"] == tool && p["args"] == *args)
            {
                return p["id"].as_i64().unwrap();
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "no request for {tool} {args} within {WITHIN:?}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

/// Calls `tool` as `agent` and returns the reply. If the call waits for a
/// person, `person` approves exactly that call (an innocent-looking command
/// gets approved), so only the barrier stands between the payload and
/// toolgate.
pub(crate) async fn call(agent: &mut Agent, person: &mut Person, tool: &str, args: Value) -> Value {
    let id = agent.send_call(tool, &args).await;
    let deadline = tokio::time::Instant::now() + WITHIN;
    loop {
        if let Some(v) = agent.early.remove(&id) {
            return v;
        }
        tokio::select! {
            v = agent.replies.recv() => agent.stash(v.expect("the connection is open")),
            // The control socket has no events: look at what waits.
            () = tokio::time::sleep(Duration::from_millis(25)) => {
                for p in person.pending().await {
                    if p["tool"] == tool && p["args"] == args {
                        person.approve(p["id"].as_i64().unwrap()).await;
                    }
                }
            }
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "no reply to {tool} {args} within {WITHIN:?}"
        );
    }
}
