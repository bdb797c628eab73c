//! Claude Code's hook protocol (<https://code.claude.com/docs/en/hooks>).
//!
//! stdin: `session_id`, `cwd`, `hook_event_name`, `tool_name`,
//! `tool_input`, `tool_use_id`, and after the tool `tool_response`
//! (`PostToolUse`) or `error` (`PostToolUseFailure`). A `PreToolUse` hook
//! answers on stdout with exit code 0:
//! `{"hookSpecificOutput": {"hookEventName": "PreToolUse",
//! "permissionDecision": "allow" | "deny" | "ask",
//! "permissionDecisionReason": "…"}}`; the reason of a deny is shown to
//! the model, the reason of an ask to the user in Claude Code's prompt.

use serde_json::{Value, json};

use super::HookAgent;
use super::call::{Answer, Decision, Ended, HookCall, Phase, fallback_key};
use super::protocol::{HookInputError, Parsed, Rendered, as_text, event_of, opt_str, str_field};

const AGENT: HookAgent = HookAgent::ClaudeCode;

/// Claude Code names the tools of an MCP server `mcp__<server>__<tool>`;
/// toolgate's own server is `toolgate` (the entry connect writes).
const OWN_PREFIX: &str = "mcp__toolgate__";

pub(super) fn phase_of(event: &str) -> Option<Phase> {
    match event {
        "PreToolUse" => Some(Phase::Before),
        "PostToolUse" | "PostToolUseFailure" => Some(Phase::After),
        _ => None,
    }
}

pub(super) fn parse(v: Value) -> Result<Parsed, HookInputError> {
    let (event, phase) = event_of(AGENT, &v)?;
    let tool = str_field(AGENT, &event, &v, "tool_name")?.to_owned();
    let input = v.get("tool_input").cloned().unwrap_or_else(|| json!({}));
    let call_key = match v.get("tool_use_id").and_then(Value::as_str) {
        Some(id) if !id.is_empty() => id.to_owned(),
        _ => fallback_key(&tool, &input),
    };
    let ended = match event.as_str() {
        "PostToolUse" => Some(ended_ok(v.get("tool_response").unwrap_or(&Value::Null))),
        "PostToolUseFailure" => Some(Ended::Failed {
            message: failure(&v),
        }),
        _ => None,
    };
    Ok(Parsed {
        own_tool: tool.starts_with(OWN_PREFIX),
        call: HookCall {
            agent: AGENT,
            phase,
            session: opt_str(&v, "session_id"),
            call_key,
            tool,
            input,
            cwd: v.get("cwd").and_then(Value::as_str).map(str::to_owned),
            ended,
        },
        event,
    })
}

/// A finished tool's response: its text, and whether Claude Code marked it
/// an error (`is_error`, or a Bash command that was interrupted).
fn ended_ok(response: &Value) -> Ended {
    let is_error = response.get("is_error").and_then(Value::as_bool) == Some(true)
        || response.get("interrupted").and_then(Value::as_bool) == Some(true);
    Ended::Ok {
        text: as_text(response),
        is_error,
    }
}

fn failure(v: &Value) -> String {
    let error = opt_str(v, "error");
    let interrupted = v.get("is_interrupt").and_then(Value::as_bool) == Some(true);
    match (error.is_empty(), interrupted) {
        (true, true) => "interrupted by the user".to_owned(),
        (true, false) => "the tool failed (Claude Code gave no error text)".to_owned(),
        (false, _) => error,
    }
}

pub(super) fn render(event: &str, answer: &Answer) -> Rendered {
    let decision = match answer.decision {
        Decision::Allow => "allow",
        Decision::Deny => "deny",
        Decision::Ask => "ask",
        Decision::Abstain => return Rendered::empty(),
    };
    Rendered::json(&json!({
        "hookSpecificOutput": {
            "hookEventName": event,
            "permissionDecision": decision,
            "permissionDecisionReason": answer.reason,
        }
    }))
}
