//! The SQLite store and its single group-committing writer.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use sqlx::SqlitePool;
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};
use tokio::sync::{mpsc, oneshot};

use super::record::{CallRecord, CallRow, EventRow};
use crate::events::Event;

/// Most rows committed in one transaction. Bounds the latency one commit
/// adds to the calls waiting on it.
pub const MAX_BATCH: usize = 256;

/// Rows that may wait for the writer before callers feel back-pressure.
const QUEUE: usize = 8192;

/// Why the audit log failed.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum AuditError {
    /// The database could not be opened or migrated.
    #[error("cannot open audit log {path}: {message}")]
    Open {
        /// The file.
        path: PathBuf,
        /// Why.
        message: String,
    },
    /// A write failed; the rows of its batch are not recorded.
    #[error("audit log write failed: {0}")]
    Write(String),
    /// A read failed.
    #[error("audit log query failed: {0}")]
    Query(String),
    /// The writer has stopped (shutdown).
    #[error("audit log is closed")]
    Closed,
}

enum Job {
    Call(Box<CallRecord>, oneshot::Sender<Result<(), AuditError>>),
    Event {
        ts_ms: i64,
        kind: String,
        body: String,
    },
    Flush(oneshot::Sender<()>),
}

/// The audit log. Cloning shares it.
#[derive(Clone, Debug)]
pub struct AuditLog {
    tx: mpsc::Sender<Job>,
    pool: SqlitePool,
    path: PathBuf,
}

impl AuditLog {
    /// Opens (creating if needed) the log at `path` and applies migrations.
    ///
    /// # Errors
    /// [`AuditError::Open`] naming the file.
    pub async fn open(path: &Path) -> Result<Self, AuditError> {
        let open_err = |e: &dyn std::fmt::Display| AuditError::Open {
            path: path.to_owned(),
            message: e.to_string(),
        };
        if let Some(dir) = path
            .parent()
            .filter(|d| !d.as_os_str().is_empty() && !d.exists())
        {
            // Arguments and outputs are personal data: a new data directory
            // is private to its owner.
            std::fs::create_dir_all(dir).map_err(|e| open_err(&e))?;
            std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
                .map_err(|e| open_err(&e))?;
        }
        let opts = SqliteConnectOptions::new()
            .filename(path)
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Normal)
            .busy_timeout(Duration::from_secs(5));
        let pool = SqlitePoolOptions::new()
            .max_connections(4)
            .connect_with(opts.clone())
            .await
            .map_err(|e| open_err(&e))?;
        sqlx::migrate!("./migrations")
            .run(&pool)
            .await
            .map_err(|e| open_err(&e))?;
        let conn = open_writer(path).map_err(|e| open_err(&e))?;
        let (tx, rx) = mpsc::channel(QUEUE);
        std::thread::Builder::new()
            .name("toolgate-audit".into())
            .spawn(move || writer(conn, rx))
            .map_err(|e| open_err(&e))?;
        Ok(Self {
            tx,
            pool,
            path: path.to_owned(),
        })
    }

    /// The connection pool, for other stores that share the database file
    /// (approvals, pins); they add their own migrations under `migrations/`.
    pub fn pool(&self) -> &SqlitePool {
        &self.pool
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Records a call; returns once its row is committed.
    ///
    /// # Errors
    /// The write failed or the log is closed.
    pub async fn record_call(&self, rec: CallRecord) -> Result<(), AuditError> {
        let (ack, done) = oneshot::channel();
        self.tx
            .send(Job::Call(Box::new(rec), ack))
            .await
            .map_err(|_| AuditError::Closed)?;
        done.await.map_err(|_| AuditError::Closed)?
    }

    /// Queues an event row without waiting. Events are a record for people,
    /// not part of any reply, so a full queue drops one with a warning
    /// rather than slow calls down.
    pub fn record_event(&self, event: &Event) {
        let Ok(body) = serde_json::to_value(event) else {
            return;
        };
        let kind = body
            .get("type")
            .and_then(|t| t.as_str())
            .unwrap_or("unknown")
            .to_owned();
        let job = Job::Event {
            ts_ms: now_ms(),
            kind,
            body: body.to_string(),
        };
        if self.tx.try_send(job).is_err() {
            tracing::warn!("audit queue full or closed; an event row was dropped");
        }
    }

    /// Waits until everything queued so far is committed.
    pub async fn flush(&self) {
        let (ack, done) = oneshot::channel();
        if self.tx.send(Job::Flush(ack)).await.is_ok() {
            let _ = done.await;
        }
    }

    /// The newest `limit` calls, newest last.
    ///
    /// # Errors
    /// The query failed.
    pub async fn recent_calls(&self, limit: i64) -> Result<Vec<CallRow>, AuditError> {
        let mut rows: Vec<CallRow> = sqlx::query_as("SELECT * FROM calls ORDER BY id DESC LIMIT ?")
            .bind(limit)
            .fetch_all(&self.pool)
            .await
            .map_err(|e| AuditError::Query(e.to_string()))?;
        rows.reverse();
        Ok(rows)
    }

    /// Calls with a row id above `id`, oldest first (for `audit --tail`).
    ///
    /// # Errors
    /// The query failed.
    pub async fn calls_after(&self, id: i64, limit: i64) -> Result<Vec<CallRow>, AuditError> {
        sqlx::query_as("SELECT * FROM calls WHERE id > ? ORDER BY id LIMIT ?")
            .bind(id)
            .bind(limit)
            .fetch_all(&self.pool)
            .await
            .map_err(|e| AuditError::Query(e.to_string()))
    }

    /// Event rows with a row id above `id`, oldest first.
    ///
    /// # Errors
    /// The query failed.
    pub async fn events_after(&self, id: i64, limit: i64) -> Result<Vec<EventRow>, AuditError> {
        sqlx::query_as("SELECT * FROM events WHERE id > ? ORDER BY id LIMIT ?")
            .bind(id)
            .bind(limit)
            .fetch_all(&self.pool)
            .await
            .map_err(|e| AuditError::Query(e.to_string()))
    }

    /// Deletes rows older than `max_age`; returns how many.
    ///
    /// # Errors
    /// The delete failed.
    pub async fn prune(&self, max_age: Duration) -> Result<u64, AuditError> {
        let cutoff = now_ms() - i64::try_from(max_age.as_millis()).unwrap_or(i64::MAX);
        let mut n = 0;
        for sql in [
            "DELETE FROM calls WHERE ts_ms < ?",
            "DELETE FROM events WHERE ts_ms < ?",
        ] {
            let r = sqlx::query(sql)
                .bind(cutoff)
                .execute(&self.pool)
                .await
                .map_err(|e| AuditError::Query(e.to_string()))?;
            n += r.rows_affected();
        }
        Ok(n)
    }
}

/// Unix time in ms.
pub(crate) fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// The writer's own connection. rusqlite rather than sqlx here: the writer
/// is one dedicated thread doing prepared inserts, and sqlx's SQLite driver
/// would add a worker-thread hop per statement to every call's reply
/// (measured: about half of a lone call's latency). Reads, migrations and
/// the other stores stay on the sqlx pool.
fn open_writer(path: &Path) -> rusqlite::Result<rusqlite::Connection> {
    let conn = rusqlite::Connection::open(path)?;
    conn.pragma_update(None, "journal_mode", "WAL")?;
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    conn.busy_timeout(Duration::from_secs(5))?;
    Ok(conn)
}

/// Takes whatever is queued (up to [`MAX_BATCH`]), commits it in one
/// transaction, then acknowledges every call in it.
fn writer(mut conn: rusqlite::Connection, mut rx: mpsc::Receiver<Job>) {
    let mut batch = Vec::with_capacity(MAX_BATCH);
    while let Some(first) = rx.blocking_recv() {
        batch.push(first);
        while batch.len() < MAX_BATCH {
            match rx.try_recv() {
                Ok(job) => batch.push(job),
                Err(_) => break,
            }
        }
        let result = write_batch(&mut conn, &batch).map_err(|e| AuditError::Write(e.to_string()));
        if let Err(e) = &result {
            tracing::error!("{e}");
        }
        for job in batch.drain(..) {
            match job {
                Job::Call(_, ack) => {
                    let _ = ack.send(result.clone());
                }
                Job::Flush(ack) => {
                    let _ = ack.send(());
                }
                Job::Event { .. } => {}
            }
        }
    }
}

const INSERT_CALL: &str = "INSERT INTO calls (ts_ms, call_id, session, caller, tool, args, args_hash, \
     decision, outcome, error_kind, error_message, stages, notes, output_size, output_digest, elapsed_us) \
     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16)";

fn write_batch(conn: &mut rusqlite::Connection, batch: &[Job]) -> rusqlite::Result<()> {
    let tx = conn.transaction()?;
    {
        let mut call = tx.prepare_cached(INSERT_CALL)?;
        let mut event =
            tx.prepare_cached("INSERT INTO events (ts_ms, kind, body) VALUES (?1, ?2, ?3)")?;
        for job in batch {
            match job {
                Job::Call(r, _) => {
                    call.execute(rusqlite::params![
                        r.ts_ms,
                        r.call_id,
                        r.session,
                        r.caller,
                        r.tool,
                        r.args,
                        r.args_hash,
                        r.decision,
                        r.outcome,
                        r.error_kind,
                        r.error_message,
                        r.stages,
                        r.notes,
                        r.output_size,
                        r.output_digest,
                        r.elapsed_us
                    ])?;
                }
                Job::Event { ts_ms, kind, body } => {
                    event.execute(rusqlite::params![ts_ms, kind, body])?;
                }
                Job::Flush(_) => {}
            }
        }
    }
    tx.commit()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(call_id: i64) -> CallRecord {
        CallRecord {
            ts_ms: now_ms(),
            call_id,
            session: "s".into(),
            caller: "{}".into(),
            tool: "t".into(),
            args: "{}".into(),
            args_hash: "h".into(),
            decision: "allowed",
            outcome: "ok",
            error_kind: None,
            error_message: None,
            stages: "[]".into(),
            notes: "[]".into(),
            output_size: 2,
            output_digest: Some("d".into()),
            elapsed_us: 5,
        }
    }

    #[tokio::test]
    async fn concurrent_calls_are_all_committed_in_order_of_ids() {
        let dir = tempfile::tempdir().unwrap();
        let log = AuditLog::open(&dir.path().join("a.db")).await.unwrap();
        let tasks: Vec<_> = (0..500)
            .map(|i| {
                let log = log.clone();
                tokio::spawn(async move { log.record_call(rec(i)).await })
            })
            .collect();
        for t in tasks {
            t.await.unwrap().unwrap();
        }
        let rows = log.recent_calls(1000).await.unwrap();
        assert_eq!(rows.len(), 500);
        let mut ids: Vec<i64> = rows.iter().map(|r| r.call_id).collect();
        ids.sort_unstable();
        assert_eq!(ids, (0..500).collect::<Vec<_>>());
        // A second handle on the same file sees every row: they are on disk.
        let other = AuditLog::open(&dir.path().join("a.db")).await.unwrap();
        assert_eq!(other.recent_calls(1000).await.unwrap().len(), 500);
    }

    #[tokio::test]
    async fn wal_mode_is_on() {
        let dir = tempfile::tempdir().unwrap();
        let log = AuditLog::open(&dir.path().join("a.db")).await.unwrap();
        let mode: (String,) = sqlx::query_as("PRAGMA journal_mode")
            .fetch_one(&log.pool)
            .await
            .unwrap();
        assert_eq!(mode.0, "wal");
    }

    #[tokio::test]
    async fn prune_deletes_only_old_rows() {
        let dir = tempfile::tempdir().unwrap();
        let log = AuditLog::open(&dir.path().join("a.db")).await.unwrap();
        let mut old = rec(1);
        old.ts_ms -= 10 * 86_400_000;
        log.record_call(old).await.unwrap();
        log.record_call(rec(2)).await.unwrap();
        assert_eq!(log.prune(Duration::from_secs(86_400)).await.unwrap(), 1);
        let rows = log.recent_calls(10).await.unwrap();
        assert_eq!(rows.iter().map(|r| r.call_id).collect::<Vec<_>>(), [2]);
    }

    #[tokio::test]
    async fn unopenable_path_names_the_file() {
        let e = AuditLog::open(Path::new("/proc/nope/a.db"))
            .await
            .unwrap_err();
        assert!(e.to_string().contains("/proc/nope/a.db"), "{e}");
    }
}
