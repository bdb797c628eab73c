//! Many engines, one queue: real `Daemon`s sharing a real Postgres (made
//! by the test, see `common::postgres`), real agents over their sockets.

use std::time::Duration;

use toolgate::approval::{ApprovalStatus, Decision};
use toolgate::team::{Team, TeamRequest, TeamState};

use crate::approval::{ask, text_of};
use crate::common::daemon::TestDaemon;
use crate::common::postgres::Postgres;

/// How long a change may take to reach another engine (NOTIFY is
/// immediate; this only bounds a failing test).
const WITHIN: Duration = Duration::from_secs(10);

fn config(pg: &Postgres) -> String {
    format!("[storage]\nurl = \"{}\"\n", pg.url())
}

pub(crate) fn team(d: &TestDaemon) -> &Team {
    d.team.as_ref().expect("[storage] url starts the team link")
}

/// Waits until `cond` holds for `team`, woken by its changes.
async fn until<T>(team: &Team, what: &str, mut cond: impl FnMut(&Team) -> Option<T>) -> T {
    let mut changes = team.changes();
    let found = tokio::time::timeout(WITHIN, async {
        loop {
            if let Some(t) = cond(team) {
                return t;
            }
            changes.changed().await.expect("the link runs");
        }
    })
    .await;
    found.unwrap_or_else(|_| panic!("timed out waiting for {what}: {:?}", team.status()))
}

/// Two engines on one database, each online and seeing the other.
pub(crate) async fn two_engines(pg: &Postgres) -> (TestDaemon, TestDaemon) {
    let a = TestDaemon::start(&config(pg)).await;
    let b = TestDaemon::start(&config(pg)).await;
    for d in [&a, &b] {
        until(team(d), "both engines online", |t| {
            let s = t.status();
            (s.state == TeamState::Online && s.engines.iter().filter(|e| e.online).count() == 2)
                .then_some(())
        })
        .await;
    }
    (a, b)
}

/// `b`'s view of request `id` of engine `a`, once `ok` holds for it.
pub(crate) async fn seen_from(
    b: &TestDaemon,
    a: &TestDaemon,
    id: i64,
    what: &str,
    ok: impl Fn(&TeamRequest) -> bool,
) -> TeamRequest {
    let engine = team(a).me().id.clone();
    until(team(b), what, |t| {
        t.requests()
            .into_iter()
            .find(|r| r.engine.id == engine && r.id == id && ok(r))
    })
    .await
}

#[tokio::test]
async fn a_request_raised_on_one_engine_is_approved_from_another() {
    let pg = Postgres::start();
    let (a, b) = two_engines(&pg).await;
    let (id, call) = ask(&a, "echo decided-by-a-teammate").await;
    let seen = seen_from(&b, &a, id, "the request on B", |r| {
        r.status == ApprovalStatus::Pending
    })
    .await;
    assert_eq!(seen.tool, "shell_exec");
    assert_eq!(seen.engine, *team(&a).me());
    let outcome = team(&b)
        .decide(&team(&a).me().id, id, Decision::approve())
        .await
        .unwrap();
    assert!(outcome.took_effect, "{outcome:?}");
    assert_eq!(outcome.status, ApprovalStatus::Approved);
    let r = call.await.unwrap();
    assert_eq!(r.is_error, Some(false), "{}", text_of(&r));
    assert!(text_of(&r).contains("decided-by-a-teammate"));
    // A's own record names the teammate; B's view follows.
    let local = a.engine.approvals().unwrap().get(id).await.unwrap();
    let by = team(&b).me().label();
    assert_eq!(local.decided_by.as_deref(), Some(&*format!("team {by}")));
    let closed = seen_from(&b, &a, id, "the approval on B", |r| {
        r.status == ApprovalStatus::Approved
    })
    .await;
    assert_eq!(closed.ended.unwrap().cause, format!("Approved by {by}"));
}

#[tokio::test]
async fn an_approve_and_a_deny_at_once_give_exactly_one_decision() {
    let pg = Postgres::start();
    let (a, b) = two_engines(&pg).await;
    let (id, call) = ask(&a, "echo raced").await;
    seen_from(&b, &a, id, "the request on B", |r| {
        r.status == ApprovalStatus::Pending
    })
    .await;
    let engine = team(&a).me().id.clone();
    let approvals = a.engine.approvals().unwrap().clone();
    let (local, remote) = tokio::join!(
        approvals.deny(id, Some("not on A".into())),
        team(&b).decide(&engine, id, Decision::approve()),
    );
    let remote = remote.unwrap();
    let r = call.await.unwrap();
    let stored = approvals.get(id).await.unwrap();
    match local {
        Ok(_) => {
            assert!(!remote.took_effect, "{remote:?}");
            assert_eq!(remote.status, ApprovalStatus::Denied);
            assert_eq!(stored.status, ApprovalStatus::Denied);
            assert_eq!(r.is_error, Some(true), "{}", text_of(&r));
        }
        Err(e) => {
            assert!(remote.took_effect, "{remote:?} / {e}");
            assert_eq!(stored.status, ApprovalStatus::Approved);
            assert_eq!(r.is_error, Some(false), "{}", text_of(&r));
        }
    }
    // Every engine ends up with the one decision.
    seen_from(&b, &a, id, "the decision on B", |r| {
        r.status == stored.status
    })
    .await;
}

#[tokio::test]
async fn an_agent_that_leaves_cancels_its_request_for_the_whole_team() {
    let pg = Postgres::start();
    let (a, b) = two_engines(&pg).await;
    let (id, call) = ask(&a, "echo never").await;
    seen_from(&b, &a, id, "the request on B", |r| {
        r.status == ApprovalStatus::Pending
    })
    .await;
    // The agent goes away mid-wait: its connection closes.
    call.abort();
    let gone = seen_from(&b, &a, id, "the cancellation on B", |r| {
        r.status == ApprovalStatus::Cancelled
    })
    .await;
    assert!(gone.ended.is_some());
    let late = team(&b)
        .decide(&team(&a).me().id, id, Decision::approve())
        .await
        .unwrap();
    assert!(!late.took_effect, "{late:?}");
    assert_eq!(late.status, ApprovalStatus::Cancelled);
}

#[tokio::test]
async fn without_the_database_engines_decide_alone_and_replay_once_it_is_back() {
    let pg = Postgres::start();
    let (a, b) = two_engines(&pg).await;
    pg.kill();
    for d in [&a, &b] {
        until(team(d), "degraded", |t| {
            matches!(t.status().state, TeamState::Degraded { .. }).then_some(())
        })
        .await;
    }
    // A governs alone: a request raised and denied while offline.
    let (id, call) = ask(&a, "echo offline").await;
    a.engine
        .approvals()
        .unwrap()
        .deny(id, Some("decided on A alone".into()))
        .await
        .unwrap();
    let r = call.await.unwrap();
    assert_eq!(r.is_error, Some(true));
    // B cannot decide for A meanwhile, and says why.
    let e = team(&b)
        .decide(&team(&a).me().id, id, Decision::approve())
        .await
        .unwrap_err();
    assert!(e.to_string().contains("unreachable"), "{e}");
    pg.start_again();
    for d in [&a, &b] {
        until(team(d), "online again", |t| {
            (t.status().state == TeamState::Online).then_some(())
        })
        .await;
    }
    // Replayed: B learns of it as decided, never as pending.
    let rows = team_rows(&pg, &team(&a).me().id).await;
    assert_eq!(rows, vec![(id, "denied".to_owned(), false)]);
    assert!(
        team(&b)
            .requests()
            .iter()
            .all(|r| r.status != ApprovalStatus::Pending)
    );
}

/// Engine `engine`'s rows in the team database: local id, status, offered.
async fn team_rows(pg: &Postgres, engine: &str) -> Vec<(i64, String, bool)> {
    let pool = sqlx::PgPool::connect(&pg.url()).await.unwrap();
    let rows = sqlx::query_as(
        "SELECT local_id, status, offered FROM team_requests WHERE engine_id = $1 ORDER BY local_id",
    )
    .bind(engine)
    .fetch_all(&pool)
    .await
    .unwrap();
    pool.close().await;
    rows
}

#[tokio::test]
async fn only_the_listed_deciders_may_decide_an_engines_requests() {
    let pg = Postgres::start();
    let ci = TestDaemon::start(&format!("{}[team]\ndeciders = [\"alice\"]\n", config(&pg))).await;
    let b = TestDaemon::start(&config(&pg)).await;
    until(team(&b), "the CI engine online", |t| {
        (t.status().engines.iter().filter(|e| e.online).count() == 2).then_some(())
    })
    .await;
    let (id, call) = ask(&ci, "echo from-ci").await;
    let seen = seen_from(&b, &ci, id, "the request on B", |r| {
        r.status == ApprovalStatus::Pending
    })
    .await;
    let why = seen.cannot_decide.expect("B's user is not listed");
    assert!(
        why.starts_with("Only alice may decide requests from"),
        "{why}"
    );
    let engine = team(&ci).me().id.clone();
    let e = team(&b)
        .decide(&engine, id, Decision::approve())
        .await
        .unwrap_err();
    assert_eq!(e.to_string(), why);
    // Past the friendly refusal: a decision put straight into the mailbox,
    // as an engine that skipped the check would, is refused by the CI
    // engine itself.
    let pool = sqlx::PgPool::connect(&pg.url()).await.unwrap();
    // Listening first: the CI engine's answer is a notification too.
    let mut heard = sqlx::postgres::PgListener::connect_with(&pool)
        .await
        .unwrap();
    heard.listen("toolgate_team").await.unwrap();
    let (decision,): (i64,) = sqlx::query_as(
        "INSERT INTO team_decisions (engine_id, local_id, answer, by_user, by_engine, sent_ms) \
         VALUES ($1, $2, 'approve', 'alice on somewhere', $3, 0) RETURNING id",
    )
    .bind(&engine)
    .bind(id)
    .bind(&team(&b).me().id)
    .fetch_one(&pool)
    .await
    .unwrap();
    sqlx::query("SELECT pg_notify('toolgate_team', $1)")
        .bind(serde_json::json!({"k": "decision", "e": engine, "id": decision}).to_string())
        .execute(&pool)
        .await
        .unwrap();
    let outcome = tokio::time::timeout(WITHIN, async {
        loop {
            let (o,): (Option<String>,) =
                sqlx::query_as("SELECT outcome FROM team_decisions WHERE id = $1")
                    .bind(decision)
                    .fetch_one(&pool)
                    .await
                    .unwrap();
            if let Some(o) = o {
                return serde_json::from_str::<serde_json::Value>(&o).unwrap();
            }
            heard.recv().await.unwrap();
        }
    })
    .await
    .expect("the CI engine answers");
    assert_eq!(outcome["took_effect"], false, "{outcome}");
    assert!(
        outcome["words"].as_str().unwrap().starts_with("Only alice"),
        "{outcome}"
    );
    let still = ci.engine.approvals().unwrap().get(id).await.unwrap();
    assert_eq!(still.status, ApprovalStatus::Pending);
    ci.engine.approvals().unwrap().deny(id, None).await.unwrap();
    assert_eq!(call.await.unwrap().is_error, Some(true));
    // The listener holds a connection that closing the pool waits for.
    drop(heard);
    pool.close().await;
}

/// Makes `n` allowed calls from a fresh agent on `d`, numbered from
/// `first`, each reading a file of its own (the same call repeated would
/// trip the loop guard); each is answered.
async fn calls(d: &TestDaemon, first: u64, n: u64) {
    let mut agent = d.raw().await;
    agent.initialize().await;
    for id in first..first + n {
        let file = format!("f{id}.txt");
        std::fs::write(d.root().join(&file), "shared").unwrap();
        let r = agent
            .call(id, "fs_read", serde_json::json!({"path": file}))
            .await;
        assert_eq!(r["result"]["content"][0]["text"], "shared", "{r}");
    }
}

/// The call ids of engine `d`'s own audit log.
async fn local_call_ids(d: &TestDaemon) -> Vec<i64> {
    let log = toolgate::audit::AuditLog::open_reader(&d.db())
        .await
        .unwrap();
    let mut ids: Vec<i64> = log
        .calls_after(0, 100_000)
        .await
        .unwrap()
        .into_iter()
        .map(|r| r.call_id)
        .collect();
    ids.sort_unstable();
    ids
}

/// The call ids the team's audit log has from `engine`, once it has
/// `want` of them (shipping runs in the background), with duplicates kept.
async fn team_call_ids(pg: &Postgres, engine: &str, want: usize) -> Vec<i64> {
    let pool = sqlx::PgPool::connect(&pg.url()).await.unwrap();
    let deadline = tokio::time::Instant::now() + WITHIN;
    let ids = loop {
        let ids: Vec<(i64,)> =
            sqlx::query_as("SELECT call_id FROM team_calls WHERE engine_id = $1 ORDER BY call_id")
                .bind(engine)
                .fetch_all(&pool)
                .await
                .unwrap();
        if ids.len() >= want || tokio::time::Instant::now() > deadline {
            break ids;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    pool.close().await;
    ids.into_iter().map(|(id,)| id).collect()
}

#[tokio::test]
async fn every_call_reaches_the_team_log_once_across_an_outage() {
    let pg = Postgres::start();
    let (a, b) = two_engines(&pg).await;
    calls(&a, 1, 15).await;
    calls(&b, 1, 15).await;
    pg.kill();
    // Both keep governing while the database is down.
    calls(&a, 100, 15).await;
    calls(&b, 100, 15).await;
    for d in [&a, &b] {
        until(team(d), "degraded", |t| {
            matches!(t.status().state, TeamState::Degraded { .. }).then_some(())
        })
        .await;
    }
    calls(&a, 200, 5).await;
    pg.start_again();
    calls(&b, 200, 5).await;
    for d in [&a, &b] {
        until(team(d), "online again", |t| {
            (t.status().state == TeamState::Online).then_some(())
        })
        .await;
    }
    calls(&a, 300, 15).await;
    calls(&b, 300, 15).await;
    for d in [&a, &b] {
        // Shipped rows are committed ones: flush the local log first.
        let local = local_call_ids(d).await;
        assert_eq!(local.len(), 50, "{local:?}");
        let shipped = team_call_ids(&pg, &team(d).me().id, local.len()).await;
        assert_eq!(shipped, local, "every call once, none lost, none twice");
    }
    // One log to search: from B, A's calls by engine, newest first.
    let a_id = team(&a).me().id.clone();
    let page = team(&b)
        .calls(&toolgate::team::TeamCallsQuery {
            engine: Some(a_id.clone()),
            limit: Some(20),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(page.len(), 20);
    assert!(
        page.iter()
            .all(|c| c.engine.id == a_id && c.tool == "fs_read")
    );
    assert!(page.windows(2).all(|w| w[0].ts_ms >= w[1].ts_ms));
    let all = team(&b)
        .calls(&toolgate::team::TeamCallsQuery {
            limit: Some(500),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(all.len(), 100);
}

fn sharing(pg: &Postgres) -> String {
    format!("{}[team]\nrules = \"team\"\n", config(pg))
}

/// `shell_exec` of `command` on `d` from a fresh agent: its reply.
async fn shell(d: &TestDaemon, command: &str) -> serde_json::Value {
    let mut agent = d.raw().await;
    agent.initialize().await;
    agent
        .call(1, "shell_exec", serde_json::json!({"command": command}))
        .await
}

#[tokio::test]
async fn an_always_on_one_engine_applies_on_every_sharing_engine_until_revoked() {
    let pg = Postgres::start();
    let a = TestDaemon::start(&sharing(&pg)).await;
    let b = TestDaemon::start(&sharing(&pg)).await;
    let alone = TestDaemon::start(&config(&pg)).await;
    until(team(&b), "three engines", |t| {
        (t.status().engines.iter().filter(|e| e.online).count() == 3).then_some(())
    })
    .await;
    // On A: one "always" for the exact call (bound to A's argument key,
    // so it stays on A) and one for the tool (the same on every machine).
    let approvals = a.engine.approvals().unwrap().clone();
    let (id, call) = ask(&a, "echo exact").await;
    approvals
        .decide(id, Decision::approve().always("args", None))
        .await
        .unwrap();
    call.await.unwrap();
    let (id, call) = ask(&a, "echo first").await;
    let rule = approvals
        .decide(id, Decision::approve().always("tool", None))
        .await
        .unwrap()
        .rule
        .unwrap();
    call.await.unwrap();
    let shared = until(team(&b), "A's tool rule on B", |_| {
        let rules = b.engine.approvals().unwrap().team_rules();
        (!rules.is_empty()).then_some(rules)
    })
    .await;
    assert_eq!(shared.len(), 1, "only the portable rule: {shared:?}");
    assert_eq!(shared[0].scope_text, "tool=shell_exec");
    assert_eq!(shared[0].origin, Some(team(&a).me().label()));
    // B runs shell_exec without asking anyone, and says whose rule it was.
    let r = shell(&b, "echo on-b").await;
    assert!(
        r["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("on-b"),
        "{r}"
    );
    let log = toolgate::audit::AuditLog::open_reader(&b.db())
        .await
        .unwrap();
    let row = log.recent_calls(1).await.unwrap().pop().unwrap();
    let whose = format!("always-allow rule {}", shared[0].label());
    assert!(row.notes.contains(&whose), "{} lacks {whose}", row.notes);
    // An engine that keeps its rules to itself applies none of the team's.
    assert!(alone.engine.approvals().unwrap().team_rules().is_empty());
    // Revoked on A, gone on B.
    approvals.revoke_rule(rule.id).await.unwrap();
    until(team(&b), "the revocation on B", |_| {
        b.engine
            .approvals()
            .unwrap()
            .team_rules()
            .is_empty()
            .then_some(())
    })
    .await;
    let (id, call) = ask(&b, "echo asks-again").await;
    b.engine.approvals().unwrap().deny(id, None).await.unwrap();
    call.await.unwrap();
}

/// A sharing engine with the Python fixture server `rug`.
fn with_rug(pg: &Postgres) -> String {
    format!(
        "{}[policy]\npreset = \"autonomous\"\n[team]\npins = \"team\"\n[[servers]]\nname = \"rug\"\ntransport = \"stdio\"\ncommand = {:?}\nargs = [{:?}]\n",
        config(pg),
        crate::common::python::python_str(),
        crate::upstream_support::py_server()
    )
}

/// Makes `d`'s `rug` server rewrite `rug__add`'s description, and waits
/// until `d` holds the new version back.
async fn rug_pull(d: &TestDaemon) {
    let mut agent = d.raw().await;
    agent.initialize().await;
    let r = agent
        .call(
            1,
            "rug__mutate",
            serde_json::json!({"description": "Adds two integers, and more."}),
        )
        .await;
    let text = r["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(text.contains("\nmutated\n"), "{r}");
    let engine = d.engine.clone();
    crate::upstream_support::wait_for(WITHIN, "rug__add held back", || {
        !engine.tools().iter().any(|t| t.name.as_str() == "rug__add")
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn a_tool_version_approved_on_one_engine_is_approved_on_every_sharing_engine() {
    let pg = Postgres::start();
    let a = TestDaemon::start(&with_rug(&pg)).await;
    let b = TestDaemon::start(&with_rug(&pg)).await;
    for d in [&a, &b] {
        let engine = d.engine.clone();
        crate::upstream_support::wait_for(WITHIN, "rug's tools", || {
            engine.tools().iter().any(|t| t.name.as_str() == "rug__add")
        })
        .await
        .unwrap();
    }
    until(team(&b), "both online", |t| {
        (t.status().engines.iter().filter(|e| e.online).count() == 2).then_some(())
    })
    .await;
    rug_pull(&a).await;
    rug_pull(&b).await;
    a.service.approve_pin("rug__add").await.unwrap();
    // B registers the version A's person approved, without anyone on B.
    let engine = b.engine.clone();
    crate::upstream_support::wait_for(WITHIN, "rug__add back on B", || {
        engine
            .tools()
            .iter()
            .any(|t| t.name.as_str() == "rug__add" && t.description.contains("and more"))
    })
    .await
    .unwrap_or_else(|e| panic!("{e}: {:?}", team(&b).status()));
}

#[tokio::test]
async fn an_engine_that_shuts_down_cancels_its_requests_for_the_team() {
    let pg = Postgres::start();
    let (a, b) = two_engines(&pg).await;
    let (id, call) = ask(&a, "echo never-decided").await;
    seen_from(&b, &a, id, "the request on B", |r| {
        r.status == ApprovalStatus::Pending
    })
    .await;
    let a_id = team(&a).me().id.clone();
    // The agent still waits when A shuts down under it.
    let _dir = a.stop().await;
    let r = call.await.unwrap();
    assert_eq!(r.is_error, Some(true));
    let engine = a_id.clone();
    let gone = until(team(&b), "the shutdown's cancellation on B", |t| {
        t.requests()
            .into_iter()
            .find(|r| r.engine.id == engine && r.id == id && r.status != ApprovalStatus::Pending)
    })
    .await;
    assert_eq!(gone.status, ApprovalStatus::Cancelled);
    assert!(
        gone.ended.as_ref().unwrap().cause.contains("shut down"),
        "{:?}",
        gone.ended
    );
}

#[tokio::test]
async fn the_team_database_can_be_reached_over_verified_tls_only_with_its_ca() {
    let pg = Postgres::start_tls();
    let tls_url = |ca: &std::path::Path| {
        format!(
            "[storage]\nurl = \"postgres://postgres@localhost:{}/postgres?sslmode=verify-full&sslrootcert={}\"\n",
            pg.port(),
            ca.display()
        )
    };
    let good = TestDaemon::start(&tls_url(&pg.ca())).await;
    until(team(&good), "online over TLS", |t| {
        (t.status().state == TeamState::Online).then_some(())
    })
    .await;
    // The server saw this engine's connections encrypted.
    let pool = sqlx::PgPool::connect(&pg.url()).await.unwrap();
    let (tls,): (i64,) = sqlx::query_as(
        "SELECT count(*) FROM pg_stat_ssl s JOIN pg_stat_activity a ON a.pid = s.pid \
         WHERE a.application_name = 'toolgate' AND s.ssl",
    )
    .fetch_one(&pool)
    .await
    .unwrap();
    assert!(tls >= 1, "toolgate's connections use TLS");
    pool.close().await;
    // Another CA's certificate is refused: the engine governs alone.
    let other = Postgres::start_tls();
    let bad = TestDaemon::start(&tls_url(&other.ca())).await;
    let why = until(team(&bad), "refused", |t| match t.status().state {
        TeamState::Degraded { error, .. } => Some(error),
        _ => None,
    })
    .await;
    assert!(why.to_lowercase().contains("certificate"), "{why}");
}

#[tokio::test]
async fn a_request_that_times_out_times_out_for_the_whole_team() {
    let pg = Postgres::start();
    let quick = format!("{}[policy]\napproval_timeout_s = 1\n", config(&pg));
    let a = TestDaemon::start(&quick).await;
    let b = TestDaemon::start(&config(&pg)).await;
    until(team(&b), "both online", |t| {
        (t.status().engines.iter().filter(|e| e.online).count() == 2).then_some(())
    })
    .await;
    let (id, call) = ask(&a, "echo too-late").await;
    let r = call.await.unwrap();
    assert_eq!(r.is_error, Some(true), "{}", text_of(&r));
    let ended = seen_from(&b, &a, id, "the timeout on B", |r| {
        r.status != ApprovalStatus::Pending
    })
    .await;
    assert_eq!(ended.status, ApprovalStatus::TimedOut);
    let late = team(&b)
        .decide(&team(&a).me().id, id, Decision::approve())
        .await
        .unwrap();
    assert!(!late.took_effect);
    assert_eq!(late.status, ApprovalStatus::TimedOut);
}
