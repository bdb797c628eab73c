//! The localhost streamable-HTTP endpoint: token, Host and Origin checks
//! against DNS rebinding, sessions, and calls through the same pipeline.

use serde_json::{Value, json};

use crate::common::daemon::TestDaemon;

fn init_body() -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
           "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "http-test", "version": "1"}}})
}

/// Posts `initialize` with the endpoint's token.
async fn initialize(c: &reqwest::Client, url: &str, token: &str) -> reqwest::Response {
    c.post(url)
        .bearer_auth(token)
        .json(&init_body())
        .send()
        .await
        .unwrap()
}

fn client() -> reqwest::Client {
    reqwest::Client::builder().no_proxy().build().unwrap()
}

#[tokio::test]
async fn requests_without_token_or_with_a_foreign_host_or_origin_are_refused() {
    let d = TestDaemon::start("").await;
    let (url, token) = d.http.clone();
    let port = url
        .trim_start_matches("http://127.0.0.1:")
        .trim_end_matches("/mcp")
        .to_owned();
    let c = client();
    let status = |r: reqwest::Response| r.status().as_u16();

    assert_eq!(
        status(c.post(&url).json(&init_body()).send().await.unwrap()),
        401
    );
    assert_eq!(
        status(
            c.post(&url)
                .bearer_auth("wrong")
                .json(&init_body())
                .send()
                .await
                .unwrap()
        ),
        401
    );
    let rebinding = c
        .post(&url)
        .bearer_auth(&token)
        .header("Host", format!("evil.example:{port}"))
        .json(&init_body());
    assert_eq!(status(rebinding.send().await.unwrap()), 403);
    let foreign = c
        .post(&url)
        .bearer_auth(&token)
        .header("Origin", "http://evil.example")
        .json(&init_body());
    assert_eq!(status(foreign.send().await.unwrap()), 403);
    let same = c
        .post(&url)
        .bearer_auth(&token)
        .header("Origin", format!("http://localhost:{port}"))
        .json(&init_body());
    assert_eq!(status(same.send().await.unwrap()), 200);
    d.stop().await;
}

#[tokio::test]
async fn a_session_lists_and_calls_tools_over_http() {
    let d = TestDaemon::start("").await;
    std::fs::write(d.root().join("a.txt"), "over http").unwrap();
    let (url, token) = d.http.clone();
    let c = client();
    let r = initialize(&c, &url, &token).await;
    let sid = r.headers()["mcp-session-id"].to_str().unwrap().to_owned();
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["result"]["protocolVersion"], "2025-06-18");

    let post = |v: Value| {
        c.post(&url)
            .bearer_auth(&token)
            .header("mcp-session-id", &sid)
            .json(&v)
            .send()
    };
    let r = post(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 202);
    let tools: Value = post(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(tools["result"]["tools"].as_array().unwrap().len(), 5);
    let call: Value = post(json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                                  "params": {"name": "fs_read", "arguments": {"path": "a.txt"}}}))
    .await
    .unwrap()
    .json()
    .await
    .unwrap();
    assert_eq!(call["result"]["content"][0]["text"], "over http");

    let no_session = c
        .post(&url)
        .bearer_auth(&token)
        .json(&json!({"jsonrpc": "2.0", "id": 4, "method": "ping"}));
    assert_eq!(no_session.send().await.unwrap().status().as_u16(), 404);
    let bad = c
        .post(&url)
        .bearer_auth(&token)
        .header("mcp-session-id", &sid)
        .body("{oops")
        .send()
        .await
        .unwrap();
    assert_eq!(bad.status().as_u16(), 400);
    let err: Value = bad.json().await.unwrap();
    assert_eq!(err["error"]["code"], -32700);

    let del = c
        .delete(&url)
        .bearer_auth(&token)
        .header("mcp-session-id", &sid)
        .send()
        .await
        .unwrap();
    assert_eq!(del.status().as_u16(), 204);
    let after = post(json!({"jsonrpc": "2.0", "id": 5, "method": "ping"}))
        .await
        .unwrap();
    assert_eq!(after.status().as_u16(), 404);
    d.stop().await;
}

#[tokio::test]
async fn a_body_over_the_limit_is_a_json_rpc_error_that_closes_the_connection() {
    let d = TestDaemon::start("").await;
    let (url, token) = d.http.clone();
    let c = client();
    let big = format!(
        r#"{{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{{"pad":"{}"}}}}"#,
        "x".repeat(toolgate::mcp::http::MAX_BODY + 1)
    );
    let r = c
        .post(&url)
        .bearer_auth(&token)
        .header("Content-Type", "application/json")
        .body(big)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 413);
    // A client must not reuse a connection the server closes.
    assert_eq!(
        r.headers().get("connection").and_then(|v| v.to_str().ok()),
        Some("close")
    );
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["id"], Value::Null);
    let message = body["error"]["message"].as_str().unwrap();
    assert!(message.contains("2 MiB limit"), "{message}");
    assert!(message.contains("agent socket"), "{message}");
    // The same client goes on with its next request.
    let r = initialize(&c, &url, &token).await;
    assert_eq!(r.status().as_u16(), 200);
    d.stop().await;
}
