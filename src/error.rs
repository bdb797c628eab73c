//! The one error type of the call path.
//!
//! Every pipeline stage returns [`CallError`], so reordering stages never
//! changes the error type, and retry and the circuit breaker decide by asking
//! the error ([`CallError::kind`], [`CallError::is_retryable`],
//! [`CallError::counts_as_failure`]) instead of reading its message. That is
//! the fix for PraisonAI's keyword-based `_classify_error_type`, which misses
//! every error whose wording lacks "timeout" or "connection".

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::cancel::CancelReason;

/// The class of a failed call, stable across versions: it is written to the
/// audit log and shown to agents, so variants are only ever added.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ts_rs::TS)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ErrorKind {
    /// No tool of that name is registered.
    UnknownTool,
    /// The allowlist, denylist or quarantine hides the tool.
    NotAllowed,
    /// A BEFORE/AFTER hook refused the call.
    Blocked,
    /// The loop guard refused a repeated call or halted the session.
    LoopDetected,
    /// Arguments failed casting or schema validation.
    InvalidArgs,
    /// A path or URL argument failed its guard.
    GuardDenied,
    /// Policy refused the call outright.
    PolicyDenied,
    /// Policy asks a person, and no person could be asked.
    NeedsApproval,
    /// A person denied the call.
    Denied,
    /// Nobody answered the approval request in time (default deny).
    ApprovalTimedOut,
    /// The tool's circuit breaker is open.
    BreakerOpen,
    /// One attempt ran past its timeout, or the call ran past its deadline.
    Timeout,
    /// The tool or its upstream said "slow down".
    RateLimit,
    /// The tool's transport failed (refused, reset, closed).
    Connection,
    /// An upstream answered with a server-side failure (HTTP 5xx or the
    /// JSON-RPC equivalent).
    #[serde(rename = "upstream_5xx")]
    Upstream5xx,
    /// The tool ran and reported a failure of its own.
    ToolFailed,
    /// toolgate itself failed; a bug, never the caller's fault.
    Internal,
    /// The call's owner ended it before it finished: the client cancelled
    /// it or went away, or toolgate shut down. Says nothing about the
    /// tool, and another attempt is the owner's business.
    Cancelled,
}

impl ErrorKind {
    /// Every class, in the order people meet them in a call's life.
    pub const ALL: [Self; 18] = [
        Self::UnknownTool,
        Self::NotAllowed,
        Self::Blocked,
        Self::LoopDetected,
        Self::InvalidArgs,
        Self::GuardDenied,
        Self::PolicyDenied,
        Self::NeedsApproval,
        Self::Denied,
        Self::ApprovalTimedOut,
        Self::BreakerOpen,
        Self::Timeout,
        Self::RateLimit,
        Self::Connection,
        Self::Upstream5xx,
        Self::ToolFailed,
        Self::Internal,
        Self::Cancelled,
    ];

    /// The class in the few words a person reads (a pill, a filter). Each
    /// names whose doing it was, so the two timeouts read apart: nobody
    /// deciding is "No decision in time", a tool running too long is "Tool
    /// timed out".
    pub fn label(self) -> &'static str {
        match self {
            Self::UnknownTool => "Unknown tool",
            Self::NotAllowed => "Not allowed",
            Self::Blocked => "Blocked by a hook",
            Self::LoopDetected => "Loop stopped",
            Self::InvalidArgs => "Invalid arguments",
            Self::GuardDenied => "Path or URL refused",
            Self::PolicyDenied => "Refused by policy",
            Self::NeedsApproval => "Nobody to ask",
            Self::Denied => "Denied by a person",
            Self::ApprovalTimedOut => "No decision in time",
            Self::BreakerOpen => "Breaker open",
            Self::Timeout => "Tool timed out",
            Self::RateLimit => "Rate limited",
            Self::Connection => "Connection failed",
            Self::Upstream5xx => "Upstream server error",
            Self::ToolFailed => "Tool failed",
            Self::Internal => "toolgate failed",
            Self::Cancelled => "Cancelled",
        }
    }

    /// Whether toolgate refused the call before the tool ran (a rule, a
    /// guard, a person, or nobody deciding), as opposed to the tool or its
    /// transport failing. The console's "Refused" filters use it.
    pub fn is_refusal(self) -> bool {
        matches!(
            self,
            Self::NotAllowed
                | Self::Blocked
                | Self::LoopDetected
                | Self::GuardDenied
                | Self::PolicyDenied
                | Self::NeedsApproval
                | Self::Denied
                | Self::ApprovalTimedOut
        )
    }

    /// Reads a name written by [`Self::as_str`]. `None` for a name this
    /// version does not know: the audit log keeps classes as text, and a
    /// newer toolgate may have written one added since.
    pub fn parse(s: &str) -> Option<Self> {
        use serde::Deserialize;
        use serde::de::value::{Error, StrDeserializer};
        Self::deserialize(StrDeserializer::<Error>::new(s)).ok()
    }

    /// The snake_case name used on the wire and in the audit log.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::UnknownTool => "unknown_tool",
            Self::NotAllowed => "not_allowed",
            Self::Blocked => "blocked",
            Self::LoopDetected => "loop_detected",
            Self::InvalidArgs => "invalid_args",
            Self::GuardDenied => "guard_denied",
            Self::PolicyDenied => "policy_denied",
            Self::NeedsApproval => "needs_approval",
            Self::Denied => "denied",
            Self::ApprovalTimedOut => "approval_timed_out",
            Self::BreakerOpen => "breaker_open",
            Self::Timeout => "timeout",
            Self::RateLimit => "rate_limit",
            Self::Connection => "connection",
            Self::Upstream5xx => "upstream_5xx",
            Self::ToolFailed => "tool_failed",
            Self::Internal => "internal",
            Self::Cancelled => "cancelled",
        }
    }
}

impl std::fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One problem with one argument, worded so a model can fix its next call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ArgProblem {
    /// JSON pointer to the argument (`""` for the whole object).
    pub pointer: String,
    /// What is wrong, e.g. `expected integer, got "three"`.
    pub message: String,
}

impl std::fmt::Display for ArgProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.pointer.is_empty() {
            f.write_str(&self.message)
        } else {
            let name = self.pointer.trim_start_matches('/').replace('/', ".");
            write!(f, "argument `{name}`: {}", self.message)
        }
    }
}

/// Whose side a failure a tool reports is on, set where the error is made.
///
/// The circuit breaker exists to stop calling a tool that is unhealthy; a
/// tool that answers "that file does not exist" is healthy, and counting
/// such answers lets any one agent switch a tool off for every agent by
/// asking for missing files. The class is decided by the
/// code that knows what went wrong (an `io::ErrorKind`, a JSON-RPC code),
/// never by reading the message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Fault {
    /// The call asked for something that cannot be done (a missing file, a
    /// directory where a file was expected, input the tool rejects). Says
    /// nothing about the tool's health; the breaker never counts it.
    Caller,
    /// The tool itself failed (could not start, its I/O broke): a sign the
    /// tool is unhealthy, which the breaker counts.
    Tool,
}

impl Fault {
    /// The side an I/O error of a file-system tool is on: errors about the
    /// path the caller named (missing, wrong type, not permitted, exists
    /// already) are the caller's; the rest (a full disk, a broken device,
    /// an unexpected error) are the tool's.
    pub fn of_io(kind: std::io::ErrorKind) -> Self {
        use std::io::ErrorKind as K;
        match kind {
            K::NotFound
            | K::PermissionDenied
            | K::AlreadyExists
            | K::IsADirectory
            | K::NotADirectory
            | K::DirectoryNotEmpty
            | K::InvalidInput
            | K::InvalidFilename
            | K::FileTooLarge
            | K::ReadOnlyFilesystem => Self::Caller,
            _ => Self::Tool,
        }
    }
}

/// Which loop pattern the loop guard saw.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LoopPattern {
    /// The same call (tool + canonical arguments) again and again.
    Repeat,
    /// Two calls alternating: A, B, A, B.
    PingPong,
}

/// Why a call failed. Variants carry fields, not prose; `Display` turns them
/// into the one line an agent or a person reads.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum CallError {
    /// See [`ErrorKind::UnknownTool`].
    #[error("unknown tool `{name}`{}", suggest(.suggestions))]
    UnknownTool {
        /// The name the caller asked for.
        name: String,
        /// Registered names close to it, best first.
        suggestions: Vec<String>,
    },
    /// See [`ErrorKind::NotAllowed`].
    #[error("tool `{tool}` is not allowed: {reason}")]
    NotAllowed {
        /// The tool.
        tool: String,
        /// Which list or rule hid it.
        reason: String,
    },
    /// See [`ErrorKind::Blocked`].
    #[error("call blocked by hook `{hook}`: {reason}")]
    Blocked {
        /// The hook's name.
        hook: String,
        /// The hook's reason, passed on verbatim.
        reason: String,
    },
    /// See [`ErrorKind::LoopDetected`].
    #[error("{}", loop_message(*.halted, *.pattern, *.repeats))]
    LoopDetected {
        /// The pattern seen.
        pattern: LoopPattern,
        /// How many times it was seen inside the window.
        repeats: u32,
        /// True once the whole session is halted, not just this call.
        halted: bool,
    },
    /// See [`ErrorKind::InvalidArgs`].
    #[error("invalid arguments for `{tool}`: {}", join(.problems))]
    InvalidArgs {
        /// The tool.
        tool: String,
        /// Every problem found, not just the first.
        problems: Vec<ArgProblem>,
    },
    /// See [`ErrorKind::GuardDenied`].
    #[error("argument `{arg}` refused: {reason}")]
    GuardDenied {
        /// The argument's name.
        arg: String,
        /// Why, e.g. "resolves to 127.0.0.1, a loopback address".
        reason: String,
    },
    /// See [`ErrorKind::PolicyDenied`].
    #[error("denied by policy: {reason}")]
    PolicyDenied {
        /// The rule that decided, in words.
        reason: String,
    },
    /// See [`ErrorKind::NeedsApproval`].
    #[error(
        "`{tool}` needs approval ({reason}) and no approver is connected; the call was not run"
    )]
    NeedsApproval {
        /// The tool.
        tool: String,
        /// Why it needs approval.
        reason: String,
    },
    /// See [`ErrorKind::Denied`].
    #[error("a person denied this call{}", reason.as_deref().map(|r| format!(": {r}")).unwrap_or_default())]
    Denied {
        /// The person's reason, if they gave one.
        reason: Option<String>,
    },
    /// See [`ErrorKind::ApprovalTimedOut`].
    #[error("nobody approved this call within {}s, so it was denied", .after.as_secs())]
    ApprovalTimedOut {
        /// How long the request waited.
        after: Duration,
    },
    /// See [`ErrorKind::BreakerOpen`].
    #[error("`{tool}` is failing and its circuit breaker is open; try again in {}s", .retry_in.as_secs().max(1))]
    BreakerOpen {
        /// The tool.
        tool: String,
        /// Time until the breaker lets a probe through.
        retry_in: Duration,
    },
    /// See [`ErrorKind::Timeout`].
    #[error("timed out after {}ms", .after.as_millis())]
    Timeout {
        /// The limit that was hit.
        after: Duration,
    },
    /// See [`ErrorKind::RateLimit`].
    #[error("rate limited{}", .retry_after.map(|d| format!("; retry after {}ms", d.as_millis())).unwrap_or_default())]
    RateLimited {
        /// The upstream's Retry-After, if it sent one.
        retry_after: Option<Duration>,
    },
    /// See [`ErrorKind::Connection`].
    #[error("connection failed: {message}")]
    Connection {
        /// The transport's description.
        message: String,
    },
    /// See [`ErrorKind::Upstream5xx`].
    #[error("upstream failed with status {status}: {message}")]
    Upstream {
        /// HTTP status or JSON-RPC-derived status.
        status: u16,
        /// The upstream's description.
        message: String,
    },
    /// See [`ErrorKind::ToolFailed`].
    #[error("{message}")]
    ToolFailed {
        /// The tool's own description of the failure.
        message: String,
        /// Whose side it is on; only [`Fault::Tool`] counts for the breaker.
        fault: Fault,
    },
    /// See [`ErrorKind::Internal`].
    #[error("internal error: {message}")]
    Internal {
        /// What broke.
        message: String,
    },
    /// See [`ErrorKind::Cancelled`].
    #[error("the call was cancelled because {}{}", .reason.describe(), cancel_hint(*.reason))]
    Cancelled {
        /// Who ended it.
        reason: CancelReason,
    },
}

/// What an agent that still reads can do about a cancellation.
fn cancel_hint(reason: CancelReason) -> &'static str {
    match reason {
        CancelReason::Shutdown => "; send it again once toolgate is back",
        _ => "",
    }
}

fn suggest(s: &[String]) -> String {
    if s.is_empty() {
        String::new()
    } else {
        format!(
            "; did you mean {}?",
            s.iter()
                .map(|n| format!("`{n}`"))
                .collect::<Vec<_>>()
                .join(", ")
        )
    }
}

fn join(p: &[ArgProblem]) -> String {
    p.iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}

fn loop_message(halted: bool, pattern: LoopPattern, repeats: u32) -> String {
    let what = match pattern {
        LoopPattern::Repeat => "the same call",
        LoopPattern::PingPong => "two calls alternating",
    };
    if halted {
        format!(
            "session halted: {what} was repeated {repeats} times; stop and rethink, a person must reset the session"
        )
    } else {
        format!(
            "refused: {what} was repeated {repeats} times; change the arguments or try another approach"
        )
    }
}

impl CallError {
    /// The error's class.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Self::UnknownTool { .. } => ErrorKind::UnknownTool,
            Self::NotAllowed { .. } => ErrorKind::NotAllowed,
            Self::Blocked { .. } => ErrorKind::Blocked,
            Self::LoopDetected { .. } => ErrorKind::LoopDetected,
            Self::InvalidArgs { .. } => ErrorKind::InvalidArgs,
            Self::GuardDenied { .. } => ErrorKind::GuardDenied,
            Self::PolicyDenied { .. } => ErrorKind::PolicyDenied,
            Self::NeedsApproval { .. } => ErrorKind::NeedsApproval,
            Self::Denied { .. } => ErrorKind::Denied,
            Self::ApprovalTimedOut { .. } => ErrorKind::ApprovalTimedOut,
            Self::BreakerOpen { .. } => ErrorKind::BreakerOpen,
            Self::Timeout { .. } => ErrorKind::Timeout,
            Self::RateLimited { .. } => ErrorKind::RateLimit,
            Self::Connection { .. } => ErrorKind::Connection,
            Self::Upstream { status, .. } if *status >= 500 => ErrorKind::Upstream5xx,
            Self::Upstream { .. } => ErrorKind::ToolFailed,
            Self::ToolFailed { .. } => ErrorKind::ToolFailed,
            Self::Internal { .. } => ErrorKind::Internal,
            Self::Cancelled { .. } => ErrorKind::Cancelled,
        }
    }

    /// Whether another attempt may succeed where this one failed. Only
    /// transient transport-level classes qualify: a tool that *reported* a
    /// failure is not re-run, because re-running it could repeat a side
    /// effect (a second payment, a second message).
    pub fn is_retryable(&self) -> bool {
        matches!(
            self.kind(),
            ErrorKind::Timeout
                | ErrorKind::RateLimit
                | ErrorKind::Connection
                | ErrorKind::Upstream5xx
        )
    }

    /// Whether the circuit breaker counts this as the tool failing: only
    /// what says the tool is unhealthy (timeouts, connection failures,
    /// upstream server errors, internal errors, a failure the tool reports
    /// as its own). Refusals made by toolgate or a person (denials,
    /// validation, guards, loop guard, an already-open breaker) and errors
    /// of the caller's making ([`Fault::Caller`]: a missing file) say
    /// nothing about the tool's health; counting them would let a person
    /// who keeps denying, or an agent asking for missing files, switch the
    /// tool off for everyone.
    pub fn counts_as_failure(&self) -> bool {
        match self {
            Self::ToolFailed { fault, .. } => *fault == Fault::Tool,
            // Any HTTP status of an upstream *endpoint* (4xx included: a
            // wrong URL, rejected credentials) is about the server or
            // toolgate's configuration of it; the agent's arguments travel
            // inside the JSON-RPC body and cannot cause one.
            Self::Upstream { .. } => true,
            _ => matches!(
                self.kind(),
                ErrorKind::Timeout
                    | ErrorKind::RateLimit
                    | ErrorKind::Connection
                    | ErrorKind::Internal
            ),
        }
    }

    /// Whose side a failure the tool reported is on; `None` for every
    /// other class (they carry their meaning in their kind).
    pub fn fault(&self) -> Option<Fault> {
        match self {
            Self::ToolFailed { fault, .. } => Some(*fault),
            _ => None,
        }
    }

    /// A server-suggested wait before the next attempt, if any.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            Self::RateLimited { retry_after } => *retry_after,
            Self::BreakerOpen { retry_in, .. } => Some(*retry_in),
            _ => None,
        }
    }

    /// A failure of the tool itself ([`Fault::Tool`], counted by the
    /// breaker), e.g. a process that cannot be started.
    pub fn tool_failed(message: impl Into<String>) -> Self {
        Self::ToolFailed {
            message: message.into(),
            fault: Fault::Tool,
        }
    }

    /// A tool's refusal of what the caller asked ([`Fault::Caller`], never
    /// counted by the breaker), e.g. a file that does not exist. The message
    /// should say what to do instead.
    pub fn caller_error(message: impl Into<String>) -> Self {
        Self::ToolFailed {
            message: message.into(),
            fault: Fault::Caller,
        }
    }

    /// A tool failure of either side, for code that derives the side
    /// (e.g. from an `io::ErrorKind` through [`Fault::of_io`]).
    pub fn tool_error(fault: Fault, message: impl Into<String>) -> Self {
        Self::ToolFailed {
            message: message.into(),
            fault,
        }
    }

    /// Shorthand for [`CallError::Internal`].
    pub fn internal(message: impl Into<String>) -> Self {
        Self::Internal {
            message: message.into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wire_and_the_audit_log_spell_error_kinds_alike() {
        for k in [
            ErrorKind::Upstream5xx,
            ErrorKind::ToolFailed,
            ErrorKind::ApprovalTimedOut,
            ErrorKind::Cancelled,
        ] {
            assert_eq!(serde_json::to_value(k).unwrap(), k.as_str(), "{k:?}");
        }
    }

    #[test]
    fn denials_never_count_as_failures() {
        let denials = [
            CallError::Denied { reason: None },
            CallError::ApprovalTimedOut {
                after: Duration::from_secs(1),
            },
            CallError::PolicyDenied { reason: "x".into() },
            CallError::InvalidArgs {
                tool: "t".into(),
                problems: vec![],
            },
            CallError::LoopDetected {
                pattern: LoopPattern::Repeat,
                repeats: 3,
                halted: false,
            },
            CallError::BreakerOpen {
                tool: "t".into(),
                retry_in: Duration::from_secs(1),
            },
        ];
        for e in denials {
            assert!(!e.counts_as_failure(), "{e:?}");
            assert!(!e.is_retryable(), "{e:?}");
        }
    }

    #[test]
    fn a_cancelled_call_is_never_retried_nor_a_tool_failure() {
        for reason in [
            CancelReason::ClientCancelled,
            CancelReason::ClientDisconnected,
            CancelReason::Shutdown,
        ] {
            let e = CallError::Cancelled { reason };
            assert_eq!(e.kind(), ErrorKind::Cancelled);
            assert!(!e.is_retryable(), "{e}");
            assert!(!e.counts_as_failure(), "{e}");
        }
        assert_eq!(ErrorKind::Cancelled.as_str(), "cancelled");
        let e = CallError::Cancelled {
            reason: CancelReason::Shutdown,
        };
        assert_eq!(
            e.to_string(),
            "the call was cancelled because toolgate is shutting down; send it again once toolgate is back"
        );
    }

    #[test]
    fn caller_errors_never_count_and_tool_failures_do() {
        let e = CallError::caller_error("`x` does not exist");
        assert_eq!(
            e.kind(),
            ErrorKind::ToolFailed,
            "the wire kind stays stable"
        );
        assert_eq!(e.fault(), Some(Fault::Caller));
        assert!(!e.counts_as_failure());
        assert!(!e.is_retryable());
        let e = CallError::tool_failed("cannot start `sh`");
        assert_eq!(e.fault(), Some(Fault::Tool));
        assert!(e.counts_as_failure());
        for kind in [
            std::io::ErrorKind::NotFound,
            std::io::ErrorKind::IsADirectory,
            std::io::ErrorKind::NotADirectory,
            std::io::ErrorKind::PermissionDenied,
            std::io::ErrorKind::AlreadyExists,
        ] {
            assert_eq!(Fault::of_io(kind), Fault::Caller, "{kind:?}");
        }
        for kind in [
            std::io::ErrorKind::StorageFull,
            std::io::ErrorKind::BrokenPipe,
            std::io::ErrorKind::Other,
        ] {
            assert_eq!(Fault::of_io(kind), Fault::Tool, "{kind:?}");
        }
        for e in [
            CallError::Timeout {
                after: Duration::from_secs(1),
            },
            CallError::Connection {
                message: "reset".into(),
            },
            CallError::Upstream {
                status: 502,
                message: "bad gateway".into(),
            },
            CallError::Upstream {
                status: 401,
                message: "bad credentials".into(),
            },
            CallError::internal("bug"),
        ] {
            assert!(e.counts_as_failure(), "{e:?}");
        }
    }

    #[test]
    fn classification_is_by_type_not_words() {
        // A message full of retry-ish words is still a tool failure.
        let e = CallError::tool_failed("connection timeout, rate limit, network");
        assert_eq!(e.kind(), ErrorKind::ToolFailed);
        assert!(!e.is_retryable());
        assert!(e.counts_as_failure());
        let e = CallError::Upstream {
            status: 503,
            message: "ok".into(),
        };
        assert_eq!(e.kind(), ErrorKind::Upstream5xx);
        assert!(e.is_retryable());
        let e = CallError::Upstream {
            status: 404,
            message: "x".into(),
        };
        assert!(!e.is_retryable());
    }

    #[test]
    fn messages_are_actionable() {
        let e = CallError::UnknownTool {
            name: "fs_reed".into(),
            suggestions: vec!["fs_read".into()],
        };
        assert_eq!(
            e.to_string(),
            "unknown tool `fs_reed`; did you mean `fs_read`?"
        );
        let e = CallError::InvalidArgs {
            tool: "t".into(),
            problems: vec![ArgProblem {
                pointer: "/count".into(),
                message: "expected integer, got \"three\"".into(),
            }],
        };
        assert_eq!(
            e.to_string(),
            "invalid arguments for `t`: argument `count`: expected integer, got \"three\""
        );
    }
}
