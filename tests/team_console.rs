//! The team's queue through the console's HTTP API: real `Daemon`s on a
//! real Postgres, a real agent on one, the other engine's console showing
//! and deciding its request (`/api/team`, the `team` slice on the stream).

use reqwest::StatusCode;
use serde_json::{Value, json};
use toolgate::approval::ApprovalStatus;

use crate::approval::{ask, text_of};
use crate::common::console_client as client;
use crate::common::daemon::TestDaemon;
use crate::common::postgres::Postgres;
use crate::console_live::{Sse, get_json};
use crate::team::{seen_from, team, two_engines};

/// A POST as a browser session of `d`'s console; the status and the body.
async fn post(d: &TestDaemon, cookie: &str, path: &str, body: Value) -> (StatusCode, Value) {
    let r = client()
        .post(format!("{}{path}", d.origin()))
        .header("cookie", cookie)
        .header("origin", d.origin())
        .json(&body)
        .send()
        .await
        .unwrap();
    let status = r.status();
    (status, r.json().await.unwrap_or(Value::Null))
}

/// The request `id` of engine `engine` in a team view, if it is there.
fn find<'a>(view: &'a Value, engine: &str, id: i64) -> Option<&'a Value> {
    view["requests"]
        .as_array()?
        .iter()
        .find(|r| r["engine"]["id"] == engine && r["id"] == id)
}

#[tokio::test]
async fn another_engines_request_reaches_the_console_stream_and_is_approved_there() {
    let pg = Postgres::start();
    let (a, b) = two_engines(&pg).await;
    let a_id = team(&a).me().id.clone();
    let snap = get_json(&b, "/api/snapshot").await;
    assert_eq!(snap["team"]["status"]["me"]["id"], team(&b).me().id);
    assert_eq!(snap["team"]["status"]["state"]["state"], "online");
    let seq = snap["seq"].as_u64().unwrap();

    // Raised on A: B's stream says the team slice changed, and reading it
    // shows the request with A's engine.
    let mut live = Sse::open(&b, &format!("?after={seq}"), None).await;
    let (id, call) = ask(&a, "echo approved-in-b-console").await;
    let shown = loop {
        let (_, env) = live.until("state_changed").await;
        if env["event"]["slice"] != "team" {
            continue;
        }
        let slice = get_json(&b, "/api/state/team").await;
        assert_eq!(slice["slice"], "team");
        if let Some(r) = find(&slice["team"], &a_id, id) {
            break r.clone();
        }
    };
    assert_eq!(shown["status"], "pending");
    assert_eq!(shown["tool"], "shell_exec");
    assert_eq!(shown["engine"]["user"], team(&a).me().user);
    assert_eq!(shown["cannot_decide"], Value::Null);
    let listed = get_json(&b, "/api/team").await;
    assert!(find(&listed, &a_id, id).is_some(), "{listed}");

    let cookie = crate::common::session_cookie(&b.console.login_url()).await;
    let approve = format!("/api/team/{a_id}/{id}/approve");
    // Bad bodies change nothing and name their field.
    for (body, field) in [
        (json!({"always": {"scope": "tool"}}), "always"),
        (json!({"reason": "fine"}), "reason"),
        (json!({"decider": "tray"}), "decider"),
    ] {
        let (status, e) = post(&b, &cookie, &approve, body).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{e}");
        assert_eq!(e["error"]["field"], field, "{e}");
    }
    let (status, e) = post(
        &b,
        &cookie,
        &format!("/api/team/{a_id}/abc/approve"),
        json!({}),
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{e}");
    let own = format!("/api/team/{}/{id}/approve", team(&b).me().id);
    let (status, e) = post(&b, &cookie, &own, json!({})).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{e}");
    assert_eq!(e["error"]["field"], "engine", "{e}");

    // The approval: A's agent gets its result; the outcome names B's user.
    let by = team(&b).me().label();
    let (status, outcome) = post(&b, &cookie, &approve, json!({})).await;
    assert_eq!(status, StatusCode::OK, "{outcome}");
    assert_eq!(outcome["took_effect"], true, "{outcome}");
    assert_eq!(outcome["status"], "approved");
    assert_eq!(outcome["words"], format!("Approved by {by}"));
    let r = call.await.unwrap();
    assert_eq!(r.is_error, Some(false), "{}", text_of(&r));
    assert!(text_of(&r).contains("approved-in-b-console"));

    // A second click is not an error: the outcome says what won.
    let deny = format!("/api/team/{a_id}/{id}/deny");
    let (status, late) = post(&b, &cookie, &deny, json!({"reason": "too late"})).await;
    assert_eq!(status, StatusCode::OK, "{late}");
    assert_eq!(late["took_effect"], false, "{late}");
    assert_eq!(late["status"], "approved", "{late}");
    seen_from(&b, &a, id, "the approval on B", |r| {
        r.status == ApprovalStatus::Approved
    })
    .await;
    let closed = get_json(&b, "/api/team").await;
    let r = find(&closed, &a_id, id).expect("kept closed");
    assert_eq!(r["ended"]["cause"], format!("Approved by {by}"), "{r}");
}

#[tokio::test]
async fn a_person_the_engine_does_not_list_is_refused_with_who_may() {
    let pg = Postgres::start();
    let url = pg.url();
    let ci = TestDaemon::start(&format!(
        "[storage]\nurl = \"{url}\"\n[team]\ndeciders = [\"release-lead\"]\n"
    ))
    .await;
    let b = TestDaemon::start(&format!("[storage]\nurl = \"{url}\"\n")).await;
    let (id, call) = ask(&ci, "echo from-ci").await;
    let seen = seen_from(&b, &ci, id, "the CI request on B", |r| {
        r.status == ApprovalStatus::Pending
    })
    .await;
    let why = seen.cannot_decide.expect("B's user is not listed");
    let cookie = crate::common::session_cookie(&b.console.login_url()).await;
    let path = format!("/api/team/{}/{id}/approve", team(&ci).me().id);
    let (status, e) = post(&b, &cookie, &path, json!({})).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{e}");
    assert_eq!(e["error"]["code"], "forbidden");
    assert_eq!(e["error"]["message"], why);
    let still = ci.engine.approvals().unwrap().get(id).await.unwrap();
    assert_eq!(still.status, ApprovalStatus::Pending, "nothing was decided");
    call.abort();
}

#[tokio::test]
async fn an_engine_alone_says_how_to_join_a_team() {
    let d = TestDaemon::start("").await;
    let snap = get_json(&d, "/api/snapshot").await;
    assert_eq!(snap["team"], Value::Null);
    let slice = get_json(&d, "/api/state/team").await;
    assert_eq!(slice["team"], Value::Null, "{slice}");
    let r = client()
        .get(format!("{}/api/team", d.origin()))
        .bearer_auth(d.console.bearer())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::SERVICE_UNAVAILABLE);
    let e: Value = r.json().await.unwrap();
    assert!(
        e["error"]["message"]
            .as_str()
            .unwrap()
            .contains("[storage] url"),
        "{e}"
    );
    let cookie = crate::common::session_cookie(&d.console.login_url()).await;
    let (status, e) = post(&d, &cookie, "/api/team/abc/1/approve", json!({})).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{e}");
    d.stop().await;
}

#[tokio::test]
async fn the_teams_audit_log_is_searched_by_engine_from_any_console() {
    let pg = Postgres::start();
    let (a, b) = two_engines(&pg).await;
    let a_id = team(&a).me().id.clone();
    let mut agent = a.raw().await;
    agent.initialize().await;
    for n in 0..3u64 {
        let file = format!("f{n}.txt");
        std::fs::write(a.root().join(&file), "x").unwrap();
        agent.call(n + 1, "fs_read", json!({"path": file})).await;
    }
    // Shipped within half a second; B's console reads them from Postgres.
    let path = format!("/api/team/calls?engine={a_id}&limit=2");
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(10);
    let page = loop {
        let page = get_json(&b, &path).await;
        if page.as_array().is_some_and(|p| p.len() == 2) || tokio::time::Instant::now() > deadline {
            break page;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    };
    let rows = page.as_array().expect("a page of calls");
    assert_eq!(rows.len(), 2, "{page}");
    assert!(
        rows.iter()
            .all(|r| r["engine"]["id"] == a_id && r["tool"] == "fs_read"),
        "{page}"
    );
    assert!(rows[0]["ts_ms"].as_i64() >= rows[1]["ts_ms"].as_i64());
    // The caller in words, as the local audit shows it, not its record.
    let caller = rows[0]["caller"].as_str().unwrap();
    assert!(
        caller.contains("raw") && !caller.starts_with('{'),
        "{caller}"
    );
    // Bad queries name the parameter.
    for (query, field) in [("limit=many", "limit"), ("colour=red", "colour")] {
        let r = crate::console_live::get(&b, &format!("/api/team/calls?{query}")).await;
        assert_eq!(r.status(), StatusCode::UNPROCESSABLE_ENTITY, "{query}");
        let body: Value = r.json().await.unwrap();
        assert!(body["error"].to_string().contains(field), "{query}: {body}");
    }
}
