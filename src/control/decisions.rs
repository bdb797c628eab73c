//! A person's decisions: approve, deny (with a reason), "always" with a
//! scope and an expiry, the scope preview, and the remembered rules.
//!
//! Every decision records who made it ([`Decider`], stored in the
//! request's `decided_by` as its text form). A decision on a request that
//! has ended (decided from elsewhere, timed out, expired, cancelled) is
//! [`ControlError::Stale`] and changes nothing; an unknown id is
//! [`ControlError::NotFound`]. The preview binds a scope to the request
//! exactly as deciding would, and changes nothing.

use std::time::Duration;

use super::types::{
    ApprovalDetail, ApproveInput, AuditQuery, CallSummary, DecidedView, DenyInput, RuleView,
    ScopePreview,
};
use super::{Control, ControlError};
pub use crate::approval::Decider;
use crate::approval::{
    Approvals, CallerInfo, Decision, RememberedRule, RuleEffect, ScopeDef, ScopeError,
};
use crate::policy::PatternKind;
use crate::wire::AlwaysInput;

/// Longest "always" expiry: ten years. Longer is a typo (and would
/// overflow the stored expiry); leave it out to keep a rule until revoked.
const MAX_TTL_S: u64 = 10 * 365 * 86_400;

/// Longest deny reason kept (it is passed to the agent).
const MAX_REASON: usize = 2_000;

impl Control {
    fn approvals(&self) -> Result<&Approvals, ControlError> {
        self.engine().approvals().ok_or_else(|| {
            ControlError::Unavailable(
                "this engine runs without an approval queue (no audit database), \
                 so calls that need a person are refused instead"
                    .into(),
            )
        })
    }

    /// The requests waiting for a person.
    ///
    /// # Errors
    /// No approval queue.
    pub fn pending(&self) -> Result<Vec<crate::approval::ApprovalRequest>, ControlError> {
        Ok(self.approvals()?.pending())
    }

    /// A request with this caller's last calls of the tool.
    ///
    /// # Errors
    /// Unknown id, no approval queue, or the store.
    pub async fn approval(&self, id: i64) -> Result<ApprovalDetail, ControlError> {
        let request = self.approvals()?.get(id).await?;
        let caller_recent = self.caller_recent(&request.tool, &request.caller).await?;
        Ok(ApprovalDetail {
            request,
            caller_recent,
        })
    }

    /// The newest 10 calls of `tool` by the same caller (pid aside).
    async fn caller_recent(
        &self,
        tool: &str,
        caller: &CallerInfo,
    ) -> Result<Vec<CallSummary>, ControlError> {
        if self.engine().audit().is_none() {
            return Ok(Vec::new());
        }
        let rows = self
            .audit_rows(&AuditQuery {
                tool: Some(tool.to_owned()),
                limit: Some(200),
                ..AuditQuery::default()
            })
            .await?;
        let key = caller.key();
        let same = |row: &&crate::audit::CallRow| {
            super::calls::caller_of(&row.caller).is_some_and(|c| c.key() == key)
        };
        Ok(rows
            .iter()
            .filter(same)
            .take(10)
            .map(super::calls::summary_of)
            .collect())
    }

    /// Approves request `id`, optionally remembering it for a scope.
    ///
    /// # Errors
    /// [`ControlError::Stale`] if it ended, `NotFound`, `Invalid` (scope,
    /// ttl, a decider that is not a person), or the store.
    pub async fn approve(
        &self,
        id: i64,
        by: &Decider,
        input: ApproveInput,
    ) -> Result<DecidedView, ControlError> {
        self.decide(id, by, Decision::approve(), input.always).await
    }

    /// Denies request `id` with an optional reason for the agent,
    /// optionally remembering it for a scope.
    ///
    /// # Errors
    /// As [`Self::approve`]; a reason longer than 2,000 bytes is invalid.
    pub async fn deny(
        &self,
        id: i64,
        by: &Decider,
        input: DenyInput,
    ) -> Result<DecidedView, ControlError> {
        let reason = input
            .reason
            .map(|r| r.trim().to_owned())
            .filter(|r| !r.is_empty());
        if reason.as_ref().is_some_and(|r| r.len() > MAX_REASON) {
            return Err(ControlError::invalid(
                "reason",
                format!("at most {MAX_REASON} bytes; the agent reads it"),
            ));
        }
        self.decide(id, by, Decision::deny(reason), input.always)
            .await
    }

    async fn decide(
        &self,
        id: i64,
        by: &Decider,
        mut decision: Decision,
        always: Option<AlwaysInput>,
    ) -> Result<DecidedView, ControlError> {
        if !by.is_person() {
            return Err(ControlError::invalid(
                "decider",
                format!("`{by}` closes requests by itself; only a person approves or denies"),
            ));
        }
        if let Some(a) = always {
            decision = decision.always(a.scope, ttl(a.ttl_s)?);
        }
        let decided = self
            .approvals()?
            .decide(id, decision.by(by.to_string()))
            .await?;
        Ok(DecidedView {
            decided_by: by.to_string(),
            request: decided.request,
            rule: decided.rule,
        })
    }

    /// What `scope` would cover if request `id` were decided with it:
    /// nothing is changed. A scope that is malformed or misses the
    /// request is not an error here; `problem` says why it cannot be used.
    ///
    /// # Errors
    /// Unknown id, the request ended, or the store.
    pub async fn preview_scope(&self, id: i64, scope: &str) -> Result<ScopePreview, ControlError> {
        match self.approvals()?.bind_scope(id, scope).await {
            Ok(bound) => Ok(ScopePreview {
                text: bound.to_string(),
                covers_request: true,
                words: scope_words(bound.def()),
                problem: None,
            }),
            Err(crate::approval::ApprovalError::Scope(e)) => {
                let text = match &e {
                    ScopeError::MissesRequest { scope, .. } => scope.clone(),
                    _ => scope.trim().to_owned(),
                };
                Ok(ScopePreview {
                    text,
                    covers_request: false,
                    words: String::new(),
                    problem: Some(e.to_string()),
                })
            }
            Err(e) => Err(e.into()),
        }
    }

    /// Remembered rules not revoked (expired ones too, marked inactive),
    /// with how often each matched (kept across restarts).
    ///
    /// # Errors
    /// No approval queue.
    pub fn rules(&self) -> Result<Vec<RuleView>, ControlError> {
        let now = crate::audit::now_ms();
        Ok(self
            .approvals()?
            .rules_with_use()
            .into_iter()
            .map(|u| RuleView {
                active: u.rule.is_active(now),
                words: rule_words(&u.rule),
                made_where: u
                    .rule
                    .created_by
                    .as_deref()
                    .map(crate::approval::recorded_words),
                hits: u.hits,
                last_used_ms: u.last_used_ms,
                rule: u.rule,
            })
            .collect())
    }

    /// Revokes remembered rule `id`; calls in its scope are assessed by
    /// the policy again from now on.
    ///
    /// # Errors
    /// Unknown or already revoked rule, or the store.
    pub async fn revoke_rule(&self, id: i64) -> Result<RememberedRule, ControlError> {
        Ok(self.approvals()?.revoke_rule(id).await?)
    }
}

fn ttl(ttl_s: Option<u64>) -> Result<Option<Duration>, ControlError> {
    match ttl_s {
        None => Ok(None),
        Some(0) => Err(ControlError::invalid(
            "always.ttl_s",
            "must be at least 1 second; leave it out to keep the rule until revoked",
        )),
        Some(s) if s > MAX_TTL_S => Err(ControlError::invalid(
            "always.ttl_s",
            format!(
                "at most {MAX_TTL_S} seconds (ten years); leave it out to keep the rule until revoked"
            ),
        )),
        Some(s) => Ok(Some(Duration::from_secs(s))),
    }
}

/// A remembered rule in words: `Allow every call of `fs_write` whose
/// argument `path` is a path under `~/proj/**`, until revoked.`
pub fn rule_words(rule: &RememberedRule) -> String {
    let effect = match rule.effect {
        RuleEffect::Allow => "Allow",
        RuleEffect::Deny => "Deny",
    };
    let until = match rule.expires_ms {
        None => "until revoked".to_owned(),
        Some(ms) => format!("until {}", crate::control::calls::date_of_ms(ms)),
    };
    format!("{effect} {}, {until}.", scope_body(&rule.scope))
}

/// What a scope covers, in words (for the preview).
pub fn scope_words(def: &ScopeDef) -> String {
    let mut s = scope_body(def);
    if let Some(first) = s.get(..1) {
        s = first.to_uppercase() + &s[1..];
    }
    s.push('.');
    s
}

fn scope_body(def: &ScopeDef) -> String {
    let tool = if def.tool == "*" {
        "every call of any tool".to_owned()
    } else if def.tool.contains(['*', '?', '[', '{']) {
        format!("every call of a tool matching `{}`", def.tool)
    } else {
        format!("every call of `{}`", def.tool)
    };
    let mut parts = Vec::new();
    for a in &def.args {
        let name = a.pointer.trim_start_matches('/').replace('/', ".");
        parts.push(match a.kind {
            PatternKind::Glob => format!("whose argument `{name}` matches `{}`", a.pattern),
            PatternKind::Path => format!("whose argument `{name}` is a path under `{}`", a.pattern),
            PatternKind::Regex => format!(
                "whose argument `{name}` matches the regular expression `{}`",
                a.pattern
            ),
        });
    }
    if def.args_hash.is_some() {
        parts.push("with exactly these arguments".into());
    }
    if let Some(c) = &def.caller {
        parts.push(format!("from {c}"));
    }
    if parts.is_empty() {
        tool
    } else {
        format!("{tool} {}", parts.join(", "))
    }
}

#[cfg(test)]
#[path = "decisions_tests.rs"]
mod tests;
