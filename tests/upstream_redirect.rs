//! Remote upstreams whose endpoint redirects to another origin: two real
//! HTTP servers on loopback, one redirecting every request to the other,
//! which records what reaches it. The configured headers and credentials
//! must never get there, and the server's status must say why it failed.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::http::{HeaderMap, StatusCode};
use toolgate::config::servers::{AuthSpec, TransportSpec};
use toolgate::upstream::ServerState;

use crate::upstream_support::{Harness, spec, wait_for};

const API_KEY: &str = "hdr-secret-1234";
const BEARER: &str = "bearer-secret-5678";

/// Requests a server received: path and headers.
type Seen = Arc<Mutex<Vec<(String, HeaderMap)>>>;

/// A server that records every request and answers 200.
async fn recorder() -> (String, Seen) {
    let seen: Seen = Arc::default();
    let s2 = seen.clone();
    let app = axum::Router::new().fallback(move |uri: axum::http::Uri, headers: HeaderMap| {
        let seen = s2.clone();
        async move {
            seen.lock().unwrap().push((uri.to_string(), headers));
            "recorded"
        }
    });
    (serve(app).await, seen)
}

/// A server that redirects every request to `to`, keeping the path.
async fn redirector(to: String) -> String {
    let app = axum::Router::new().fallback(move |uri: axum::http::Uri| {
        let to = to.clone();
        async move {
            let location = format!("{to}{}", uri.path());
            (StatusCode::TEMPORARY_REDIRECT, [("location", location)])
        }
    });
    serve(app).await
}

async fn serve(app: axum::Router) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let origin = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    origin
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_upstream_transport_follows_a_redirect_to_another_origin() {
    let (elsewhere, seen) = recorder().await;
    let configured = redirector(elsewhere.clone()).await;
    let ws_configured = configured.replace("http://", "ws://");
    let headers = BTreeMap::from([("X-Api-Key".to_owned(), API_KEY.to_owned())]);
    let auth = Some(AuthSpec::Bearer {
        token: BEARER.to_owned(),
    });
    let servers = [
        (
            "sse",
            TransportSpec::Sse {
                url: format!("{configured}/sse"),
                headers: headers.clone(),
            },
        ),
        (
            "http",
            TransportSpec::StreamableHttp {
                url: format!("{configured}/mcp"),
                headers: headers.clone(),
            },
        ),
        (
            "ws",
            TransportSpec::Websocket {
                url: format!("{ws_configured}/ws"),
                headers: headers.clone(),
            },
        ),
    ];
    let h = Harness::new().await;
    h.up.apply(
        servers
            .into_iter()
            .map(|(name, t)| {
                let mut s = spec(name, t);
                s.auth = auth.clone();
                s
            })
            .collect(),
    )
    .await;
    for name in ["sse", "http", "ws"] {
        let up = h.up.clone();
        wait_for(
            Duration::from_secs(30),
            &format!("`{name}` to fail"),
            || {
                up.status(name).is_some_and(|s| {
                s.state == ServerState::Failed || s.state == ServerState::Restarting
            } && s.last_error.is_some())
            },
        )
        .await
        .unwrap_or_else(|e| panic!("{e}: {:?}", h.up.status(name)));
        let error = h.up.status(name).and_then(|s| s.last_error).unwrap();
        assert!(
            error.contains(&format!(
                "{configured} redirected to another origin, {elsewhere}"
            )) || error.contains(&format!("{ws_configured} redirected to another origin")),
            "`{name}`: {error}"
        );
    }
    let got = seen.lock().unwrap().clone();
    for (path, headers) in &got {
        let all = format!("{headers:?}");
        assert!(
            !all.contains(API_KEY) && !all.contains(BEARER),
            "{path}: {all}"
        );
    }
    assert!(
        got.is_empty(),
        "nothing is sent to the other origin: {got:?}"
    );
    h.up.shutdown().await;
}
