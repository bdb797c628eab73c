use serde_json::json;
use tokio::task::JoinHandle;

use super::*;
use crate::CallReply;
use crate::approval::ApprovalStatus;
use crate::control::StreamItem;
use crate::control::testing::{Rig, session};
use crate::control::types::{ApproveInput, DenyInput};
use crate::error::ErrorKind;
use crate::events::Event;
use crate::wire::AlwaysInput;

/// Starts a `shell_exec` call that waits for a person; returns it and its
/// request id, read from the live stream.
async fn waiting(rig: &Rig, command: &str) -> (JoinHandle<CallReply>, i64) {
    let mut sub = rig.control.subscribe(None);
    let engine = rig.engine.clone();
    let args = json!({"command": command});
    let call = tokio::spawn(async move { engine.call(&session(), "shell_exec", args).await });
    loop {
        match sub.next().await {
            Some(StreamItem::Event(e)) => match e.event {
                Event::ApprovalRequested { id, .. } => return (call, id),
                Event::CallFinished { .. } => panic!("`{command}` ran without asking"),
                _ => {}
            },
            other => panic!("{other:?}"),
        }
    }
}

fn cli() -> Decider {
    Decider::Cli {
        pid: Some(4242),
        exe: Some("/usr/bin/toolgate".into()),
    }
}

fn console() -> Decider {
    Decider::Console { session: None }
}

#[tokio::test]
async fn approving_runs_the_call_and_records_who_approved() {
    let rig = Rig::new().await;
    let (call, id) = waiting(&rig, "frobnicate --all").await;
    let d = rig
        .control
        .approve(id, &cli(), ApproveInput::default())
        .await
        .expect("approve");
    assert_eq!(d.decided_by, "cli pid 4242 (/usr/bin/toolgate)");
    assert_eq!(d.request.status, ApprovalStatus::Approved);
    let reply = call.await.expect("call");
    assert_eq!(
        reply.result.expect("ran").joined_text(),
        "ran frobnicate --all"
    );
    let stored = rig.approvals.get(id).await.expect("stored");
    assert_eq!(
        stored.decided_by.as_deref(),
        Some("cli pid 4242 (/usr/bin/toolgate)")
    );
}

#[tokio::test]
async fn denying_with_a_reason_tells_the_agent_and_records_the_console() {
    let rig = Rig::new().await;
    let (call, id) = waiting(&rig, "rm -rf /").await;
    let input = DenyInput {
        reason: Some("  use the trash instead ".into()),
        always: None,
    };
    let d = rig.control.deny(id, &console(), input).await.expect("deny");
    assert_eq!(d.decided_by, "console");
    assert_eq!(
        d.request.decision_reason.as_deref(),
        Some("use the trash instead")
    );
    let e = call.await.expect("call").result.expect_err("denied");
    assert_eq!(e.kind(), ErrorKind::Denied);
    assert!(e.to_string().contains("use the trash instead"), "{e}");
}

#[tokio::test]
async fn always_allow_remembers_the_scope_with_its_expiry_and_counts_its_hits() {
    let rig = Rig::new().await;
    let (call, id) = waiting(&rig, "make").await;
    let input = ApproveInput {
        always: Some(AlwaysInput {
            scope: "tool,/command=make*".into(),
            ttl_s: Some(3_600),
        }),
    };
    let d = rig
        .control
        .approve(id, &console(), input)
        .await
        .expect("approve");
    let rule = d.rule.expect("remembered");
    assert_eq!(rule.scope_text, "tool=shell_exec,/command=make*");
    assert_eq!(rule.created_by.as_deref(), Some("console"));
    let expires = rule.expires_ms.expect("expiry");
    assert!(
        (expires - rule.created_ms - 3_600_000).abs() < 5,
        "{rule:?}"
    );
    call.await.expect("call").result.expect("ran");
    // The next call in scope runs without asking.
    let reply = rig
        .call("shell_exec", json!({"command": "make test"}))
        .await;
    let ran = i64::try_from(reply.call_id).expect("call id");
    assert_eq!(reply.result.expect("ran").joined_text(), "ran make test");
    // Its detail says a person allowed it, where and when, not "policy".
    let d = rig.control.call(ran).await.expect("detail");
    let decided = d.decided.expect("who decided");
    assert!(
        decided.starts_with(&format!(
            "A person allowed calls like this one ahead of time: rule #{}, made in the console on ",
            rule.id
        )),
        "{decided}"
    );
    // Testing such a call names the remembered rule, in a sentence, and
    // is no use of it: the hits below count only the call that ran.
    let t = rig
        .control
        .policy_test(crate::control::policy_test::PolicyTestInput {
            tool: "shell_exec".into(),
            args: Some(json!({"command": "make check"})),
            caller: None,
        })
        .expect("policy test");
    assert_eq!(t.rule, format!("remembered rule #{}", rule.id));
    assert_eq!(
        t.reason,
        "a person chose to always allow calls in scope `tool=shell_exec,/command=make*`; \
         without that, the policy would ask a person"
    );
    let rules = rig.control.rules().expect("rules");
    assert_eq!(rules.len(), 1);
    assert_eq!(rules[0].hits, 1);
    assert!(rules[0].last_used_ms.is_some() && rules[0].active);
    assert!(
        rules[0].words.starts_with(
            "Allow every call of `shell_exec` whose `command` matches `make*`, until "
        ),
        "{}",
        rules[0].words
    );
    // Revoked: gone, and revoking again is not found.
    rig.control.revoke_rule(rule.id).await.expect("revoke");
    assert!(rig.control.rules().expect("rules").is_empty());
    let e = rig.control.revoke_rule(rule.id).await.expect_err("gone");
    assert_eq!(e.code(), "not_found");
}

#[tokio::test]
async fn always_deny_refuses_later_calls_in_scope_as_a_person_would() {
    let rig = Rig::new().await;
    let (call, id) = waiting(&rig, "curl evil").await;
    let input = DenyInput {
        reason: Some("no network".into()),
        always: Some(AlwaysInput {
            scope: "tool,caller".into(),
            ttl_s: None,
        }),
    };
    let d = rig.control.deny(id, &console(), input).await.expect("deny");
    assert!(d.rule.as_ref().is_some_and(|r| r.expires_ms.is_none()));
    call.await.expect("call").result.expect_err("denied");
    let e = rig
        .call("shell_exec", json!({"command": "anything"}))
        .await
        .result
        .expect_err("remembered deny");
    assert_eq!(e.kind(), ErrorKind::Denied);
}

#[tokio::test]
async fn decisions_on_requests_that_ended_or_never_were_are_typed_and_change_nothing() {
    let rig = Rig::new().await;
    let (call, id) = waiting(&rig, "frobnicate --all").await;
    rig.control
        .approve(id, &cli(), ApproveInput::default())
        .await
        .expect("first decision");
    call.await.expect("call").result.expect("ran");
    let e = rig
        .control
        .deny(id, &console(), DenyInput::default())
        .await
        .expect_err("already decided");
    assert_eq!(e.code(), "stale");
    assert!(e.to_string().contains("already approved"), "{e}");
    assert_eq!(
        rig.approvals.get(id).await.expect("kept").status,
        ApprovalStatus::Approved,
        "the stale deny changed nothing"
    );
    let e = rig
        .control
        .approve(987_654, &cli(), ApproveInput::default())
        .await
        .expect_err("unknown");
    assert_eq!(e.code(), "not_found");

    // The agent leaves: the request is cancelled, and a late approval is
    // stale.
    let (call, id) = waiting(&rig, "frobnicate --slowly").await;
    let mut sub = rig.control.subscribe(None);
    call.abort();
    let _ = call.await;
    loop {
        if let Some(StreamItem::Event(e)) = sub.next().await
            && let Event::ApprovalDecided { id: closed, .. } = e.event
            && closed == id
        {
            break;
        }
    }
    let e = rig
        .control
        .approve(id, &console(), ApproveInput::default())
        .await
        .expect_err("cancelled");
    assert_eq!(e.code(), "stale");
    assert!(e.to_string().contains("cancelled"), "{e}");
}

#[tokio::test]
async fn malformed_decisions_are_refused_with_the_field() {
    let rig = Rig::new().await;
    let (_call, id) = waiting(&rig, "frobnicate --all").await;
    let with = |scope: &str, ttl_s| ApproveInput {
        always: Some(AlwaysInput {
            scope: scope.into(),
            ttl_s,
        }),
    };
    let cases = [
        (with("tool", Some(0)), "always.ttl_s"),
        (with("tool", Some(u64::MAX)), "always.ttl_s"),
        (with("", None), "scope"),
        (with("tool=fs_*", None), "scope"),
        (with("nonsense", None), "scope"),
    ];
    for (input, field) in cases {
        let e = rig
            .control
            .approve(id, &console(), input)
            .await
            .expect_err("refused");
        assert_eq!((e.code(), e.field()), ("invalid", Some(field)), "{e}");
    }
    let e = rig
        .control
        .approve(id, &Decider::Timeout, ApproveInput::default())
        .await
        .expect_err("not a person");
    assert_eq!(e.field(), Some("decider"));
    let long = DenyInput {
        reason: Some("x".repeat(3_000)),
        always: None,
    };
    let e = rig
        .control
        .deny(id, &console(), long)
        .await
        .expect_err("long");
    assert_eq!(e.field(), Some("reason"));
    // Nothing was decided by any of it.
    assert_eq!(
        rig.approvals.get(id).await.expect("req").status,
        ApprovalStatus::Pending
    );
}

#[tokio::test]
async fn the_scope_preview_binds_to_the_request_and_changes_nothing() {
    let rig = Rig::new().await;
    let (_call, id) = waiting(&rig, "git frobnicate").await;
    let p = rig
        .control
        .preview_scope(id, "tool,/command=git *", Some(3_600))
        .await
        .expect("preview");
    assert!(p.covers_request && p.problem.is_none());
    assert_eq!(p.text, "tool=shell_exec,/command=git *");
    assert_eq!(
        p.words,
        "Every call of `shell_exec` whose `command` matches `git *`."
    );
    let p = rig
        .control
        .preview_scope(id, "caller", Some(3_600))
        .await
        .expect("preview");
    assert!(p.covers_request);
    assert!(
        p.words.contains("from test-agent (running /"),
        "{}",
        p.words
    );
    let p = rig
        .control
        .preview_scope(id, "tool=fs_*", None)
        .await
        .expect("preview");
    assert!(!p.covers_request);
    assert!(
        p.problem
            .as_deref()
            .is_some_and(|m| m.starts_with("This rule would not apply to the request you are deciding: its tool `shell_exec` does not match `fs_*`.")),
        "{p:?}"
    );
    let p = rig
        .control
        .preview_scope(id, "what", None)
        .await
        .expect("preview");
    assert!(!p.covers_request && p.problem.is_some());
    assert_eq!(
        rig.approvals.get(id).await.expect("req").status,
        ApprovalStatus::Pending
    );
    assert!(rig.control.rules().expect("rules").is_empty());
    let e = rig
        .control
        .preview_scope(55_555, "tool", None)
        .await
        .expect_err("unknown");
    assert_eq!(e.code(), "not_found");
}

#[test]
fn deciders_read_as_the_contract_says() {
    assert_eq!(cli().to_string(), "cli pid 4242 (/usr/bin/toolgate)");
    assert_eq!(
        Decider::Cli {
            pid: Some(1),
            exe: None
        }
        .to_string(),
        "cli pid 1"
    );
    assert_eq!(console().to_string(), "console");
    assert!(console().is_person() && !Decider::Shutdown.is_person());
    let json = serde_json::to_value(cli()).unwrap_or_default();
    assert_eq!(json["kind"], "cli");
}

#[tokio::test]
async fn always_starts_at_the_narrowest_scope_and_broadening_is_worded() {
    let rig = Rig::new().await;
    let (call, id) = waiting(&rig, "frob --all src").await;
    let detail = rig.control.approval(id).await.expect("detail");
    assert_eq!(detail.request.preview, "frob --all src");
    let offer = detail.scope.expect("an offer while pending");
    assert!(offer.caller && !offer.exact, "{offer:?}");
    assert_eq!(offer.ttl_s, crate::approval::DEFAULT_TTL_S);
    assert!(
        offer.narrowest.starts_with("tool,/command:re=^frob")
            && offer.narrowest.ends_with(",caller"),
        "{}",
        offer.narrowest
    );
    let p = rig
        .control
        .preview_scope(id, &offer.narrowest, Some(offer.ttl_s))
        .await
        .expect("preview");
    assert!(p.covers_request, "{p:?}");
    assert_eq!(p.also_allows, None);
    assert!(
        p.words.starts_with(
            "Every call of `shell_exec` whose `command` runs `frob` with any plain arguments"
        ),
        "{}",
        p.words
    );
    let p = rig
        .control
        .preview_scope(id, "tool", Some(7 * 86_400))
        .await
        .expect("preview");
    assert_eq!(
        p.also_allows.as_deref(),
        Some("Also allows any command from any caller, for 7 days.")
    );
    // Deciding with the offer makes a rule that lets the same shape from
    // this caller through, and nothing chained onto it.
    let d = rig
        .control
        .approve(
            id,
            &console(),
            ApproveInput {
                always: Some(AlwaysInput {
                    scope: offer.narrowest.clone(),
                    ttl_s: Some(offer.ttl_s),
                }),
            },
        )
        .await
        .expect("approve");
    assert!(d.rule.is_some());
    call.await.expect("call").result.expect("ran");
    let reply = rig.call("shell_exec", json!({"command": "frob -R"})).await;
    assert_eq!(
        reply.result.expect("allowed by the rule").joined_text(),
        "ran frob -R"
    );
    let (chained, id2) = waiting(&rig, "frob; echo chained").await;
    assert!(
        rig.control
            .approval(id2)
            .await
            .expect("asks")
            .scope
            .is_some()
    );
    rig.control
        .deny(id2, &console(), DenyInput::default())
        .await
        .expect("deny");
    chained.await.expect("call").result.expect_err("denied");
    // Once decided, nothing is offered.
    assert!(
        rig.control
            .approval(id)
            .await
            .expect("detail")
            .scope
            .is_none()
    );
}

#[tokio::test]
async fn a_waiting_request_previews_its_arguments_with_secrets_hidden() {
    let rig = Rig::new().await;
    let mut sub = rig.control.subscribe(None);
    let engine = rig.engine.clone();
    let args = json!({"command": "curl -H 'Authorization: Bearer sk-live-0123456789' https://x", "token": "hunter2-token"});
    let _call = tokio::spawn(async move { engine.call(&session(), "shell_exec", args).await });
    let preview = loop {
        match sub.next().await {
            Some(StreamItem::Event(e)) => {
                if let Event::ApprovalRequested { preview, .. } = &e.event {
                    break preview.clone();
                }
            }
            other => panic!("{other:?}"),
        }
    };
    assert_eq!(preview, "curl -H 'Authorization: [redacted]' https://x");
    let pending = rig.control.pending().expect("pending");
    assert_eq!(pending[0].preview, preview);
    let offer = rig
        .control
        .approval(pending[0].id)
        .await
        .expect("detail")
        .scope
        .expect("offer");
    assert_eq!(offer.narrowest, "tool,args,caller");
}

#[test]
fn a_remembered_caller_reads_as_people_know_it() {
    let k = CallerKey {
        via: "socket".into(),
        uid: Some(1000),
        exe: Some("/usr/bin/python3.11".into()),
        client_name: Some("agent-alpha".into()),
        agent_id: Some("1".into()),
    };
    assert_eq!(
        caller_words(&k),
        "from agent-alpha (agent 1, running /usr/bin/python3.11 as uid 1000)"
    );
    let bare = CallerKey {
        client_name: None,
        agent_id: None,
        uid: None,
        ..k
    };
    assert_eq!(caller_words(&bare), "from /usr/bin/python3.11");
}

#[test]
fn literal_patterns_read_as_the_value_they_match() {
    assert!(is_literal(r"~/proj/notes \[draft\].md"));
    assert_eq!(unescape_glob(r"a\*b[,]c"), "a*b,c");
    assert!(!is_literal("~/proj/**"));
    let def = ScopeDef {
        tool: "fs_write".into(),
        args: vec![crate::approval::ArgClause {
            pointer: "/path".into(),
            kind: PatternKind::Path,
            pattern: r"~/a\*.md".into(),
        }],
        args_hash: None,
        caller: None,
    };
    assert_eq!(
        scope_words(&def),
        "Every call of `fs_write` whose `path` is the path `~/a*.md`."
    );
}
