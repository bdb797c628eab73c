//! Human approval (pipeline stage 8, docs/architecture/overview.md): what
//! happens once the policy ([`crate::policy`]) says a call must ask a person.
//!
//! Contract:
//! - **Approval requests** ([`Approvals`]) are bound to one call: tool,
//!   canonical-args hash, policy version, caller, created, expiry. A
//!   decision reaches exactly the call that asked; an identical call later
//!   asks again unless a person chose "always" with an explicit scope.
//! - **Timeout is deny**, recorded as `timed_out`; a person's deny is
//!   `denied` (their reason goes to the agent); a policy deny never creates
//!   a request. The agent's error says which ([`crate::error::ErrorKind`]).
//! - **Every request has a live owner**: when its call is cancelled (the
//!   agent sent `notifications/cancelled` or disconnected, or toolgate shut
//!   down) the request is closed as `cancelled` at once, with the reason;
//!   it can no longer be approved, and the call never runs.
//! - **Durable**: requests and remembered rules live in SQLite next to the
//!   audit log. After a restart, requests whose caller is gone are closed
//!   as `expired` (with an event row); the rest expire on their own clock,
//!   so nothing stays pending forever.
//! - Approvals sit outside the breaker (see `pipeline::build`): denials and
//!   timeouts never count as a tool failure.

mod decider;
mod ended;
mod queue;
mod remembered;
mod scope;
mod store;
mod suggest;

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

use serde::{Deserialize, Serialize};

pub use decider::{Decider, recorded_words};
pub use ended::{Ended, ended};
pub use queue::{Always, Answer, ApprovalOptions, Approvals, Ask, Decided, Decision, Resolution};
pub use remembered::{NewRule, RuleEdit, RuleInUse};
pub use scope::{ArgClause, CallerInfo, CallerKey, Scope, ScopeDef, ScopeError, ScopeSpec};
pub(crate) use store::stored_risk;
pub use store::{ApprovalRequest, RememberedRule, RuleEffect};
pub use suggest::{
    ArgOffer, DEFAULT_TTL_S, ScopeOffer, also_allows, duration_words, is_literal,
    plain_command_prefix, plain_words, unescape_glob,
};

/// The state of an approval request. Stored as text; only ever extended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ts_rs::TS)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalStatus {
    /// Waiting for a person.
    Pending,
    /// A person approved it (once, or by an "always" rule made from it).
    Approved,
    /// A person denied it.
    Denied,
    /// Nobody answered in time; the call was denied.
    TimedOut,
    /// Closed without a decision after the fact: it expired unanswered
    /// with nobody waiting, or toolgate restarted and its caller was gone.
    Expired,
    /// Closed because its call was cancelled while it waited: the caller
    /// cancelled the call or disconnected, or toolgate shut down. Nobody
    /// can approve it any more, and the call never runs.
    Cancelled,
}

impl ApprovalStatus {
    /// Every state.
    pub const ALL: [Self; 6] = [
        Self::Pending,
        Self::Approved,
        Self::Denied,
        Self::TimedOut,
        Self::Expired,
        Self::Cancelled,
    ];

    /// The state in a word or two for people; a request nobody answered
    /// reads like the call it ended ([`crate::ErrorKind::label`]).
    pub fn label(self) -> &'static str {
        match self {
            Self::Pending => "Waiting",
            Self::Approved => "Approved",
            Self::Denied => "Denied",
            Self::TimedOut => crate::ErrorKind::ApprovalTimedOut.label(),
            Self::Expired => "Expired",
            Self::Cancelled => "Cancelled",
        }
    }

    /// The stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Approved => "approved",
            Self::Denied => "denied",
            Self::TimedOut => "timed_out",
            Self::Expired => "expired",
            Self::Cancelled => "cancelled",
        }
    }

    /// Parses the stored name.
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "pending" => Self::Pending,
            "approved" => Self::Approved,
            "denied" => Self::Denied,
            "timed_out" => Self::TimedOut,
            "expired" => Self::Expired,
            "cancelled" => Self::Cancelled,
            _ => return None,
        })
    }
}

impl fmt::Display for ApprovalStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why an approval operation failed.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum ApprovalError {
    /// No request has that id.
    #[error("no approval request #{id}")]
    NotFound {
        /// The id asked for.
        id: i64,
    },
    /// The request is no longer pending.
    #[error("approval request #{id} is already {status}")]
    AlreadyDecided {
        /// The request.
        id: i64,
        /// How it ended.
        status: ApprovalStatus,
    },
    /// No remembered rule has that id (or it was revoked).
    #[error("no remembered rule #{id}")]
    RuleNotFound {
        /// The id asked for.
        id: i64,
    },
    /// The `--always` scope is malformed or misses the request.
    #[error(transparent)]
    Scope(#[from] ScopeError),
    /// SQLite failed.
    #[error("approval store: {0}")]
    Store(String),
}

impl From<sqlx::Error> for ApprovalError {
    fn from(e: sqlx::Error) -> Self {
        Self::Store(e.to_string())
    }
}

/// Wall-clock time for stored timestamps and rule expiry, passed in so
/// tests control it (STYLE §8). Waiting itself uses tokio's clock, which
/// tests pause.
pub trait Clock: Send + Sync + fmt::Debug {
    /// Unix time in ms.
    fn now_ms(&self) -> i64;
}

/// The real wall clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> i64 {
        crate::audit::now_ms()
    }
}

/// A clock that moves only when told: for tests of expiry and TTLs, here
/// and in the hosts' end-to-end tests.
#[derive(Debug, Default)]
pub struct ManualClock(AtomicI64);

impl ManualClock {
    /// A clock at `ms`.
    pub fn at(ms: i64) -> Arc<Self> {
        Arc::new(Self(AtomicI64::new(ms)))
    }

    /// Moves the clock forward.
    pub fn advance(&self, d: std::time::Duration) {
        let ms = i64::try_from(d.as_millis()).unwrap_or(i64::MAX);
        self.0.fetch_add(ms, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now_ms(&self) -> i64 {
        self.0.load(Ordering::SeqCst)
    }
}

/// Tells whether the caller of a request is still there; used at startup to
/// close requests nobody can receive an answer for.
pub trait Liveness: Send + Sync {
    /// Whether `caller` still runs.
    fn is_alive(&self, caller: &CallerInfo) -> bool;
}

impl<F: Fn(&CallerInfo) -> bool + Send + Sync> Liveness for F {
    fn is_alive(&self, caller: &CallerInfo) -> bool {
        self(caller)
    }
}

/// The default [`Liveness`]: the peer pid still exists and, when the
/// executable was recorded, still runs that executable (a reused pid is
/// another program). No pid means nobody can be waiting.
#[derive(Debug, Clone, Copy, Default)]
pub struct ProcessLiveness;

impl Liveness for ProcessLiveness {
    fn is_alive(&self, caller: &CallerInfo) -> bool {
        let Some(pid) = caller.pid.filter(|p| *p > 0) else {
            return false;
        };
        let proc = std::path::PathBuf::from(format!("/proc/{pid}"));
        if !proc.exists() {
            return false;
        }
        match (&caller.exe, std::fs::read_link(proc.join("exe"))) {
            (Some(exe), Ok(now)) => now == std::path::Path::new(exe),
            _ => true,
        }
    }
}

#[cfg(test)]
mod engine_tests;
#[cfg(test)]
mod testing;
