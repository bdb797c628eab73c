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

use serde::{Deserialize, Serialize};
use ts_rs::TS;

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
