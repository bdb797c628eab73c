//! Gemini CLI's hook protocol (<https://geminicli.com/docs/hooks/reference>).
//!
//! stdin: `session_id`, `cwd`, `hook_event_name`, `timestamp`, `tool_name`,
//! `tool_input`, and after the tool `tool_response` (`llmContent`,
//! `returnDisplay`, optional `error`). There is no tool-use id, so a call's
//! two hooks are tied by the tool and its input. A `BeforeTool` hook
//! answers `{"decision": "allow" | "deny" | "ask", "reason": "…"}` with
//! exit code 0; the reason of a deny is sent to the model as the tool's
//! error. (`ask` forces Gemini CLI's own confirmation: in its source,
//! `packages/core/src/hooks/types.ts`, though the reference page lists
//! only allow and deny; a version that does not know it goes on with its
//! usual confirmation rules, which is still the agent's own prompt.)

use serde_json::{Value, json};

use super::HookAgent;
use super::call::{Answer, Decision, Ended, HookCall, Phase, fallback_key};
use super::protocol::{HookInputError, Parsed, Rendered, as_text, event_of, opt_str, str_field};

const AGENT: HookAgent = HookAgent::GeminiCli;

/// Gemini CLI names the tools of an MCP server `mcp_<server>_<tool>`.
const OWN_PREFIX: &str = "mcp_toolgate_";

pub(super) fn phase_of(event: &str) -> Option<Phase> {
    match event {
        "BeforeTool" => Some(Phase::Before),
        "AfterTool" => Some(Phase::After),
        _ => None,
    }
}

pub(super) fn parse(v: Value) -> Result<Parsed, HookInputError> {
    let (event, phase) = event_of(AGENT, &v)?;
    let tool = str_field(AGENT, &event, &v, "tool_name")?.to_owned();
    let input = v.get("tool_input").cloned().unwrap_or_else(|| json!({}));
    let ended =
        (phase == Phase::After).then(|| ended(v.get("tool_response").unwrap_or(&Value::Null)));
    let server = v
        .pointer("/mcp_context/server_name")
        .and_then(Value::as_str);
    Ok(Parsed {
        own_tool: tool.starts_with(OWN_PREFIX) || server == Some("toolgate"),
        call: HookCall {
            agent: AGENT,
            phase,
            session: opt_str(&v, "session_id"),
            call_key: fallback_key(&tool, &input),
            tool,
            input,
            cwd: v.get("cwd").and_then(Value::as_str).map(str::to_owned),
            ended,
        },
        event,
    })
}

fn ended(response: &Value) -> Ended {
    match response.get("error") {
        Some(e) if !e.is_null() => Ended::Failed {
            message: e.get("message").map_or_else(|| as_text(e), as_text),
        },
        _ => Ended::Ok {
            text: as_text(response.get("llmContent").unwrap_or(response)),
            is_error: false,
        },
    }
}

pub(super) fn render(answer: &Answer) -> Rendered {
    let decision = match answer.decision {
        Decision::Allow => "allow",
        Decision::Deny => "deny",
        Decision::Ask => "ask",
        Decision::Abstain => return Rendered::json(&json!({})),
    };
    let mut out = json!({"decision": decision, "reason": answer.reason});
    if answer.decision == Decision::Ask {
        // Shown to the person next to Gemini CLI's own confirmation.
        out["systemMessage"] = Value::String(answer.reason.clone());
    }
    Rendered::json(&out)
}
