use std::sync::Arc;

use serde_json::json;

use super::*;
use crate::approval::{ApprovalOptions, Approvals};
use crate::audit::AuditLog;
use crate::error::ErrorKind;
use crate::events::EventBus;
use crate::pipeline::testing::{Script, call_of, def, run_stage};
use crate::policy::{PolicyConfig, Preset};
use crate::tool::Risk;

fn stage(cfg: PolicyConfig) -> Policy {
    Policy::new(PolicyHandle::new(cfg, EventBus::new()), None)
}

#[tokio::test]
async fn low_risk_passes_and_critical_needs_approval_without_a_queue() {
    let script = Script::new(vec![]);
    let mut call = call_of(def("t", json!({"type": "object"})), json!({}));
    assert!(
        run_stage(&stage(PolicyConfig::default()), &mut call, &script)
            .await
            .is_ok()
    );
    assert!(
        call.notes()[0]
            .1
            .starts_with("allow (low risk) by preset:default"),
        "{:?}",
        call.notes()
    );
    let mut call = call_of(
        def("sh", json!({"type": "object"})).with_risk(Risk::Critical),
        json!({}),
    );
    let e = run_stage(&stage(PolicyConfig::default()), &mut call, &script)
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NeedsApproval);
    assert!(
        e.to_string().contains(
            "`sh` declares critical risk; preset default asks a person at high risk and above"
        ),
        "{e}"
    );
    assert_eq!(script.calls(), 1, "the refused call never ran");
}

#[tokio::test]
async fn policy_deny_is_policy_denied_and_names_the_rule() {
    let script = Script::new(vec![]);
    let cfg = PolicyConfig {
        preset: Preset::ReadOnly,
        ..PolicyConfig::default()
    };
    let mut call = call_of(
        def("w", json!({"type": "object"})).with_risk(Risk::Medium),
        json!({}),
    );
    let e = run_stage(&stage(cfg), &mut call, &script)
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::PolicyDenied);
    assert!(e.to_string().contains("preset read_only"), "{e}");
    assert!(
        call.notes()[0]
            .1
            .starts_with("deny (medium risk) by preset:read_only")
    );
    assert_eq!(script.calls(), 0);
}

#[tokio::test]
async fn remembered_deny_refuses_even_an_allowed_call_as_a_persons_denial() {
    let dir = tempfile::tempdir().unwrap();
    let audit = AuditLog::open(&dir.path().join("a.db")).await.unwrap();
    let approvals = Approvals::open(&audit, EventBus::new(), ApprovalOptions::default())
        .await
        .unwrap();
    approvals
        .add_rule(crate::approval::NewRule {
            effect: RuleEffect::Deny,
            scope: "tool=fs_read,/path:path=/secret/**".into(),
            reason: Some("keys live there".into()),
            ttl: None,
            by: None,
        })
        .await
        .unwrap();
    let s = Policy::new(
        PolicyHandle::new(PolicyConfig::default(), EventBus::new()),
        Some(approvals),
    );
    let script = Script::new(vec![]);
    let fs_read = || def("fs_read", json!({"type": "object"}));
    let mut call = call_of(fs_read(), json!({"path": "/secret/k"}));
    let e = run_stage(&s, &mut call, &script).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Denied);
    assert_eq!(
        e.to_string(),
        "a person denied this call: always-deny rule #1 (tool=fs_read,/path:path=/secret/**): keys live there"
    );
    let mut call = call_of(fs_read(), json!({"path": "/public/k"}));
    assert!(run_stage(&s, &mut call, &script).await.is_ok());
    assert_eq!(script.calls(), 1);
}

#[tokio::test]
async fn a_hot_swapped_policy_applies_to_the_next_call() {
    let handle = PolicyHandle::new(PolicyConfig::default(), EventBus::new());
    let s = Policy::new(handle.clone(), None);
    let script = Script::new(vec![]);
    let w = || def("w", json!({"type": "object"})).with_risk(Risk::Medium);
    assert!(
        run_stage(&s, &mut call_of(w(), json!({})), &script)
            .await
            .is_ok()
    );
    let strict = PolicyConfig {
        preset: Preset::Strict,
        ..PolicyConfig::default()
    };
    assert_eq!(handle.swap(strict), 2);
    let e = run_stage(&s, &mut call_of(w(), json!({})), &script)
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NeedsApproval);
    assert!(Arc::strong_count(&handle.load()) >= 1);
}
