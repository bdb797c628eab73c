//! Another engine's approval request, as this engine's console shows it,
//! and what became of a decision sent to it.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::identity::EngineIdentity;
use crate::approval::{ApprovalStatus, CallerInfo, Ended};
use crate::tool::Risk;

/// One approval request of an engine of the team.
#[derive(Debug, Clone, PartialEq, Serialize, ts_rs::TS)]
pub struct TeamRequest {
    /// The engine that raised it, which alone decides it.
    pub engine: EngineIdentity,
    /// Its id on that engine.
    #[ts(type = "number")]
    pub id: i64,
    /// The tool.
    pub tool: String,
    /// The arguments, secret ones redacted.
    pub args: Value,
    /// The arguments in one line.
    pub preview: String,
    /// The call's risk.
    pub risk: Risk,
    /// Which rule asked.
    pub rule: String,
    /// Why, in words.
    pub reason: String,
    /// Who asked.
    pub caller: CallerInfo,
    /// Session id.
    pub session: String,
    /// Unix ms, by the raising engine's clock.
    #[ts(type = "number")]
    pub created_ms: i64,
    /// Unix ms; it times out then.
    #[ts(type = "number")]
    pub expires_ms: i64,
    /// Its state.
    pub status: ApprovalStatus,
    /// When it was closed.
    #[ts(type = "number | null")]
    pub decided_ms: Option<i64>,
    /// Who closed it.
    pub decided_by: Option<String>,
    /// How it ended, in words (`None` while it waits).
    pub ended: Option<Ended>,
    /// Who may decide it (the raising engine's `[team] deciders`); `None`:
    /// anyone of the team.
    pub deciders: Option<Vec<String>>,
    /// Why the person at this engine may not decide it, in one sentence;
    /// `None`: they may.
    pub cannot_decide: Option<String>,
}

impl TeamRequest {
    /// Fills [`Self::cannot_decide`] for `user`.
    pub(super) fn for_user(mut self, user: &str) -> Self {
        self.cannot_decide = refusal(self.deciders.as_deref(), user, &self.engine);
        self
    }
}

/// Why `user` may not decide a request of `engine` whose deciders are
/// `deciders`; `None` if they may.
pub(super) fn refusal(
    deciders: Option<&[String]>,
    user: &str,
    engine: &EngineIdentity,
) -> Option<String> {
    let deciders = deciders?;
    if deciders.iter().any(|d| d == user) {
        return None;
    }
    Some(format!(
        "Only {} may decide requests from {}; this engine runs as {user}.",
        listed(deciders),
        engine.label()
    ))
}

/// `a`, `a and b`, `a, b and c`.
fn listed(names: &[String]) -> String {
    match names {
        [] => "nobody".into(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

#[derive(sqlx::FromRow)]
pub(super) struct Row {
    engine_id: String,
    local_id: i64,
    tool: String,
    args: String,
    preview: String,
    risk: String,
    rule: String,
    reason: String,
    caller: String,
    session: String,
    created_ms: i64,
    expires_ms: i64,
    status: String,
    decided_ms: Option<i64>,
    decided_by: Option<String>,
    decision_reason: Option<String>,
    deciders: Option<String>,
    host: String,
    os_user: String,
}

impl Row {
    pub(super) fn into_request(self) -> TeamRequest {
        let status = ApprovalStatus::parse(&self.status).unwrap_or(ApprovalStatus::Expired);
        TeamRequest {
            ended: crate::approval::ended(
                status,
                self.decided_by.as_deref(),
                self.decision_reason.as_deref(),
            ),
            engine: EngineIdentity {
                id: self.engine_id,
                host: self.host,
                user: self.os_user,
            },
            id: self.local_id,
            tool: self.tool,
            args: serde_json::from_str(&self.args).unwrap_or(Value::Null),
            preview: self.preview,
            risk: crate::approval::stored_risk(self.risk),
            rule: self.rule,
            reason: self.reason,
            caller: serde_json::from_str(&self.caller).unwrap_or_default(),
            session: self.session,
            created_ms: self.created_ms,
            expires_ms: self.expires_ms,
            status,
            decided_ms: self.decided_ms,
            decided_by: self.decided_by,
            deciders: self.deciders.and_then(|d| serde_json::from_str(&d).ok()),
            cannot_decide: None,
        }
    }
}

/// What the engine that raised a request did with a decision sent to it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
#[ts(rename = "TeamOutcome")]
pub struct Outcome {
    /// This decision is the one that closed the request.
    pub took_effect: bool,
    /// The request's state now.
    pub status: ApprovalStatus,
    /// Who closed it (this decision's author, or whoever was first).
    pub decided_by: Option<String>,
    /// What happened, in one sentence.
    pub words: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn engine() -> EngineIdentity {
        EngineIdentity {
            id: "e".into(),
            host: "ci-3".into(),
            user: "runner".into(),
        }
    }

    #[test]
    fn only_listed_deciders_may_decide() {
        let d = vec!["alice".to_owned(), "bob".to_owned()];
        assert_eq!(refusal(Some(&d), "alice", &engine()), None);
        assert_eq!(refusal(None, "mallory", &engine()), None);
        assert_eq!(
            refusal(Some(&d), "mallory", &engine()).unwrap(),
            "Only alice and bob may decide requests from runner on ci-3; this engine runs as mallory."
        );
    }
}
