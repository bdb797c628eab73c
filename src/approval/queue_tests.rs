//! The queue's contract: a decision reaches exactly the call that asked,
//! a timeout is not a denial, a cancelled call cannot be approved, and
//! nothing survives a restart pending forever.

use std::time::Duration;

use serde_json::json;

use super::super::testing::*;
use super::*;
use tokio::task::JoinHandle;

use crate::tool::Risk;

#[tokio::test]
async fn approve_once_reaches_exactly_that_call() {
    let mut f = fixture().await;
    let call = ask(&f.approvals, "sh", json!({"command": "rm -rf x"}), MINUTE);
    let id = next_request(&mut f.events).await;
    let pending = f.approvals.pending();
    assert_eq!(pending.len(), 1);
    let p = &pending[0];
    assert_eq!((p.id, p.tool.as_str(), p.risk), (id, "sh", Risk::Critical));
    assert_eq!(p.expires_ms, T0 + 60_000);
    assert_eq!(
        p.args_hash,
        f.approvals.call_hash("sh", &json!({"command": "rm -rf x"}))
    );
    assert!(p.waiting);
    let d = f
        .approvals
        .decide(id, Decision::approve().by("cli"))
        .await
        .unwrap();
    assert_eq!(d.request.status, ApprovalStatus::Approved);
    assert_eq!(
        call.await.unwrap(),
        Resolution::Approved {
            by: Some("cli".into()),
            rule_id: None
        }
    );
    assert!(f.approvals.pending().is_empty());
    assert_eq!(
        next_decided(&mut f.events).await,
        (id, ApprovalStatus::Approved)
    );
    // Approve once: the same call again asks again, with a new request.
    let again = ask(&f.approvals, "sh", json!({"command": "rm -rf x"}), MINUTE);
    let id2 = next_request(&mut f.events).await;
    assert_ne!(id, id2);
    let e = f.approvals.approve(id, None).await.unwrap_err();
    assert!(matches!(
        e,
        ApprovalError::AlreadyDecided {
            status: ApprovalStatus::Approved,
            ..
        }
    ));
    f.approvals.deny(id2, Some("not now".into())).await.unwrap();
    assert_eq!(
        again.await.unwrap(),
        Resolution::Denied {
            reason: Some("not now".into())
        }
    );
    let stored = f.approvals.get(id2).await.unwrap();
    assert_eq!(stored.status, ApprovalStatus::Denied);
    assert_eq!(stored.decision_reason.as_deref(), Some("not now"));
    assert!(matches!(
        f.approvals.approve(999, None).await,
        Err(ApprovalError::NotFound { id: 999 })
    ));
}

#[tokio::test]
async fn a_decision_bound_to_arguments_never_approves_other_arguments() {
    let mut f = fixture().await;
    let a = ask(&f.approvals, "fs_write", json!({"path": "/p/a"}), MINUTE);
    let id_a = next_request(&mut f.events).await;
    let b = ask(&f.approvals, "fs_write", json!({"path": "/p/b"}), MINUTE);
    let id_b = next_request(&mut f.events).await;
    f.approvals.approve(id_a, Some("args")).await.unwrap();
    assert!(matches!(a.await.unwrap(), Resolution::Approved { .. }));
    let still: Vec<i64> = f.approvals.pending().iter().map(|r| r.id).collect();
    assert_eq!(still, [id_b], "b still waits");
    let c1 = caller(1);
    assert!(
        f.approvals
            .remembered("fs_write", &json!({"path": "/p/a"}), &c1)
            .is_some()
    );
    assert!(
        f.approvals
            .remembered("fs_write", &json!({"path": "/p/b"}), &c1)
            .is_none()
    );
    f.approvals.deny(id_b, None).await.unwrap();
    assert_eq!(b.await.unwrap(), Resolution::Denied { reason: None });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hundred_concurrent_requests_decided_out_of_order() {
    let mut f = fixture().await;
    let calls: Vec<JoinHandle<Resolution>> = (0..100)
        .map(|i| ask(&f.approvals, "sh", json!({ "n": i }), MINUTE))
        .collect();
    let mut ids = Vec::new();
    for _ in 0..100 {
        ids.push(next_request(&mut f.events).await);
    }
    assert_eq!(f.approvals.pending().len(), 100);
    // Decide in a scrambled order: even-numbered calls approved, odd denied
    // with their own number as the reason.
    let mut order: Vec<i64> = f.approvals.pending().iter().map(|r| r.id).collect();
    order.sort_by_key(|id| (id * 37) % 101);
    let decisions = order.iter().map(|&id| {
        let a = f.approvals.clone();
        tokio::spawn(async move {
            let n = a.get(id).await.unwrap().args["n"].as_i64().unwrap();
            if n % 2 == 0 {
                a.approve(id, None).await.unwrap();
            } else {
                a.deny(id, Some(format!("no {n}"))).await.unwrap();
            }
        })
    });
    for d in decisions.collect::<Vec<_>>() {
        d.await.unwrap();
    }
    for (n, call) in calls.into_iter().enumerate() {
        let r = call.await.unwrap();
        if n % 2 == 0 {
            assert!(matches!(r, Resolution::Approved { .. }), "{n}: {r:?}");
        } else {
            assert_eq!(
                r,
                Resolution::Denied {
                    reason: Some(format!("no {n}"))
                }
            );
        }
    }
    assert!(f.approvals.pending().is_empty());
}

// The clock is paused once the request is stored rather than with
// `start_paused`: sqlx runs SQLite on its own thread, so a paused runtime
// waiting for it looks idle and auto-advances into the pool's acquire
// timeout. From the pause on, the wait is pure tokio time: no sleeping.
#[tokio::test]
async fn nobody_answering_times_out_as_timed_out_not_denied() {
    let mut f = fixture().await;
    let call = ask(&f.approvals, "sh", json!({}), Duration::from_secs(120));
    let id = next_request(&mut f.events).await;
    tokio::time::pause();
    let paused_at = tokio::time::Instant::now();
    tokio::time::advance(Duration::from_secs(118)).await;
    for _ in 0..10 {
        tokio::task::yield_now().await;
    }
    assert!(!call.is_finished(), "still waiting at 118 s");
    let r = call.await.unwrap();
    tokio::time::resume();
    assert_eq!(
        r,
        Resolution::TimedOut {
            after: Duration::from_secs(120)
        }
    );
    let waited = paused_at.elapsed();
    assert!(
        // Timers have 1 ms resolution and round up.
        waited > Duration::from_secs(119) && waited <= Duration::from_millis(120_002),
        "{waited:?}"
    );
    assert_eq!(
        next_decided(&mut f.events).await,
        (id, ApprovalStatus::TimedOut)
    );
    let stored = f.approvals.get(id).await.unwrap();
    assert_eq!(stored.status, ApprovalStatus::TimedOut);
    assert_eq!(stored.decided_by.as_deref(), Some("timeout"));
    assert!(matches!(
        f.approvals.approve(id, None).await,
        Err(ApprovalError::AlreadyDecided {
            status: ApprovalStatus::TimedOut,
            ..
        })
    ));
}

#[tokio::test]
async fn a_rule_can_shorten_the_timeout() {
    let mut f = fixture().await;
    let call = ask(&f.approvals, "sh", json!({}), Duration::from_secs(5));
    next_request(&mut f.events).await;
    tokio::time::pause();
    let paused_at = tokio::time::Instant::now();
    let r = call.await.unwrap();
    tokio::time::resume();
    assert_eq!(
        r,
        Resolution::TimedOut {
            after: Duration::from_secs(5)
        }
    );
    assert!(paused_at.elapsed() <= Duration::from_millis(5_002));
}

#[tokio::test]
async fn a_waiting_call_that_is_dropped_closes_its_request_as_cancelled() {
    let mut f = fixture().await;
    let call = ask(&f.approvals, "sh", json!({}), MINUTE);
    let id = next_request(&mut f.events).await;
    call.abort();
    assert_eq!(
        next_decided(&mut f.events).await,
        (id, ApprovalStatus::Cancelled)
    );
    let r = f.approvals.get(id).await.unwrap();
    assert_eq!(
        r.decision_reason.as_deref(),
        Some("the waiting call ended before a decision")
    );
    assert!(f.approvals.pending().is_empty());
}

// A request whose call is cancelled is closed at once, as
// `cancelled` with the reason, and can no longer be approved, even before
// its row is written. The clock is paused once the request is stored (see
// above): the closing waits on no timer.
#[tokio::test]
async fn a_cancelled_call_closes_its_request_at_once_and_nobody_can_approve_it() {
    let mut f = fixture().await;
    let cancel = Cancel::new();
    let call = cancellable_ask(&f.approvals, &cancel);
    let id = next_request(&mut f.events).await;
    tokio::time::pause();
    let paused_at = tokio::time::Instant::now();
    cancel.cancel(CancelReason::ClientDisconnected);
    assert_eq!(call.await.unwrap(), None, "the call ended by its token");
    assert_eq!(
        paused_at.elapsed(),
        Duration::ZERO,
        "no timer was waited on"
    );
    // Real time from here: the store may be read below, and under a paused
    // clock a pool connection the background write has not handed back yet
    // would time out at once.
    tokio::time::resume();
    assert!(f.approvals.pending().is_empty());
    // The row may still say `pending`; the answer already may not.
    let e = f.approvals.approve(id, None).await.unwrap_err();
    assert!(
        matches!(
            e,
            ApprovalError::AlreadyDecided {
                status: ApprovalStatus::Cancelled,
                ..
            }
        ),
        "{e:?}"
    );
    assert_eq!(
        e.to_string(),
        format!("approval request #{id} is already cancelled")
    );
    assert_eq!(
        next_decided(&mut f.events).await,
        (id, ApprovalStatus::Cancelled)
    );
    f.approvals.settle().await;
    let r = store::get_request(&f.approvals.inner.pool, id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(r.status, ApprovalStatus::Cancelled);
    assert_eq!(r.decided_by.as_deref(), Some("caller"));
    assert_eq!(
        r.decision_reason.as_deref(),
        Some("the call was cancelled because the client disconnected before a decision")
    );
}

#[tokio::test]
async fn shutdown_cancels_every_pending_request_and_tells_the_waiting_calls() {
    let mut f = fixture().await;
    let (c1, c2) = (Cancel::new(), Cancel::new());
    let first = cancellable_ask(&f.approvals, &c1);
    let a = next_request(&mut f.events).await;
    let second = ask(&f.approvals, "sh", json!({"n": 2}), MINUTE);
    let b = next_request(&mut f.events).await;
    assert_eq!(f.approvals.close(CancelReason::Shutdown), 2);
    assert!(f.approvals.pending().is_empty());
    let told = Resolution::Cancelled {
        reason: CancelReason::Shutdown,
    };
    assert_eq!(first.await.unwrap(), Some(told.clone()));
    assert_eq!(second.await.unwrap(), told);
    assert!(!c2.is_cancelled());
    f.approvals.settle().await;
    for id in [a, b] {
        let r = store::get_request(&f.approvals.inner.pool, id)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(r.status, ApprovalStatus::Cancelled, "#{id}");
        assert_eq!(r.decided_by.as_deref(), Some("shutdown"));
        assert_eq!(
            r.decision_reason.as_deref(),
            Some("toolgate shut down before a decision")
        );
        assert!(matches!(
            f.approvals.approve(id, None).await,
            Err(ApprovalError::AlreadyDecided {
                status: ApprovalStatus::Cancelled,
                ..
            })
        ));
    }
    // Closed: a call asking now is told at once, and nothing is pending.
    assert_eq!(f.approvals.close(CancelReason::Shutdown), 0);
    let late = ask(&f.approvals, "sh", json!({"n": 3}), MINUTE);
    assert_eq!(late.await.unwrap(), told);
    assert!(f.approvals.pending().is_empty());
}

#[test]
fn statuses_read_back_as_written() {
    for s in [
        ApprovalStatus::Pending,
        ApprovalStatus::Approved,
        ApprovalStatus::Denied,
        ApprovalStatus::TimedOut,
        ApprovalStatus::Expired,
        ApprovalStatus::Cancelled,
    ] {
        assert_eq!(ApprovalStatus::parse(s.as_str()), Some(s));
        assert_eq!(serde_json::to_value(s).unwrap(), s.as_str());
    }
}

/// Writes a pending row as a previous run would have left it.
async fn leave_pending(a: &Approvals, pid: i32, args: Value, expires_ms: i64) -> i64 {
    let r = ApprovalRequest {
        id: 0,
        call_id: 1,
        tool: "sh".into(),
        args: args.clone(),
        preview: crate::preview::preview(None, &args),
        args_hash: a.call_hash("sh", &args),
        policy_version: 1,
        risk: Risk::Critical,
        rule: "r".into(),
        reason: "why".into(),
        caller: CallerInfo::from(&caller(pid)),
        session: "s".into(),
        created_ms: T0,
        expires_ms,
        status: ApprovalStatus::Pending,
        decided_ms: None,
        decided_by: None,
        decision_reason: None,
        rule_id: None,
        ended: None,
        waiting: false,
    };
    store::insert_request(&a.inner.pool, &r).await.unwrap()
}

#[tokio::test]
async fn after_a_restart_requests_of_gone_callers_expire_and_the_rest_wait() {
    let f = fixture().await;
    let gone = leave_pending(&f.approvals, 2, json!({"a": 1}), T0 + 60_000).await;
    let late = leave_pending(&f.approvals, 1, json!({"a": 2}), T0 - 1).await;
    let alive = leave_pending(&f.approvals, 1, json!({"a": 3}), T0 + 60_000).await;
    let idle = leave_pending(&f.approvals, 1, json!({"a": 4}), T0 + 30_000).await;
    drop(f.approvals);

    // Restart: a new process opens the same file.
    let a = open_at(&f.db, f.clock.clone(), true).await;
    let mut rx = a.subscribe();
    let pending: Vec<i64> = a.pending().iter().map(|r| r.id).collect();
    assert_eq!(pending, [alive, idle]);
    assert!(a.pending().iter().all(|r| !r.waiting));
    for (id, why) in [
        (gone, "toolgate restarted and the caller is gone"),
        (late, "it expired while toolgate was not running"),
    ] {
        let r = a.get(id).await.unwrap();
        assert_eq!(r.status, ApprovalStatus::Expired);
        assert_eq!(r.decision_reason.as_deref(), Some(why));
        assert_eq!(r.decided_by.as_deref(), Some("startup"));
    }
    // Each expiry left an event row in the audit log.
    let audit = AuditLog::open(&f.db).await.unwrap();
    a.inner.audit.flush().await;
    let rows = audit.events_after(0, 100).await.unwrap();
    let expired = rows
        .iter()
        .filter(|e| e.kind == "approval_decided" && e.body.contains("\"expired\""))
        .count();
    assert_eq!(expired, 2);

    // The agent sends the same call again: it waits on the old request.
    let call = ask(&a, "sh", json!({"a": 3}), MINUTE);
    tokio::task::yield_now().await;
    while !a.pending().iter().any(|r| r.id == alive && r.waiting) {
        tokio::task::yield_now().await;
    }
    a.approve(alive, None).await.unwrap();
    assert!(matches!(call.await.unwrap(), Resolution::Approved { .. }));

    // Nobody comes back for the other one: it expires on its own clock.
    assert_eq!(a.sweep().await.unwrap(), 0);
    f.clock.advance(Duration::from_secs(31));
    assert_eq!(a.sweep().await.unwrap(), 1);
    assert_eq!(next_decided(&mut rx).await.0, alive);
    assert_eq!(next_decided(&mut rx).await, (idle, ApprovalStatus::Expired));
    assert!(a.pending().is_empty());
}
