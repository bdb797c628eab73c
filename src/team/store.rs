//! The team's rows on Postgres (`migrations-postgres/`). Every write that
//! others must see sends a notification on [`CHANNEL`] in the same
//! transaction, so it is delivered exactly when the write commits.

use serde::{Deserialize, Serialize};
use sqlx::{PgConnection, PgPool, Postgres, Transaction};

use super::identity::EngineIdentity;
use super::request::TeamRequest;
use crate::approval::{ApprovalRequest, ApprovalStatus};

/// The one channel every engine listens on.
pub(super) const CHANNEL: &str = "toolgate_team";

/// The team schema, per backend: Postgres has its own migrations.
pub(super) static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("./migrations-postgres");

/// What a notification says changed; the rows say the rest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "k", rename_all = "snake_case")]
pub(super) enum Note {
    /// Request `id` of engine `e` was raised or closed.
    Request {
        /// The engine that raised it.
        e: String,
        /// Its local id.
        id: i64,
    },
    /// Decision `id` was sent to engine `e`.
    Decision {
        /// The engine that raised the request.
        e: String,
        /// The decision's id.
        id: i64,
    },
    /// Rule `id` of engine `e` was shared, changed or revoked.
    Rule {
        /// The engine that made it.
        e: String,
        /// Its local id.
        id: i64,
    },
    /// Engine `e` approved a version of upstream tool `name`.
    Pin {
        /// The engine.
        e: String,
        /// The tool's registry name.
        name: String,
    },
    /// Engine `e` answered decision `id`, sent from engine `to`.
    Outcome {
        /// The engine that answered.
        e: String,
        /// The decision's id.
        id: i64,
        /// The engine that sent it.
        to: String,
    },
}

async fn notify(conn: &mut PgConnection, note: &Note) -> Result<(), sqlx::Error> {
    let payload = serde_json::to_string(note).unwrap_or_default();
    sqlx::query("SELECT pg_notify($1, $2)")
        .bind(CHANNEL)
        .bind(payload)
        .execute(conn)
        .await?;
    Ok(())
}

/// Adds or refreshes this engine's row, heartbeat included.
pub(super) async fn register(
    pool: &PgPool,
    me: &EngineIdentity,
    started_ms: i64,
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "INSERT INTO engines (id, host, os_user, version, started_ms, seen) \
         VALUES ($1, $2, $3, $4, $5, now()) \
         ON CONFLICT (id) DO UPDATE SET host = $2, os_user = $3, version = $4, \
         started_ms = $5, seen = now()",
    )
    .bind(&me.id)
    .bind(&me.host)
    .bind(&me.user)
    .bind(env!("CARGO_PKG_VERSION"))
    .bind(started_ms)
    .execute(pool)
    .await?;
    Ok(())
}

/// Says this engine is alive.
pub(super) async fn heartbeat(pool: &PgPool, me: &str) -> Result<(), sqlx::Error> {
    sqlx::query("UPDATE engines SET seen = now() WHERE id = $1")
        .bind(me)
        .execute(pool)
        .await?;
    Ok(())
}

/// An engine of the team and whether it is online.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ts_rs::TS)]
pub struct EngineSeen {
    /// Which engine.
    pub engine: EngineIdentity,
    /// Its heartbeat is recent.
    pub online: bool,
    /// Milliseconds since its last heartbeat, by the database's clock.
    #[ts(type = "number")]
    pub seen_ago_ms: i64,
}

/// Every engine of the team; online means a heartbeat within `online_ms`.
pub(super) async fn engines(pool: &PgPool, online_ms: i64) -> Result<Vec<EngineSeen>, sqlx::Error> {
    let rows: Vec<(String, String, String, i64)> = sqlx::query_as(
        "SELECT id, host, os_user, \
         (EXTRACT(EPOCH FROM (now() - seen)) * 1000)::BIGINT AS ago \
         FROM engines ORDER BY host, os_user, id",
    )
    .fetch_all(pool)
    .await?;
    Ok(rows
        .into_iter()
        .map(|(id, host, user, ago)| EngineSeen {
            engine: EngineIdentity { id, host, user },
            online: ago <= online_ms,
            seen_ago_ms: ago,
        })
        .collect())
}

/// Publishes a local request as it is now. A replay of a row already
/// there changes nothing; `offered` is false for a request that was raised
/// and closed while the engine was offline.
pub(super) async fn publish(
    pool: &PgPool,
    me: &str,
    r: &ApprovalRequest,
    offered: bool,
    deciders: Option<&[String]>,
) -> Result<(), sqlx::Error> {
    let mut tx = pool.begin().await?;
    let inserted = sqlx::query(
        "INSERT INTO team_requests (engine_id, local_id, call_id, tool, args, preview, risk, \
         rule, reason, caller, session, created_ms, expires_ms, status, decided_ms, decided_by, \
         decision_reason, offered, deciders) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, \
         $19) \
         ON CONFLICT (engine_id, local_id) DO NOTHING",
    )
    .bind(me)
    .bind(r.id)
    .bind(r.call_id)
    .bind(&r.tool)
    .bind(crate::canonical::canonical_json(&r.args))
    .bind(&r.preview)
    .bind(crate::policy::risk_str(r.risk))
    .bind(&r.rule)
    .bind(&r.reason)
    .bind(serde_json::to_string(&r.caller).unwrap_or_default())
    .bind(&r.session)
    .bind(r.created_ms)
    .bind(r.expires_ms)
    .bind(r.status.as_str())
    .bind(r.decided_ms)
    .bind(&r.decided_by)
    .bind(&r.decision_reason)
    .bind(offered)
    .bind(deciders.map(|d| serde_json::to_string(d).unwrap_or_default()))
    .execute(&mut *tx)
    .await?
    .rows_affected();
    let closed = if inserted == 0 && r.status != ApprovalStatus::Pending {
        close(&mut tx, me, r).await?
    } else {
        false
    };
    if inserted == 1 || closed {
        notify(
            &mut tx,
            &Note::Request {
                e: me.to_owned(),
                id: r.id,
            },
        )
        .await?;
    }
    tx.commit().await
}

/// Closes a published request the way it closed locally; `false` if it
/// was closed already.
async fn close(
    tx: &mut Transaction<'_, Postgres>,
    me: &str,
    r: &ApprovalRequest,
) -> Result<bool, sqlx::Error> {
    let n = sqlx::query(
        "UPDATE team_requests SET status = $3, decided_ms = $4, decided_by = $5, \
         decision_reason = $6 WHERE engine_id = $1 AND local_id = $2 AND status = 'pending'",
    )
    .bind(me)
    .bind(r.id)
    .bind(r.status.as_str())
    .bind(r.decided_ms)
    .bind(&r.decided_by)
    .bind(&r.decision_reason)
    .execute(&mut **tx)
    .await?
    .rows_affected();
    Ok(n == 1)
}

/// The ids one `SELECT <id> ... WHERE engine_id = $1 ...` finds.
async fn ids_of(pool: &PgPool, sql: &'static str, me: &str) -> Result<Vec<i64>, sqlx::Error> {
    let rows: Vec<(i64,)> = sqlx::query_as(sql).bind(me).fetch_all(pool).await?;
    Ok(rows.into_iter().map(|(id,)| id).collect())
}

/// The highest local id of this engine the team has.
pub(super) async fn watermark(pool: &PgPool, me: &str) -> Result<i64, sqlx::Error> {
    max_of(
        pool,
        "SELECT MAX(local_id) FROM team_requests WHERE engine_id = $1",
        me,
    )
    .await
}

/// The one `MAX(...)` a `... WHERE engine_id = $1` finds; 0 for none.
async fn max_of(pool: &PgPool, sql: &'static str, me: &str) -> Result<i64, sqlx::Error> {
    let (w,): (Option<i64>,) = sqlx::query_as(sql).bind(me).fetch_one(pool).await?;
    Ok(w.unwrap_or(0))
}

/// Local ids of this engine's requests the team still sees pending.
pub(super) async fn pending_ids(pool: &PgPool, me: &str) -> Result<Vec<i64>, sqlx::Error> {
    let sql = "SELECT local_id FROM team_requests WHERE engine_id = $1 AND status = 'pending'";
    ids_of(pool, sql, me).await
}

/// A query for team requests with their engines, ending in `$tail`.
macro_rules! select_requests {
    ($tail:literal) => {
        concat!(
            "SELECT r.engine_id, r.local_id, r.tool, r.args, r.preview, r.risk, r.rule, \
             r.reason, r.caller, r.session, r.created_ms, r.expires_ms, r.status, r.decided_ms, \
             r.decided_by, r.decision_reason, r.deciders, e.host, e.os_user \
             FROM team_requests r JOIN engines e ON e.id = r.engine_id ",
            $tail
        )
    };
}

/// One request of any engine.
pub(super) async fn request(
    pool: &PgPool,
    engine: &str,
    id: i64,
) -> Result<Option<TeamRequest>, sqlx::Error> {
    let sql = select_requests!("WHERE r.engine_id = $1 AND r.local_id = $2");
    let row: Option<super::request::Row> = sqlx::query_as(sql)
        .bind(engine)
        .bind(id)
        .fetch_optional(pool)
        .await?;
    Ok(row.map(super::request::Row::into_request))
}

/// Every pending request of the other engines, oldest first.
pub(super) async fn others_pending(
    pool: &PgPool,
    me: &str,
) -> Result<Vec<TeamRequest>, sqlx::Error> {
    let sql =
        select_requests!("WHERE r.status = 'pending' AND r.engine_id <> $1 ORDER BY r.created_ms");
    let rows: Vec<super::request::Row> = sqlx::query_as(sql).bind(me).fetch_all(pool).await?;
    Ok(rows
        .into_iter()
        .map(super::request::Row::into_request)
        .collect())
}

/// A decision sent to the engine that raised the request.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub(super) struct SentDecision {
    /// Its id.
    pub id: i64,
    /// The request's local id on the receiving engine.
    pub local_id: i64,
    /// `approve` or `deny`.
    pub answer: String,
    /// A deny reason or a note.
    pub reason: Option<String>,
    /// An "always" decision's scope.
    pub always_scope: Option<String>,
    /// Its time to live.
    pub always_ttl_ms: Option<i64>,
    /// Who decided.
    pub by_user: String,
    /// On which engine.
    pub by_engine: String,
}

/// Sends a decision to `engine`; returns its id.
pub(super) async fn send_decision(
    pool: &PgPool,
    engine: &str,
    d: &SentDecision,
    sent_ms: i64,
) -> Result<i64, sqlx::Error> {
    let mut tx = pool.begin().await?;
    let (id,): (i64,) = sqlx::query_as(
        "INSERT INTO team_decisions (engine_id, local_id, answer, reason, always_scope, \
         always_ttl_ms, by_user, by_engine, sent_ms) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING id",
    )
    .bind(engine)
    .bind(d.local_id)
    .bind(&d.answer)
    .bind(&d.reason)
    .bind(&d.always_scope)
    .bind(d.always_ttl_ms)
    .bind(&d.by_user)
    .bind(&d.by_engine)
    .bind(sent_ms)
    .fetch_one(&mut *tx)
    .await?;
    notify(
        &mut tx,
        &Note::Decision {
            e: engine.to_owned(),
            id,
        },
    )
    .await?;
    tx.commit().await?;
    Ok(id)
}

/// Takes decision `id` addressed to `me`, if nobody took or voided it.
pub(super) async fn take_decision(
    pool: &PgPool,
    me: &str,
    id: i64,
) -> Result<Option<SentDecision>, sqlx::Error> {
    sqlx::query_as(
        "UPDATE team_decisions SET state = 'taken' \
         WHERE id = $1 AND engine_id = $2 AND state = 'sent' \
         RETURNING id, local_id, answer, reason, always_scope, always_ttl_ms, by_user, by_engine",
    )
    .bind(id)
    .bind(me)
    .fetch_optional(pool)
    .await
}

/// The user engine `id` runs as, by its own row.
pub(super) async fn engine_user(pool: &PgPool, id: &str) -> Result<Option<String>, sqlx::Error> {
    let row: Option<(String,)> = sqlx::query_as("SELECT os_user FROM engines WHERE id = $1")
        .bind(id)
        .fetch_optional(pool)
        .await?;
    Ok(row.map(|(u,)| u))
}

/// Decisions sent to `me` that nobody took yet (sent while it was
/// offline, or before it listened).
pub(super) async fn waiting_for(pool: &PgPool, me: &str) -> Result<Vec<i64>, sqlx::Error> {
    let sql = "SELECT id FROM team_decisions WHERE engine_id = $1 AND state = 'sent' ORDER BY id";
    ids_of(pool, sql, me).await
}

/// Records what became of a taken decision and tells its sender.
pub(super) async fn answer(
    pool: &PgPool,
    me: &str,
    d: &SentDecision,
    outcome: &super::request::Outcome,
) -> Result<(), sqlx::Error> {
    let mut tx = pool.begin().await?;
    sqlx::query("UPDATE team_decisions SET outcome = $2 WHERE id = $1")
        .bind(d.id)
        .bind(serde_json::to_string(outcome).unwrap_or_default())
        .execute(&mut *tx)
        .await?;
    notify(
        &mut tx,
        &Note::Outcome {
            e: me.to_owned(),
            id: d.id,
            to: d.by_engine.clone(),
        },
    )
    .await?;
    tx.commit().await
}

/// Gives up on decision `id` unless its engine took it; `true` if voided.
pub(super) async fn void_decision(pool: &PgPool, id: i64) -> Result<bool, sqlx::Error> {
    let n =
        sqlx::query("UPDATE team_decisions SET state = 'void' WHERE id = $1 AND state = 'sent'")
            .bind(id)
            .execute(pool)
            .await?
            .rows_affected();
    Ok(n == 1)
}

/// What the receiving engine answered to decision `id`, once it has.
pub(super) async fn outcome(
    pool: &PgPool,
    id: i64,
) -> Result<Option<super::request::Outcome>, sqlx::Error> {
    let row: Option<(Option<String>,)> =
        sqlx::query_as("SELECT outcome FROM team_decisions WHERE id = $1")
            .bind(id)
            .fetch_optional(pool)
            .await?;
    Ok(row
        .and_then(|(o,)| o)
        .and_then(|o| serde_json::from_str(&o).ok()))
}

/// The highest local call row id of this engine the team has.
pub(super) async fn calls_watermark(pool: &PgPool, me: &str) -> Result<i64, sqlx::Error> {
    max_of(
        pool,
        "SELECT MAX(local_id) FROM team_calls WHERE engine_id = $1",
        me,
    )
    .await
}

/// Ships local call rows; rows the team has already are skipped.
pub(super) async fn ship_calls(
    pool: &PgPool,
    me: &str,
    rows: &[crate::audit::CallRow],
) -> Result<(), sqlx::Error> {
    if rows.is_empty() {
        return Ok(());
    }
    let mut q = sqlx::QueryBuilder::<Postgres>::new(
        "INSERT INTO team_calls (engine_id, local_id, ts_ms, call_id, session, caller, tool, \
         args, args_hash, decision, outcome, error_kind, error_message, stages, notes, \
         output_size, output_digest, elapsed_us) ",
    );
    q.push_values(rows, |mut b, r| {
        b.push_bind(me)
            .push_bind(r.id)
            .push_bind(r.ts_ms)
            .push_bind(r.call_id)
            .push_bind(&r.session)
            .push_bind(&r.caller)
            .push_bind(&r.tool)
            .push_bind(&r.args)
            .push_bind(&r.args_hash)
            .push_bind(&r.decision)
            .push_bind(&r.outcome)
            .push_bind(&r.error_kind)
            .push_bind(&r.error_message)
            .push_bind(&r.stages)
            .push_bind(&r.notes)
            .push_bind(r.output_size)
            .push_bind(&r.output_digest)
            .push_bind(r.elapsed_us);
    });
    q.push(" ON CONFLICT (engine_id, local_id) DO NOTHING");
    q.build().execute(pool).await?;
    Ok(())
}

/// Shares one of this engine's rules as it now is (revoked included).
pub(super) async fn publish_rule(
    pool: &PgPool,
    me: &str,
    r: &crate::approval::RememberedRule,
) -> Result<(), sqlx::Error> {
    let mut tx = pool.begin().await?;
    sqlx::query(
        "INSERT INTO team_rules (engine_id, local_id, effect, scope, scope_text, reason, \
         created_ms, created_by, expires_ms, revoked_ms) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) \
         ON CONFLICT (engine_id, local_id) DO UPDATE SET effect = $3, scope = $4, \
         scope_text = $5, reason = $6, expires_ms = $9, revoked_ms = $10",
    )
    .bind(me)
    .bind(r.id)
    .bind(r.effect.as_str())
    .bind(serde_json::to_string(&r.scope).unwrap_or_default())
    .bind(&r.scope_text)
    .bind(&r.reason)
    .bind(r.created_ms)
    .bind(&r.created_by)
    .bind(r.expires_ms)
    .bind(r.revoked_ms)
    .execute(&mut *tx)
    .await?;
    notify(
        &mut tx,
        &Note::Rule {
            e: me.to_owned(),
            id: r.id,
        },
    )
    .await?;
    tx.commit().await
}

/// Local ids of this engine's shared rules the team holds unrevoked.
pub(super) async fn shared_rule_ids(pool: &PgPool, me: &str) -> Result<Vec<i64>, sqlx::Error> {
    let sql = "SELECT local_id FROM team_rules WHERE engine_id = $1 AND revoked_ms IS NULL";
    ids_of(pool, sql, me).await
}

/// A shared rule as read back, with its engine's user and host.
#[derive(sqlx::FromRow)]
struct SharedRuleRow {
    local_id: i64,
    effect: String,
    scope: String,
    scope_text: String,
    reason: Option<String>,
    created_ms: i64,
    created_by: Option<String>,
    expires_ms: Option<i64>,
    os_user: String,
    host: String,
}

impl SharedRuleRow {
    /// The rule as applied here; `None` if this version cannot read it.
    fn into_rule(self) -> Option<crate::approval::RememberedRule> {
        Some(crate::approval::RememberedRule {
            id: self.local_id,
            effect: crate::approval::RuleEffect::parse(&self.effect)?,
            scope: serde_json::from_str(&self.scope).ok()?,
            scope_text: self.scope_text,
            reason: self.reason,
            created_ms: self.created_ms,
            created_by: self.created_by,
            from_request: None,
            expires_ms: self.expires_ms,
            revoked_ms: None,
            origin: Some(format!("{} on {}", self.os_user, self.host)),
        })
    }
}

/// The unrevoked rules the other engines share, each naming its engine.
pub(super) async fn others_rules(
    pool: &PgPool,
    me: &str,
) -> Result<Vec<crate::approval::RememberedRule>, sqlx::Error> {
    let rows: Vec<SharedRuleRow> = sqlx::query_as(
        "SELECT r.local_id, r.effect, r.scope, r.scope_text, r.reason, r.created_ms, \
         r.created_by, r.expires_ms, e.os_user, e.host \
         FROM team_rules r JOIN engines e ON e.id = r.engine_id \
         WHERE r.engine_id <> $1 AND r.revoked_ms IS NULL ORDER BY r.created_ms",
    )
    .bind(me)
    .fetch_all(pool)
    .await?;
    Ok(rows
        .into_iter()
        .filter_map(SharedRuleRow::into_rule)
        .collect())
}

/// Shares an approved version of upstream tool `name`.
pub(super) async fn publish_pin(
    pool: &PgPool,
    me: &str,
    name: &str,
    hash: &str,
) -> Result<(), sqlx::Error> {
    let mut tx = pool.begin().await?;
    let n = sqlx::query(
        "INSERT INTO team_pins (name, hash, engine_id, approved_ms) VALUES ($1, $2, $3, $4) \
         ON CONFLICT (name, hash) DO NOTHING",
    )
    .bind(name)
    .bind(hash)
    .bind(me)
    .bind(crate::audit::now_ms())
    .execute(&mut *tx)
    .await?
    .rows_affected();
    if n == 1 {
        notify(
            &mut tx,
            &Note::Pin {
                e: me.to_owned(),
                name: name.to_owned(),
            },
        )
        .await?;
    }
    tx.commit().await
}

/// Whether a sharing engine approved this version of `name`.
pub(super) async fn pin_approved(
    pool: &PgPool,
    name: &str,
    hash: &str,
) -> Result<bool, sqlx::Error> {
    let row: Option<(i64,)> =
        sqlx::query_as("SELECT 1::BIGINT FROM team_pins WHERE name = $1 AND hash = $2")
            .bind(name)
            .bind(hash)
            .fetch_optional(pool)
            .await?;
    Ok(row.is_some())
}

/// One call row of the team's audit log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ts_rs::TS)]
pub struct TeamCall {
    /// The engine that governed it.
    pub engine: EngineIdentity,
    /// Its row id on that engine.
    #[ts(type = "number")]
    pub local_id: i64,
    /// Arrival, Unix ms (that engine's clock).
    #[ts(type = "number")]
    pub ts_ms: i64,
    /// The tool.
    pub tool: String,
    /// Who called, in words (`socket client claude uid 1000 pid 42`).
    pub caller: String,
    /// `allowed` or `refused`.
    pub decision: String,
    /// How it ended.
    pub outcome: crate::wire::CallOutcome,
    /// The error class, for `error` and `cancelled` (absent when the row
    /// names a class this version does not know).
    pub error_kind: Option<crate::error::ErrorKind>,
    /// Time in the pipeline, µs.
    #[ts(type = "number")]
    pub elapsed_us: i64,
}

/// What to read of the team's audit log: newest first.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Deserialize, ts_rs::TS)]
#[serde(default, deny_unknown_fields)]
pub struct TeamCallsQuery {
    /// Only this engine's calls.
    pub engine: Option<String>,
    /// Only this tool.
    pub tool: Option<String>,
    /// Only calls that arrived before this (Unix ms): the next page.
    #[ts(type = "number | null")]
    pub before_ms: Option<i64>,
    /// At most this many (1-500; default 100).
    pub limit: Option<i64>,
}

/// Calls of the team's audit log, newest first.
pub(super) async fn calls(pool: &PgPool, q: &TeamCallsQuery) -> Result<Vec<TeamCall>, sqlx::Error> {
    let limit = q.limit.unwrap_or(100).clamp(1, 500);
    let rows: Vec<TeamCallRow> = sqlx::query_as(
        "SELECT c.engine_id, e.host, e.os_user, c.local_id, c.ts_ms, c.tool, c.caller, \
         c.decision, c.outcome, c.error_kind, c.elapsed_us \
         FROM team_calls c JOIN engines e ON e.id = c.engine_id \
         WHERE ($1::TEXT IS NULL OR c.engine_id = $1) AND ($2::TEXT IS NULL OR c.tool = $2) \
         AND ($3::BIGINT IS NULL OR c.ts_ms < $3) \
         ORDER BY c.ts_ms DESC, c.engine_id, c.local_id DESC LIMIT $4",
    )
    .bind(&q.engine)
    .bind(&q.tool)
    .bind(q.before_ms)
    .bind(limit)
    .fetch_all(pool)
    .await?;
    Ok(rows.into_iter().map(TeamCallRow::into_call).collect())
}

/// A row of the team's audit log with its engine, as read back.
#[derive(sqlx::FromRow)]
struct TeamCallRow {
    engine_id: String,
    host: String,
    os_user: String,
    local_id: i64,
    ts_ms: i64,
    tool: String,
    caller: String,
    decision: String,
    outcome: String,
    error_kind: Option<String>,
    elapsed_us: i64,
}

impl TeamCallRow {
    fn into_call(self) -> TeamCall {
        TeamCall {
            engine: EngineIdentity {
                id: self.engine_id,
                host: self.host,
                user: self.os_user,
            },
            local_id: self.local_id,
            ts_ms: self.ts_ms,
            tool: self.tool,
            caller: crate::approval::CallerInfo::stored_words(&self.caller),
            decision: self.decision,
            outcome: crate::wire::CallOutcome::parse(&self.outcome),
            error_kind: self
                .error_kind
                .as_deref()
                .and_then(crate::error::ErrorKind::parse),
            elapsed_us: self.elapsed_us,
        }
    }
}
