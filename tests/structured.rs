//! Structured tool output (MCP `structuredContent`) from real upstream
//! servers whose tools declare an output schema, through toolgate's
//! socket, HTTP endpoint and `toolgate mcp-bridge`, with the official
//! Python SDK as the client that checks the schema's promise.

use std::time::Duration;

use serde_json::{Value, json};

use crate::common::daemon::{Raw, TestDaemon};
use crate::common::python::{python_str, run_client};
use crate::upstream_support::{everything_js, wait_for};

const TOOLGATE: &str = env!("CARGO_BIN_EXE_toolgate");
const UP: Duration = Duration::from_secs(60);

/// A `[[servers]]` entry for a stdio server; `trust` is left at its
/// default (external) when `None`.
fn server(name: &str, command: &str, args: &[&str], trust: Option<&str>) -> String {
    let trust = trust.map_or(String::new(), |t| format!("trust = {t:?}\n"));
    format!(
        "[[servers]]\nname = {name:?}\ntransport = \"stdio\"\ncommand = {command:?}\nargs = {args:?}\n{trust}\n"
    )
}

/// Waits until the engine lists `tool`.
async fn listed(d: &TestDaemon, tool: &str) {
    wait_for(UP, tool, || {
        d.engine.tools().iter().any(|t| t.name.as_str() == tool)
    })
    .await
    .unwrap();
}

/// server-everything's weather for New York, as its tool returns it.
fn new_york() -> Value {
    json!({"temperature": 33, "conditions": "Cloudy", "humidity": 82})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_everything_structured_content_arrives_over_the_socket_and_http() {
    let toml = server(
        "everything",
        "node",
        &[&everything_js(), "stdio"],
        Some("trusted"),
    );
    let d = TestDaemon::start(&format!("[policy]\npreset = \"autonomous\"\n\n{toml}")).await;
    let tool = "everything__get-structured-content";
    listed(&d, tool).await;
    let args = json!({"location": "New York"});

    let mut agent = Raw::connect(&d.socket).await;
    agent.initialize().await;
    let tools = agent.request(1, "tools/list", json!({})).await;
    let def = tools["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == tool)
        .expect("listed")
        .clone();
    assert_eq!(
        def["outputSchema"]["required"],
        json!(["temperature", "conditions", "humidity"]),
        "{def}"
    );
    let r = agent.call(2, tool, args.clone()).await;
    assert_eq!(r["result"]["isError"], false, "{r}");
    assert_eq!(r["result"]["structuredContent"], new_york(), "{r}");
    let text = r["result"]["content"][0]["text"].as_str().unwrap();
    assert_eq!(serde_json::from_str::<Value>(text).unwrap(), new_york());

    let (url, token) = d.http.clone();
    let c = reqwest::Client::builder().no_proxy().build().unwrap();
    let init = c
        .post(&url)
        .bearer_auth(&token)
        .json(
            &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "http-test", "version": "1"}}}),
        )
        .send()
        .await
        .unwrap();
    let sid = init.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_owned();
    let r: Value = c
        .post(&url)
        .bearer_auth(&token)
        .header("mcp-session-id", &sid)
        .json(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                      "params": {"name": tool, "arguments": args}}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(r["result"]["structuredContent"], new_york(), "{r}");
    d.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_sdk_accepts_every_result_of_a_tool_with_an_output_schema() {
    let fixture = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/structured_server.py"
    );
    let python = python_str();
    let toml = format!(
        "[policy]\npreset = \"autonomous\"\n\n[tools.st__listing]\nmax_output_bytes = 1024\n\n{}{}",
        server("st", &python, &[fixture], Some("trusted")),
        server("wrapped", &python, &[fixture], None),
    );
    let d = TestDaemon::start(&toml).await;
    listed(&d, "st__listing").await;
    listed(&d, "wrapped__listing").await;
    let seen = run_client(
        "structured_client.py",
        &[
            TOOLGATE.as_ref(),
            d.socket.as_os_str(),
            "st__listing:3".as_ref(),
            "st__listing:200".as_ref(),
            "wrapped__listing:3".as_ref(),
        ],
    )
    .await;
    let schemas = &seen["schemas"];
    assert_eq!(
        schemas["st__listing"]["required"],
        json!(["lines"]),
        "{seen}"
    );
    assert_eq!(
        schemas["wrapped__listing"],
        Value::Null,
        "a wrapped tool promises no structured content: {seen}"
    );
    let [small, cut, wrapped] = seen["calls"].as_array().unwrap().as_slice() else {
        panic!("three calls: {seen}")
    };
    for call in [small, cut, wrapped] {
        assert!(call.get("raised").is_none(), "call_tool raised: {seen}");
    }
    assert_eq!(small["is_error"], false);
    assert_eq!(
        small["structured"],
        json!({"lines": ["line 0", "line 1", "line 2"]})
    );

    // 200 lines are past the 1,024-byte limit: the text is cut, the
    // structured content is left out, and the result is an error the SDK
    // accepts, saying why.
    assert_eq!(cut["is_error"], true, "{cut}");
    assert_eq!(cut["structured"], Value::Null);
    let text = cut["text"].as_str().unwrap();
    assert!(text.contains("toolgate truncated"), "{text}");
    assert!(
        text.contains("structured result") && text.contains("1,024-byte output limit"),
        "{text}"
    );
    assert!(text.len() < 2_048, "{} bytes", text.len());

    assert_eq!(wrapped["is_error"], false);
    assert_eq!(wrapped["structured"], Value::Null);
    let text = wrapped["text"].as_str().unwrap();
    assert!(
        text.starts_with("<untrusted-output") && text.contains("\"line 2\""),
        "{text}"
    );
    d.stop().await;
}
