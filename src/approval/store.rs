//! SQLite rows for approval requests and remembered rules
//! (`migrations/20261202000002_approvals.sql`). Plain SQL that also runs on
//! Postgres apart from the id columns, like the audit log's.
//!
//! Closing a request is a compare-and-set (`WHERE status = 'pending'`):
//! whoever flips the row first (a person, the timeout, the expiry sweep)
//! decides, and the others learn that they lost.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sqlx::{SqliteConnection, SqlitePool};

use super::scope::{CallerInfo, ScopeDef};
use super::{ApprovalError, ApprovalStatus};
use crate::tool::Risk;

/// One approval request, as the UI and CLI show it.
#[derive(Debug, Clone, PartialEq, Serialize, ts_rs::TS)]
pub struct ApprovalRequest {
    /// The id people type (`toolgate approve 12`).
    pub id: i64,
    /// The engine call id of the asking call.
    pub call_id: i64,
    /// The tool.
    pub tool: String,
    /// The arguments, secret ones redacted.
    pub args: Value,
    /// The arguments in one line, for lists (see [`crate::preview`]): the
    /// command, URL or path that tells this request from its neighbours.
    pub preview: String,
    /// `call_hash(key, tool, args)` of the unredacted arguments: the binding.
    pub args_hash: String,
    /// The policy version that asked.
    pub policy_version: i64,
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
    /// Unix ms.
    pub created_ms: i64,
    /// Unix ms; pending past this is closed (timed out / expired).
    pub expires_ms: i64,
    /// Current state.
    pub status: ApprovalStatus,
    /// When it was closed.
    pub decided_ms: Option<i64>,
    /// Who closed it (`cli`, `ui`, `timeout`, `startup`, ...).
    pub decided_by: Option<String>,
    /// A person's reason, or why it expired.
    pub decision_reason: Option<String>,
    /// The remembered rule created by the decision.
    pub rule_id: Option<i64>,
    /// How it ended, in words (`None` while it waits).
    pub ended: Option<super::Ended>,
    /// Whether a call is waiting on it now (false for requests recovered
    /// after a restart until the agent sends the call again).
    pub waiting: bool,
}

#[derive(sqlx::FromRow)]
struct RequestRow {
    id: i64,
    call_id: i64,
    tool: String,
    args: String,
    args_hash: String,
    policy_version: i64,
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
    rule_id: Option<i64>,
}

impl RequestRow {
    fn into_request(self) -> ApprovalRequest {
        let args = serde_json::from_str(&self.args).unwrap_or(Value::Null);
        let status = ApprovalStatus::parse(&self.status).unwrap_or(ApprovalStatus::Expired);
        ApprovalRequest {
            ended: super::ended(
                status,
                self.decided_by.as_deref(),
                self.decision_reason.as_deref(),
            ),
            id: self.id,
            call_id: self.call_id,
            tool: self.tool,
            // Made again from the stored arguments: the tool may be gone,
            // so its parameter names decide what leads.
            preview: crate::preview::preview(None, &args),
            args,
            args_hash: self.args_hash,
            policy_version: self.policy_version,
            risk: stored_risk(self.risk),
            rule: self.rule,
            reason: self.reason,
            caller: serde_json::from_str(&self.caller).unwrap_or_default(),
            session: self.session,
            created_ms: self.created_ms,
            expires_ms: self.expires_ms,
            status,
            decided_ms: self.decided_ms,
            decided_by: self.decided_by,
            decision_reason: self.decision_reason,
            rule_id: self.rule_id,
            waiting: false,
        }
    }
}

/// A risk as stored; an unreadable value reads as the most cautious one.
pub(crate) fn stored_risk(text: String) -> Risk {
    serde_json::from_value(Value::String(text)).unwrap_or(Risk::Critical)
}

/// Inserts a pending request; returns its id.
pub(super) async fn insert_request(
    pool: &SqlitePool,
    r: &ApprovalRequest,
) -> Result<i64, ApprovalError> {
    let caller = serde_json::to_string(&r.caller).unwrap_or_default();
    let risk = crate::policy::risk_str(r.risk);
    let (id,): (i64,) = sqlx::query_as(
        "INSERT INTO approval_requests (call_id, tool, args, args_hash, policy_version, risk, rule, \
         reason, caller, session, created_ms, expires_ms, status) \
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'pending') RETURNING id",
    )
    .bind(r.call_id)
    .bind(&r.tool)
    .bind(crate::canonical::canonical_json(&r.args))
    .bind(&r.args_hash)
    .bind(r.policy_version)
    .bind(risk)
    .bind(&r.rule)
    .bind(&r.reason)
    .bind(caller)
    .bind(&r.session)
    .bind(r.created_ms)
    .bind(r.expires_ms)
    .fetch_one(pool)
    .await?;
    Ok(id)
}

/// How a request was closed.
#[derive(Debug, Clone)]
pub(super) struct Closing {
    pub(super) status: ApprovalStatus,
    pub(super) at_ms: i64,
    pub(super) by: Option<String>,
    pub(super) reason: Option<String>,
}

/// Closes a pending request; `false` if it was no longer pending.
pub(super) async fn close_request(
    conn: &mut SqliteConnection,
    id: i64,
    c: &Closing,
) -> Result<bool, ApprovalError> {
    let r = sqlx::query(
        "UPDATE approval_requests SET status = ?, decided_ms = ?, decided_by = ?, \
         decision_reason = ? WHERE id = ? AND status = 'pending'",
    )
    .bind(c.status.as_str())
    .bind(c.at_ms)
    .bind(&c.by)
    .bind(&c.reason)
    .bind(id)
    .execute(conn)
    .await?;
    Ok(r.rows_affected() == 1)
}

/// Links a request to the remembered rule its decision created.
pub(super) async fn set_request_rule(
    conn: &mut SqliteConnection,
    id: i64,
    rule_id: i64,
) -> Result<(), ApprovalError> {
    sqlx::query("UPDATE approval_requests SET rule_id = ? WHERE id = ?")
        .bind(rule_id)
        .bind(id)
        .execute(conn)
        .await?;
    Ok(())
}

/// One request by id.
pub(super) async fn get_request(
    pool: &SqlitePool,
    id: i64,
) -> Result<Option<ApprovalRequest>, ApprovalError> {
    let row: Option<RequestRow> = sqlx::query_as("SELECT * FROM approval_requests WHERE id = ?")
        .bind(id)
        .fetch_optional(pool)
        .await?;
    Ok(row.map(RequestRow::into_request))
}

/// Every pending request, oldest first.
pub(super) async fn pending_requests(
    pool: &SqlitePool,
) -> Result<Vec<ApprovalRequest>, ApprovalError> {
    let rows: Vec<RequestRow> =
        sqlx::query_as("SELECT * FROM approval_requests WHERE status = 'pending' ORDER BY id")
            .fetch_all(pool)
            .await?;
    Ok(rows.into_iter().map(RequestRow::into_request).collect())
}

/// The newest `limit` requests in any state, newest first.
pub(super) async fn recent_requests(
    pool: &SqlitePool,
    limit: i64,
) -> Result<Vec<ApprovalRequest>, ApprovalError> {
    let rows: Vec<RequestRow> =
        sqlx::query_as("SELECT * FROM approval_requests ORDER BY id DESC LIMIT ?")
            .bind(limit)
            .fetch_all(pool)
            .await?;
    Ok(rows.into_iter().map(RequestRow::into_request).collect())
}

/// Up to `limit` requests with ids above `after`, oldest first.
pub(super) async fn requests_after(
    pool: &SqlitePool,
    after: i64,
    limit: i64,
) -> Result<Vec<ApprovalRequest>, ApprovalError> {
    let rows: Vec<RequestRow> =
        sqlx::query_as("SELECT * FROM approval_requests WHERE id > ? ORDER BY id LIMIT ?")
            .bind(after)
            .bind(limit)
            .fetch_all(pool)
            .await?;
    Ok(rows.into_iter().map(RequestRow::into_request).collect())
}

/// What a remembered rule does to calls in its scope.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ts_rs::TS)]
#[serde(rename_all = "snake_case")]
pub enum RuleEffect {
    /// Run without asking.
    Allow,
    /// Refuse, as a person's denial.
    Deny,
}

impl RuleEffect {
    /// The stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Allow => "allow",
            Self::Deny => "deny",
        }
    }

    /// Reads the stored name back; `None` for anything else.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "allow" => Some(Self::Allow),
            "deny" => Some(Self::Deny),
            _ => None,
        }
    }
}

/// A remembered decision, as listed by `toolgate rules`.
#[derive(Debug, Clone, PartialEq, Serialize, ts_rs::TS)]
pub struct RememberedRule {
    /// The id people type (`toolgate rules --rm 3`).
    pub id: i64,
    /// Allow or deny.
    pub effect: RuleEffect,
    /// What it covers.
    pub scope: ScopeDef,
    /// The same in SCOPE syntax.
    pub scope_text: String,
    /// Why (a deny reason is passed to the agent).
    pub reason: Option<String>,
    /// Unix ms.
    pub created_ms: i64,
    /// Who made it.
    pub created_by: Option<String>,
    /// The request it was made from.
    pub from_request: Option<i64>,
    /// Unix ms after which it no longer applies; `None` = until revoked.
    pub expires_ms: Option<i64>,
    /// When it was revoked.
    pub revoked_ms: Option<i64>,
    /// `None`: this engine's own rule. Otherwise the engine of the team
    /// that made it (`user on host`): shared through the team database,
    /// applied here, changed only there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub origin: Option<String>,
}

impl RememberedRule {
    /// How notes and reasons name it: `#3`, or `#3 of alice on box` for a
    /// rule another engine of the team made.
    pub fn label(&self) -> String {
        match &self.origin {
            None => format!("#{}", self.id),
            Some(o) => format!("#{} of {o}", self.id),
        }
    }

    /// Whether it means the same on every engine: no exact-arguments hash
    /// (keyed per data dir) and no single caller (a process of one
    /// machine). Only such rules are shared with the team.
    pub fn is_portable(&self) -> bool {
        self.scope.args_hash.is_none() && self.scope.caller.is_none()
    }

    /// Whether it applies at `now_ms`.
    pub fn is_active(&self, now_ms: i64) -> bool {
        self.revoked_ms.is_none() && self.expires_ms.is_none_or(|e| now_ms < e)
    }
}

#[derive(sqlx::FromRow)]
struct RuleRow {
    id: i64,
    effect: String,
    scope: String,
    scope_text: String,
    reason: Option<String>,
    created_ms: i64,
    created_by: Option<String>,
    from_request: Option<i64>,
    expires_ms: Option<i64>,
    revoked_ms: Option<i64>,
    hits: i64,
    last_used_ms: Option<i64>,
}

/// How a rule was used, as last written: its matches and the last one's
/// time (unix ms).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct StoredUse {
    pub(super) hits: u64,
    pub(super) last_used_ms: Option<i64>,
}

impl RuleRow {
    fn stored_use(&self) -> StoredUse {
        StoredUse {
            hits: u64::try_from(self.hits).unwrap_or(0),
            last_used_ms: self.last_used_ms,
        }
    }

    fn into_rule(self) -> Option<RememberedRule> {
        Some(RememberedRule {
            id: self.id,
            effect: RuleEffect::parse(&self.effect)?,
            scope: serde_json::from_str(&self.scope).ok()?,
            scope_text: self.scope_text,
            reason: self.reason,
            created_ms: self.created_ms,
            created_by: self.created_by,
            from_request: self.from_request,
            expires_ms: self.expires_ms,
            revoked_ms: self.revoked_ms,
            origin: None,
        })
    }
}

/// Inserts a rule; returns it with its id.
pub(super) async fn insert_rule(
    conn: &mut SqliteConnection,
    mut rule: RememberedRule,
) -> Result<RememberedRule, ApprovalError> {
    let scope =
        serde_json::to_string(&rule.scope).map_err(|e| ApprovalError::Store(e.to_string()))?;
    let (id,): (i64,) = sqlx::query_as(
        "INSERT INTO approval_rules (effect, scope, scope_text, reason, created_ms, created_by, \
         from_request, expires_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
    )
    .bind(rule.effect.as_str())
    .bind(scope)
    .bind(&rule.scope_text)
    .bind(&rule.reason)
    .bind(rule.created_ms)
    .bind(&rule.created_by)
    .bind(rule.from_request)
    .bind(rule.expires_ms)
    .fetch_one(conn)
    .await?;
    rule.id = id;
    Ok(rule)
}

/// Rules not revoked (expired ones included: listing shows them as such),
/// each with its use as last written.
pub(super) async fn unrevoked_rules(
    pool: &SqlitePool,
) -> Result<Vec<(RememberedRule, StoredUse)>, ApprovalError> {
    let rows: Vec<RuleRow> =
        sqlx::query_as("SELECT * FROM approval_rules WHERE revoked_ms IS NULL ORDER BY id")
            .fetch_all(pool)
            .await?;
    Ok(rows
        .into_iter()
        .filter_map(|row| {
            let used = row.stored_use();
            row.into_rule().map(|rule| (rule, used))
        })
        .collect())
}

/// Writes rules' use counts, all in one transaction.
pub(super) async fn write_uses(
    pool: &SqlitePool,
    uses: &[(i64, StoredUse)],
) -> Result<(), ApprovalError> {
    let mut tx = pool.begin().await?;
    for (id, used) in uses {
        sqlx::query("UPDATE approval_rules SET hits = ?, last_used_ms = ? WHERE id = ?")
            .bind(i64::try_from(used.hits).unwrap_or(i64::MAX))
            .bind(used.last_used_ms)
            .bind(id)
            .execute(&mut *tx)
            .await?;
    }
    tx.commit().await?;
    Ok(())
}

/// One rule by id, revoked or not.
pub(super) async fn get_rule(
    pool: &SqlitePool,
    id: i64,
) -> Result<Option<RememberedRule>, ApprovalError> {
    let row: Option<RuleRow> = sqlx::query_as("SELECT * FROM approval_rules WHERE id = ?")
        .bind(id)
        .fetch_optional(pool)
        .await?;
    Ok(row.and_then(RuleRow::into_rule))
}

/// Rewrites the editable fields of a rule that is not revoked.
pub(super) async fn update_rule(
    pool: &SqlitePool,
    r: &RememberedRule,
) -> Result<bool, ApprovalError> {
    let res = sqlx::query(
        "UPDATE approval_rules SET effect = ?, reason = ?, expires_ms = ?, revoked_ms = ? \
         WHERE id = ? AND revoked_ms IS NULL",
    )
    .bind(r.effect.as_str())
    .bind(&r.reason)
    .bind(r.expires_ms)
    .bind(r.revoked_ms)
    .bind(r.id)
    .execute(pool)
    .await?;
    Ok(res.rows_affected() == 1)
}
