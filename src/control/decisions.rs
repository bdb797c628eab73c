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
    ApprovalError, ApprovalStatus, Approvals, CallerInfo, CallerKey, Decision, RememberedRule,
    RuleEffect, ScopeDef, ScopeError, also_allows, is_literal, plain_command_prefix, unescape_glob,
};
use crate::policy::PatternKind;
use crate::tool::ToolDef;
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
        let scope = match request.status {
            ApprovalStatus::Pending => {
                let def = self.tool_def(&request.tool);
                match self.approvals()?.offer(id, def.as_ref()).await {
                    Ok(offer) => Some(offer),
                    // Decided or closed meanwhile.
                    Err(ApprovalError::AlreadyDecided { .. } | ApprovalError::NotFound { .. }) => {
                        None
                    }
                    Err(e) => return Err(e.into()),
                }
            }
            _ => None,
        };
        Ok(ApprovalDetail {
            request,
            caller_recent,
            scope,
        })
    }

    /// The definition of the tool a request is for, while it is registered.
    fn tool_def(&self, tool: &str) -> Option<ToolDef> {
        let tools = self.engine().registry().snapshot();
        tools
            .get(tool)
            .map(|t| t.def.clone())
            // A coding agent's own tool, gated through its hooks.
            .or_else(|| self.engine().hook_gates().def_shown_as(tool))
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
        let pool = self.audit()?.pool();
        super::audit_query::summarize(pool, rows.into_iter().filter(|r| same(&r)).take(10)).await
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

    /// What `scope` would cover if request `id` were decided with it, for
    /// `ttl_s` (`None`: until revoked): nothing is changed. A scope that is
    /// malformed or misses the request is not an error here; `problem`
    /// says why it cannot be used. `also_allows` says what it lets through
    /// beyond the narrowest scope for the request.
    ///
    /// # Errors
    /// Unknown id, the request ended, or the store.
    pub async fn preview_scope(
        &self,
        id: i64,
        scope: &str,
        ttl_s: Option<u64>,
    ) -> Result<ScopePreview, ControlError> {
        let approvals = self.approvals()?;
        match approvals.bind_scope(id, scope).await {
            Ok(bound) => {
                let def = self.tool_def(&approvals.get(id).await?.tool);
                let narrow = approvals.narrowest(id, def.as_ref()).await;
                Ok(ScopePreview {
                    text: bound.to_string(),
                    covers_request: true,
                    words: scope_words(bound.def()),
                    problem: None,
                    also_allows: narrow
                        .ok()
                        .and_then(|n| also_allows(&n, bound.def(), ttl_s)),
                })
            }
            Err(crate::approval::ApprovalError::Scope(e)) => {
                let text = match &e {
                    ScopeError::MissesRequest { scope, .. } => scope.clone(),
                    _ => scope.trim().to_owned(),
                };
                Ok(ScopePreview {
                    text,
                    covers_request: false,
                    words: String::new(),
                    problem: Some(problem_words(&e)),
                    also_allows: None,
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
        let literal = is_literal(&a.pattern);
        parts.push(match (a.kind, plain_command_prefix(&a.pattern)) {
            (PatternKind::Regex, Some(prefix)) => format!(
                "whose `{name}` runs `{prefix}` with any plain arguments (no `;`, `&`, `|`, `$`, \
                 quotes, brackets or redirection)"
            ),
            (PatternKind::Glob, _) if literal => {
                format!("whose `{name}` is exactly `{}`", unescape_glob(&a.pattern))
            }
            (PatternKind::Glob, _) => format!("whose `{name}` matches `{}`", a.pattern),
            (PatternKind::Path, _) if literal => {
                format!("whose `{name}` is the path `{}`", unescape_glob(&a.pattern))
            }
            (PatternKind::Path, _) => format!("whose `{name}` is a path under `{}`", a.pattern),
            (PatternKind::Regex, None) => format!(
                "whose `{name}` matches the regular expression `{}`",
                a.pattern
            ),
        });
    }
    if def.args_hash.is_some() {
        parts.push("with exactly these arguments".into());
    }
    if let Some(c) = &def.caller {
        parts.push(caller_words(c));
    }
    if parts.is_empty() {
        tool
    } else {
        format!("{tool} {}", parts.join(", "))
    }
}

/// "from agent-alpha (agent 1, running /usr/bin/python3.11 as uid 1000)":
/// a remembered caller as people know it, its program named.
fn caller_words(k: &CallerKey) -> String {
    let program = k.exe.as_deref().unwrap_or("an unnamed program");
    let name = k.client_name.as_deref().unwrap_or(program);
    let mut runs = Vec::new();
    if k.client_name.is_some() {
        runs.push(format!("running {program}"));
    }
    if let Some(u) = k.uid {
        runs.push(format!("as uid {u}"));
    }
    let details: Vec<String> = k
        .agent_id
        .iter()
        .map(|a| format!("agent {a}"))
        .chain((!runs.is_empty()).then(|| runs.join(" ")))
        .collect();
    if details.is_empty() {
        format!("from {name}")
    } else {
        format!("from {name} ({})", details.join(", "))
    }
}

/// Why a scope cannot be used, as the dialog says it.
fn problem_words(e: &ScopeError) -> String {
    match e {
        ScopeError::MissesRequest { why, .. } => format!(
            "This rule would not apply to the request you are deciding: {why}. Widen the part that leaves it out."
        ),
        other => other.to_string(),
    }
}

#[cfg(test)]
#[path = "decisions_tests.rs"]
mod tests;
