//! Pinning and rug-pull detection: a changed upstream tool is held back
//! until a person approves it.
//!
//! The first time toolgate sees an upstream tool it stores the SHA-256 of
//! its description plus canonical input schema: that is what the model will
//! read and what the arguments must fit, so a server that later rewrites
//! either (the "rug pull": a harmless tool turning into one that asks for
//! `~/.ssh/id_rsa`) is caught. A changed tool is quarantined: it is not
//! registered, so it is neither listed nor callable, until a person
//! approves the new version. Both versions are kept for the UI's diff.
//!
//! A tool whose description carries injection markers (see `inspect`) is
//! quarantined on first sight too: there is no earlier version to trust.
//! A server that goes back to the approved version is trusted again.

use std::str::FromStr;

use serde::Serialize;
use serde_json::Value;
use sha2::{Digest, Sha256};
use sqlx::{Row, SqlitePool};

use super::inspect::{InjectionFlag, scan_description};
use crate::audit::now_ms;
use crate::canonical::canonical_json;
use crate::tool::JsonObject;

/// `SELECT <every column> FROM pins <tail>`, as a literal (sqlx only takes
/// static SQL).
macro_rules! select {
    ($tail:literal) => {
        concat!(
            "SELECT server, tool, name, status, hash, description, input_schema, flags, \
             first_seen_ms, approved_ms, pending_hash, pending_description, pending_schema, \
             pending_flags, pending_since_ms FROM pins ",
            $tail
        )
    };
}

/// Why the pin store failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PinError {
    /// The database failed.
    #[error("pin store: {0}")]
    Db(String),
    /// No pin for that tool name.
    #[error("no pinned tool named `{0}`")]
    NotFound(String),
    /// The tool has no version waiting for approval.
    #[error("`{0}` has no pending change to approve")]
    NothingPending(String),
}

impl From<sqlx::Error> for PinError {
    fn from(e: sqlx::Error) -> Self {
        Self::Db(e.to_string())
    }
}

/// Whether a tool may be registered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ts_rs::TS)]
#[serde(rename_all = "snake_case")]
pub enum PinStatus {
    /// The offered version is the approved one.
    Pinned,
    /// A version waits for a person; the tool is not registered.
    Quarantined,
}

impl PinStatus {
    /// The name stored in the table.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pinned => "pinned",
            Self::Quarantined => "quarantined",
        }
    }
}

impl FromStr for PinStatus {
    type Err = PinError;
    fn from_str(s: &str) -> Result<Self, PinError> {
        match s {
            "pinned" => Ok(Self::Pinned),
            "quarantined" => Ok(Self::Quarantined),
            other => Err(PinError::Db(format!("unknown pin status `{other}`"))),
        }
    }
}

/// One version of a tool as the model would see it.
#[derive(Debug, Clone, PartialEq, Serialize, ts_rs::TS)]
pub struct PinVersion {
    /// SHA-256 (hex) of description + canonical schema.
    pub hash: String,
    /// The description.
    pub description: String,
    /// The input schema.
    pub input_schema: Value,
    /// Injection markers in the description.
    pub flags: Vec<InjectionFlag>,
}

impl PinVersion {
    /// The version of a tool with this description and schema.
    pub fn of(description: &str, schema: &JsonObject) -> Self {
        let schema = Value::Object(schema.clone());
        let canonical = canonical_json(&schema);
        let hash = Sha256::new()
            .chain_update(description.as_bytes())
            .chain_update([0u8])
            .chain_update(canonical.as_bytes())
            .finalize();
        Self {
            hash: hex::encode(hash),
            description: description.to_owned(),
            input_schema: schema,
            flags: scan_description(description),
        }
    }
}

/// A pinned tool, with the version waiting for approval if any.
#[derive(Debug, Clone, PartialEq, Serialize, ts_rs::TS)]
pub struct PinRecord {
    /// The server's name.
    pub server: String,
    /// The server's own tool name.
    pub tool: String,
    /// The registry name.
    pub name: String,
    /// Registered or held back.
    pub status: PinStatus,
    /// The approved version (`None` if the first version was flagged and
    /// nobody has approved it yet).
    pub approved: Option<PinVersion>,
    /// The version waiting for a person.
    pub pending: Option<PinVersion>,
    /// When toolgate first saw the tool (unix ms).
    pub first_seen_ms: i64,
    /// When the current approved version was approved by a person.
    pub approved_ms: Option<i64>,
    /// When the pending version appeared.
    pub pending_since_ms: Option<i64>,
}

/// The outcome of checking an offered tool against its pin.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum PinCheck {
    /// Register it.
    Trusted,
    /// Hold it back. `newly` is true the first time this version is seen.
    Quarantined {
        /// First time this pending version was seen (emit an event).
        newly: bool,
        /// `changed` or `flagged`.
        reason: &'static str,
        /// Markers in the offered description.
        flags: Vec<InjectionFlag>,
    },
}

/// The pin table. Cloning shares the pool.
#[derive(Debug, Clone)]
pub struct PinStore {
    pool: SqlitePool,
}

impl PinStore {
    /// Uses the `pins` table in `pool`'s database (normally
    /// `AuditLog::pool()`), applying migrations if they have not run.
    ///
    /// # Errors
    /// The migrations fail.
    pub async fn open(pool: SqlitePool) -> Result<Self, PinError> {
        sqlx::migrate!("./migrations")
            .run(&pool)
            .await
            .map_err(|e| PinError::Db(e.to_string()))?;
        Ok(Self { pool })
    }

    /// Every pin, by registry name.
    ///
    /// # Errors
    /// The query fails.
    pub async fn list(&self) -> Result<Vec<PinRecord>, PinError> {
        let rows = sqlx::query(select!("ORDER BY name"))
            .fetch_all(&self.pool)
            .await?;
        rows.iter().map(record).collect()
    }

    /// One pin by registry name.
    ///
    /// # Errors
    /// [`PinError::NotFound`], or the query fails.
    pub async fn get(&self, name: &str) -> Result<PinRecord, PinError> {
        let row = sqlx::query(select!("WHERE name = ?"))
            .bind(name)
            .fetch_optional(&self.pool)
            .await?;
        match row {
            Some(r) => record(&r),
            None => Err(PinError::NotFound(name.to_owned())),
        }
    }

    /// A person approves the pending version of `name` (registry name): it
    /// becomes the pinned version. The caller re-imports the server's tools
    /// (`Upstreams::approve` does both).
    ///
    /// # Errors
    /// No such pin, nothing pending, or the database fails.
    pub async fn approve(&self, name: &str) -> Result<PinRecord, PinError> {
        let done = sqlx::query(
            "UPDATE pins SET status = 'pinned', hash = pending_hash, \
             description = pending_description, input_schema = pending_schema, \
             flags = pending_flags, approved_ms = ?, pending_hash = NULL, \
             pending_description = NULL, pending_schema = NULL, pending_flags = NULL, \
             pending_since_ms = NULL WHERE name = ? AND pending_hash IS NOT NULL",
        )
        .bind(now_ms())
        .bind(name)
        .execute(&self.pool)
        .await?;
        if done.rows_affected() == 0 {
            let rec = self.get(name).await?;
            return Err(PinError::NothingPending(rec.name));
        }
        self.get(name).await
    }

    /// Checks the offered version of a tool against its pin, recording it
    /// (first sight) or its change (pending version).
    pub(crate) async fn check(
        &self,
        server: &str,
        tool: &str,
        name: &str,
        offered: &PinVersion,
    ) -> Result<PinCheck, PinError> {
        let row = sqlx::query(select!("WHERE server = ? AND tool = ?"))
            .bind(server)
            .bind(tool)
            .fetch_optional(&self.pool)
            .await?;
        let Some(row) = row else {
            return self.first_sight(server, tool, name, offered).await;
        };
        let rec = record(&row)?;
        if rec.approved.as_ref().map(|v| &v.hash) == Some(&offered.hash) {
            if rec.status != PinStatus::Pinned {
                self.clear_pending(server, tool).await?;
            }
            return Ok(PinCheck::Trusted);
        }
        let newly = rec.pending.as_ref().map(|v| &v.hash) != Some(&offered.hash);
        if newly {
            self.set_pending(server, tool, offered).await?;
        }
        let reason = if rec.approved.is_some() {
            "changed"
        } else {
            "flagged"
        };
        Ok(PinCheck::Quarantined {
            newly,
            reason,
            flags: offered.flags.clone(),
        })
    }

    async fn first_sight(
        &self,
        server: &str,
        tool: &str,
        name: &str,
        v: &PinVersion,
    ) -> Result<PinCheck, PinError> {
        let now = now_ms();
        let clean = v.flags.is_empty();
        // A clean first version is pinned as is; a flagged one has nothing
        // approved yet and waits as the pending version.
        let sql = if clean {
            "INSERT INTO pins (server, tool, name, status, hash, description, input_schema, \
             flags, first_seen_ms) VALUES (?, ?, ?, 'pinned', ?, ?, ?, ?, ?)"
        } else {
            "INSERT INTO pins (server, tool, name, status, pending_hash, pending_description, \
             pending_schema, pending_flags, first_seen_ms, pending_since_ms) \
             VALUES (?, ?, ?, 'quarantined', ?, ?, ?, ?, ?, ?)"
        };
        let q = sqlx::query(sql)
            .bind(server)
            .bind(tool)
            .bind(name)
            .bind(&v.hash)
            .bind(&v.description)
            .bind(canonical_json(&v.input_schema))
            .bind(flags_json(&v.flags))
            .bind(now);
        let q = if clean { q } else { q.bind(now) };
        q.execute(&self.pool).await?;
        if clean {
            Ok(PinCheck::Trusted)
        } else {
            Ok(PinCheck::Quarantined {
                newly: true,
                reason: "flagged",
                flags: v.flags.clone(),
            })
        }
    }

    async fn set_pending(&self, server: &str, tool: &str, v: &PinVersion) -> Result<(), PinError> {
        sqlx::query(
            "UPDATE pins SET status = 'quarantined', pending_hash = ?, pending_description = ?, \
             pending_schema = ?, pending_flags = ?, pending_since_ms = ? \
             WHERE server = ? AND tool = ?",
        )
        .bind(&v.hash)
        .bind(&v.description)
        .bind(canonical_json(&v.input_schema))
        .bind(flags_json(&v.flags))
        .bind(now_ms())
        .bind(server)
        .bind(tool)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    async fn clear_pending(&self, server: &str, tool: &str) -> Result<(), PinError> {
        sqlx::query(
            "UPDATE pins SET status = 'pinned', pending_hash = NULL, pending_description = NULL, \
             pending_schema = NULL, pending_flags = NULL, pending_since_ms = NULL \
             WHERE server = ? AND tool = ?",
        )
        .bind(server)
        .bind(tool)
        .execute(&self.pool)
        .await?;
        Ok(())
    }
}

fn flags_json(flags: &[InjectionFlag]) -> String {
    serde_json::to_string(&flags.iter().map(|f| f.as_str()).collect::<Vec<_>>())
        .unwrap_or_else(|_| "[]".to_owned())
}

fn parse_flags(s: Option<String>) -> Vec<InjectionFlag> {
    s.and_then(|s| serde_json::from_str(&s).ok())
        .unwrap_or_default()
}

fn version(
    hash: Option<String>,
    description: Option<String>,
    schema: Option<String>,
    flags: Option<String>,
) -> Option<PinVersion> {
    Some(PinVersion {
        hash: hash?,
        description: description.unwrap_or_default(),
        input_schema: schema
            .and_then(|s| serde_json::from_str(&s).ok())
            .unwrap_or(Value::Null),
        flags: parse_flags(flags),
    })
}

fn record(r: &sqlx::sqlite::SqliteRow) -> Result<PinRecord, PinError> {
    let status: String = r.try_get("status")?;
    Ok(PinRecord {
        server: r.try_get("server")?,
        tool: r.try_get("tool")?,
        name: r.try_get("name")?,
        status: status.parse()?,
        approved: version(
            r.try_get("hash")?,
            r.try_get("description")?,
            r.try_get("input_schema")?,
            r.try_get("flags")?,
        ),
        pending: version(
            r.try_get("pending_hash")?,
            r.try_get("pending_description")?,
            r.try_get("pending_schema")?,
            r.try_get("pending_flags")?,
        ),
        first_seen_ms: r.try_get("first_seen_ms")?,
        approved_ms: r.try_get("approved_ms")?,
        pending_since_ms: r.try_get("pending_since_ms")?,
    })
}

#[cfg(test)]
#[path = "pins_tests.rs"]
mod tests;
