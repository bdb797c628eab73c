use std::path::PathBuf;

use serde_json::{Value, json};

use super::*;
use crate::context::{Caller, SessionId, SessionState};
use crate::error::ErrorKind;
use crate::tool::Tool;

struct Fixture {
    _tmp: tempfile::TempDir,
    root: PathBuf,
    def: ToolDef,
    tool: Arc<dyn Tool>,
}

fn fixture(max_timeout: Duration) -> Fixture {
    let tmp = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(tmp.path()).unwrap();
    std::fs::create_dir(root.join("sub")).unwrap();
    let roots = Arc::new(PathRoots::new(std::slice::from_ref(&root)).unwrap());
    let (def, tool) = tool(roots, max_timeout, Barrier::unconfined()).unwrap();
    Fixture {
        _tmp: tmp,
        root,
        def,
        tool,
    }
}

fn ctx() -> CallContext {
    CallContext {
        call_id: 1,
        caller: Arc::new(Caller::via("test")),
        session: SessionId::new("s"),
        state: SessionState::default(),
    }
}

impl Fixture {
    async fn call(&self, args: Value) -> Result<ToolResult, CallError> {
        self.tool.call(args, &ctx()).await
    }
}

#[test]
fn definition_is_critical_and_guards_cwd_and_command() {
    let f = fixture(DEFAULT_TIMEOUT);
    assert_eq!(f.def.name.as_str(), "shell_exec");
    assert_eq!(f.def.risk, Risk::Critical);
    assert_eq!(f.def.guards.len(), 2);
    assert_eq!(f.def.guards[0].arg, "cwd");
    assert_eq!(f.def.guards[0].kind, GuardKind::Path);
    assert_eq!(
        f.def.guards[0].default.as_deref(),
        Some(""),
        "an absent cwd is checked as the first root"
    );
    assert_eq!(f.def.guards[1].arg, "command");
    assert_eq!(f.def.guards[1].kind, GuardKind::Command);
    let required = &f.def.input_schema["required"];
    assert_eq!(required, &json!(["command"]));
}

#[test]
fn timeouts_are_capped_by_the_maximum() {
    let roots = Arc::new(PathRoots::empty());
    let s = ShellExec::new(
        Arc::clone(&roots),
        Duration::from_secs(10),
        Barrier::unconfined(),
    );
    assert_eq!(s.timeout(None), Duration::from_secs(10));
    assert_eq!(s.timeout(Some(500)), Duration::from_millis(500));
    assert_eq!(s.timeout(Some(60_000)), Duration::from_secs(10));
    let s = ShellExec::new(roots, Duration::from_secs(120), Barrier::unconfined());
    assert_eq!(s.timeout(None), DEFAULT_TIMEOUT);
}

#[tokio::test]
async fn captures_stdout_stderr_and_success() {
    let f = fixture(DEFAULT_TIMEOUT);
    let r = f
        .call(json!({"command": "echo out; echo err >&2"}))
        .await
        .unwrap();
    assert!(!r.is_error);
    assert_eq!(
        r.joined_text(),
        "exit code: 0\n--- stdout ---\nout\n\n--- stderr ---\nerr\n"
    );
    assert_eq!(r.meta["exit_code"], 0);
}

#[tokio::test]
async fn non_zero_exit_is_an_error_result_with_code_and_output() {
    let f = fixture(DEFAULT_TIMEOUT);
    let r = f
        .call(json!({"command": "echo boom >&2; exit 3"}))
        .await
        .unwrap();
    assert!(r.is_error);
    assert!(r.joined_text().starts_with("exit code: 3\n"));
    assert!(r.joined_text().contains("boom"));
    assert_eq!(r.meta["exit_code"], 3);
}

#[tokio::test]
async fn runs_in_the_confined_cwd() {
    let f = fixture(DEFAULT_TIMEOUT);
    let r = f.call(json!({"command": "pwd"})).await.unwrap();
    assert!(r.joined_text().contains(&format!("{}\n", f.root.display())));
    let r = f
        .call(json!({"command": "pwd", "cwd": "sub"}))
        .await
        .unwrap();
    assert!(
        r.joined_text()
            .contains(&format!("{}\n", f.root.join("sub").display()))
    );
}

#[tokio::test]
async fn cwd_outside_the_roots_is_refused_before_running() {
    let f = fixture(DEFAULT_TIMEOUT);
    let marker = f.root.join("ran");
    let cmd = format!("touch {}", marker.display());
    for cwd in ["..", "/etc"] {
        let e = f
            .call(json!({"command": cmd, "cwd": cwd}))
            .await
            .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::GuardDenied, "{e}");
        assert!(
            matches!(&e, CallError::GuardDenied { arg, .. } if arg == "cwd"),
            "{e:?}"
        );
    }
    assert!(!marker.exists());
}

#[tokio::test]
async fn no_roots_means_no_shell() {
    let (_, tool) = tool(
        Arc::new(PathRoots::empty()),
        DEFAULT_TIMEOUT,
        Barrier::unconfined(),
    )
    .unwrap();
    let e = tool
        .call(json!({"command": "true"}), &ctx())
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::GuardDenied);
    assert!(e.to_string().contains("no file-system roots"), "{e}");
}

#[tokio::test]
async fn output_is_bounded_and_says_how_much_was_dropped() {
    let f = fixture(DEFAULT_TIMEOUT);
    let extra = 1000;
    let cmd = format!("head -c {} /dev/zero | tr '\\0' a", OUTPUT_LIMIT + extra);
    let r = f.call(json!({"command": cmd})).await.unwrap();
    assert_eq!(r.meta["stdout_dropped"], extra);
    assert!(r.joined_text().ends_with(&format!(
        "[{extra} more bytes of stdout dropped; output is capped at {OUTPUT_LIMIT} bytes]"
    )));
}

#[tokio::test]
async fn background_jobs_do_not_keep_a_finished_command_waiting() {
    // `sleep` inherits stdout; without killing the group after `sh` exits,
    // reading stdout would wait the full 30 s and report a timeout.
    let f = fixture(Duration::from_secs(20));
    let r = f
        .call(json!({"command": "sleep 30 & echo started"}))
        .await
        .unwrap();
    assert!(!r.is_error);
    assert!(r.joined_text().contains("started"));
}

#[tokio::test]
async fn timeout_is_a_timeout_error() {
    let f = fixture(DEFAULT_TIMEOUT);
    let e = f
        .call(json!({"command": "sleep 30", "timeout_ms": 200}))
        .await
        .unwrap_err();
    assert!(
        matches!(e, CallError::Timeout { after } if after == Duration::from_millis(200)),
        "{e:?}"
    );
}
