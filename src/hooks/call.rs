//! One agent tool call as a hook reports it, the same for every agent: what
//! the adapters parse the agents' payloads into, and the parameters of the
//! `toolgate/hook` agent-socket method.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::HookAgent;

/// Before the agent runs the tool (it waits for the answer), or after.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// The agent asks whether to run the tool.
    Before,
    /// The agent reports how the tool ended.
    After,
}

/// How the agent says its tool ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "status")]
pub enum Ended {
    /// The tool ran; `text` is its output as the agent reported it.
    Ok {
        /// The output, as text.
        text: String,
        /// The agent marked the output as an error (a failed command).
        #[serde(default)]
        is_error: bool,
    },
    /// The tool failed or was interrupted.
    Failed {
        /// Why, in the agent's words.
        message: String,
    },
}

/// A tool call of a coding agent, as one of its hooks reports it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct HookCall {
    /// Which agent (its client id on the wire).
    #[serde(with = "agent_id")]
    pub agent: HookAgent,
    /// Before or after the tool runs.
    pub phase: Phase,
    /// The agent's session (conversation) id; empty when it gives none.
    pub session: String,
    /// What ties the call's two hooks together: the agent's tool-use id
    /// when it has one, else [`fallback_key`] of what both hooks see.
    pub call_key: String,
    /// The agent's tool name, as the agent spells it (`Bash`,
    /// `run_shell_command`, `Shell`).
    pub tool: String,
    /// The tool's input, as the agent gave it.
    pub input: Value,
    /// The agent's working directory, when it says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// How the tool ended (only after).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended: Option<Ended>,
}

/// The key of a call whose agent gives no tool-use id: a digest of the
/// tool and its input, which the before and the after hook both see.
pub fn fallback_key(tool: &str, input: &Value) -> String {
    let mut text = String::with_capacity(128);
    text.push_str(tool);
    text.push('\0');
    crate::canonical::write_canonical(input, &mut text);
    let digest = Sha256::digest(text.as_bytes());
    format!("sha256:{}", hex::encode(&digest[..12]))
}

mod agent_id {
    use serde::{Deserialize, Deserializer, Serializer};

    use crate::hooks::HookAgent;

    pub(super) fn serialize<S: Serializer>(agent: &HookAgent, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(agent.id())
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<HookAgent, D::Error> {
        let id = String::deserialize(d)?;
        id.parse().map_err(serde::de::Error::custom)
    }
}

/// What toolgate answers a before-hook.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    /// Run it: every stage passed (a person approved it, if one was asked).
    Allow,
    /// Do not run it; the reason says why (the model reads it).
    Deny,
    /// Let the agent ask its user in its own prompt (toolgate could not
    /// decide, e.g. it is not running, or nobody can approve).
    Ask,
    /// No opinion: toolgate already governs this call another way (a call
    /// of toolgate's own MCP tools), so the agent goes on as if there were
    /// no hook.
    Abstain,
}

/// The answer to a before-hook: the `toolgate/hook` result, and what the
/// adapters render in the agent's format.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Answer {
    /// The decision.
    pub decision: Decision,
    /// Why, for the model and the person (empty for a plain allow).
    #[serde(default)]
    pub reason: String,
    /// The engine's call id (the audit row), when a governed call ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_id: Option<u64>,
}

impl Answer {
    /// An answer without a call id.
    pub fn new(decision: Decision, reason: impl Into<String>) -> Self {
        Self {
            decision,
            reason: reason.into(),
            call_id: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_fallback_key_ignores_key_order_and_tells_inputs_apart() {
        let a = fallback_key("Shell", &json!({"command": "ls", "cwd": "/p"}));
        let b = fallback_key("Shell", &json!({"cwd": "/p", "command": "ls"}));
        assert_eq!(a, b);
        assert_ne!(
            a,
            fallback_key("Shell", &json!({"command": "ls -l", "cwd": "/p"}))
        );
        assert_ne!(
            a,
            fallback_key("Read", &json!({"command": "ls", "cwd": "/p"}))
        );
    }

    #[test]
    fn a_call_round_trips_on_the_wire_with_its_agent_id() {
        let call = HookCall {
            agent: HookAgent::GeminiCli,
            phase: Phase::After,
            session: "s".into(),
            call_key: "k".into(),
            tool: "run_shell_command".into(),
            input: json!({"command": "ls"}),
            cwd: None,
            ended: Some(Ended::Ok {
                text: "a".into(),
                is_error: false,
            }),
        };
        let wire = serde_json::to_value(&call).unwrap();
        assert_eq!(wire["agent"], "gemini-cli");
        assert_eq!(wire["ended"]["status"], "ok");
        assert_eq!(serde_json::from_value::<HookCall>(wire).unwrap(), call);
        let bad = json!({"agent": "vscode", "phase": "before", "session": "", "callKey": "", "tool": "x", "input": {}});
        let err = serde_json::from_value::<HookCall>(bad)
            .unwrap_err()
            .to_string();
        assert!(err.contains("not an agent with hooks"), "{err}");
    }
}
