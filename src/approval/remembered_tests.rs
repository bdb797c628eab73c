//! Remembered rules: made from a decision or directly, edited, expired,
//! revoked, kept across a restart; a deny beats an allow.

use std::time::Duration;

use serde_json::json;

use super::super::testing::*;
use super::*;
use crate::approval::{Clock, Decision, Resolution, ScopeError};

#[tokio::test]
async fn always_rules_are_listed_edited_expire_and_are_revoked() {
    let mut f = fixture().await;
    let args = json!({"path": "/home/u/proj/a"});
    let call = ask(&f.approvals, "fs_read", args.clone(), MINUTE);
    let id = next_request(&mut f.events).await;
    // A scope that misses the request is refused; the request stays.
    let e = f
        .approvals
        .approve(id, Some("/path:path=/elsewhere/**"))
        .await
        .unwrap_err();
    assert!(
        matches!(e, ApprovalError::Scope(ScopeError::MissesRequest { .. })),
        "{e}"
    );
    let d = f
        .approvals
        .decide(
            id,
            Decision::approve().always(
                "/path:path=/home/u/proj/**",
                Some(Duration::from_secs(3600)),
            ),
        )
        .await
        .unwrap();
    assert!(matches!(
        call.await.unwrap(),
        Resolution::Approved {
            rule_id: Some(_),
            ..
        }
    ));
    let rule = d.rule.unwrap();
    assert_eq!(d.request.rule_id, Some(rule.id));
    assert_eq!(rule.scope_text, "tool=fs_read,/path:path=/home/u/proj/**");
    assert_eq!(rule.expires_ms, Some(T0 + 3_600_000));
    assert_eq!(f.approvals.rules(), vec![rule.clone()]);
    let c = caller(9);
    let inside = json!({"path": "/home/u/proj/b/c"});
    assert_eq!(
        f.approvals.remembered("fs_read", &inside, &c).map(|r| r.id),
        Some(rule.id)
    );
    assert!(
        f.approvals
            .remembered("fs_read", &json!({"path": "/etc/x"}), &c)
            .is_none()
    );

    // Edit: make it a deny; the scope stays.
    let edited = f
        .approvals
        .edit_rule(
            rule.id,
            RuleEdit {
                effect: Some(RuleEffect::Deny),
                reason: Some(Some("secrets moved here".into())),
                ..RuleEdit::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(edited.effect, RuleEffect::Deny);
    let hit = f.approvals.remembered("fs_read", &inside, &c).unwrap();
    assert_eq!(hit.effect, RuleEffect::Deny);

    // TTL: after an hour it no longer applies, and is listed as inactive.
    f.clock.advance(Duration::from_secs(3601));
    assert!(f.approvals.remembered("fs_read", &inside, &c).is_none());
    assert!(!f.approvals.rules()[0].is_active(f.clock.now_ms()));

    let revoked = f.approvals.revoke_rule(rule.id).await.unwrap();
    assert!(revoked.revoked_ms.is_some());
    assert!(f.approvals.rules().is_empty());
    assert!(matches!(
        f.approvals.revoke_rule(rule.id).await,
        Err(ApprovalError::RuleNotFound { .. })
    ));
    // Rules survive a restart.
    let added = f
        .approvals
        .add_rule(NewRule {
            effect: RuleEffect::Allow,
            scope: "tool=fs_list".into(),
            reason: None,
            ttl: None,
            by: Some("ui".into()),
        })
        .await
        .unwrap();
    let reopened = open_at(&f.db, f.clock.clone(), true).await;
    assert_eq!(reopened.rules(), vec![added]);
    let mut changes = 0;
    while let Ok(e) = f.events.try_recv() {
        changes += usize::from(matches!(e, Event::ApprovalRuleChanged { .. }));
    }
    assert_eq!(changes, 4, "added, edited, revoked, added");
}

#[tokio::test]
async fn always_deny_beats_always_allow() {
    let mut f = fixture().await;
    let call = ask(&f.approvals, "sh", json!({"command": "ls"}), MINUTE);
    let id = next_request(&mut f.events).await;
    f.approvals.approve(id, Some("tool")).await.unwrap();
    call.await.unwrap();
    let call = ask(&f.approvals, "sh", json!({"command": "rm x"}), MINUTE);
    let id = next_request(&mut f.events).await;
    f.approvals
        .decide(
            id,
            Decision::deny(Some("never rm".into())).always("/command=rm *", None),
        )
        .await
        .unwrap();
    assert_eq!(
        call.await.unwrap(),
        Resolution::Denied {
            reason: Some("never rm".into())
        }
    );
    let c = caller(1);
    let r = f
        .approvals
        .remembered("sh", &json!({"command": "rm y"}), &c)
        .unwrap();
    assert_eq!(r.effect, RuleEffect::Deny);
    let r = f
        .approvals
        .remembered("sh", &json!({"command": "ls -l"}), &c)
        .unwrap();
    assert_eq!(r.effect, RuleEffect::Allow);
}

#[tokio::test]
async fn a_rules_hits_and_last_use_survive_a_restart() {
    let f = fixture().await;
    let rule = f
        .approvals
        .add_rule(NewRule {
            effect: RuleEffect::Allow,
            scope: "tool=fs_list".into(),
            reason: None,
            ttl: None,
            by: Some("ui".into()),
        })
        .await
        .unwrap();
    let c = caller(9);
    for _ in 0..3 {
        assert!(f.approvals.remembered("fs_list", &json!({}), &c).is_some());
    }
    f.clock.advance(Duration::from_secs(5));
    assert!(f.approvals.remembered("fs_list", &json!({}), &c).is_some());
    // Shutdown settles, which writes the counts.
    f.approvals.settle().await;
    let reopened = open_at(&f.db, f.clock.clone(), true).await;
    let used = &reopened.rules_with_use()[0];
    assert_eq!((used.rule.id, used.hits), (rule.id, 4));
    assert_eq!(used.last_used_ms, Some(T0 + 5_000));
    // Counting goes on from there, and a write with nothing new is a no-op.
    assert!(reopened.remembered("fs_list", &json!({}), &c).is_some());
    reopened.write_rule_use().await.unwrap();
    reopened.write_rule_use().await.unwrap();
    let again = open_at(&f.db, f.clock.clone(), true).await;
    assert_eq!(again.rules_with_use()[0].hits, 5);
}
