//! What a hook answers when toolgate is not running (`[hooks]
//! when_engine_down`). Never a silent allow: by default the agent asks its
//! own user, as it would without toolgate; `deny` refuses the agent's
//! gated tools until toolgate runs again.

use schemars::JsonSchema;
use serde::Deserialize;

use super::HookAgent;
use super::call::{Answer, Decision};

/// `[hooks] when_engine_down`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum WhenEngineDown {
    /// The agent asks its own user (its usual permission prompt).
    #[default]
    Ask,
    /// The agent's gated tools are refused.
    Deny,
}

impl WhenEngineDown {
    /// The key's value, as written in the config.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Ask => "ask",
            Self::Deny => "deny",
        }
    }

    /// The answer a before-hook gives `agent` when toolgate cannot be
    /// reached (`why`, completing "toolgate …": "is not running").
    pub fn answer(self, agent: HookAgent, why: &str) -> Answer {
        let setting = format!("[hooks] when_engine_down = \"{}\"", self.as_str());
        match self {
            Self::Ask => Answer::new(
                Decision::Ask,
                format!(
                    "toolgate {why}, so {} asks you instead ({setting})",
                    agent.display_name()
                ),
            ),
            Self::Deny => Answer::new(
                Decision::Deny,
                format!(
                    "toolgate {why}, so this call is refused ({setting}); start toolgate and try again"
                ),
            ),
        }
    }
}

/// `[hooks]`, validated.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HooksConfig {
    /// See [`WhenEngineDown`].
    pub when_engine_down: WhenEngineDown,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fallback_never_allows_and_names_its_setting() {
        let ask = WhenEngineDown::default().answer(HookAgent::ClaudeCode, "is not running");
        assert_eq!(ask.decision, Decision::Ask);
        assert_eq!(
            ask.reason,
            "toolgate is not running, so Claude Code asks you instead ([hooks] when_engine_down = \"ask\")"
        );
        let deny = WhenEngineDown::Deny.answer(HookAgent::Cursor, "is not running");
        assert_eq!(deny.decision, Decision::Deny);
        let bad = toml::from_str::<crate::config::raw::RawConfig>(
            "[hooks]\nwhen_engine_down = \"allow\"\n",
        )
        .unwrap_err()
        .to_string();
        assert!(
            bad.contains("unknown variant `allow`, expected `ask` or `deny`"),
            "{bad}"
        );
    }
}
