//! Full calls through `Engine::call` with the built-in tools: every stage
//! on, real files, real SQLite, outcomes and events asserted.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::{Value, json};
use toolgate::CallError;
use toolgate::audit::AuditLog;
use toolgate::error::ErrorKind;
use toolgate::tool::{Content, ToolResult};

use crate::common::{drain, engine, engine_adjusted, register, session, types};

fn text(r: &ToolResult) -> String {
    r.joined_text()
}

#[tokio::test]
async fn fs_write_then_read_runs_every_stage_and_reports_events() {
    let dir = tempfile::tempdir().unwrap();
    let e = engine(dir.path(), "", None);
    let mut rx = e.subscribe();
    let s = session("s1");
    let w = e
        .call(
            &s,
            "fs_write",
            json!({"path": "notes/a.txt", "content": "hello", "create_dirs": true}),
        )
        .await;
    assert!(w.result.is_ok(), "{:?}", w.result);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("notes/a.txt")).unwrap(),
        "hello"
    );
    let r = e.call(&s, "fs_read", json!({"path": "notes/a.txt"})).await;
    assert_eq!(text(&r.result.unwrap()).trim(), "hello");

    let events = drain(&mut rx);
    let t = types(&events);
    assert_eq!(t.first().map(String::as_str), Some("call_received"));
    assert_eq!(t.iter().filter(|x| *x == "call_finished").count(), 2);
    let stages: Vec<&str> = events
        .iter()
        .filter(|e| e["type"] == "call_stage" && e["call_id"] == r.call_id)
        .filter_map(|e| e["stage"].as_str())
        .collect();
    // Innermost first: the tool, then each stage on the way out.
    assert_eq!(
        stages,
        [
            "execute",
            "timeout",
            "retry",
            "breaker",
            "policy",
            "guards",
            "validate",
            "loop_guard",
            "truncate",
            "trust",
            "hooks",
            "allowlist"
        ]
    );
    assert_eq!(r.trace.len(), 12);
}

#[tokio::test]
async fn sloppy_arguments_are_cast_and_the_cast_is_recorded() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "0123456789").unwrap();
    let e = engine(dir.path(), "", None);
    let r = e
        .call(
            &session("s"),
            "fs_read",
            json!({"Path=": "a.txt", "max_bytes": "4"}),
        )
        .await;
    let out = text(&r.result.unwrap());
    assert!(out.starts_with("0123") && !out.contains("456789"), "{out}");
    let notes: Vec<&str> = r.notes.iter().map(|(_, n)| n.as_str()).collect();
    assert!(
        notes
            .iter()
            .any(|n| n.contains("max_bytes") && n.contains("integer 4")),
        "{notes:?}"
    );
}

#[tokio::test]
async fn invalid_arguments_are_refused_in_words_a_model_can_use() {
    let dir = tempfile::tempdir().unwrap();
    let e = engine(dir.path(), "", None);
    let r = e
        .call(
            &session("s"),
            "fs_write",
            json!({"path": "x", "content": "y", "mode": "sideways"}),
        )
        .await;
    let err = r.result.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgs);
    assert!(
        err.to_string().contains("argument `mode`: must be one of"),
        "{err}"
    );
    assert!(!dir.path().join("x").exists(), "the tool never ran");
}

#[tokio::test]
async fn unknown_tools_suggest_close_names() {
    let dir = tempfile::tempdir().unwrap();
    let e = engine(dir.path(), "", None);
    let err = e
        .call(&session("s"), "fs_raed", json!({}))
        .await
        .result
        .unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.starts_with("unknown tool `fs_raed`; did you mean `fs_read`"),
        "{msg}"
    );
}

#[tokio::test]
async fn allowlist_hides_and_refuses_other_tools() {
    let dir = tempfile::tempdir().unwrap();
    let e = engine(dir.path(), "denied_tools = [\"fs_write\"]", Some("fs_*"));
    let names: Vec<String> = e.tools().iter().map(|t| t.name.to_string()).collect();
    assert_eq!(names, ["fs_list", "fs_read"]);
    let err = e
        .call(
            &session("s"),
            "http_fetch",
            json!({"url": "https://example.com"}),
        )
        .await
        .result
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NotAllowed);
    let err = e
        .call(
            &session("s"),
            "fs_write",
            json!({"path": "a", "content": "b"}),
        )
        .await
        .result
        .unwrap_err();
    assert!(err.to_string().contains("deny"), "{err}");
}

#[test]
fn strict_mode_rejects_allowlist_names_that_match_no_tool() {
    let dir = tempfile::tempdir().unwrap();
    let mut config =
        toolgate::config::Config::parse("strict = true", std::path::Path::new("t.toml")).unwrap();
    config.builtin.roots = vec![dir.path().to_owned()];
    let env = toolgate::setup::Env {
        allowed_tools: Some("fs_read,no_such_tool".into()),
        ..Default::default()
    };
    let err = toolgate::setup::engine_with(config, &env, |b| b).unwrap_err();
    assert!(err.to_string().contains("no_such_tool"), "{err}");
}

#[tokio::test]
async fn path_escape_is_refused_by_the_guard_stage_before_policy() {
    let dir = tempfile::tempdir().unwrap();
    let e = engine(dir.path(), "", None);
    let r = e
        .call(
            &session("s"),
            "fs_read",
            json!({"path": "../../etc/passwd"}),
        )
        .await;
    assert_eq!(r.result.unwrap_err().kind(), ErrorKind::GuardDenied);
    assert!(
        !r.notes.iter().any(|(s, _)| s.as_str() == "policy"),
        "policy never saw it: {:?}",
        r.notes
    );
}

#[tokio::test]
async fn shell_exec_needs_approval_by_default_and_runs_when_policy_allows() {
    let dir = tempfile::tempdir().unwrap();
    let e = engine(dir.path(), "", None);
    let err = e
        .call(&session("s"), "shell_exec", json!({"command": "touch ran"}))
        .await
        .result
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NeedsApproval);
    assert!(!dir.path().join("ran").exists());

    let e = engine(dir.path(), "[tools.shell_exec]\npolicy = \"allow\"", None);
    let r = e
        .call(
            &session("s"),
            "shell_exec",
            json!({"command": "echo hi; exit 3"}),
        )
        .await
        .result
        .unwrap();
    assert!(r.is_error, "a non-zero exit is a tool error");
    assert!(
        text(&r).contains("hi") && text(&r).contains('3'),
        "{}",
        text(&r)
    );
}

#[tokio::test]
async fn loop_guard_warns_then_blocks_then_halts_the_session() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a"), "x").unwrap();
    let e = engine(dir.path(), "", None);
    let s = session("loopy");
    let call = || e.call(&s, "fs_read", json!({"path": "a"}));
    for _ in 0..2 {
        assert!(!text(&call().await.result.unwrap()).contains("[toolgate]"));
    }
    let third = call().await.result.unwrap();
    let last = third.content.last().and_then(Content::as_text).unwrap();
    assert!(
        last.starts_with("[toolgate]"),
        "warning is the last part, outside the output: {last}"
    );
    call().await.result.unwrap();
    let blocked = call().await.result.unwrap_err();
    assert!(
        matches!(blocked, CallError::LoopDetected { halted: false, .. }),
        "{blocked}"
    );
    for _ in 0..2 {
        call().await.result.unwrap_err();
    }
    let halted = call().await.result.unwrap_err();
    assert!(
        matches!(halted, CallError::LoopDetected { halted: true, .. }),
        "{halted}"
    );
    // A different call in the same session is refused too; another session is not.
    assert!(e.call(&s, "fs_list", json!({})).await.result.is_err());
    assert!(
        e.call(&session("other"), "fs_read", json!({"path": "a"}))
            .await
            .result
            .is_ok()
    );
}

#[tokio::test]
async fn breaker_opens_after_failures_and_fails_fast() {
    let dir = tempfile::tempdir().unwrap();
    let e = engine(
        dir.path(),
        "[tools.flaky.breaker]\nfailure_threshold = 3\n[tools.flaky.retry]\nmax_retries = 0",
        None,
    );
    let runs = Arc::new(AtomicUsize::new(0));
    let r2 = runs.clone();
    register(&e, "flaky", json!({"type": "object"}), move |_| {
        r2.fetch_add(1, Ordering::SeqCst);
        async {
            Err(CallError::Connection {
                message: "refused".into(),
            })
        }
    });
    let mut rx = e.subscribe();
    for i in 0..3 {
        let err = e
            .call(&session("s"), "flaky", json!({"i": i}))
            .await
            .result
            .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Connection);
    }
    let err = e
        .call(&session("s"), "flaky", json!({"i": 9}))
        .await
        .result
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::BreakerOpen);
    assert_eq!(
        runs.load(Ordering::SeqCst),
        3,
        "the open breaker did not run the tool"
    );
    let ev = drain(&mut rx);
    let transition = ev
        .iter()
        .find(|e| e["type"] == "breaker_transition")
        .expect("transition event");
    assert_eq!(
        (transition["from"].as_str(), transition["to"].as_str()),
        (Some("closed"), Some("open"))
    );
    assert_eq!(e.breaker().snapshot()[0].tool.as_str(), "flaky");
}

#[tokio::test]
async fn transient_failures_are_retried_and_tool_errors_are_not() {
    let dir = tempfile::tempdir().unwrap();
    let e = engine(
        dir.path(),
        "[pipeline.retry]\ninitial_backoff_ms = 1\nmax_backoff_ms = 2",
        None,
    );
    let runs = Arc::new(AtomicUsize::new(0));
    let r2 = runs.clone();
    register(&e, "wobbly", json!({"type": "object"}), move |_| {
        let n = r2.fetch_add(1, Ordering::SeqCst);
        async move {
            if n == 0 {
                Err(CallError::Upstream {
                    status: 503,
                    message: "busy".into(),
                })
            } else {
                Ok(ToolResult::text("ok"))
            }
        }
    });
    let mut rx = e.subscribe();
    assert_eq!(
        text(
            &e.call(&session("s"), "wobbly", json!({}))
                .await
                .result
                .unwrap()
        ),
        "ok"
    );
    assert_eq!(runs.load(Ordering::SeqCst), 2);
    assert!(types(&drain(&mut rx)).contains(&"call_retry".to_owned()));

    let runs = Arc::new(AtomicUsize::new(0));
    let r3 = runs.clone();
    register(&e, "broken", json!({"type": "object"}), move |_| {
        r3.fetch_add(1, Ordering::SeqCst);
        async { Err(CallError::tool_failed("connection timed out (just words)")) }
    });
    e.call(&session("s"), "broken", json!({}))
        .await
        .result
        .unwrap_err();
    assert_eq!(
        runs.load(Ordering::SeqCst),
        1,
        "classified by type, not by the words in the message"
    );
}

#[tokio::test]
async fn a_hanging_tool_hits_its_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let e = engine(
        dir.path(),
        "[tools.hang]\ntimeout_ms = 30\ndeadline_ms = 60\n[tools.hang.retry]\nmax_retries = 0",
        None,
    );
    register(&e, "hang", json!({"type": "object"}), |_| {
        futures::future::pending()
    });
    let err = e
        .call(&session("s"), "hang", json!({}))
        .await
        .result
        .unwrap_err();
    assert!(
        matches!(err, CallError::Timeout { after } if after == Duration::from_millis(30)),
        "{err}"
    );
}

#[tokio::test]
async fn oversized_output_is_truncated_with_a_notice() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("big"), "a".repeat(5000) + &"z".repeat(5000)).unwrap();
    let e = engine(dir.path(), "[tools.fs_read]\nmax_output_bytes = 1000", None);
    let out = text(
        &e.call(&session("s"), "fs_read", json!({"path": "big"}))
            .await
            .result
            .unwrap(),
    );
    assert!(out.len() < 1300, "{}", out.len());
    assert!(
        out.starts_with("aaa") && out.trim_end().ends_with("zzz"),
        "head and tail kept"
    );
    assert!(out.contains("truncated"), "{out}");
}

#[tokio::test]
async fn external_output_is_trust_wrapped_and_cannot_close_the_wrapper() {
    let dir = tempfile::tempdir().unwrap();
    // External tools ask by default (docs/policy.md); this test is about wrapping.
    let e = engine(dir.path(), "[tools.web]\npolicy = \"allow\"", None);
    let def = toolgate::tool::ToolDef::new(
        toolgate::tool::ToolName::new("web").unwrap(),
        "web",
        crate::common::obj(json!({"type": "object", "properties": {"text": {"type": "string"}}})),
    )
    .with_trust(toolgate::tool::Trust::External);
    // The tool returns what it is given, as a page would return its text.
    crate::common::register_def(&e, def, move |args| async move {
        Ok(ToolResult::text(args["text"].as_str().unwrap_or_default()))
    });
    for hostile in crate::common::escapes::WRAPPER_ESCAPES {
        let r = e
            .call(&session("s"), "web", json!({"text": hostile}))
            .await
            .result
            .unwrap();
        let boundary = r.meta["trust_boundary"].as_str().unwrap().to_owned();
        let wrapped = text(&r);
        assert!(wrapped.contains(hostile), "content kept verbatim");
        assert_eq!(
            wrapped.matches(&boundary).count(),
            2,
            "only the real tags carry the id: {wrapped}"
        );
        let close = format!("</untrusted-output id=\"{boundary}\">");
        assert!(
            wrapped.trim_end().ends_with(&close),
            "the real close tag ends it: {wrapped}"
        );
    }
    assert!(!toolgate::pipeline::trust::system_prompt().is_empty());
}

#[tokio::test]
async fn every_call_is_in_the_audit_log_before_the_reply_with_secrets_redacted() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("audit.db");
    let log = AuditLog::open(&db).await.unwrap();
    let l2 = log.clone();
    let e = engine_adjusted(dir.path(), "", None, move |b| b.audit(l2));
    register(
        &e,
        "login",
        json!({"type": "object", "properties": {"user": {"type": "string"}, "password": {"type": "string", "writeOnly": true}}}),
        |_| async { Ok(ToolResult::text("welcome")) },
    );
    let s = session("audited");
    e.call(&s, "login", json!({"user": "ann", "password": "hunter2"}))
        .await
        .result
        .unwrap();
    e.call(&s, "fs_read", json!({"path": "/etc/passwd"}))
        .await
        .result
        .unwrap_err();
    e.call(&s, "nope", json!({})).await.result.unwrap_err();
    // No flush, and a second handle (as `toolgate audit` beside the
    // daemon): each reply was only returned after its row was journaled.
    let rows = AuditLog::open(&db)
        .await
        .unwrap()
        .recent_calls(10)
        .await
        .unwrap();
    let summary: Vec<(&str, &str, &str)> = rows
        .iter()
        .map(|r| (r.tool.as_str(), r.decision.as_str(), r.outcome.as_str()))
        .collect();
    assert_eq!(
        summary,
        [
            ("login", "allowed", "ok"),
            ("fs_read", "refused", "error"),
            ("nope", "refused", "error")
        ]
    );
    assert_eq!(rows[0].args, r#"{"password":"[redacted]","user":"ann"}"#);
    assert_eq!(rows[1].error_kind.as_deref(), Some("guard_denied"));
    let all: Value = serde_json::to_value(&rows).unwrap();
    assert!(!all.to_string().contains("hunter2"));
}
