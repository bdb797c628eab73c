//! The console transport over a real TCP listener, and its answers to bad
//! input (a clear error, nothing changed): login links and cookies, the
//! console role apart from the agents', Host/Origin checks, security
//! headers, the UI, JSON errors, decisions and policy edits through `/api`,
//! and the SSE framing.

use std::time::Duration;

use reqwest::StatusCode;
use reqwest::header::{HeaderMap, HeaderValue};
use serde_json::{Value, json};

use crate::common::console_client as client;
use crate::common::daemon::TestDaemon;

const WAIT: Duration = Duration::from_secs(20);

/// Logs in with a fresh link; returns the `Cookie` header value.
async fn login(d: &TestDaemon) -> String {
    crate::common::session_cookie(&d.console.login_url()).await
}

fn cookie_headers(cookie: &str, origin: &str) -> HeaderMap {
    let mut h = HeaderMap::new();
    h.insert("cookie", HeaderValue::from_str(cookie).unwrap());
    h.insert("origin", HeaderValue::from_str(origin).unwrap());
    h
}

/// GETs `url` with the session headers `h`; the JSON answer.
async fn get_json(c: &reqwest::Client, url: String, h: &HeaderMap) -> Value {
    c.get(url)
        .headers(h.clone())
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

async fn error_of(r: reqwest::Response) -> (StatusCode, Value) {
    let status = r.status();
    let body: Value = r.json().await.expect("a JSON error body");
    (status, body["error"].clone())
}

#[tokio::test]
async fn a_login_link_sets_a_strict_session_cookie_once() {
    let d = TestDaemon::start("").await;
    let c = client();
    let url = d.console.login_url();
    assert!(
        url.starts_with(&format!("{}/login?t=", d.origin())),
        "{url}"
    );

    let r = c.get(&url).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    assert_eq!(r.headers()["location"], "/");
    let set = r.headers()["set-cookie"].to_str().unwrap().to_owned();
    let attrs: Vec<&str> = set.split("; ").collect();
    let (name, value) = attrs[0].split_once('=').unwrap();
    assert_eq!(name, "tg_console");
    assert_eq!(value.len(), 64, "a 256-bit session id");
    assert!(value.chars().all(|c| c.is_ascii_hexdigit()));
    for a in ["HttpOnly", "SameSite=Strict", "Path=/"] {
        assert!(attrs.contains(&a), "{set}");
    }
    let cookie = attrs[0].to_owned();
    let ok = c
        .get(format!("{}/api/policy", d.origin()))
        .header("cookie", &cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(ok.status(), StatusCode::OK);

    // The same link again, no token, a made-up one: the page with the fix.
    for again in [
        url.clone(),
        format!("{}/login", d.origin()),
        format!("{}/login?t=abc", d.origin()),
    ] {
        let r = c.get(&again).send().await.unwrap();
        assert_eq!(r.status(), StatusCode::UNAUTHORIZED, "{again}");
        assert!(r.headers().get("set-cookie").is_none());
        let page = r.text().await.unwrap();
        assert!(page.contains("already used or expired"), "{page}");
        assert!(page.contains("Run <code>toolgate console</code>"), "{page}");
    }
    d.stop().await;
}

#[tokio::test]
async fn the_console_and_the_agents_never_take_each_others_credentials() {
    let d = TestDaemon::start("").await;
    let c = client();
    let api = format!("{}/api/policy", d.origin());
    let (mcp, agent_token) = d.http.clone();
    let cookie = login(&d).await;

    // No credentials, a wrong cookie, a wrong bearer: 401.
    let (s, e) = error_of(c.get(&api).send().await.unwrap()).await;
    assert_eq!(
        (s, e["code"].as_str()),
        (StatusCode::UNAUTHORIZED, Some("unauthorized"))
    );
    assert!(
        e["message"].as_str().unwrap().contains("toolgate console"),
        "{e}"
    );
    let r = c
        .get(&api)
        .header("cookie", "tg_console=00ff")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    let r = c.get(&api).bearer_auth("wrong").send().await.unwrap();
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);

    // The agents' token on the console: 403, saying which token to use.
    let (s, e) = error_of(c.get(&api).bearer_auth(&agent_token).send().await.unwrap()).await;
    assert_eq!(
        (s, e["code"].as_str()),
        (StatusCode::FORBIDDEN, Some("forbidden"))
    );
    assert!(
        e["message"].as_str().unwrap().contains("console.token"),
        "{e}"
    );

    // The console bearer token, read from its 0600 file, works.
    let file = d.dir.path().join("data/console.token");
    let bearer = std::fs::read_to_string(&file).unwrap();
    let mode =
        std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(&file).unwrap().permissions());
    assert_eq!(mode & 0o777, 0o600);
    assert_eq!(bearer, d.console.bearer());
    let r = c.get(&api).bearer_auth(&bearer).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::OK);

    // The console's cookie and bearer on /mcp: 401.
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    let r = c
        .post(&mcp)
        .header("cookie", &cookie)
        .json(&init)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    let r = c
        .post(&mcp)
        .bearer_auth(&bearer)
        .json(&init)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    let r = c
        .post(&mcp)
        .bearer_auth(&agent_token)
        .json(&init)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK, "/mcp keeps its own token");

    // The agent socket has no console method; the control socket has.
    let mut agent = d.raw().await;
    agent.initialize().await;
    let r = agent.request(2, "toolgate/console/login", json!({})).await;
    assert_eq!(r["error"]["code"], -32601, "{r}");
    let mut ctl = d.control().await;
    let r = ctl.request(1, "toolgate/console/login", json!({})).await;
    let url = r["result"]["url"].as_str().expect("a login URL").to_owned();
    assert_eq!(
        c.get(&url).send().await.unwrap().status(),
        StatusCode::SEE_OTHER
    );
    d.stop().await;
}

#[tokio::test]
async fn a_foreign_host_or_origin_is_refused() {
    let d = TestDaemon::start("").await;
    let c = client();
    let origin = d.origin();
    let port = origin.rsplit(':').next().unwrap().to_owned();
    let bearer = d.console.bearer().to_owned();
    let api = format!("{origin}/api/policy/validate");

    for path in ["/api/policy", "/", "/login?t=x"] {
        let r = c
            .get(format!("{origin}{path}"))
            .bearer_auth(&bearer)
            .header("host", format!("evil.example:{port}"))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::FORBIDDEN, "{path}");
    }
    // A state-changing request needs our Origin: none, or a foreign one, is 403.
    let r = c
        .post(&api)
        .bearer_auth(&bearer)
        .body("{}")
        .send()
        .await
        .unwrap();
    let (s, e) = error_of(r).await;
    assert_eq!(s, StatusCode::FORBIDDEN);
    assert!(e["message"].as_str().unwrap().contains("Origin"), "{e}");
    for foreign in [
        "http://evil.example",
        "null",
        &format!("http://127.0.0.1:{port}.evil"),
    ] {
        let r = c
            .post(&api)
            .bearer_auth(&bearer)
            .header("origin", foreign)
            .body("{}")
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::FORBIDDEN, "{foreign}");
    }
    // A foreign Origin on a GET too.
    let r = c
        .get(format!("{origin}/api/policy"))
        .bearer_auth(&bearer)
        .header("origin", "http://evil.example")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::FORBIDDEN);
    for ours in [origin.clone(), format!("http://localhost:{port}")] {
        let r = c
            .post(&api)
            .bearer_auth(&bearer)
            .header("origin", &ours)
            .body("{}")
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::OK, "{ours}");
    }
    d.stop().await;
}

#[tokio::test]
async fn every_console_answer_has_the_security_headers_and_the_ui_no_inline_code() {
    let d = TestDaemon::start("").await;
    let c = client();
    let origin = d.origin();
    let cookie = login(&d).await;
    for (path, status) in [
        ("/", StatusCode::OK),
        ("/approvals/12", StatusCode::OK),
        ("/api/policy", StatusCode::OK),
        ("/api/no-such-route", StatusCode::NOT_FOUND),
        ("/login?t=used", StatusCode::UNAUTHORIZED),
    ] {
        let r = c
            .get(format!("{origin}{path}"))
            .header("cookie", &cookie)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), status, "{path}");
        let h = r.headers();
        assert_eq!(
            h["content-security-policy"],
            toolgate::console::CSP,
            "{path}"
        );
        assert_eq!(h["x-content-type-options"], "nosniff", "{path}");
        assert_eq!(h["referrer-policy"], "no-referrer", "{path}");
        if path.starts_with("/api") {
            assert_eq!(h["cache-control"], "no-store", "{path}");
        }
    }
    assert!(toolgate::console::CSP.contains("script-src 'self'"));
    assert!(!toolgate::console::CSP.contains("unsafe-inline"));

    // The UI (the placeholder page when ui/dist was not built, the
    // bundle when it was) has no inline script or style; unknown paths
    // get the same index.
    let index = c.get(format!("{origin}/")).send().await.unwrap();
    assert!(
        index.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/html")
    );
    let html = index.text().await.unwrap();
    for (i, tag) in html.match_indices("<script").map(|(i, _)| (i, &html[i..])) {
        let open = &tag[..tag.find('>').unwrap()];
        assert!(open.contains("src="), "inline script at {i}: {open}");
    }
    assert!(!html.contains("<style"), "inline style element");
    assert!(!html.contains(" style="), "inline style attribute");
    let spa = c
        .get(format!("{origin}/tools/fs_read"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert_eq!(spa, html);
    d.stop().await;
}

#[tokio::test]
async fn malformed_requests_and_unknown_ids_get_clear_errors() {
    let d = TestDaemon::start("").await;
    let c = client();
    let origin = d.origin();
    let h = cookie_headers(&login(&d).await, &origin);

    let r = c
        .put(format!("{origin}/api/policy"))
        .headers(h.clone())
        .json(&json!({"base_version": 1}))
        .send()
        .await
        .unwrap();
    let (s, e) = error_of(r).await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .contains("missing field `doc`"),
        "{e}"
    );
    assert_eq!(e.get("field"), None, "{e}");

    let r = c
        .put(format!("{origin}/api/policy"))
        .headers(h.clone())
        .body("{oops")
        .send()
        .await
        .unwrap();
    let (s, e) = error_of(r).await;
    assert_eq!(
        (s, e["code"].as_str()),
        (StatusCode::BAD_REQUEST, Some("bad_request"))
    );
    assert!(
        e["message"].as_str().unwrap().contains("not valid JSON"),
        "{e}"
    );

    let r = c
        .put(format!("{origin}/api/policy"))
        .headers(h.clone())
        .json(&json!({"doc": {"preset": "yolo"}, "base_version": 1}))
        .send()
        .await
        .unwrap();
    let (s, e) = error_of(r).await;
    assert_eq!(
        (s, e["code"].as_str()),
        (StatusCode::UNPROCESSABLE_ENTITY, Some("invalid"))
    );
    assert_eq!(e["field"], "doc.preset", "{e}");
    assert!(e["message"].as_str().unwrap().contains("read_only"), "{e}");

    // Unknown ids, numeric or not, are 404 with a message.
    for path in ["/api/approvals/999/approve", "/api/approvals/abc/deny"] {
        let r = c
            .post(format!("{origin}{path}"))
            .headers(h.clone())
            .send()
            .await
            .unwrap();
        let (s, e) = error_of(r).await;
        assert_eq!(
            (s, e["code"].as_str()),
            (StatusCode::NOT_FOUND, Some("not_found")),
            "{path}"
        );
    }
    let r = c
        .delete(format!("{origin}/api/rules/77"))
        .headers(h.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::NOT_FOUND);
    let r = c
        .post(format!("{origin}/api/breakers/no_such_tool/reset"))
        .headers(h.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::NOT_FOUND);
    let r = c
        .get(format!("{origin}/api/tools/no_such_tool"))
        .headers(h.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::NOT_FOUND);
    let r = c
        .get(format!("{origin}/api/tools/fs_read"))
        .headers(h.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    // A body field that does not exist is named.
    let r = c
        .post(format!("{origin}/api/approvals/1/deny"))
        .headers(h.clone())
        .json(&json!({"reasn": "typo"}))
        .send()
        .await
        .unwrap();
    let (s, e) = error_of(r).await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(e["message"].as_str().unwrap().contains("reasn"), "{e}");
    // A bad sequence number for the stream.
    let r = c
        .get(format!("{origin}/api/events?after=x"))
        .headers(h.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::BAD_REQUEST);
    d.stop().await;
}

/// The Connect routes read the body before anything runs: an unknown
/// client, an unknown field or a missing plan is `422` naming the field;
/// the list names every client the engine knows. (Nothing here writes:
/// the plan and apply paths are tested with a temporary HOME in
/// `console::connect` and in the browser test.)
#[tokio::test]
async fn connect_routes_refuse_bad_bodies_and_list_every_client() {
    let d = TestDaemon::start("").await;
    let c = client();
    let origin = d.origin();
    let h = cookie_headers(&login(&d).await, &origin);
    let post = |path: &str, body: Value| {
        c.post(format!("{origin}/api/connect/{path}"))
            .headers(h.clone())
            .json(&body)
            .send()
    };

    let (s, e) = error_of(
        post("plan", json!({"client": "emacs", "action": "connect"}))
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(e["field"], "client", "{e}");
    let (s, e) = error_of(
        post(
            "plan",
            json!({"client": "cursor", "action": "connect", "dry_run": true}),
        )
        .await
        .unwrap(),
    )
    .await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(e["message"].as_str().unwrap().contains("dry_run"), "{e}");
    let (s, e) = error_of(post("apply", json!({})).await.unwrap()).await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .contains("missing field `plan`"),
        "{e}"
    );

    let all = get_json(&c, format!("{origin}/api/connect/clients"), &h).await;
    assert!(all["home"].is_string(), "{all}");
    let ids: Vec<&str> = all["clients"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids,
        [
            "claude-desktop",
            "claude-code",
            "cursor",
            "vscode",
            "windsurf",
            "gemini-cli",
            "codex",
            "zed"
        ]
    );
}

#[tokio::test]
async fn a_console_decision_reaches_the_agent_and_a_second_one_is_stale() {
    let d = TestDaemon::start("").await;
    let c = client();
    let origin = d.origin();
    let h = cookie_headers(&login(&d).await, &origin);
    let (id, call) = crate::approval::ask(&d, "echo from-console").await;

    let r = c
        .get(format!("{origin}/api/approvals/{id}"))
        .headers(h.clone())
        .send()
        .await
        .unwrap();
    let detail: Value = r.json().await.unwrap();
    assert_eq!(detail["request"]["tool"], "shell_exec", "{detail}");

    let r = c
        .post(format!("{origin}/api/approvals/{id}/deny"))
        .headers(h.clone())
        .json(&json!({"reason": "not today"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    let result = tokio::time::timeout(WAIT, call).await.unwrap().unwrap();
    let text = crate::approval::text_of(&result);
    assert!(text.contains("not today"), "{text}");

    let stored = d.engine.approvals().unwrap().get(id).await.unwrap();
    let decided_by = serde_json::to_value(&stored).unwrap()["decided_by"].clone();
    assert!(
        decided_by
            .as_str()
            .unwrap_or_default()
            .starts_with("console session "),
        "{decided_by}"
    );

    // Deciding again: 409, and the request stays denied.
    for action in ["approve", "deny"] {
        let r = c
            .post(format!("{origin}/api/approvals/{id}/{action}"))
            .headers(h.clone())
            .send()
            .await
            .unwrap();
        let (s, e) = error_of(r).await;
        assert_eq!(
            (s, e["code"].as_str()),
            (StatusCode::CONFLICT, Some("stale")),
            "{e}"
        );
        assert!(
            e["message"]
                .as_str()
                .unwrap()
                .contains("nothing was changed"),
            "{e}"
        );
    }
    let after = serde_json::to_value(d.engine.approvals().unwrap().get(id).await.unwrap()).unwrap();
    assert_eq!(after["status"], "denied", "{after}");
    d.stop().await;
}

#[tokio::test]
async fn a_policy_edit_over_http_applies_without_a_restart_and_a_bad_one_changes_nothing() {
    let d = TestDaemon::start_watched("# mine\n[policy]\npreset = \"default\"\n").await;
    let c = client();
    let origin = d.origin();
    let h = cookie_headers(&login(&d).await, &origin);
    let mut agent = d.raw().await;
    agent.initialize().await;

    let view = get_json(&c, format!("{origin}/api/policy"), &h).await;
    let version = view["version"].as_u64().unwrap();
    assert_eq!(view["doc"]["version"], version);
    let effective = view["effective"].as_str().unwrap();
    assert!(
        effective.starts_with("preset default: asks at high"),
        "{effective}"
    );
    assert!(
        effective.contains("built-in rule default:shell-rm-recursive"),
        "{effective}"
    );
    assert_eq!(view["path"], d.config_path().display().to_string());
    assert!(!view["restart_needed"].as_array().unwrap().is_empty());
    let mut doc = view["doc"].clone();
    doc["denied_tools"] = json!(["shell_exec"]);

    // Validate: the diff, nothing changed.
    let v: Value = c
        .post(format!("{origin}/api/policy/validate"))
        .headers(h.clone())
        .json(&doc)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(v["ok"], true, "{v}");
    assert!(
        v["diff"]
            .as_str()
            .unwrap()
            .contains("+denied_tools = [\"shell_exec\"]"),
        "{v}"
    );
    let mut bad_shape = doc.clone();
    bad_shape["rules"] = json!([{"tool": "x", "risk": "extreme"}]);
    let v: Value = c
        .post(format!("{origin}/api/policy/validate"))
        .headers(h.clone())
        .json(&bad_shape)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(v["ok"], false, "{v}");
    assert_eq!(v["errors"][0]["field"], "rules[0].risk", "{v}");

    // An invalid edit: 422 with the field; file and policy unchanged.
    let before = std::fs::read_to_string(d.config_path()).unwrap();
    let mut bad = doc.clone();
    bad["rules"] = json!([{"tool": "shell_exec", "arg": "command", "regex": "(", "risk": "high"}]);
    let r = c
        .put(format!("{origin}/api/policy"))
        .headers(h.clone())
        .json(&json!({"doc": bad, "base_version": version}))
        .send()
        .await
        .unwrap();
    let (s, e) = error_of(r).await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(e["field"], "rules[0].regex", "{e}");
    assert_eq!(std::fs::read_to_string(d.config_path()).unwrap(), before);
    assert_eq!(d.engine.policy().version(), version);

    // A stale base: 409, unchanged.
    let r = c
        .put(format!("{origin}/api/policy"))
        .headers(h.clone())
        .json(&json!({"doc": doc, "base_version": version + 5}))
        .send()
        .await
        .unwrap();
    let (s, e) = error_of(r).await;
    assert_eq!(
        (s, e["code"].as_str()),
        (StatusCode::CONFLICT, Some("conflict"))
    );
    assert_eq!(std::fs::read_to_string(d.config_path()).unwrap(), before);

    // The edit: applied live, saved, the agent told.
    let r: Value = c
        .put(format!("{origin}/api/policy"))
        .headers(h.clone())
        .json(&json!({"doc": doc, "base_version": version}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(r["version"].as_u64(), Some(version + 1), "{r}");
    let note = agent.recv().await.unwrap();
    assert_eq!(note["method"], "notifications/tools/list_changed");
    let list = agent.request(5, "tools/list", json!({})).await;
    let names: Vec<&str> = list["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert!(!names.contains(&"shell_exec"), "{names:?}");
    let saved = std::fs::read_to_string(d.config_path()).unwrap();
    assert!(saved.starts_with("# mine\n"), "{saved}");
    d.stop().await;
}

#[tokio::test]
async fn a_policy_save_made_before_the_file_changed_is_refused_as_a_conflict() {
    let d = TestDaemon::start_watched("[policy]\npreset = \"default\"\n").await;
    let c = client();
    let origin = d.origin();
    let h = cookie_headers(&login(&d).await, &origin);
    let view = get_json(&c, format!("{origin}/api/policy"), &h).await;
    let base = view["version"].as_u64().unwrap();

    // Someone edits the file in an editor; the engine reloads it.
    let theirs = "denied_tools = [\"fs_write\"]\n[policy]\npreset = \"default\"\n";
    std::fs::write(d.config_path(), theirs).unwrap();
    let mut versions = d.engine.policy().load().version;
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(10);
    let mut checks = d.checks.clone().expect("watched");
    while versions == base {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the edit was never reloaded"
        );
        let _ = tokio::time::timeout_at(deadline, checks.changed()).await;
        versions = d.engine.policy().load().version;
    }

    // The console's edit, made from the older policy: refused, nothing written.
    let mut mine = view["doc"].clone();
    mine["denied_tools"] = json!(["shell_exec"]);
    let r = c
        .put(format!("{origin}/api/policy"))
        .headers(h.clone())
        .json(&json!({"doc": mine, "base_version": base}))
        .send()
        .await
        .unwrap();
    let (s, e) = error_of(r).await;
    assert_eq!(
        (s, e["code"].as_str()),
        (StatusCode::CONFLICT, Some("conflict")),
        "{e}"
    );
    assert_eq!(std::fs::read_to_string(d.config_path()).unwrap(), theirs);
    assert_eq!(d.engine.policy().version(), versions);
    let denied = d.engine.filter().deny_patterns().to_vec();
    assert_eq!(denied, ["fs_write"]);
    d.stop().await;
}

/// The SSE framing, over a real listener, against a scripted feed (exact
/// bytes on the wire). The same checks against the real control service
/// are in `console_live`.
mod sse {
    use std::sync::{Arc, Mutex};

    use futures::StreamExt;
    use toolgate::console::api::{ApiResult, ConsoleApi, EventFeed, FeedItem};
    use toolgate::console::{Console, ConsoleAuth, UiSource};

    use super::*;

    /// A feed of events 1..=5; `after` beyond 5, or before 2 (as if the
    /// ring held 2..=5), answers a reload. Records the `after` it got.
    #[derive(Clone, Default)]
    struct Scripted {
        asked: Arc<Mutex<Vec<Option<u64>>>>,
    }

    impl ConsoleApi for Scripted {
        type AuditQuery = std::collections::HashMap<String, String>;

        fn events(&self, after: Option<u64>) -> ApiResult<EventFeed> {
            self.asked.lock().unwrap().push(after);
            let after = after.unwrap_or(1);
            let items: Vec<FeedItem> = if !(1..=5).contains(&after) {
                vec![FeedItem::Reload { seq: 5 }]
            } else {
                (after + 1..=5)
                    .map(|seq| FeedItem::Event {
                        seq,
                        json: format!("{{\"seq\":{seq},\"ts_ms\":0,\"event\":{{\"type\":\"policy_reloaded\",\"version\":{seq}}}}}"),
                    })
                    .collect()
            };
            Ok(futures::stream::iter(items).boxed())
        }
    }

    async fn serve(api: Scripted) -> (String, ConsoleAuth, tokio_util::sync::CancellationToken) {
        let d = TestDaemon::start("").await;
        let editor = d.editor.clone();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let auth = ConsoleAuth::new(format!("http://127.0.0.1:{port}"));
        let app = toolgate::console::router(Console {
            api,
            auth: auth.clone(),
            editor,
            connect: None,
            ui: UiSource::Embedded,
            port,
            agent_token: "agent".into(),
        });
        let stop = tokio_util::sync::CancellationToken::new();
        let s2 = stop.clone();
        tokio::spawn(async move {
            axum::serve(listener, app)
                .with_graceful_shutdown(s2.cancelled_owned())
                .await
                .unwrap();
            drop(d);
        });
        (format!("http://127.0.0.1:{port}"), auth, stop)
    }

    async fn body(r: reqwest::Response) -> String {
        tokio::time::timeout(WAIT, r.text())
            .await
            .expect("the stream ends")
            .unwrap()
    }

    #[tokio::test]
    async fn events_resume_after_the_last_id_and_end_with_a_reload_on_a_gap() {
        let api = Scripted::default();
        let (origin, auth, stop) = serve(api.clone()).await;
        let c = client();
        let get = |q: &str| {
            c.get(format!("{origin}/api/events{q}"))
                .bearer_auth(auth.bearer())
        };

        let r = get("?after=3").send().await.unwrap();
        assert_eq!(r.headers()["content-type"], "text/event-stream");
        assert_eq!(r.headers()["cache-control"], "no-store");
        let text = body(r).await;
        assert_eq!(
            text,
            "id: 4\nevent: message\ndata: {\"seq\":4,\"ts_ms\":0,\"event\":{\"type\":\"policy_reloaded\",\"version\":4}}\n\n\
             id: 5\nevent: message\ndata: {\"seq\":5,\"ts_ms\":0,\"event\":{\"type\":\"policy_reloaded\",\"version\":5}}\n\n"
        );
        // A reconnect's Last-Event-ID wins over the URL's `after`.
        let text = body(
            get("?after=1")
                .header("last-event-id", "4")
                .send()
                .await
                .unwrap(),
        )
        .await;
        assert!(text.starts_with("id: 5\n"), "{text}");
        // Too old for the ring: one reload event, then the stream ends.
        let text = body(get("?after=0").send().await.unwrap()).await;
        assert_eq!(text, "event: reload\ndata: {\"seq\":5}\n\n");
        assert_eq!(*api.asked.lock().unwrap(), [Some(3), Some(4), Some(0)]);
        // Not without the console's credentials.
        let r = c.get(format!("{origin}/api/events")).send().await.unwrap();
        assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
        stop.cancel();
    }
}

/// The real binary: `toolgate serve` prints a working one-time console
/// URL among its ready lines; `toolgate console --print` mints a fresh
/// one; without a daemon it says so in one line.
#[tokio::test]
async fn serve_prints_the_console_url_and_toolgate_console_mints_fresh_ones() {
    use tokio::io::{AsyncBufReadExt, BufReader};
    use tokio::process::Command;
    const TOOLGATE: &str = env!("CARGO_BIN_EXE_toolgate");

    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("config.toml"), "").unwrap();
    let flags = |c: &mut Command| {
        c.arg("--socket")
            .arg(dir.path().join("agent.sock"))
            .arg("--data-dir")
            .arg(dir.path().join("data"))
            .arg("--config")
            .arg(dir.path().join("config.toml"));
    };
    // Before any daemon: one line, exit 2.
    let mut console = Command::new(TOOLGATE);
    console.args(["console", "--print"]);
    flags(&mut console);
    let out = console.output().await.unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("start `toolgate serve` first"), "{err}");

    // Served from a directory with --ui-dir (UI development).
    let ui = dir.path().join("ui");
    std::fs::create_dir_all(&ui).unwrap();
    std::fs::write(ui.join("index.html"), "<!doctype html><p>dev build</p>").unwrap();
    let mut serve = Command::new(TOOLGATE);
    serve.arg("serve").arg("--ui-dir").arg(&ui);
    flags(&mut serve);
    let mut child = serve
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let line = tokio::time::timeout(WAIT, async {
        while let Some(line) = lines.next_line().await.unwrap() {
            if let Some(rest) = line.strip_prefix("console: ") {
                return rest.to_owned();
            }
        }
        panic!("serve ended without a console line");
    })
    .await
    .expect("a console line");
    // Its stdout is a pipe, not a terminal: the line names the console and
    // how to sign in, never a login link (a credential in a log).
    assert!(
        line.starts_with("http://127.0.0.1:")
            && !line.contains("login?t=")
            && line.contains("toolgate console"),
        "{line}"
    );
    let mint = || async {
        let mut console = Command::new(TOOLGATE);
        console.args(["console", "--print"]);
        flags(&mut console);
        let out = console.output().await.unwrap();
        assert!(out.status.success(), "{out:?}");
        String::from_utf8(out.stdout).unwrap().trim().to_owned()
    };
    let url = mint().await;
    assert!(
        url.starts_with("http://127.0.0.1:") && url.contains("/login?t="),
        "{url}"
    );
    let c = client();
    assert_eq!(
        c.get(&url).send().await.unwrap().status(),
        StatusCode::SEE_OTHER
    );
    assert_eq!(
        c.get(&url).send().await.unwrap().status(),
        StatusCode::UNAUTHORIZED
    );
    let origin = &url[..url.find("/login").unwrap()];
    let page = c
        .get(format!("{origin}/"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert_eq!(page, "<!doctype html><p>dev build</p>");

    let fresh = mint().await;
    assert_ne!(fresh, url);
    assert_eq!(
        c.get(&fresh).send().await.unwrap().status(),
        StatusCode::SEE_OTHER
    );
    child.start_kill().unwrap();
    let _ = child.wait().await;
}

/// Reads the policy slice until `done` holds for it, waking on each look
/// the config watcher takes at the file; fails at `deadline`.
async fn policy_slice_until(
    d: &TestDaemon,
    h: &HeaderMap,
    deadline: tokio::time::Instant,
    what: &str,
    done: impl Fn(&Value) -> bool,
) -> Value {
    let c = client();
    let mut checks = d.checks.clone().expect("watched");
    loop {
        let v = get_json(&c, format!("{}/api/state/policy", d.origin()), h).await;
        if done(&v["policy"]) {
            return v;
        }
        assert!(tokio::time::Instant::now() < deadline, "{what}: {v}");
        let _ = tokio::time::timeout_at(deadline, checks.changed()).await;
    }
}

#[tokio::test]
async fn a_rejected_config_edit_is_shown_until_an_edit_applies() {
    let d = TestDaemon::start_watched("[policy]\npreset = \"default\"\n").await;
    let h = cookie_headers(&login(&d).await, &d.origin());
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(10);
    let before = policy_slice_until(&d, &h, deadline, "read", |_| true).await;
    assert_eq!(before["policy"]["config_problem"], Value::Null, "{before}");

    // A typo in an editor: rejected, and the console can say why.
    std::fs::write(d.config_path(), "[policy]\npreset = \"defualt\"\n").unwrap();
    let shown = policy_slice_until(&d, &h, deadline, "the rejected edit never showed", |p| {
        p["config_problem"].is_string()
    })
    .await;
    let shown = shown["policy"]["config_problem"].as_str().unwrap();
    assert!(shown.contains("line 2"), "{shown}");
    assert!(shown.contains("defualt"), "{shown}");

    // The fix applies, and the problem is gone.
    std::fs::write(d.config_path(), "[policy]\npreset = \"default\"\n# fixed\n").unwrap();
    policy_slice_until(&d, &h, deadline, "the fix never cleared the problem", |p| {
        p["config_problem"].is_null()
    })
    .await;
    d.stop().await;
}

#[tokio::test]
async fn engine_health_shows_memory_descriptors_and_the_agents_connected() {
    let d = TestDaemon::start("").await;
    let c = client();
    let origin = d.origin();
    let h = cookie_headers(&login(&d).await, &origin);
    let health = || get_json(&c, format!("{origin}/api/health"), &h);
    let before = health().await;
    assert!(
        before["process"]["rss_bytes"].as_u64().unwrap_or(0) > 0,
        "{before}"
    );
    assert!(
        before["process"]["open_fds"].as_u64().unwrap_or(0) > 0,
        "{before}"
    );
    let idle = before["agent_connections"].as_u64().expect("a count");

    // An agent connects: counted while it is there, and no longer after.
    let mut agent = d.raw().await;
    agent.initialize().await;
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(10);
    let until = |want: u64| {
        let health = &health;
        async move {
            loop {
                let now = health().await["agent_connections"].as_u64();
                if now == Some(want) {
                    return;
                }
                assert!(
                    tokio::time::Instant::now() < deadline,
                    "agent connections stayed at {now:?}, not {want}"
                );
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            }
        }
    };
    until(idle + 1).await;
    drop(agent);
    until(idle).await;
    d.stop().await;
}

#[tokio::test]
async fn an_edit_of_a_setting_read_at_start_says_it_waits_for_a_restart() {
    let d = TestDaemon::start_watched("[policy]\npreset = \"default\"\n").await;
    let h = cookie_headers(&login(&d).await, &d.origin());
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(10);
    let waits = "Your edit of `barrier` is saved but takes effect only when the engine restarts.";
    let barrier = "[policy]\npreset = \"default\"\n[barrier]\nwhen_unavailable = \"run\"\n";
    // Back as it started but for the policy, which a reload applies.
    let policy_only = "[policy]\npreset = \"strict\"\n";
    for (text, want) in [(barrier, json!(waits)), (policy_only, Value::Null)] {
        std::fs::write(d.config_path(), text).unwrap();
        let what = format!("the note never became {want}");
        policy_slice_until(&d, &h, deadline, &what, |p| p["restart_note"] == want).await;
    }
    d.stop().await;
}

#[tokio::test]
async fn a_body_over_the_limit_gets_the_apis_json_error() {
    let d = TestDaemon::start("").await;
    let c = client();
    let origin = d.origin();
    let h = cookie_headers(&login(&d).await, &origin);
    let big = format!("{{\"doc\": \"{}\"}}", "x".repeat(3 * 1024 * 1024));
    let r = c
        .post(format!("{origin}/api/policy/validate"))
        .headers(h)
        .header("content-type", "application/json")
        .body(big)
        .send()
        .await
        .unwrap();
    assert_eq!(
        r.headers().get("connection").and_then(|v| v.to_str().ok()),
        Some("close"),
        "a connection whose body was left unread is not to be reused"
    );
    let (s, e) = error_of(r).await;
    assert_eq!(
        (s, e["code"].as_str()),
        (StatusCode::PAYLOAD_TOO_LARGE, Some("too_large")),
        "{e}"
    );
    assert!(e["message"].as_str().unwrap().contains("2 MiB"), "{e}");
    d.stop().await;
}
