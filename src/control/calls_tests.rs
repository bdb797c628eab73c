use serde_json::json;

use super::*;
use crate::control::Decider;
use crate::control::testing::Rig;
use crate::control::types::ApproveInput;
use crate::error::ErrorKind;

fn call_id(reply: &crate::CallReply) -> i64 {
    i64::try_from(reply.call_id).unwrap_or(-1)
}

#[tokio::test]
async fn a_call_denied_by_policy_names_the_rule_that_denied_it() {
    let rig = Rig::new().await;
    let reply = rig.call("forbidden", json!({"text": "x"})).await;
    assert!(reply.result.is_err());
    let d = rig.control.call(call_id(&reply)).await.expect("detail");
    assert_eq!(d.verdict.as_deref(), Some("deny"));
    assert_eq!(d.rule.as_deref(), Some("tools.forbidden.policy"));
    assert_eq!(d.summary.decision, "refused");
    assert_eq!(d.summary.error_kind, Some(ErrorKind::PolicyDenied));
    assert!(d.output.is_none());
    assert!(
        d.output_missing
            .as_deref()
            .is_some_and(|m| m.contains("error"))
    );
    assert!(d.notes.iter().any(|(stage, _)| stage == "policy"));
}

#[tokio::test]
async fn a_call_detail_has_its_stages_redacted_arguments_and_both_outputs() {
    let rig = Rig::new().await;
    let reply = rig.call("web", json!({"text": "hello"})).await;
    let d = rig.control.call(call_id(&reply)).await.expect("detail");
    assert_eq!(d.summary.tool, "web");
    assert!(
        d.summary.caller.contains("test-agent"),
        "{}",
        d.summary.caller
    );
    assert_eq!(d.args, json!({"text": "hello"}));
    assert_eq!(d.summary.preview, "text=hello");
    assert_eq!(d.verdict.as_deref(), Some("allow"));
    assert_eq!(d.rule.as_deref(), Some("preset:autonomous"));
    let stages: Vec<&str> = d.summary.stages.iter().map(|(s, _)| s.as_str()).collect();
    for s in ["execute", "policy", "trust", "allowlist"] {
        assert!(stages.contains(&s), "{stages:?}");
    }
    let out = d.output.expect("output kept");
    assert!(out.wrapped);
    // Unknown ids are a typed not-found, not an empty answer.
    let e = rig.control.call(999_999).await.expect_err("no such call");
    assert_eq!(e.code(), "not_found");
}

#[tokio::test]
async fn a_call_that_waited_for_a_person_carries_its_approval_with_secrets_redacted() {
    let rig = Rig::new().await;
    let engine = rig.engine.clone();
    let waiting = tokio::spawn(async move {
        engine
            .call(
                &crate::control::testing::session(),
                "shell_exec",
                json!({"command": "frobnicate", "token": "s3cret"}),
            )
            .await
    });
    let mut sub = rig.control.subscribe(Some(0));
    let id = loop {
        match sub.next().await {
            Some(crate::control::StreamItem::Event(e)) => match e.event {
                crate::events::Event::ApprovalRequested { id, .. } => break id,
                crate::events::Event::CallFinished { .. } => panic!("ran without asking"),
                _ => {}
            },
            other => panic!("{other:?}"),
        }
    };
    let by = Decider::Console { session: None };
    rig.control
        .approve(id, &by, ApproveInput::default())
        .await
        .expect("approve");
    let reply = waiting.await.expect("call task");
    assert!(reply.result.is_ok(), "{:?}", reply.result);
    let d = rig.control.call(call_id(&reply)).await.expect("detail");
    assert_eq!(d.verdict.as_deref(), Some("ask"));
    assert_eq!(
        d.decided.as_deref(),
        Some("Policy asked a person (see the request below).")
    );
    let approval = d.approval.expect("the approval it waited on");
    assert_eq!(approval.id, id);
    assert_eq!(approval.decided_by.as_deref(), Some("console"));
    assert!(!d.args.to_string().contains("s3cret"), "{}", d.args);
    assert!(!approval.args.to_string().contains("s3cret"));
    // Lists read the command; the secret stays out of the preview too.
    assert_eq!(d.summary.preview, "frobnicate");
    assert_eq!(approval.preview, "frobnicate");
}

#[test]
fn the_deciding_rule_is_read_from_each_kind_of_policy_note() {
    let note = |t: &str| vec![("policy".to_owned(), t.to_owned())];
    assert_eq!(
        decided_by(&note(
            "deny (critical risk) by policy.rules[2]: rule says deny"
        )),
        (Some("deny".into()), Some("policy.rules[2]".into()))
    );
    assert_eq!(
        decided_by(&note("deny: always-deny rule #4 (tool=x): no")),
        (Some("deny".into()), Some("always-deny rule #4".into()))
    );
    assert_eq!(
        decided_by(&note(
            "allow: always-allow rule #7 (tool=x) covers this call, which would ask: why"
        )),
        (Some("allow".into()), Some("always-allow rule #7".into()))
    );
    assert_eq!(decided_by(&[]), (None, None));
}
