//! A circuit breaker counts only what says its tool is unhealthy: errors of
//! the caller's making and `isError` answers never open it. Real daemon,
//! real agent and control sockets, raw JSON-RPC clients, and the Python MCP
//! SDK fixture server as a child process. Before the fix, five reads of
//! missing files opened `fs_read`'s breaker for every agent, and five
//! `isError` answers of an upstream tool did the same for that tool.

use std::time::Duration;

use serde_json::{Value, json};

use crate::common::daemon::{Raw, TestDaemon};
use crate::common::python::python_str;
use crate::upstream_support::{py_server, wait_for};

/// The error class toolgate put on a `tools/call` reply.
fn kind(reply: &Value) -> &str {
    reply["result"]["_meta"]["toolgate/error"]["kind"]
        .as_str()
        .unwrap_or("")
}

/// One tool's breaker as `toolgate breakers` sees it (state, failures).
async fn breaker(d: &TestDaemon, tool: &str) -> (String, u64) {
    let mut ctl = d.control().await;
    let r = ctl.request(1, "toolgate/breakers", json!({})).await;
    let all = r["result"]["breakers"].as_array().expect("breakers listed");
    let b = all
        .iter()
        .find(|b| b["tool"] == tool)
        .unwrap_or_else(|| panic!("no breaker for `{tool}` in {r}"));
    (
        b["state"].as_str().unwrap_or("?").to_owned(),
        b["failures"].as_u64().unwrap_or(u64::MAX),
    )
}

async fn agent(d: &TestDaemon) -> Raw {
    let mut c = d.raw().await;
    c.initialize().await;
    c
}

/// The Python fixture as `[[servers]]` entry `name`, with a short timeout,
/// no retries and a breaker that opens after two counted failures.
fn py_server_toml(name: &str, extra: &str) -> String {
    format!(
        "[[servers]]\nname = \"{name}\"\ntransport = \"stdio\"\ncommand = {:?}\nargs = [{:?}]\n\
         timeout_ms = 500\nmax_retries = 0\nbreaker_failure_threshold = 2\n{extra}\n",
        python_str(),
        py_server()
    )
}

async fn upstream_ready(d: &TestDaemon, tool: &str) {
    let engine = d.engine.clone();
    wait_for(Duration::from_secs(30), tool, || {
        engine.tools().iter().any(|t| t.name.as_str() == tool)
    })
    .await
    .expect("the fixture server's tools are listed");
}

#[tokio::test]
async fn reads_of_missing_files_never_open_the_breaker() {
    let d = TestDaemon::start("").await;
    let mut c = agent(&d).await;
    for i in 1..=6u64 {
        let r = c
            .call(i, "fs_read", json!({"path": format!("missing-{i}.txt")}))
            .await;
        assert_eq!(kind(&r), "tool_failed", "call {i} reached the tool: {r}");
        let text = r["result"]["content"][0]["text"].as_str().unwrap_or("");
        assert!(text.contains("does not exist"), "{text}");
    }
    assert_eq!(breaker(&d, "fs_read").await, ("closed".to_owned(), 0));
    // And the tool still works for everyone.
    std::fs::write(d.root().join("here.txt"), "present").unwrap();
    let r = c.call(7, "fs_read", json!({"path": "here.txt"})).await;
    assert_eq!(r["result"]["isError"], false, "{r}");
    d.stop().await;
}

#[tokio::test]
async fn upstream_is_error_answers_never_open_the_breaker_but_timeouts_do() {
    let toml = format!(
        "[policy]\npreset = \"autonomous\"\n\n{}",
        py_server_toml("py", "")
    );
    let d = TestDaemon::start(&toml).await;
    upstream_ready(&d, "py__fail").await;
    let mut c = agent(&d).await;
    for i in 1..=6u64 {
        let r = c
            .call(
                i,
                "py__fail",
                json!({"message": format!("no such thing {i}")}),
            )
            .await;
        assert_eq!(r["result"]["isError"], true, "{r}");
        assert_eq!(kind(&r), "", "an isError answer, not a refusal: {r}");
    }
    assert_eq!(breaker(&d, "py__fail").await, ("closed".to_owned(), 0));

    // A tool that times out is unhealthy: two timeouts open its breaker.
    for i in 10..12u64 {
        let r = c.call(i, "py__hang", json!({})).await;
        assert_eq!(kind(&r), "timeout", "{r}");
    }
    let r = c.call(12, "py__hang", json!({})).await;
    assert_eq!(kind(&r), "breaker_open", "{r}");
    assert_eq!(breaker(&d, "py__hang").await.0, "open");
    d.stop().await;
}

#[tokio::test]
async fn a_server_configured_to_count_is_error_opens_its_breaker() {
    let toml = format!(
        "[policy]\npreset = \"autonomous\"\n\n{}",
        py_server_toml("pyc", "breaker_counts_is_error = true")
    );
    let d = TestDaemon::start(&toml).await;
    upstream_ready(&d, "pyc__fail").await;
    let mut c = agent(&d).await;
    for i in 1..=2u64 {
        let r = c.call(i, "pyc__fail", json!({"message": "down"})).await;
        assert_eq!(r["result"]["isError"], true, "{r}");
    }
    let r = c.call(3, "pyc__fail", json!({"message": "down"})).await;
    assert_eq!(kind(&r), "breaker_open", "{r}");
    d.stop().await;
}
