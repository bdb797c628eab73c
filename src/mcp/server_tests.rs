//! The connection loop's handling of a call's owner, over an in-memory
//! duplex: hang-up, half-close, `notifications/cancelled`, a stalled
//! write, shutdown. The clock is paused: "the loop has done all it can"
//! is a sleep that only ends once every task is idle.

use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream};
use tokio::sync::{Notify, broadcast, oneshot};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::*;
use crate::config::Config;
use crate::context::CallContext;
use crate::events::Event;
use crate::tool::{JsonObject, Tool, ToolDef, ToolName, ToolResult};
use crate::wire::Outcome;

/// An engine with `slow`, a tool that answers once `release` is notified.
fn engine() -> (Engine, Arc<Notify>) {
    let engine = Engine::builder(Config::default()).build();
    let release = Arc::new(Notify::new());
    let r2 = release.clone();
    let runner: Arc<dyn Tool> = Arc::new(move |_: Value, _: &CallContext| {
        let r = r2.clone();
        async move {
            r.notified().await;
            Ok(ToolResult::text("released"))
        }
        .boxed()
    });
    let schema: JsonObject = serde_json::from_value(json!({"type": "object"})).unwrap();
    let def = ToolDef::new(ToolName::new("slow").unwrap(), "waits", schema);
    engine.registry().register(def, runner).unwrap();
    (engine, release)
}

struct Rig {
    server: McpServer,
    client: DuplexStream,
    events: broadcast::Receiver<Event>,
    shutdown: CancellationToken,
    hang_up: Option<oneshot::Sender<()>>,
    served: JoinHandle<()>,
    release: Arc<Notify>,
}

fn rig_with(opts: ServerOptions, buffer: usize) -> Rig {
    let (engine, release) = engine();
    let events = engine.subscribe();
    let server = McpServer::new(engine, opts);
    let (client, ours) = tokio::io::duplex(buffer);
    let shutdown = CancellationToken::new();
    let (hang_up, gone) = oneshot::channel::<()>();
    let gone = async move {
        let _ = gone.await;
    };
    let (s2, t2) = (server.clone(), shutdown.clone());
    let served = tokio::spawn(async move {
        let session = Session::new("s", Caller::via("test"));
        s2.serve_with_hangup(ours, session, t2, gone).await;
    });
    Rig {
        server,
        client,
        events,
        shutdown,
        hang_up: Some(hang_up),
        served,
        release,
    }
}

fn rig() -> Rig {
    rig_with(ServerOptions::default(), 64 * 1024)
}

impl Rig {
    async fn send(&mut self, v: Value) {
        self.client
            .write_all(format!("{v}\n").as_bytes())
            .await
            .unwrap();
    }

    async fn call_slow(&mut self, id: u64) {
        self.send(
            json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "slow"}}),
        )
        .await;
    }

    /// How the next call that finishes ended.
    async fn finished(&mut self) -> Outcome {
        loop {
            if let Event::CallFinished { outcome, .. } = self.events.recv().await.unwrap() {
                return outcome;
            }
        }
    }

    /// Whether a call finished by now.
    fn any_finished(&mut self) -> bool {
        std::iter::from_fn(|| self.events.try_recv().ok())
            .any(|e| matches!(e, Event::CallFinished { .. }))
    }
}

/// Lets every task run until all of them wait (the clock is paused, so
/// the sleep ends only then).
async fn settle() {
    tokio::time::sleep(Duration::from_millis(1)).await;
}

fn cancelled(reason: CancelReason) -> Outcome {
    Outcome::Cancelled { reason }
}

async fn lines(client: DuplexStream) -> Vec<Value> {
    let mut out = Vec::new();
    let mut rd = BufReader::new(client).lines();
    while let Ok(Some(l)) = rd.next_line().await {
        out.push(serde_json::from_str(&l).unwrap());
    }
    out
}

#[tokio::test(start_paused = true)]
async fn a_hang_up_cancels_the_calls_in_flight() {
    let mut r = rig();
    r.call_slow(1).await;
    settle().await;
    assert!(!r.any_finished(), "the call runs");
    let _ = r.hang_up.take().unwrap().send(());
    assert_eq!(
        r.finished().await,
        cancelled(CancelReason::ClientDisconnected)
    );
    r.served.await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn an_end_of_input_alone_lets_the_calls_finish_and_be_answered() {
    let mut r = rig();
    r.call_slow(1).await;
    r.client.shutdown().await.unwrap();
    settle().await;
    assert!(!r.any_finished(), "the half-closed client's call runs on");
    r.release.notify_one();
    assert!(matches!(r.finished().await, Outcome::Ok { .. }));
    r.served.await.unwrap();
    let replies = lines(r.client).await;
    assert_eq!(replies.len(), 1, "{replies:?}");
    assert_eq!(replies[0]["result"]["content"][0]["text"], "released");
}

#[tokio::test(start_paused = true)]
async fn a_cancelled_request_ends_unanswered_and_the_connection_goes_on() {
    let mut r = rig();
    r.call_slow(1).await;
    r.send(
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}}),
    )
    .await;
    assert_eq!(r.finished().await, cancelled(CancelReason::ClientCancelled));
    r.send(json!({"jsonrpc": "2.0", "id": 2, "method": "ping"}))
        .await;
    // A cancellation for a request that is not in flight is ignored.
    r.send(
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 7}}),
    )
    .await;
    r.client.shutdown().await.unwrap();
    r.served.await.unwrap();
    let replies = lines(r.client).await;
    let ids: Vec<&Value> = replies.iter().map(|v| &v["id"]).collect();
    assert_eq!(ids, [&json!(2)], "{replies:?}");
}

#[tokio::test(start_paused = true)]
async fn a_write_that_stalls_cancels_the_connections_calls() {
    let opts = ServerOptions {
        write_timeout: Duration::from_secs(2),
        ..ServerOptions::default()
    };
    // A pipe that holds less than one reply: the client reads nothing.
    let mut r = rig_with(opts, 16);
    r.call_slow(1).await;
    r.send(json!({"jsonrpc": "2.0", "id": 2, "method": "ping"}))
        .await;
    assert_eq!(
        r.finished().await,
        cancelled(CancelReason::ClientDisconnected)
    );
    r.served.await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn at_shutdown_calls_run_until_cancelled_and_are_answered_with_why() {
    let mut r = rig();
    r.call_slow(1).await;
    settle().await;
    r.shutdown.cancel();
    settle().await;
    assert!(!r.any_finished(), "calls get the grace");
    r.server.cancel_calls(CancelReason::Shutdown);
    assert_eq!(r.finished().await, cancelled(CancelReason::Shutdown));
    r.served.await.unwrap();
    let replies = lines(r.client).await;
    assert_eq!(replies.len(), 1, "{replies:?}");
    assert_eq!(replies[0]["result"]["isError"], true);
    let text = replies[0]["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(text.contains("toolgate is shutting down"), "{text}");
}

#[tokio::test(start_paused = true)]
async fn cut_writes_ends_a_connection_whose_client_never_reads() {
    let mut r = rig_with(ServerOptions::default(), 16);
    r.call_slow(1).await;
    r.send(json!({"jsonrpc": "2.0", "id": 2, "method": "ping"}))
        .await;
    settle().await;
    r.shutdown.cancel();
    r.server.cancel_calls(CancelReason::Shutdown);
    r.server.cut_writes();
    // Long before the 30 s stall timeout.
    tokio::time::timeout(Duration::from_secs(1), &mut r.served)
        .await
        .expect("the connection ends at the cut")
        .unwrap();
    assert_eq!(r.finished().await, cancelled(CancelReason::Shutdown));
}
