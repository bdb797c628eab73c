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
