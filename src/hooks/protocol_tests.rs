use serde_json::{Value, json};

use super::*;
use crate::hooks::call::Ended;

fn fixture(agent: &str, name: &str) -> Vec<u8> {
    let path = format!(
        "{}/tests/fixtures/hooks/{agent}/{name}.json",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn out(r: &Rendered) -> Value {
    serde_json::from_str(&r.stdout).unwrap()
}

#[test]
fn claude_codes_pre_and_post_tool_use_parse_into_one_call() {
    let pre = parse(
        HookAgent::ClaudeCode,
        &fixture("claude-code", "pre_tool_use_bash"),
    )
    .unwrap();
    assert_eq!(pre.event, "PreToolUse");
    assert!(!pre.own_tool);
    assert_eq!(pre.call.phase, Phase::Before);
    assert_eq!(pre.call.session, "abc123");
    assert_eq!(pre.call.call_key, "toolu_01ABC123");
    assert_eq!(pre.call.tool, "Bash");
    assert_eq!(pre.call.input["command"], "npm test");
    assert_eq!(pre.call.cwd.as_deref(), Some("/home/user/my-project"));
    let post = parse(
        HookAgent::ClaudeCode,
        &fixture("claude-code", "post_tool_use_bash"),
    )
    .unwrap();
    assert_eq!(
        (post.call.phase, post.call.call_key.as_str()),
        (Phase::After, "toolu_01ABC123")
    );
    let Some(Ended::Ok {
        text,
        is_error: false,
    }) = post.call.ended
    else {
        panic!("{:?}", post.call.ended)
    };
    assert!(text.contains("12 passing"), "{text}");
    let failed = parse(
        HookAgent::ClaudeCode,
        &fixture("claude-code", "post_tool_use_failure_bash"),
    )
    .unwrap();
    assert_eq!(
        failed.call.ended,
        Some(Ended::Failed {
            message: "Command exited with non-zero status code 1".into()
        })
    );
    let own = parse(
        HookAgent::ClaudeCode,
        &fixture("claude-code", "pre_tool_use_mcp_toolgate"),
    )
    .unwrap();
    assert!(own.own_tool);
}

#[test]
fn claude_code_reads_a_decision_and_its_reason_in_hook_specific_output() {
    let deny = Answer::new(Decision::Deny, "toolgate denied this call: no");
    let r = render(HookAgent::ClaudeCode, "PreToolUse", Phase::Before, &deny);
    assert_eq!(r.exit, 0);
    assert_eq!(
        out(&r),
        json!({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny",
               "permissionDecisionReason": "toolgate denied this call: no"}})
    );
    let abstain = render(
        HookAgent::ClaudeCode,
        "PreToolUse",
        Phase::Before,
        &Answer::new(Decision::Abstain, ""),
    );
    assert_eq!(abstain.stdout, "", "no opinion: no output at all");
    let after = render(
        HookAgent::ClaudeCode,
        "PostToolUse",
        Phase::After,
        &Answer::new(Decision::Allow, ""),
    );
    assert_eq!((after.stdout.as_str(), after.exit), ("", 0));
}

#[test]
fn cursors_shell_hooks_share_a_key_and_answer_with_permission() {
    let before = parse(
        HookAgent::Cursor,
        &fixture("cursor", "before_shell_execution"),
    )
    .unwrap();
    let after = parse(
        HookAgent::Cursor,
        &fixture("cursor", "after_shell_execution"),
    )
    .unwrap();
    assert_eq!(before.call.tool, "Shell");
    assert_eq!(before.call.session, "conv-123");
    assert_eq!(
        before.call.call_key, after.call.call_key,
        "the after-hook finds the before-hook's call"
    );
    assert!(before.call.call_key.starts_with("gen-456:"));
    assert_eq!(
        after.call.ended,
        Some(Ended::Ok {
            text: "added 64 packages in 2s".into(),
            is_error: false
        })
    );
    let ask = render(
        HookAgent::Cursor,
        "beforeShellExecution",
        Phase::Before,
        &Answer::new(Decision::Ask, "why"),
    );
    let v = out(&ask);
    assert_eq!(
        (v["permission"].as_str(), v["agent_message"].as_str()),
        (Some("ask"), Some("why"))
    );
    // A read takes allow or deny only: an undecided read is refused.
    let read = render(
        HookAgent::Cursor,
        "beforeReadFile",
        Phase::Before,
        &Answer::new(Decision::Ask, "why"),
    );
    assert_eq!(out(&read)["permission"], "deny");
}

#[test]
fn cursors_mcp_input_string_is_parsed_and_the_file_content_is_dropped() {
    let mcp = parse(
        HookAgent::Cursor,
        &fixture("cursor", "before_mcp_execution"),
    )
    .unwrap();
    assert_eq!(mcp.call.tool, "MCP:database_query");
    assert_eq!(mcp.call.input, json!({"query": "SELECT * FROM users"}));
    let read = parse(HookAgent::Cursor, &fixture("cursor", "before_read_file")).unwrap();
    assert_eq!(
        read.call.input,
        json!({"file_path": "/home/user/my-project/secrets.env"})
    );
}

#[test]
fn gemini_clis_tool_hooks_share_a_key_and_answer_with_decision() {
    let before = parse(
        HookAgent::GeminiCli,
        &fixture("gemini-cli", "before_tool_shell"),
    )
    .unwrap();
    let after = parse(
        HookAgent::GeminiCli,
        &fixture("gemini-cli", "after_tool_shell"),
    )
    .unwrap();
    assert_eq!(before.call.call_key, after.call.call_key);
    assert_eq!(before.call.tool, "run_shell_command");
    let Some(Ended::Ok { text, .. }) = after.call.ended else {
        panic!()
    };
    assert!(text.contains("Exit Code: 0"));
    let deny = render(
        HookAgent::GeminiCli,
        "BeforeTool",
        Phase::Before,
        &Answer::new(Decision::Deny, "no"),
    );
    assert_eq!(out(&deny), json!({"decision": "deny", "reason": "no"}));
    assert_eq!(deny.exit, 0);
}

#[test]
fn unusable_payloads_get_a_one_line_error_and_never_an_allow() {
    for agent in HookAgent::ALL {
        let e = parse(agent, b"{not json").unwrap_err();
        let r = render_unusable(agent, &e);
        assert_eq!(r.exit, 2, "{agent}: unreadable → block");
        assert!(
            !r.stderr.contains('\n') && r.stderr.contains("is not JSON"),
            "{}",
            r.stderr
        );
        assert!(!r.stdout.contains("allow"));
    }
    // The event is known but a field is missing: the agent asks its user.
    let e = parse(
        HookAgent::ClaudeCode,
        br#"{"hook_event_name": "PreToolUse", "tool_input": {}}"#,
    )
    .unwrap_err();
    assert!(e.to_string().contains("has no `tool_name`"), "{e}");
    let r = render_unusable(HookAgent::ClaudeCode, &e);
    assert_eq!(out(&r)["hookSpecificOutput"]["permissionDecision"], "ask");
    let e = parse(
        HookAgent::Cursor,
        br#"{"hook_event_name": "beforeShellExecution", "command": 7}"#,
    )
    .unwrap_err();
    assert!(
        e.to_string().contains("`command` that is not a string"),
        "{e}"
    );
    assert_eq!(
        out(&render_unusable(HookAgent::Cursor, &e))["permission"],
        "ask"
    );
    let e = parse(
        HookAgent::GeminiCli,
        br#"{"hook_event_name": "SessionStart"}"#,
    )
    .unwrap_err();
    assert!(
        e.to_string()
            .contains("does not handle (it handles BeforeTool and AfterTool)"),
        "{e}"
    );
}

#[test]
fn unknown_fields_are_ignored() {
    let mut v: Value =
        serde_json::from_slice(&fixture("claude-code", "pre_tool_use_write")).unwrap();
    v["a_field_from_a_future_version"] = json!({"x": 1});
    let parsed = parse(HookAgent::ClaudeCode, v.to_string().as_bytes()).unwrap();
    assert_eq!(parsed.call.tool, "Write");
}
