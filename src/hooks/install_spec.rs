//! Which hook events toolgate installs into each agent's settings, with
//! their matchers and timeouts.
//!
//! Installation (writing and removing the entries, with backups and undo)
//! lives elsewhere; this module only says *what* to install, so the
//! runtime that answers the events and the installer agree on them. Every
//! entry runs the same command, `<toolgate> hook run <client-id>`: each
//! agent's payload names its event (`hook_event_name`).
//!
//! Sources, checked against the agents' public docs:
//! - Claude Code: <https://code.claude.com/docs/en/hooks> (settings
//!   `hooks.<Event>[].matcher` + `hooks[].timeout`, seconds; command hooks
//!   default to 600 s).
//! - Cursor: <https://cursor.com/docs/agent/hooks> (`hooks.json`,
//!   `hooks.<event>[].command` + `timeout`, seconds).
//! - Gemini CLI: <https://geminicli.com/docs/hooks/reference> (settings
//!   `hooks.<Event>[].matcher` + `hooks[].timeout`, **milliseconds**,
//!   default 60 000).

use super::HookAgent;

/// One hook entry to install: the event, the matcher (tool-name pattern,
/// when the event takes one) and the timeout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HookEventSpec {
    /// The event name exactly as the agent spells it (`PreToolUse`,
    /// `beforeShellExecution`, `BeforeTool`).
    pub event: &'static str,
    /// The tool-name matcher, for events that take one.
    pub matcher: Option<&'static str>,
    /// How long the agent lets the hook run, in seconds. Use
    /// [`HookEventSpec::timeout_for_settings`] to write it: Gemini CLI
    /// counts milliseconds.
    pub timeout_secs: Option<u32>,
}

impl HookEventSpec {
    /// The timeout in the unit `agent`'s settings file expects: seconds for
    /// Claude Code and Cursor, milliseconds for Gemini CLI.
    pub fn timeout_for_settings(&self, agent: HookAgent) -> Option<u64> {
        let secs = u64::from(self.timeout_secs?);
        Some(match agent {
            HookAgent::ClaudeCode | HookAgent::Cursor => secs,
            HookAgent::GeminiCli => secs * 1000,
        })
    }
}

/// How long an agent waits for a hook that gates a call, in seconds.
///
/// A gated call may wait for a person: toolgate's approval timeout is
/// 120 s by default (`[policy] approval_timeout_s`) and a rule may lengthen
/// it (`timeout_s`). Ten minutes leaves room for both, and matches Claude
/// Code's own default for command hooks, so an agent never kills the hook
/// while the person is still reading the request. (Gemini CLI's default of
/// 60 s would cut a pending approval short.) The hook process gives up a
/// little earlier on its own, see [`hook_wait_limit`].
pub const GATE_TIMEOUT_SECS: u32 = 600;

/// How long an agent waits for a hook that only reports a finished call,
/// in seconds: a report is one local round trip, never a person.
pub const REPORT_TIMEOUT_SECS: u32 = 30;

/// How long `toolgate hook run` itself waits for the engine's answer: a
/// margin under [`GATE_TIMEOUT_SECS`], so the hook answers with its
/// fallback (and says why) instead of being killed by the agent, which
/// some agents treat as "no objection".
pub fn hook_wait_limit() -> std::time::Duration {
    std::time::Duration::from_secs(u64::from(GATE_TIMEOUT_SECS - 15))
}

const fn gate(event: &'static str, matcher: Option<&'static str>) -> HookEventSpec {
    HookEventSpec {
        event,
        matcher,
        timeout_secs: Some(GATE_TIMEOUT_SECS),
    }
}

const fn report(event: &'static str, matcher: Option<&'static str>) -> HookEventSpec {
    HookEventSpec {
        event,
        matcher,
        timeout_secs: Some(REPORT_TIMEOUT_SECS),
    }
}

/// Claude Code: every tool before it runs (the matcher `*` matches all
/// tools, MCP ones included; calls to toolgate's own MCP tools are let
/// through unjudged by the runtime, they are already gated), and every
/// finished call, successful or failed, so the audit row gets its outcome.
const CLAUDE_CODE: &[HookEventSpec] = &[
    gate("PreToolUse", Some("*")),
    report("PostToolUse", Some("*")),
    report("PostToolUseFailure", Some("*")),
];

/// Cursor: the events that can answer a permission (shell commands, MCP
/// tools, file reads) and the ones that report a finished shell command
/// or MCP call. Cursor's file edits have no documented before-event that
/// answers a permission (`afterFileEdit` only reports), so they are not
/// gated. Its events take no matcher.
const CURSOR: &[HookEventSpec] = &[
    gate("beforeShellExecution", None),
    gate("beforeMCPExecution", None),
    gate("beforeReadFile", None),
    report("afterShellExecution", None),
    report("afterMCPExecution", None),
];

/// Gemini CLI: every tool before and after it runs (`*` matches all tools;
/// Gemini CLI treats it as match-all rather than as a regex).
const GEMINI_CLI: &[HookEventSpec] = &[
    gate("BeforeTool", Some("*")),
    report("AfterTool", Some("*")),
];

/// The hook entries to install for `agent`.
pub fn install_spec(agent: HookAgent) -> &'static [HookEventSpec] {
    match agent {
        HookAgent::ClaudeCode => CLAUDE_CODE,
        HookAgent::Cursor => CURSOR,
        HookAgent::GeminiCli => GEMINI_CLI,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_gating_event_outlasts_the_default_approval_timeout() {
        let default_approval = crate::policy::PolicyConfig::default()
            .approval_timeout
            .as_secs();
        for agent in HookAgent::ALL {
            let spec = install_spec(agent);
            assert!(!spec.is_empty(), "{agent}");
            for entry in spec
                .iter()
                .filter(|e| e.timeout_secs == Some(GATE_TIMEOUT_SECS))
            {
                assert!(
                    hook_wait_limit().as_secs() > default_approval + 60,
                    "{agent} {}: a person needs time to answer",
                    entry.event
                );
            }
        }
        assert!(hook_wait_limit().as_secs() < u64::from(GATE_TIMEOUT_SECS));
    }

    #[test]
    fn gemini_timeouts_are_written_in_milliseconds() {
        let before_tool = install_spec(HookAgent::GeminiCli)[0];
        assert_eq!(before_tool.event, "BeforeTool");
        assert_eq!(
            before_tool.timeout_for_settings(HookAgent::GeminiCli),
            Some(600_000)
        );
        let pre_tool_use = install_spec(HookAgent::ClaudeCode)[0];
        assert_eq!(
            pre_tool_use.timeout_for_settings(HookAgent::ClaudeCode),
            Some(600)
        );
    }
}
