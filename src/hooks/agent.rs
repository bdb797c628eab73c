//! The coding agents whose built-in tools toolgate gates through hooks.

use std::fmt;
use std::str::FromStr;

/// A hook-capable agent. Its [`id`](HookAgent::id) is the client id used on
/// the CLI (`toolgate hook run claude-code`), in configs and on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HookAgent {
    /// Anthropic's Claude Code.
    ClaudeCode,
    /// The Cursor editor's agent.
    Cursor,
    /// Google's Gemini CLI.
    GeminiCli,
}

impl HookAgent {
    /// Every hook-capable agent, in the order people see them.
    pub const ALL: [HookAgent; 3] = [
        HookAgent::ClaudeCode,
        HookAgent::Cursor,
        HookAgent::GeminiCli,
    ];

    /// The stable kebab-case client id.
    pub fn id(self) -> &'static str {
        match self {
            HookAgent::ClaudeCode => "claude-code",
            HookAgent::Cursor => "cursor",
            HookAgent::GeminiCli => "gemini-cli",
        }
    }

    /// The name people know the agent by; approvals, Live and the audit
    /// name the caller with it.
    pub fn display_name(self) -> &'static str {
        match self {
            HookAgent::ClaudeCode => "Claude Code",
            HookAgent::Cursor => "Cursor",
            HookAgent::GeminiCli => "Gemini CLI",
        }
    }
}

/// The agent whose own tool `name` is (`claude-code__Bash` → Claude Code
/// and `Bash`): hooked tools are named `<agent id>__<tool>`, and no
/// upstream server may take an agent's id as its name
/// ([`crate::config::servers::check_server_name`]), so the prefix is
/// unambiguous.
pub fn agent_tool(name: &str) -> Option<(HookAgent, &str)> {
    let (prefix, tool) = name.split_once("__")?;
    let agent = prefix.parse().ok()?;
    Some((agent, tool))
}

/// How people see the tool named `name` when it is a hooked agent's own
/// ("Claude Code · Bash" for `claude-code__Bash`); `None` for any other
/// tool, which people see by its name.
pub fn shown_as(name: &str) -> Option<String> {
    agent_tool(name).map(|(agent, tool)| crate::hooks::prepare::shown_name(agent, tool))
}

impl fmt::Display for HookAgent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.id())
    }
}

/// A client id that names no hook-capable agent.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is not an agent with hooks; hooks exist for claude-code, cursor and gemini-cli")]
pub struct UnknownHookAgent(pub String);

impl FromStr for HookAgent {
    type Err = UnknownHookAgent;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        HookAgent::ALL
            .into_iter()
            .find(|agent| agent.id() == s)
            .ok_or_else(|| UnknownHookAgent(s.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hooked_tool_names_read_back_as_their_agent() {
        assert_eq!(
            agent_tool("claude-code__Bash"),
            Some((HookAgent::ClaudeCode, "Bash"))
        );
        assert_eq!(agent_tool("github__create_issue"), None);
        assert_eq!(
            shown_as("gemini-cli__run_shell_command").as_deref(),
            Some("Gemini CLI · run_shell_command")
        );
        assert_eq!(agent_tool("shell_exec"), None);
    }

    #[test]
    fn ids_round_trip_and_unknown_ids_say_which_exist() {
        for agent in HookAgent::ALL {
            assert_eq!(agent.id().parse::<HookAgent>(), Ok(agent));
        }
        let err = "vscode".parse::<HookAgent>().unwrap_err();
        assert!(
            err.to_string()
                .contains("claude-code, cursor and gemini-cli"),
            "{err}"
        );
    }
}
