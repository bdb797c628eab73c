//! The wire vocabulary: the small words the engine's transports and hosts
//! share (the console's HTTP API and its live stream, the control socket,
//! the event bus, the desktop shell), each written once, here.
//!
//! Every transport used to spell these by hand, and copies drift: the
//! desktop and the browser worded the same caller differently, and the
//! console re-derived which outcomes count against a breaker. So a word
//! that crosses a process boundary is an enum or a value type of this
//! module, serialised by serde and exported to TypeScript by ts-rs; text
//! people read about a caller is made once, here, and carried on the wire
//! so no host composes it. The module holds no I/O and imports nothing
//! that steers the engine, so every layer can use it (rmcp keeps its
//! protocol types in `model` for the same reason).

use std::fmt;

use serde::{Deserialize, Serialize};
use ts_rs::TS;

use crate::cancel::CancelReason;
use crate::error::ErrorKind;

/// Every method of the control socket (the CLI's). Only the control role
/// answers them; on the agent socket and the agent HTTP endpoint they are
/// unknown methods (-32601), so an agent cannot approve its own call
/// through the protocol it uses for tools. Here because the CLI's client
/// and the self-protection guard (which refuses a governed process that
/// names one) speak them too.
pub const CONTROL_METHODS: [&str; 13] = [
    "toolgate/tools",
    "toolgate/tools/core",
    "toolgate/breakers",
    "toolgate/breakers/reset",
    "toolgate/approvals",
    "toolgate/approve",
    "toolgate/deny",
    "toolgate/rules",
    "toolgate/rules/rm",
    "toolgate/servers",
    "toolgate/pins",
    "toolgate/pins/approve",
    "toolgate/console/login",
];

/// The first request of every control connection: `{"credential": "…"}`,
/// the control credential (see `barrier::credential`). Until it
/// is presented, the control socket answers nothing else.
pub const AUTH_METHOD: &str = "toolgate/auth";

/// Where a console session is shown: a browser tab, or the desktop app's
/// own window (its login links are minted for it). Recorded with the
/// session's decisions, so the audit trail tells the two apart; the
/// control socket mints links for either.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Surface {
    /// A browser (`toolgate console`, the link `serve` printed).
    #[default]
    Browser,
    /// The desktop app's window.
    DesktopWindow,
}

/// Where a person decided, said by the desktop shell (it holds the
/// console's bearer token) when the decision came from its tray or a
/// notification rather than the console page.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Via {
    /// The tray menu.
    Tray,
    /// A notification's action button.
    Notification,
}

/// "Always" with a decision: the console's and the control socket's
/// approvals take the same one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(deny_unknown_fields)]
pub struct AlwaysInput {
    /// SCOPE text (`tool`, `caller`, `/path:path=~/proj/**`, ...).
    pub scope: String,
    /// Forget the rule after this many seconds; none = until revoked.
    #[ts(optional)]
    pub ttl_s: Option<u64>,
}

/// Body of `POST /api/approvals/{id}/approve|deny`: the console reads it,
/// the desktop shell writes it (`{"decider": "tray"}`). Unset fields are
/// left out, so the shell's body names only what it says.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DecisionBody {
    /// Told to the agent (deny only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Also remember the decision.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub always: Option<AlwaysInput>,
    /// Bearer clients only: the desktop tray or a notification decided.
    /// The console ignores it from browser sessions, which are always
    /// `console`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decider: Option<Via>,
}

/// A circuit breaker's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum BreakerState {
    /// Calls pass.
    Closed,
    /// Calls fail fast.
    Open,
    /// A limited number of probe calls pass.
    HalfOpen,
}

/// How far the loop guard went with a session's repeated call: it sends
/// this with every step it takes, so a view can tell a nudge from a stop.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum LoopLevel {
    /// The call ran; the agent was told it is repeating itself.
    Warn,
    /// This call was refused; the session may go on.
    Block,
    /// The session's calls of this pattern are refused from now on.
    Halt,
}

impl LoopLevel {
    /// The snake_case word, as serialised.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Warn => "warn",
            Self::Block => "block",
            Self::Halt => "halt",
        }
    }
}

/// How an audited call ended: the audit row's `outcome` column, as the
/// console lists it. The column is text and only ever gains values, so a
/// value this version does not know (a row written by a newer toolgate)
/// reads as [`CallOutcome::Unknown`] instead of failing the page.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum CallOutcome {
    /// The tool ran and returned a result.
    Ok,
    /// The tool ran and marked its result as an error.
    ToolError,
    /// The call failed or was refused; the row's `error_kind` says why.
    Error,
    /// The call's owner ended it before it finished.
    Cancelled,
    /// A value this version does not know.
    Unknown,
}

impl CallOutcome {
    /// The stored word.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Ok => "ok",
            Self::ToolError => "tool_error",
            Self::Error => "error",
            Self::Cancelled => "cancelled",
            Self::Unknown => "unknown",
        }
    }

    /// Reads the stored word; see the type's docs for unknown ones.
    pub fn parse(s: &str) -> Self {
        match s {
            "ok" => Self::Ok,
            "tool_error" => Self::ToolError,
            "error" => Self::Error,
            "cancelled" => Self::Cancelled,
            _ => Self::Unknown,
        }
    }
}

/// How a call ended, without its content.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum Outcome {
    /// The tool ran and returned a result.
    Ok {
        /// The tool marked its result as an error.
        is_error: bool,
        /// Output size in bytes after truncation.
        size: usize,
    },
    /// The call failed or was refused.
    Err {
        /// The error class.
        kind: ErrorKind,
        /// The one-line message the agent received, cut to 1 KiB.
        message: String,
        /// Whether the circuit breaker counts it against the tool
        /// (`CallError::counts_as_failure`): sent, because the class alone
        /// cannot say (a `tool_failed` of the caller's making does not
        /// count), so a live view never re-derives the rule.
        counts_as_failure: bool,
    },
    /// The call's owner ended it before it finished (the client cancelled
    /// it or went away, or toolgate shut down); see [`crate::cancel`].
    Cancelled {
        /// Who ended it.
        reason: CancelReason,
    },
}

/// A caller on the wire: who asks, with `text`, the engine's words for it.
/// Every host prints `text` and none composes its own, so the console, the
/// desktop notifications and the CLI word one caller the same way.
/// (`approval::CallerInfo` serialises as this; in TypeScript it keeps the
/// name `CallerInfo`.)
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(default)]
#[ts(rename = "CallerInfo")]
pub struct CallerView {
    /// Entry point: `socket`, `cli`, ...
    pub via: String,
    /// The client's pid (the bridge's parent for bridged clients); used
    /// only to tell whether the caller is still there.
    pub pid: Option<i32>,
    /// Peer uid.
    pub uid: Option<u32>,
    /// The client's executable, as the kernel reports it.
    pub exe: Option<String>,
    /// The pid of toolgate's stdio bridge, when it relayed the client.
    pub bridge_pid: Option<i32>,
    /// MCP client name, as the client reports it.
    pub client_name: Option<String>,
    /// Agent id the connection registered.
    pub agent_id: Option<String>,
    /// The call came through the `tool_call` bridge tool.
    pub through_tool_call: bool,
    /// The caller in one line, for people: the engine's words for it,
    /// which hosts print as they are.
    pub text: String,
}

/// The caller in the words people read: the client's name and pid
/// (`cursor 1.0 (pid 4242)`, `cursor 1.0 (pid 4242 via bridge pid 4250)`
/// when toolgate's stdio bridge relayed), or the entry point when the
/// client gave no name (`socket client (pid 4242)`), followed by
/// `, via tool_call` for a call made through the bridge tool. The one place this
/// wording is made: the live [`crate::context::Caller`] and the stored `approval::CallerInfo` both
/// print through it, and every host prints the `text` it produced, so a
/// row read back from the audit log reads like the live one it replaced
/// and the desktop words a caller as the console does.
pub(crate) fn write_caller(
    out: &mut impl fmt::Write,
    via: &str,
    client_name: Option<&str>,
    pid: Option<i32>,
    bridge_pid: Option<i32>,
    through_tool_call: bool,
) -> fmt::Result {
    match client_name {
        Some(name) => out.write_str(name)?,
        None => write!(out, "{via} client")?,
    }
    match (pid, bridge_pid) {
        (Some(pid), Some(bridge)) => write!(out, " (pid {pid} via bridge pid {bridge})")?,
        (Some(pid), None) => write!(out, " (pid {pid})")?,
        (None, Some(bridge)) => write!(out, " (via bridge pid {bridge})")?,
        (None, None) => {}
    }
    if through_tool_call {
        out.write_str(", via tool_call")?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn audit_outcomes_read_back_and_a_newer_one_reads_as_unknown() {
        for o in [
            CallOutcome::Ok,
            CallOutcome::ToolError,
            CallOutcome::Error,
            CallOutcome::Cancelled,
        ] {
            assert_eq!(CallOutcome::parse(o.as_str()), o);
            assert_eq!(serde_json::to_value(o).unwrap(), o.as_str());
        }
        assert_eq!(CallOutcome::parse("vanished"), CallOutcome::Unknown);
        assert_eq!(
            ErrorKind::parse("upstream_5xx"),
            Some(ErrorKind::Upstream5xx)
        );
        assert_eq!(ErrorKind::parse("a_class_from_the_future"), None);
    }

    #[test]
    fn an_errors_outcome_says_whether_the_breaker_counts_it() {
        let o = Outcome::Err {
            kind: ErrorKind::ToolFailed,
            message: "no such file".into(),
            counts_as_failure: false,
        };
        let json = serde_json::to_value(&o).unwrap();
        assert_eq!(json["status"], "err");
        assert_eq!(json["kind"], "tool_failed");
        assert_eq!(json["counts_as_failure"], false);
    }

    #[test]
    fn a_decision_body_names_only_what_is_set() {
        let body = DecisionBody {
            decider: Some(Via::Tray),
            ..DecisionBody::default()
        };
        assert_eq!(
            serde_json::to_value(&body).unwrap(),
            serde_json::json!({"decider": "tray"})
        );
    }
}
