//! The parts of the console API's JSON the shell reads (the snapshot and
//! stream envelopes: docs/architecture/console-api.md, HTTP API and Event
//! stream) and the decision it posts.
//!
//! Own `Deserialize` structs rather than the engine's types: the engine's
//! `Event` and `ApprovalRequest` are `Serialize` only, and the shell needs a
//! handful of fields. Unknown fields and event types are ignored, so the
//! console can grow without breaking the shell.

use serde::Deserialize;
pub use toolgate::tool::Risk;
use toolgate::wire::CallerView;

/// The fields of `GET /api/snapshot` the shell uses.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Snapshot {
    /// Stream events with a greater `seq` apply on top of it.
    pub seq: u64,
    /// Waiting approval requests.
    #[serde(default)]
    pub pending: Vec<Request>,
    /// The team link, when the engine is part of a team.
    #[serde(default)]
    pub team: Option<TeamLine>,
}

/// The fields of the console's team view (`TeamView`) the tray shows.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct TeamLine {
    /// The link's state.
    pub status: TeamLineStatus,
    /// The state in one sentence, in the engine's words.
    pub summary: String,
}

/// `TeamView.status`, as far as the tray reads it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct TeamLineStatus {
    /// `{"state": "online" | "connecting" | "degraded", ...}`.
    pub state: TeamLineState,
}

/// `TeamState`'s tag.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct TeamLineState {
    /// `online`, `connecting` or `degraded`.
    pub state: String,
}

impl TeamLine {
    /// Whether the team database is away and this engine decides alone.
    pub fn is_degraded(&self) -> bool {
        self.status.state.state == "degraded"
    }
}

/// `GET /api/state/team`: the team slice read again.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct TeamSlice {
    /// `null` when the engine runs alone.
    #[serde(default)]
    pub team: Option<TeamLine>,
}

/// A waiting approval request: from the snapshot's `pending` or from an
/// `approval_requested` event.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Request {
    /// What the decision routes take.
    pub id: i64,
    /// The waiting call.
    pub call_id: i64,
    /// The tool.
    pub tool: String,
    /// The call's risk.
    pub risk: Risk,
    /// Why it asks, in words. Never shown in notifications: a rule's reason
    /// may quote an argument.
    #[serde(default)]
    pub reason: String,
    /// Who asks, in the engine's words.
    #[serde(default, deserialize_with = "engine_words")]
    pub caller: String,
    /// Unix ms when it is denied automatically.
    pub expires_ms: i64,
}

/// One item of `GET /api/events`: `{seq, ts_ms, event}`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Envelope {
    /// Gap-free sequence number.
    pub seq: u64,
    /// When the engine stamped it.
    #[serde(default)]
    pub ts_ms: i64,
    /// The event.
    pub event: Event,
}

/// The events the shell acts on; every other type is [`Event::Other`].
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Event {
    /// A call waits for a person.
    ApprovalRequested(Request),
    /// A request was closed (approved, denied, timed out, expired).
    ApprovalDecided(Decided),
    /// A part of the engine's state changed: read it again.
    StateChanged(SliceChanged),
    /// Anything else on the stream.
    #[serde(other)]
    Other,
}

/// A `state_changed` event.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct SliceChanged {
    /// Which part (`tools`, `team`, ...).
    pub slice: String,
}

impl SliceChanged {
    /// Whether the team link changed (the tray reads it again).
    pub fn is_team(&self) -> bool {
        self.slice == "team"
    }
}

/// An `approval_decided` event.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Decided {
    /// The request.
    pub id: i64,
    /// `approved`, `denied`, `timed_out`, `expired`, ...
    pub status: String,
}

/// Approve or deny.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// `POST /api/approvals/{id}/approve`.
    Approve,
    /// `POST /api/approvals/{id}/deny`.
    Deny,
}

impl Verdict {
    /// The route's last segment.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Approve => "approve",
            Self::Deny => "deny",
        }
    }
}

/// The short word for a risk, as the console shows it.
pub fn risk_word(risk: Risk) -> &'static str {
    match risk {
        Risk::Low => "low",
        Risk::Medium => "medium",
        Risk::High => "high",
        Risk::Critical => "critical",
    }
}

/// The caller as the engine words it (`CallerInfo.text`): the shell prints
/// the engine's words and never composes its own, so a notification names
/// a caller as the console does.
fn engine_words<'de, D: serde::Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    Ok(CallerView::deserialize(d)?.text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use toolgate::wire::{DecisionBody, Via};

    #[test]
    fn an_approval_requested_envelope_reads_with_the_engines_field_names() {
        let e: Envelope = serde_json::from_value(json!({
            "seq": 7, "ts_ms": 1_700_000_000_000_i64,
            "event": {"type": "approval_requested", "id": 3, "call_id": 41, "tool": "shell_exec",
                      "risk": "critical", "rule": "builtin:shell", "reason": "runs a command",
                      "caller": {"via": "socket", "pid": 4, "client_name": "claude-desktop",
                                 "text": "socket claude-desktop pid 4"},
                      "expires_ms": 1_700_000_060_000_i64}
        }))
        .unwrap();
        assert_eq!(e.seq, 7);
        let Event::ApprovalRequested(r) = e.event else {
            panic!("not a request: {e:?}")
        };
        assert_eq!(
            (r.id, r.tool.as_str(), r.risk),
            (3, "shell_exec", Risk::Critical)
        );
        assert_eq!(r.caller, "socket claude-desktop pid 4");
    }

    #[test]
    fn other_event_types_are_ignored_not_errors() {
        for event in [
            json!({"type": "call_finished", "call_id": 1, "tool": "t", "elapsed": 3,
                   "outcome": {"status": "ok", "is_error": false, "size": 2}}),
            json!({"type": "some_future_event", "x": [1, 2]}),
        ] {
            let e: Envelope =
                serde_json::from_value(json!({"seq": 1, "ts_ms": 0, "event": event})).unwrap();
            assert_eq!(e.event, Event::Other);
        }
    }

    #[test]
    fn the_snapshots_caller_reads_as_the_engine_words_it() {
        let s: Snapshot = serde_json::from_value(json!({
            "seq": 12, "engine": {"pid": 1}, "counters": {},
            "pending": [{"id": 5, "call_id": 9, "tool": "fs_write", "args": {"path": "/x"},
                         "risk": "high", "reason": "writes", "expires_ms": 5,
                         "caller": {"via": "socket", "pid": 48213, "exe": "/usr/bin/python3",
                                    "client_name": "claude-desktop",
                                    "text": "socket claude-desktop pid 48213"}}]
        }))
        .unwrap();
        assert_eq!(s.seq, 12);
        assert_eq!(s.pending[0].caller, "socket claude-desktop pid 48213");
    }

    #[test]
    fn a_decision_body_names_the_decider() {
        let body = DecisionBody {
            decider: Some(Via::Notification),
            ..DecisionBody::default()
        };
        assert_eq!(
            serde_json::to_value(body).unwrap(),
            json!({"decider": "notification"})
        );
    }
}
