//! `http_fetch` against real local HTTP servers: blocked URLs never open a
//! connection (each server counts what it accepts), exceptions and
//! redirects are judged per hop, and upstream failures arrive classified.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;
use toolgate::CallError;
use toolgate::builtin::http::{HttpFetch, tool};
use toolgate::context::{CallContext, Caller, SessionId, SessionState};
use toolgate::guard::ssrf::SsrfConfig;
use toolgate::tool::{ToolResult, typed_tool};

/// A one-answer HTTP server that counts accepted connections.
struct Server {
    port: u16,
    accepted: Arc<AtomicUsize>,
    task: JoinHandle<()>,
}

impl Server {
    async fn start(response: String) -> Self {
        Self::start_on("127.0.0.1:0", |_| response)
            .await
            .expect("bind 127.0.0.1")
    }

    /// `None` when `addr` cannot be bound (no IPv6 loopback here). The
    /// response may depend on the port the server got.
    async fn start_on(addr: &str, response: impl FnOnce(u16) -> String) -> Option<Self> {
        let listener = TcpListener::bind(addr).await.ok()?;
        let port = listener.local_addr().ok()?.port();
        let accepted = Arc::new(AtomicUsize::new(0));
        let counter = Arc::clone(&accepted);
        let response = Arc::new(response(port).into_bytes());
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                counter.fetch_add(1, Ordering::SeqCst);
                tokio::spawn(answer(stream, Arc::clone(&response)));
            }
        });
        Some(Self {
            port,
            accepted,
            task,
        })
    }

    fn accepted(&self) -> usize {
        self.accepted.load(Ordering::SeqCst)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Reads the request head, then writes the canned response (an empty
/// response means "never answer").
async fn answer(mut stream: TcpStream, response: Arc<Vec<u8>>) {
    let mut head = Vec::new();
    let mut buf = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        match stream.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => head.extend_from_slice(&buf[..n]),
        }
    }
    if response.is_empty() {
        // Hold the connection open without answering.
        let _ = stream.read(&mut buf).await;
        return;
    }
    let _ = stream.write_all(&response).await;
    let _ = stream.shutdown().await;
}

fn response(status: &str, extra_headers: &str, body: &str) -> String {
    format!(
        "HTTP/1.1 {status}\r\ncontent-type: text/plain\r\ncontent-length: {}\r\n\
         connection: close\r\n{extra_headers}\r\n{body}",
        body.len()
    )
}

fn ok(body: &str) -> String {
    response("200 OK", "", body)
}

fn redirect_to(location: &str) -> String {
    response("302 Found", &format!("location: {location}\r\n"), "")
}

fn ctx() -> CallContext {
    CallContext {
        call_id: 1,
        caller: Arc::new(Caller::via("test")),
        session: SessionId::new("ssrf-test"),
        state: SessionState::default(),
    }
}

async fn fetch(cfg: SsrfConfig, args: Value) -> Result<ToolResult, CallError> {
    let (_, t) = tool(cfg).expect("http_fetch builds");
    t.call(args, &ctx()).await
}

async fn get(cfg: SsrfConfig, url: &str) -> Result<ToolResult, CallError> {
    fetch(cfg, json!({ "url": url })).await
}

fn allow(hosts: &[String]) -> SsrfConfig {
    SsrfConfig {
        allow_local: false,
        allowed_hosts: hosts.to_vec(),
    }
}

#[track_caller]
fn assert_guard_denied(r: &Result<ToolResult, CallError>, url: &str) {
    match r {
        Err(CallError::GuardDenied { arg, reason }) => {
            assert_eq!(arg, "url", "{url}");
            assert!(!reason.is_empty(), "{url}");
        }
        other => panic!("{url}: expected GuardDenied, got {other:?}"),
    }
}

#[tokio::test]
async fn blocked_urls_never_connect() {
    let server = Server::start(ok("secret")).await;
    for url in crate::common::escapes::blocked_urls(server.port) {
        assert_guard_denied(&get(SsrfConfig::default(), &url).await, &url);
    }
    assert_eq!(server.accepted(), 0);
}

#[tokio::test]
async fn blocked_ipv6_loopback_never_connects() {
    let Some(server) = Server::start_on("[::1]:0", |_| ok("secret")).await else {
        eprintln!("skipped: no IPv6 loopback on this machine");
        return;
    };
    let url = format!("http://[::1]:{}/", server.port);
    assert_guard_denied(&get(SsrfConfig::default(), &url).await, &url);
    assert_eq!(server.accepted(), 0);
}

#[tokio::test]
async fn an_allowed_host_and_port_is_fetched() {
    let allowed = Server::start(ok("hello from p1")).await;
    let other = Server::start(ok("p2")).await;
    let cfg = allow(&[format!("127.0.0.1:{}", allowed.port)]);

    let r = get(cfg.clone(), &format!("http://127.0.0.1:{}/x", allowed.port))
        .await
        .unwrap();
    assert!(!r.is_error);
    let text = r.joined_text();
    assert!(text.starts_with("HTTP 200 OK\n"), "{text}");
    assert!(text.contains("content-type: text/plain"), "{text}");
    assert!(text.ends_with("\nhello from p1"), "{text}");
    assert_eq!(r.meta["status"], 200);
    assert_eq!(allowed.accepted(), 1);

    // The exception is for that port only.
    let url = format!("http://127.0.0.1:{}/", other.port);
    assert_guard_denied(&get(cfg, &url).await, &url);
    assert_eq!(other.accepted(), 0);
}

#[tokio::test]
async fn a_redirect_to_a_blocked_address_is_refused_before_connecting() {
    let target = Server::start(ok("internal secret")).await;
    let start = Server::start(redirect_to(&format!("http://127.0.0.1:{}/", target.port))).await;
    let cfg = allow(&[format!("127.0.0.1:{}", start.port)]);

    let r = get(cfg, &format!("http://127.0.0.1:{}/", start.port)).await;
    assert_guard_denied(&r, "redirect hop");
    assert_eq!(start.accepted(), 1);
    assert_eq!(target.accepted(), 0);
}

#[tokio::test]
async fn redirects_between_allowed_hosts_are_followed() {
    let target = Server::start(ok("landed")).await;
    let start = Server::start(redirect_to(&format!(
        "http://127.0.0.1:{}/end",
        target.port
    )))
    .await;
    let cfg = allow(&[
        format!("127.0.0.1:{}", start.port),
        format!("127.0.0.1:{}", target.port),
    ]);
    let r = get(cfg, &format!("http://127.0.0.1:{}/", start.port))
        .await
        .unwrap();
    assert!(r.joined_text().ends_with("\nlanded"), "{}", r.joined_text());
    assert_eq!(
        r.meta["final_url"],
        format!("http://127.0.0.1:{}/end", target.port)
    );
    assert_eq!(target.accepted(), 1);
}

#[tokio::test]
async fn redirect_chains_stop_after_five_hops() {
    // A server that redirects to itself forever.
    let server = Server::start_on("127.0.0.1:0", |port| {
        redirect_to(&format!("http://127.0.0.1:{port}/again"))
    })
    .await
    .expect("bind 127.0.0.1");
    let port = server.port;
    let r = get(
        allow(&[format!("127.0.0.1:{port}")]),
        &format!("http://127.0.0.1:{port}/"),
    )
    .await;
    match r {
        Err(e @ CallError::ToolFailed { .. }) => {
            assert!(e.to_string().contains("5 redirects"), "{e}")
        }
        other => panic!("expected ToolFailed, got {other:?}"),
    }
    // The first request plus five followed hops.
    assert_eq!(server.accepted(), 6);
}

#[tokio::test]
async fn status_429_is_rate_limited_with_retry_after() {
    let server = Server::start(response(
        "429 Too Many Requests",
        "retry-after: 2\r\n",
        "slow down",
    ))
    .await;
    let r = get(
        allow(&[format!("127.0.0.1:{}", server.port)]),
        &format!("http://127.0.0.1:{}/", server.port),
    )
    .await;
    match r {
        Err(CallError::RateLimited { retry_after }) => {
            assert_eq!(retry_after, Some(Duration::from_secs(2)));
        }
        other => panic!("expected RateLimited, got {other:?}"),
    }
}

#[tokio::test]
async fn status_503_is_an_upstream_failure() {
    let server = Server::start(response("503 Service Unavailable", "", "db down")).await;
    let r = get(
        allow(&[format!("127.0.0.1:{}", server.port)]),
        &format!("http://127.0.0.1:{}/", server.port),
    )
    .await;
    match r {
        Err(e @ CallError::Upstream { status: 503, .. }) => {
            assert!(e.is_retryable());
            assert!(e.to_string().contains("db down"), "{e}");
        }
        other => panic!("expected Upstream 503, got {other:?}"),
    }
}

#[tokio::test]
async fn status_404_is_a_result_flagged_as_error() {
    let server = Server::start(response("404 Not Found", "", "no such page")).await;
    let r = get(
        allow(&[format!("127.0.0.1:{}", server.port)]),
        &format!("http://127.0.0.1:{}/missing", server.port),
    )
    .await
    .unwrap();
    assert!(r.is_error);
    assert!(r.joined_text().contains("HTTP 404 Not Found"));
    assert!(r.joined_text().ends_with("no such page"));
}

#[tokio::test]
async fn allow_local_permits_local_fetches() {
    let server = Server::start(ok("dev server")).await;
    let cfg = SsrfConfig {
        allow_local: true,
        allowed_hosts: vec![],
    };
    for url in [
        format!("http://127.0.0.1:{}/", server.port),
        format!("http://localhost:{}/", server.port),
    ] {
        let r = get(cfg.clone(), &url).await.unwrap();
        assert!(r.joined_text().ends_with("dev server"), "{url}");
    }
    assert_eq!(server.accepted(), 2);
    // Metadata stays blocked even so.
    assert_guard_denied(
        &get(cfg, "http://169.254.169.254/latest/meta-data/").await,
        "metadata",
    );
}

#[tokio::test]
async fn long_bodies_are_cut_and_say_how_much() {
    let body = "0123456789".repeat(10);
    let server = Server::start(ok(&body)).await;
    let r = fetch(
        allow(&[format!("127.0.0.1:{}", server.port)]),
        json!({ "url": format!("http://127.0.0.1:{}/", server.port), "max_bytes": 25 }),
    )
    .await
    .unwrap();
    let text = r.joined_text();
    assert!(
        text.contains("first 25 of 100 bytes (75 bytes cut)"),
        "{text}"
    );
    assert!(text.ends_with("\n0123456789012345678901234"), "{text}");
    assert_eq!(r.meta["truncated"], true);
}

#[tokio::test]
async fn binary_bodies_are_described_not_dumped() {
    let body = "\u{0}\u{1}PNG\u{0}";
    let server = Server::start(format!(
        "HTTP/1.1 200 OK\r\ncontent-type: image/png\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    ))
    .await;
    let r = get(
        allow(&[format!("127.0.0.1:{}", server.port)]),
        &format!("http://127.0.0.1:{}/x.png", server.port),
    )
    .await
    .unwrap();
    let text = r.joined_text();
    assert!(
        text.ends_with("[binary body of 6 bytes (image/png); not shown]"),
        "{text}"
    );
}

#[tokio::test]
async fn head_returns_no_body() {
    let server = Server::start(response("200 OK", "", "")).await;
    let r = fetch(
        allow(&[format!("127.0.0.1:{}", server.port)]),
        json!({ "url": format!("http://127.0.0.1:{}/", server.port), "method": "HEAD" }),
    )
    .await
    .unwrap();
    let text = r.joined_text();
    assert!(text.ends_with("content-length: 0\n"), "{text}");
    assert!(!text.contains("\n\n"), "no body section: {text}");
}

#[tokio::test]
async fn a_silent_server_times_out() {
    let server = Server::start(String::new()).await;
    let cfg = allow(&[format!("127.0.0.1:{}", server.port)]);
    let fetch = HttpFetch::new(cfg, Duration::from_millis(300)).unwrap();
    let (_, t) = typed_tool(fetch).unwrap();
    let r = t
        .call(
            json!({ "url": format!("http://127.0.0.1:{}/", server.port) }),
            &ctx(),
        )
        .await;
    match r {
        Err(CallError::Timeout { after }) => assert_eq!(after, Duration::from_millis(300)),
        other => panic!("expected Timeout, got {other:?}"),
    }
    assert_eq!(server.accepted(), 1);
}

#[tokio::test]
async fn a_refused_connection_is_a_connection_error() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    let r = get(
        allow(&[format!("127.0.0.1:{port}")]),
        &format!("http://127.0.0.1:{port}/"),
    )
    .await;
    match r {
        Err(e @ CallError::Connection { .. }) => assert!(e.is_retryable()),
        other => panic!("expected Connection, got {other:?}"),
    }
}
