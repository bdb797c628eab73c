//! Tool search and deferral through the real agent socket: what a
//! deferring client is listed, the bridge tools, and `tool_call` governed
//! exactly like a direct call.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::{Value, json};
use toolgate::CallError;
use toolgate::events::Event;
use toolgate::search::DeferMode;
use toolgate::tool::{Source, ToolDef, ToolName, ToolResult, Trust};

use crate::common::daemon::{Raw, TestDaemon};
use crate::common::{obj, register_def};

/// An upstream-like tool of `server` that answers with its own name.
fn upstream(d: &TestDaemon, server: &str, tool: &str, description: &str) {
    let name = format!("{server}__{tool}");
    let def = ToolDef::new(
        ToolName::new(&name).unwrap(),
        description,
        obj(json!({"type": "object", "properties": {"title": {"type": "string"}}})),
    )
    .with_source(Source::Mcp(server.into()))
    .with_trust(Trust::External);
    register_def(&d.engine, def, move |_| {
        let name = name.clone();
        async move { Ok(ToolResult::text(format!("ran {name}"))) }
    });
}

fn catalog(d: &TestDaemon) {
    upstream(
        d,
        "github",
        "create_issue",
        "Create a new issue in a GitHub repository.",
    );
    upstream(
        d,
        "github",
        "list_pull_requests",
        "List pull requests in a repository.",
    );
    upstream(
        d,
        "slack",
        "post_message",
        "Post a message to a Slack channel.",
    );
    upstream(
        d,
        "secret",
        "create_issue",
        "Create an issue in the secret tracker.",
    );
}

async fn client(d: &TestDaemon, name: &str) -> Raw {
    let mut c = Raw::connect(&d.socket).await;
    let r = c
        .request(0, "initialize", json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": name, "version": "1"}}))
        .await;
    assert!(r["result"].is_object(), "{r}");
    c.send_json(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        .await;
    c
}

async fn listed(c: &mut Raw) -> Vec<String> {
    let r = c.request(1, "tools/list", json!({})).await;
    r["result"]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect()
}

/// The JSON a bridge tool answered with.
fn answer(r: &Value) -> Value {
    assert_eq!(r["result"]["isError"], false, "{r}");
    r["result"]["structuredContent"].clone()
}

/// Runs `toolgate ARGS` against `d`'s running engine and returns what it
/// printed; fails the test, with its stderr, when it does not succeed.
async fn cli(d: &TestDaemon, args: &[&str]) -> String {
    let out = tokio::process::Command::new(crate::common::warden())
        .arg("--data-dir")
        .arg(d.data_dir())
        .args(args)
        .output()
        .await
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn error_text(r: &Value) -> String {
    assert_eq!(r["result"]["isError"], true, "{r}");
    r["result"]["content"][0]["text"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// Deferral on, `secret__*` hidden, external tools run without asking.
const ON_HIDING: &str =
    "denied_tools = [\"secret__*\"]\n[policy]\npreset = \"autonomous\"\n[search]\nmode = \"on\"\n";

const BUILTINS: [&str; 5] = ["fs_list", "fs_read", "fs_write", "http_fetch", "shell_exec"];

#[tokio::test]
async fn a_deferring_client_finds_describes_and_calls_through_the_bridge() {
    let d = TestDaemon::start(ON_HIDING).await;
    catalog(&d);
    let mut c = client(&d, "agent").await;
    let mut want: Vec<&str> = BUILTINS.to_vec();
    want.extend(["tool_search", "tool_describe", "tool_call"]);
    assert_eq!(listed(&mut c).await, want, "core tools and the bridge");

    let found = answer(
        &c.call(2, "tool_search", json!({"query": "open a bug report"}))
            .await,
    );
    assert_eq!(
        found["results"][0]["name"], "github__create_issue",
        "{found}"
    );
    assert_eq!(found["results"][0]["source"], "mcp:github");
    assert_eq!(found["results"][0]["risk"], "low");
    assert_eq!(found["searched"], 3, "the hidden tool is not searched");

    let described = answer(
        &c.call(3, "tool_describe", json!({"name": "github__create_issue"}))
            .await,
    );
    assert_eq!(
        described["inputSchema"]["properties"]["title"]["type"],
        "string"
    );
    assert_eq!(described["trust"], "external");

    let r = c
        .call(
            4,
            "tool_call",
            json!({"name": "github__create_issue", "arguments": {"title": "t"}}),
        )
        .await;
    let text = r["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("ran github__create_issue"), "{r}");
    assert!(
        text.contains("tool=\"github__create_issue\""),
        "wrapped as the real tool: {text}"
    );
    let call_id = r["result"]["_meta"]["toolgate/callId"]
        .as_u64()
        .expect("a governed call");
    let audit = d.engine.audit().unwrap();
    audit.flush().await;
    let row = audit
        .recent_calls(10)
        .await
        .unwrap()
        .into_iter()
        .find(|c| c.id == call_id as i64);
    let row = row.expect("an audit row for the call");
    assert_eq!(
        row.tool, "github__create_issue",
        "the audit names the real tool"
    );
    let caller: Value = serde_json::from_str(&row.caller).unwrap();
    assert_eq!(caller["through_tool_call"], true, "{caller}");
    d.stop().await;
}

#[tokio::test]
async fn hidden_tools_are_never_found_described_or_called_through_the_bridge() {
    let d = TestDaemon::start(ON_HIDING).await;
    catalog(&d);
    let mut c = client(&d, "agent").await;
    let found = answer(
        &c.call(
            2,
            "tool_search",
            json!({"query": "secret tracker issue", "limit": 20}),
        )
        .await,
    );
    let names: Vec<&str> = found["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    assert!(!names.contains(&"secret__create_issue"), "{names:?}");
    let substring = answer(&c.call(3, "tool_search", json!({"query": "ecret"})).await);
    assert_eq!(
        substring["results"],
        json!([]),
        "the name fallback hides it too"
    );

    let direct = error_text(&c.call(4, "secret__create_issue", json!({})).await);
    let described = error_text(
        &c.call(5, "tool_describe", json!({"name": "secret__create_issue"}))
            .await,
    );
    let called = error_text(
        &c.call(6, "tool_call", json!({"name": "secret__create_issue"}))
            .await,
    );
    assert_eq!(described, direct, "the same refusal as a direct call");
    assert_eq!(called, direct);
    assert!(direct.contains("not allowed"), "{direct}");

    // A misspelt name is offered close names only among visible tools.
    let typo = error_text(
        &c.call(7, "tool_describe", json!({"name": "secret__create_isue"}))
            .await,
    );
    assert!(!typo.contains("secret__create_issue"), "{typo}");
    let typo = error_text(&c.call(8, "secret__create_isue", json!({})).await);
    assert!(!typo.contains("secret__create_issue"), "{typo}");
    d.stop().await;
}

#[tokio::test]
async fn auto_defers_by_the_clients_window_and_core_tools_stay_listed() {
    let toml = "[search]\ncore = [\"slack__*\"]\n[search.clients.small]\ncontext_window = 1000\n";
    let d = TestDaemon::start(toml).await;
    catalog(&d);
    // 10% of 1,000 tokens is 100: three upstream schemas are more.
    let small = d.engine.plan(Some("small"));
    assert!(small.deferring, "{}", small.words());
    assert!(small.deferrable_tokens >= small.threshold);
    let big = d.engine.plan(Some("big"));
    assert!(!big.deferring, "{}", big.words());
    assert!(
        big.words()
            .starts_with("Listing all 9 tools: the 3 that could be deferred"),
        "{}",
        big.words()
    );

    let mut c = client(&d, "small").await;
    let names = listed(&mut c).await;
    assert!(
        names.contains(&"slack__post_message".to_owned()),
        "core by glob: {names:?}"
    );
    assert!(
        !names.contains(&"github__create_issue".to_owned()),
        "{names:?}"
    );
    assert!(names.contains(&"tool_search".to_owned()));
    let mut c = client(&d, "big").await;
    assert!(
        listed(&mut c)
            .await
            .contains(&"github__create_issue".to_owned())
    );
    d.stop().await;
}

#[tokio::test]
async fn no_visible_tool_is_ever_dropped() {
    let d = TestDaemon::start(ON_HIDING).await;
    catalog(&d);
    let plan = d.engine.plan(Some("agent"));
    let listed: BTreeSet<String> = plan
        .listed()
        .iter()
        .map(|t| t.name.as_str().to_owned())
        .filter(|n| !toolgate::search::bridge::is_bridge(n))
        .collect();
    let deferred: BTreeSet<String> = plan
        .deferrable
        .iter()
        .map(|t| t.name.as_str().to_owned())
        .collect();
    let visible: BTreeSet<String> = d
        .engine
        .tools()
        .iter()
        .map(|t| t.name.as_str().to_owned())
        .collect();
    assert!(listed.is_disjoint(&deferred));
    assert_eq!(
        &listed | &deferred,
        visible,
        "listed or deferred, nothing else"
    );
    d.stop().await;
}

#[tokio::test]
async fn switching_deferral_for_a_client_tells_it_to_list_again() {
    let d = TestDaemon::start("").await;
    catalog(&d);
    let mut c = client(&d, "agent").await;
    assert!(
        listed(&mut c)
            .await
            .contains(&"github__create_issue".to_owned())
    );
    assert!(d.engine.choose_deferral("agent", Some(DeferMode::On)));
    let note = c.recv().await.expect("a notification");
    assert_eq!(note["method"], "notifications/tools/list_changed");
    assert!(
        !listed(&mut c)
            .await
            .contains(&"github__create_issue".to_owned())
    );
    assert!(
        !d.engine.choose_deferral("agent", Some(DeferMode::On)),
        "no change, no news"
    );
    d.stop().await;
}

#[tokio::test]
async fn tool_call_asks_a_person_who_sees_the_real_tool_and_how_it_was_called() {
    let toml = "[search]\nmode = \"on\"\n[tools.github__create_issue]\npolicy = \"ask\"\n";
    let d = TestDaemon::start(toml).await;
    catalog(&d);
    let mut events = d.engine.subscribe();
    let mut c = client(&d, "agent").await;
    c.send_json(json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call",
        "params": {"name": "tool_call", "arguments": {"name": "github__create_issue", "arguments": {"title": "x"}}}}))
        .await;
    let (id, tool, caller) = tokio::time::timeout(Duration::from_secs(20), async {
        loop {
            if let Ok(Event::ApprovalRequested {
                id, tool, caller, ..
            }) = events.recv().await
            {
                return (id, tool, caller);
            }
        }
    })
    .await
    .expect("an approval request");
    assert_eq!(tool, "github__create_issue");
    assert!(
        caller.short().ends_with(", via tool_call"),
        "{}",
        caller.short()
    );
    d.engine
        .approvals()
        .unwrap()
        .approve(id, None)
        .await
        .unwrap();
    let r = c.recv().await.unwrap();
    let text = r["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("ran github__create_issue"), "{r}");
    d.stop().await;
}

#[tokio::test]
async fn tool_call_counts_against_the_real_tools_breaker_and_loop_guard() {
    let toml = "[policy]\npreset = \"autonomous\"\n[search]\nmode = \"on\"\n\
        [tools.flaky__fail.breaker]\nfailure_threshold = 2\ncooldown_s = 60\n";
    let d = TestDaemon::start(toml).await;
    let runs = Arc::new(AtomicUsize::new(0));
    let r2 = runs.clone();
    let def = ToolDef::new(
        ToolName::new("flaky__fail").unwrap(),
        "Always fails.",
        obj(json!({"type": "object"})),
    )
    .with_source(Source::Mcp("flaky".into()));
    register_def(&d.engine, def, move |_| {
        r2.fetch_add(1, Ordering::SeqCst);
        async { Err(CallError::tool_failed("upstream is down")) }
    });
    let mut c = client(&d, "agent").await;
    let kinds: Vec<Value> = {
        let mut out = Vec::new();
        for i in 0..3 {
            let r = c
                .call(
                    10 + i,
                    "tool_call",
                    json!({"name": "flaky__fail", "arguments": {"n": i}}),
                )
                .await;
            out.push(r["result"]["_meta"]["toolgate/error"]["kind"].clone());
        }
        out
    };
    assert_eq!(
        kinds,
        [
            json!("tool_failed"),
            json!("tool_failed"),
            json!("breaker_open")
        ]
    );
    assert_eq!(
        runs.load(Ordering::SeqCst),
        2,
        "the open breaker stopped the third"
    );
    // A direct call meets the same breaker: it is the tool's, not the bridge's.
    let direct = c.call(20, "flaky__fail", json!({})).await;
    assert_eq!(
        direct["result"]["_meta"]["toolgate/error"]["kind"],
        "breaker_open"
    );

    // The loop guard sees the same repeated call whichever way it comes.
    upstream(&d, "echo", "say", "Says a word.");
    let mut last = Value::Null;
    for i in 0..12 {
        let args = json!({"title": "same"});
        last = if i % 2 == 0 {
            c.call(
                30 + i,
                "tool_call",
                json!({"name": "echo__say", "arguments": args}),
            )
            .await
        } else {
            c.call(30 + i, "echo__say", args).await
        };
        if last["result"]["isError"] == true {
            break;
        }
    }
    assert_eq!(
        last["result"]["_meta"]["toolgate/error"]["kind"], "loop_detected",
        "{last}"
    );
    d.stop().await;
}

#[tokio::test]
async fn bridge_tool_names_are_reserved_and_bad_arguments_are_named() {
    let d = TestDaemon::start("[policy]\npreset = \"autonomous\"\n[search]\nmode = \"on\"\n").await;
    catalog(&d);
    let mut c = client(&d, "agent").await;
    let r = c
        .request(3, "toolgate/register", json!({"agentId": "a1", "tools": [{"name": "tool_call", "description": "mine", "inputSchema": {"type": "object"}}]}))
        .await;
    assert!(
        r["error"]["message"].as_str().unwrap().contains("reserved"),
        "{r}"
    );
    let e = error_text(&c.call(4, "tool_search", json!({"limit": 3})).await);
    assert!(e.contains("query"), "{e}");
    let e = error_text(
        &c.call(
            5,
            "tool_call",
            json!({"name": "tool_search", "arguments": {"query": "x"}}),
        )
        .await,
    );
    assert!(e.contains("bridge tool"), "{e}");
    let many = answer(
        &c.call(6, "tool_search", json!({"query": "issue", "limit": 500}))
            .await,
    );
    assert!(many["results"].as_array().unwrap().len() <= 20);
    d.stop().await;
}

/// The console's search ranks through the same index, marks the matched
/// words, and shows each client's plan; a person's switch changes what
/// the client is listed and says so in the tools slice.
#[tokio::test]
async fn the_console_ranks_marks_and_switches_deferral_per_client() {
    let d = TestDaemon::start(ON_HIDING).await;
    catalog(&d);
    let mut agent = client(&d, "claude-code").await;
    let c = crate::common::console_client();
    let cookie = crate::common::session_cookie(&d.console.login_url()).await;
    let origin = d.origin();
    let get = |path: &str| {
        c.get(format!("{origin}/api{path}"))
            .header("cookie", &cookie)
            .header("origin", &origin)
            .send()
    };
    let found: Value = get("/tools/search?q=open%20a%20bug%20report")
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(found[0]["tool"]["name"], "github__create_issue", "{found}");
    let hits: Vec<&str> = found[0]["summary"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["hit"] == true)
        .map(|m| m["text"].as_str().unwrap())
        .collect();
    assert_eq!(
        hits,
        ["Create", "new", "issue"],
        "synonyms of the query are marked"
    );
    // A tool found by its argument says so.
    let by_arg: Value = get("/tools/search?q=title")
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let github = by_arg
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["tool"]["name"] == "github__create_issue")
        .expect("found by its argument");
    assert_eq!(github["matched_in"], json!(["argument title"]), "{github}");
    // The person's view lists hidden tools too, so its search finds them.
    let hidden: Value = get("/tools/search?q=secret%20tracker")
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(hidden[0]["tool"]["state"], "denied", "{hidden}");
    let bad = get("/tools/search?limit=3").await.unwrap();
    assert_eq!(bad.status(), 400);

    let tools: Value = get("/state/tools").await.unwrap().json().await.unwrap();
    let me = &tools["clients"][0];
    assert_eq!(me["client"], "claude-code");
    assert_eq!(me["connected"], true);
    assert_eq!(me["deferring"], true, "{me}");
    assert_eq!(me["deferred"].as_array().unwrap().len(), 3);
    let row = tools["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "github__create_issue")
        .unwrap();
    assert_eq!(row["deferred_for"], json!(["claude-code"]));

    let put = c
        .put(format!("{origin}/api/clients/claude-code/deferral"))
        .header("cookie", &cookie)
        .header("origin", &origin)
        .json(&json!({"mode": "off"}))
        .send()
        .await
        .unwrap();
    let view: Value = put.json().await.unwrap();
    assert_eq!(view["chosen"], "off");
    assert_eq!(view["deferring"], false);
    assert!(
        view["words"]
            .as_str()
            .unwrap()
            .starts_with("Deferral is off"),
        "{view}"
    );
    let note = agent.recv().await.expect("a notification");
    assert_eq!(note["method"], "notifications/tools/list_changed");
    assert!(
        listed(&mut agent)
            .await
            .contains(&"github__create_issue".to_owned())
    );
    let bad = c
        .put(format!("{origin}/api/clients/claude-code/deferral"))
        .header("cookie", &cookie)
        .header("origin", &origin)
        .json(&json!({"mode": "sometimes"}))
        .send()
        .await
        .unwrap();
    assert_eq!(bad.status(), 422);
    d.stop().await;
}

/// `toolgate tools --search` and `--as`, through the running daemon.
#[tokio::test]
async fn the_cli_searches_and_shows_what_a_client_is_listed() {
    let d = TestDaemon::start(ON_HIDING).await;
    catalog(&d);
    let run = |args: &'static [&'static str]| cli(&d, args);
    let out = run(&["tools", "--search", "open a bug report"]).await;
    assert!(
        out.lines()
            .next()
            .unwrap()
            .starts_with("github__create_issue"),
        "{out}"
    );
    assert!(!out.contains("secret__"), "{out}");
    let out = run(&["tools", "--search", "open a bug report", "--json"]).await;
    let ranked: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(ranked[0]["name"], "github__create_issue", "{out}");
    let out = run(&["tools", "--as", "some-agent", "--json"]).await;
    let plan: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(plan["client"]["deferring"], true, "{out}");
    assert!(
        plan["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["name"] == "tool_search")
    );
    let out = run(&["tools", "--as", "some-agent"]).await;
    assert!(
        out.starts_with("Deferral is on: 3 tools are behind tool_search"),
        "{out}"
    );
    assert!(out.contains("tool_search"), "{out}");
    assert!(out.contains("Through tool_search (3, about"), "{out}");
    d.stop().await;
}

/// The official Python MCP SDK, through `toolgate mcp-bridge` with its
/// stripped environment, sees the bridge tools and completes search →
/// describe → call.
#[tokio::test]
async fn the_python_sdk_finds_describes_and_calls_a_deferred_tool() {
    let d = TestDaemon::start(ON_HIDING).await;
    catalog(&d);
    let seen = crate::common::python::run_client(
        "search_client.py",
        &[
            env!("CARGO_BIN_EXE_toolgate").as_ref(),
            d.socket.as_os_str(),
            "open a bug report".as_ref(),
        ],
    )
    .await;
    let listed: Vec<&str> = seen["listed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert!(
        listed.contains(&"tool_search") && listed.contains(&"tool_call"),
        "{listed:?}"
    );
    assert!(!listed.contains(&"github__create_issue"), "{listed:?}");
    assert_eq!(seen["found"][0], "github__create_issue", "{seen}");
    assert_eq!(seen["described"], "github__create_issue");
    assert_eq!(seen["called_is_error"], false, "{seen}");
    assert!(
        seen["called_text"]
            .as_str()
            .unwrap()
            .contains("ran github__create_issue"),
        "{seen}"
    );
    assert!(
        seen["call_id"].as_u64().is_some(),
        "a governed call: {seen}"
    );
    d.stop().await;
}

/// A person pins a deferred tool as core from the console: a deferring
/// agent hears `list_changed` and is listed it directly; unpinned, it goes
/// back behind the bridge. The pin outlives an engine restart on the same
/// data dir, and the CLI takes it back through the running engine.
#[tokio::test]
async fn a_tool_pinned_as_core_is_listed_to_a_deferring_agent_and_survives_a_restart() {
    const TOOL: &str = "github__create_issue";
    let d = TestDaemon::start(ON_HIDING).await;
    catalog(&d);
    let mut agent = client(&d, "claude-code").await;
    let before = listed(&mut agent).await;
    assert!(!before.iter().any(|n| n == TOOL), "{before:?}");
    assert!(before.iter().any(|n| n == "tool_search"));

    let c = crate::common::console_client();
    let cookie = crate::common::session_cookie(&d.console.login_url()).await;
    let origin = d.origin();
    let put = |tool: &str, body: Value| {
        c.put(format!("{origin}/api/tools/{tool}/core"))
            .header("cookie", &cookie)
            .header("origin", &origin)
            .json(&body)
            .send()
    };
    let r = put(TOOL, json!({"pinned": true})).await.unwrap();
    assert_eq!(r.status(), 200);
    let pinned: Value = r.json().await.unwrap();
    assert_eq!(pinned["changed"], true, "{pinned}");
    assert_eq!(pinned["summary"]["core"]["reason"]["kind"], "pinned");
    assert_eq!(pinned["summary"]["core"]["pinned"], true);
    assert_eq!(pinned["summary"]["deferred_for"], json!([]));
    let plan = &pinned["clients"][0];
    assert_eq!(plan["client"], "claude-code");
    assert!(
        plan["listed"].as_array().unwrap().contains(&json!(TOOL)),
        "{plan}"
    );
    let note = agent.recv().await.expect("a notification");
    assert_eq!(note["method"], "notifications/tools/list_changed");
    let now = listed(&mut agent).await;
    assert!(now.iter().any(|n| n == TOOL), "listed directly: {now:?}");
    assert!(
        now.iter().any(|n| n == "tool_search"),
        "the rest stay deferred"
    );
    let found = answer(
        &agent
            .call(2, "tool_search", json!({"query": "issue"}))
            .await,
    );
    assert_eq!(
        found["searched"], 2,
        "a core tool is not among the deferred"
    );

    // Refused with the field named; nothing changes.
    let bad = put("bad%20name", json!({"pinned": true})).await.unwrap();
    assert_eq!(bad.status(), 422);
    let body: Value = bad.json().await.unwrap();
    assert_eq!(body["error"]["field"], "name", "{body}");
    let long = put(&"x".repeat(65), json!({"pinned": true})).await.unwrap();
    assert_eq!(long.status(), 422);
    let no_field = put(TOOL, json!({})).await.unwrap();
    assert_eq!(no_field.status(), 422);
    let cross = c
        .put(format!("{origin}/api/tools/{TOOL}/core"))
        .header("cookie", &cookie)
        .json(&json!({"pinned": false}))
        .send()
        .await
        .unwrap();
    assert_eq!(cross.status(), 403, "a change needs this console's Origin");

    // Unpinned: back behind the bridge, and told so.
    let r = put(TOOL, json!({"pinned": false})).await.unwrap();
    let off: Value = r.json().await.unwrap();
    assert_eq!(off["summary"]["core"], Value::Null, "{off}");
    assert_eq!(off["summary"]["deferred_for"], json!(["claude-code"]));
    let note = agent.recv().await.expect("a notification");
    assert_eq!(note["method"], "notifications/tools/list_changed");
    assert!(!listed(&mut agent).await.iter().any(|n| n == TOOL));

    // Pinned again, then the engine restarts on the same data dir.
    assert_eq!(
        put(TOOL, json!({"pinned": true})).await.unwrap().status(),
        200
    );
    drop(agent);
    let dir = d.stop().await;
    let pins = std::fs::read_to_string(dir.path().join("data/core-pins.json")).unwrap();
    assert!(pins.contains(TOOL), "{pins}");
    let d = TestDaemon::start_again(dir, ON_HIDING).await;
    catalog(&d);
    let mut agent = client(&d, "claude-code").await;
    let again = listed(&mut agent).await;
    assert!(
        again.iter().any(|n| n == TOOL),
        "the pin came back: {again:?}"
    );

    // The CLI takes it back through the running engine.
    let stdout = cli(&d, &["tools", "--unpin-core", TOOL]).await;
    assert!(
        stdout.starts_with("github__create_issue is no longer pinned as core."),
        "{stdout}"
    );
    let note = agent.recv().await.expect("a notification");
    assert_eq!(note["method"], "notifications/tools/list_changed");
    assert!(!listed(&mut agent).await.iter().any(|n| n == TOOL));
    d.stop().await;
}
