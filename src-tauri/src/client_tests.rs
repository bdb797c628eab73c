//! The HTTP client over real TCP against a stand-in for the console's
//! routes that speaks its wire format (docs/architecture/console-api.md,
//! HTTP API and Event stream). The console transport is built in
//! parallel; once it merges, the shell's end-to-end test runs against the
//! engine itself. What is checked here is the
//! client's side: headers sent, SSE framing read (ids, `message`,
//! `reload`, keep-alive comments), error bodies, the decision body.

use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use futures::StreamExt;
use serde_json::json;

use super::*;
use crate::wire::{Event, Risk};

const TOKEN: &str = "console-bearer-0123";

#[derive(Default)]
struct Seen {
    posts: Vec<(String, String, serde_json::Value)>,
    headers: Vec<HeaderMap>,
}

type Shared = Arc<Mutex<Seen>>;

fn authorised(h: &HeaderMap) -> bool {
    h.get("authorization").and_then(|v| v.to_str().ok()) == Some(&format!("Bearer {TOKEN}"))
}

fn refused(status: StatusCode, code: &str, message: &str) -> Response {
    (
        status,
        axum::Json(json!({"error": {"code": code, "message": message}})),
    )
        .into_response()
}

async fn snapshot(State(s): State<Shared>, h: HeaderMap) -> Response {
    s.lock().unwrap().headers.push(h.clone());
    if !authorised(&h) {
        return refused(StatusCode::UNAUTHORIZED, "unauthorized", "log in again");
    }
    axum::Json(json!({
        "seq": 41,
        "engine": {"version": "0.1.0", "pid": 1, "mode": "desktop"},
        "counters": {"pending": 1},
        "pending": [{"id": 3, "call_id": 9, "tool": "shell_exec", "args": {"command": "rm -rf /"},
                     "risk": "critical", "reason": "shell", "expires_ms": 99,
                     "caller": {"via": "socket", "pid": 7, "client_name": "agent",
                                "text": "socket agent pid 7"}}],
        "recent_calls": []
    }))
    .into_response()
}

/// The stream exactly as the console frames it
/// (docs/architecture/console-api.md, Event stream).
async fn events(State(s): State<Shared>, h: HeaderMap) -> Response {
    s.lock().unwrap().headers.push(h.clone());
    let body = concat!(
        ": keepalive\n\n",
        "id: 42\nevent: message\ndata: {\"seq\":42,\"ts_ms\":5,\"event\":{\"type\":\"call_received\",\"call_id\":1,\"tool\":\"t\",\"caller\":\"c\",\"session\":\"s\"}}\n\n",
        "id: 43\nevent: message\ndata: {\"seq\":43,\"ts_ms\":6,\"event\":{\"type\":\"approval_decided\",\"id\":3,\"tool\":\"shell_exec\",\"status\":\"approved\",\"by\":\"tray\"}}\n\n",
        "event: reload\ndata: {\"seq\":50}\n\n",
    );
    ([("content-type", "text/event-stream")], body).into_response()
}

async fn decide(
    State(s): State<Shared>,
    Path((id, verb)): Path<(String, String)>,
    h: HeaderMap,
    body: Bytes,
) -> Response {
    let body: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
    let mut seen = s.lock().unwrap();
    seen.headers.push(h);
    let has_decider = body.get("decider").is_some();
    seen.posts.push((id.clone(), verb, body));
    if id == "404" {
        return refused(
            StatusCode::CONFLICT,
            "stale",
            "request 404 was already decided",
        );
    }
    // As the console before it knew the field: the whole body is refused.
    if id == "422" && has_decider {
        return (
            StatusCode::UNPROCESSABLE_ENTITY,
            axum::Json(json!({"error": {"code": "invalid", "field": "decider",
                "message": "unknown field `decider`, expected `reason` or `always`"}})),
        )
            .into_response();
    }
    axum::Json(json!({"decided_by": "tray"})).into_response()
}

async fn serve() -> (Url, Shared) {
    let seen: Shared = Arc::default();
    let app = Router::new()
        .route("/api/snapshot", get(snapshot))
        .route("/api/events", get(events))
        .route("/api/approvals/{id}/{verb}", post(decide))
        .with_state(seen.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = Url::parse(&format!("http://{}", listener.local_addr().unwrap())).unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    (url, seen)
}

#[tokio::test]
async fn the_snapshot_is_read_with_the_bearer_token() {
    let (url, seen) = serve().await;
    let c = HttpConsole::new(url.clone(), TOKEN).unwrap();
    let s = c.snapshot().await.unwrap();
    assert_eq!(s.seq, 41);
    assert_eq!(s.pending[0].risk, Risk::Critical);
    assert_eq!(s.pending[0].caller, "socket agent pid 7");
    let h = &seen.lock().unwrap().headers[0];
    assert_eq!(h["origin"], url.origin().ascii_serialization().as_str());
}

#[tokio::test]
async fn a_wrong_token_is_an_unauthorized_error_with_the_consoles_message() {
    let (url, _) = serve().await;
    let c = HttpConsole::new(url, "wrong").unwrap();
    let e = c.snapshot().await.unwrap_err();
    assert!(
        matches!(&e, ClientError::Refused { status: 401, code, message, .. }
            if code == "unauthorized" && message == "log in again"),
        "{e}"
    );
    assert!(
        !e.to_string().contains("wrong"),
        "the token is never in an error: {e}"
    );
}

#[tokio::test]
async fn the_stream_yields_envelopes_skips_keepalives_and_ends_with_reload() {
    let (url, _) = serve().await;
    let c = HttpConsole::new(url, TOKEN).unwrap();
    let items: Vec<StreamItem> = c
        .events(41)
        .await
        .unwrap()
        .map(|i| i.unwrap())
        .collect()
        .await;
    assert_eq!(items.len(), 3, "{items:?}");
    let StreamItem::Envelope(first) = &items[0] else {
        panic!("{items:?}")
    };
    assert_eq!((first.seq, &first.event), (42, &Event::Other));
    let StreamItem::Envelope(second) = &items[1] else {
        panic!("{items:?}")
    };
    assert!(
        matches!(&second.event, Event::ApprovalDecided(d) if d.id == 3 && d.status == "approved")
    );
    assert_eq!(items[2], StreamItem::Reload);
}

#[tokio::test]
async fn a_decision_posts_the_decider_with_our_origin() {
    let (url, seen) = serve().await;
    let c = HttpConsole::new(url.clone(), TOKEN).unwrap();
    c.decide(12, Verdict::Approve, Via::Tray).await.unwrap();
    c.decide(13, Verdict::Deny, Via::Notification)
        .await
        .unwrap();
    let seen = seen.lock().unwrap();
    assert_eq!(
        seen.posts,
        vec![
            ("12".into(), "approve".into(), json!({"decider": "tray"})),
            (
                "13".into(),
                "deny".into(),
                json!({"decider": "notification"})
            ),
        ]
    );
    for h in &seen.headers {
        assert_eq!(h["origin"], url.origin().ascii_serialization().as_str());
        assert_eq!(h["authorization"], format!("Bearer {TOKEN}").as_str());
    }
}

#[tokio::test]
async fn a_console_that_refuses_the_decider_still_gets_the_decision() {
    let (url, seen) = serve().await;
    let c = HttpConsole::new(url, TOKEN).unwrap();
    c.decide(422, Verdict::Deny, Via::Tray).await.unwrap();
    let posts = &seen.lock().unwrap().posts;
    assert_eq!(
        *posts,
        vec![
            ("422".into(), "deny".into(), json!({"decider": "tray"})),
            ("422".into(), "deny".into(), json!({})),
        ]
    );
}

#[tokio::test]
async fn deciding_an_ended_request_is_stale() {
    let (url, _) = serve().await;
    let c = HttpConsole::new(url, TOKEN).unwrap();
    let e = c
        .decide(404, Verdict::Approve, Via::Tray)
        .await
        .unwrap_err();
    assert!(e.is_stale(), "{e}");
}

#[tokio::test]
async fn no_console_listening_is_an_http_error_naming_the_url() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = Url::parse(&format!("http://{}", listener.local_addr().unwrap())).unwrap();
    drop(listener);
    let c = HttpConsole::new(url, TOKEN).unwrap();
    let e = c.snapshot().await.unwrap_err();
    assert!(matches!(e, ClientError::Http { .. }), "{e}");
    assert!(e.to_string().contains("/api/snapshot"), "{e}");
}

#[test]
fn a_token_with_a_newline_is_refused_up_front() {
    let url = Url::parse("http://127.0.0.1:1").unwrap();
    assert!(matches!(
        HttpConsole::new(url, "abc\ndef"),
        Err(ClientError::BadToken)
    ));
}
