//! Cursor's hook protocol (<https://cursor.com/docs/agent/hooks>).
//!
//! stdin, every event: `conversation_id`, `generation_id`,
//! `hook_event_name`, `workspace_roots`; then per event:
//! - `beforeShellExecution` / `afterShellExecution`: `command`, `cwd`
//!   (after: `output`, `duration`);
//! - `beforeMCPExecution` / `afterMCPExecution`: `tool_name`,
//!   `tool_input` (a JSON object, or a string holding one), and the
//!   server's `url` or `command` (after: `result_json`, `duration`);
//! - `beforeReadFile`: `file_path`, `content`, `attachments`.
//!
//! A before-event answers `{"permission": "allow" | "deny" | "ask",
//! "user_message": "…", "agent_message": "…"}` (`beforeReadFile`: allow or
//! deny only). Cursor's page has spelled the messages both `userMessage`
//! and `user_message` over its versions; both are written, and Cursor
//! ignores the spelling it does not read. There is no tool-use id: a
//! call's two hooks are tied by the generation id and the command (or MCP
//! tool and input).

use serde_json::{Value, json};

use super::HookAgent;
use super::call::{Answer, Decision, Ended, HookCall, Phase, fallback_key};
use super::protocol::{HookInputError, Parsed, Rendered, as_text, event_of, opt_str, str_field};

const AGENT: HookAgent = HookAgent::Cursor;

pub(super) fn phase_of(event: &str) -> Option<Phase> {
    match event {
        "beforeShellExecution" | "beforeMCPExecution" | "beforeReadFile" => Some(Phase::Before),
        "afterShellExecution" | "afterMCPExecution" => Some(Phase::After),
        _ => None,
    }
}

/// The tool of an event, its input, and what ties its two hooks together.
struct Tool {
    name: String,
    input: Value,
    key_input: Value,
    own: bool,
}

pub(super) fn parse(v: Value) -> Result<Parsed, HookInputError> {
    let (event, phase) = event_of(AGENT, &v)?;
    let tool = match event.as_str() {
        "beforeShellExecution" | "afterShellExecution" => shell(&event, &v)?,
        "beforeMCPExecution" | "afterMCPExecution" => mcp(&event, &v)?,
        _ => read(&event, &v)?,
    };
    let ended = match event.as_str() {
        "afterShellExecution" => Some(Ended::Ok {
            text: opt_str(&v, "output"),
            is_error: false,
        }),
        "afterMCPExecution" => Some(Ended::Ok {
            text: as_text(v.get("result_json").unwrap_or(&Value::Null)),
            is_error: false,
        }),
        _ => None,
    };
    let generation = opt_str(&v, "generation_id");
    Ok(Parsed {
        own_tool: tool.own,
        call: HookCall {
            agent: AGENT,
            phase,
            session: opt_str(&v, "conversation_id"),
            call_key: format!("{generation}:{}", fallback_key(&tool.name, &tool.key_input)),
            tool: tool.name,
            input: tool.input,
            cwd: v.get("cwd").and_then(Value::as_str).map(str::to_owned),
            ended,
        },
        event,
    })
}

fn shell(event: &str, v: &Value) -> Result<Tool, HookInputError> {
    let command = str_field(AGENT, event, v, "command")?;
    Ok(Tool {
        name: "Shell".into(),
        input: json!({"command": command}),
        key_input: json!({"command": command}),
        own: false,
    })
}

fn mcp(event: &str, v: &Value) -> Result<Tool, HookInputError> {
    let name = str_field(AGENT, event, v, "tool_name")?;
    let input = match v.get("tool_input") {
        // Cursor has sent the input both as an object and as a string
        // holding the object.
        Some(Value::String(s)) => {
            serde_json::from_str(s).unwrap_or_else(|_| Value::String(s.clone()))
        }
        Some(other) => other.clone(),
        None => json!({}),
    };
    let server = opt_str(v, "command");
    Ok(Tool {
        name: format!("MCP:{name}"),
        key_input: json!({"tool": name, "input": input}),
        input,
        own: is_toolgate_bridge(&server),
    })
}

fn read(event: &str, v: &Value) -> Result<Tool, HookInputError> {
    let path = str_field(AGENT, event, v, "file_path")?;
    // The file's content is in the payload too; it never leaves the hook.
    Ok(Tool {
        name: "Read".into(),
        input: json!({"file_path": path}),
        key_input: json!({"file_path": path}),
        own: false,
    })
}

/// Whether an MCP server's command is toolgate's bridge (the entry connect
/// writes: `<toolgate> mcp-bridge --client Cursor`).
fn is_toolgate_bridge(command: &str) -> bool {
    let mut words = command.split_whitespace();
    let program = words.next().unwrap_or_default();
    let named_toolgate = std::path::Path::new(program.trim_matches(['"', '\'']))
        .file_name()
        .is_some_and(|f| f == "toolgate");
    named_toolgate && words.any(|w| w == "mcp-bridge")
}

pub(super) fn render(event: &str, answer: &Answer) -> Rendered {
    let permission = match (answer.decision.clone(), event) {
        (Decision::Allow | Decision::Abstain, _) => "allow",
        (Decision::Deny, _) => "deny",
        // beforeReadFile takes allow or deny only: a read toolgate cannot
        // judge is refused rather than allowed unseen.
        (Decision::Ask, "beforeReadFile") => "deny",
        (Decision::Ask, _) => "ask",
    };
    if answer.decision == Decision::Abstain {
        return Rendered::json(&json!({"permission": permission}));
    }
    Rendered::json(&json!({
        "permission": permission,
        "user_message": answer.reason,
        "agent_message": answer.reason,
        "userMessage": answer.reason,
        "agentMessage": answer.reason,
    }))
}

#[cfg(test)]
mod tests {
    #[test]
    fn only_toolgates_bridge_is_its_own_server() {
        assert!(super::is_toolgate_bridge(
            "/usr/local/bin/toolgate mcp-bridge --client Cursor"
        ));
        assert!(super::is_toolgate_bridge("toolgate mcp-bridge"));
        assert!(!super::is_toolgate_bridge(
            "npx toolgate-lookalike mcp-bridge"
        ));
        assert!(!super::is_toolgate_bridge("toolgate serve"));
        assert!(!super::is_toolgate_bridge(""));
    }
}
