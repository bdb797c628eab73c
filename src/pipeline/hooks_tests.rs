use std::sync::Mutex;

use serde_json::json;

use super::*;
use crate::pipeline::testing::{Script, fail, run_stage, simple_call};
use crate::tool::Content;

type Log = Arc<Mutex<Vec<String>>>;

/// What a test hook does on each side.
#[derive(Clone)]
enum Act {
    Pass,
    Block(&'static str),
    /// BEFORE: set `args[key] = "rewritten"`; AFTER: replace the text.
    Rewrite(&'static str),
}

struct TestHook {
    name: &'static str,
    before: Act,
    after: Act,
    log: Log,
}

impl TestHook {
    fn arc(name: &'static str, before: Act, after: Act, log: &Log) -> Arc<dyn Hook> {
        Arc::new(Self {
            name,
            before,
            after,
            log: log.clone(),
        })
    }

    fn record(&self, side: &str) {
        self.log
            .lock()
            .unwrap()
            .push(format!("{side}:{}", self.name));
    }
}

impl Hook for TestHook {
    fn name(&self) -> &str {
        self.name
    }

    fn before<'a>(&'a self, call: HookCall<'a>, args: &'a mut Value) -> BoxFuture<'a, HookVerdict> {
        Box::pin(async move {
            self.record("before");
            assert_eq!(call.tool.name.as_str(), "t");
            assert_eq!(call.ctx.session.as_str(), "s1");
            match &self.before {
                Act::Pass => HookVerdict::Continue,
                Act::Block(r) => HookVerdict::Block {
                    reason: (*r).to_owned(),
                },
                Act::Rewrite(key) => {
                    args[*key] = json!("rewritten");
                    HookVerdict::Continue
                }
            }
        })
    }

    fn after<'a>(
        &'a self,
        _call: HookCall<'a>,
        result: &'a mut ToolResult,
    ) -> BoxFuture<'a, HookVerdict> {
        Box::pin(async move {
            self.record("after");
            match &self.after {
                Act::Pass => HookVerdict::Continue,
                Act::Block(r) => HookVerdict::Block {
                    reason: (*r).to_owned(),
                },
                Act::Rewrite(text) => {
                    result.content = vec![Content::text(*text)];
                    HookVerdict::Continue
                }
            }
        })
    }
}

/// A hook implementing nothing: both defaults must continue.
struct Silent;

impl Hook for Silent {
    fn name(&self) -> &str {
        "silent"
    }
}

fn log() -> Log {
    Arc::default()
}

fn entries(log: &Log) -> Vec<String> {
    log.lock().unwrap().clone()
}

fn notes(call: &Call) -> Vec<String> {
    call.notes().iter().map(|(_, n)| n.clone()).collect()
}

#[tokio::test]
async fn hooks_run_in_order_on_both_sides() {
    let l = log();
    let stage = Hooks::new(vec![
        TestHook::arc("a", Act::Pass, Act::Pass, &l),
        Arc::new(Silent),
        TestHook::arc("b", Act::Pass, Act::Pass, &l),
    ]);
    let script = Script::new(vec![]);
    let mut call = simple_call(json!({"x": 1}));
    let out = run_stage(&stage, &mut call, &script).await.unwrap();
    assert_eq!(out.joined_text(), "default");
    assert_eq!(entries(&l), ["before:a", "before:b", "after:a", "after:b"]);
    assert_eq!(script.seen(), vec![json!({"x": 1})]);
    assert!(call.notes().is_empty(), "{:?}", call.notes());
}

#[tokio::test]
async fn before_block_stops_later_hooks_and_the_call() {
    let l = log();
    let stage = Hooks::new(vec![
        TestHook::arc("a", Act::Pass, Act::Pass, &l),
        TestHook::arc("guard", Act::Block("no secrets"), Act::Pass, &l),
        TestHook::arc("c", Act::Pass, Act::Pass, &l),
    ]);
    let script = Script::new(vec![]);
    let mut call = simple_call(json!({}));
    let err = run_stage(&stage, &mut call, &script).await.unwrap_err();
    assert!(
        matches!(&err, CallError::Blocked { hook, reason } if hook == "guard" && reason == "no secrets"),
        "{err:?}"
    );
    assert_eq!(err.to_string(), "call blocked by hook `guard`: no secrets");
    assert_eq!(script.calls(), 0);
    assert_eq!(entries(&l), ["before:a", "before:guard"]);
}

#[tokio::test]
async fn before_rewrite_reaches_the_tool_and_is_noted() {
    let l = log();
    let stage = Hooks::new(vec![
        TestHook::arc("redact", Act::Rewrite("token"), Act::Pass, &l),
        TestHook::arc("noop", Act::Pass, Act::Pass, &l),
    ]);
    let script = Script::new(vec![]);
    let mut call = simple_call(json!({"token": "secret", "q": 1}));
    run_stage(&stage, &mut call, &script).await.unwrap();
    assert_eq!(script.seen(), vec![json!({"token": "rewritten", "q": 1})]);
    assert_eq!(notes(&call), ["hook `redact` rewrote the arguments"]);
}

#[tokio::test]
async fn after_rewrite_and_block() {
    let l = log();
    let stage = Hooks::new(vec![
        TestHook::arc("scrub", Act::Pass, Act::Rewrite("scrubbed"), &l),
        TestHook::arc("dlp", Act::Pass, Act::Block("leaks a key"), &l),
        TestHook::arc("late", Act::Pass, Act::Pass, &l),
    ]);
    let script = Script::new(vec![Ok(ToolResult::text("AKIA…"))]);
    let mut call = simple_call(json!({}));
    let err = run_stage(&stage, &mut call, &script).await.unwrap_err();
    assert!(
        matches!(&err, CallError::Blocked { hook, reason } if hook == "dlp" && reason == "leaks a key"),
        "{err:?}"
    );
    assert_eq!(script.calls(), 1);
    assert_eq!(
        entries(&l),
        [
            "before:scrub",
            "before:dlp",
            "before:late",
            "after:scrub",
            "after:dlp"
        ]
    );
    assert_eq!(
        notes(&call),
        ["hook `scrub` rewrote the result", "result blocked by `dlp`"]
    );

    let stage = Hooks::new(vec![TestHook::arc(
        "scrub",
        Act::Pass,
        Act::Rewrite("scrubbed"),
        &l,
    )]);
    let script = Script::new(vec![Ok(ToolResult::text("raw"))]);
    let out = run_stage(&stage, &mut simple_call(json!({})), &script)
        .await
        .unwrap();
    assert_eq!(out.joined_text(), "scrubbed");
}

#[tokio::test]
async fn after_hooks_skip_errors() {
    let l = log();
    let stage = Hooks::new(vec![TestHook::arc(
        "a",
        Act::Pass,
        Act::Block("never seen"),
        &l,
    )]);
    let script = Script::new(vec![fail(CallError::tool_failed("boom"))]);
    let mut call = simple_call(json!({}));
    let err = run_stage(&stage, &mut call, &script).await.unwrap_err();
    assert!(matches!(&err, CallError::ToolFailed { message, .. } if message == "boom"));
    assert_eq!(entries(&l), ["before:a"]);
}

#[tokio::test]
async fn no_hooks_is_a_pass_through() {
    let stage = Hooks::new(vec![]);
    let script = Script::new(vec![Ok(ToolResult::text("x"))]);
    let mut call = simple_call(json!({"a": 1}));
    let out = run_stage(&stage, &mut call, &script).await.unwrap();
    assert_eq!(out, ToolResult::text("x"));
    assert_eq!(script.seen(), vec![json!({"a": 1})]);
}
