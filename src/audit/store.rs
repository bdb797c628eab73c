//! The SQLite store and its single group-committing writer.

use std::path::{Path, PathBuf};
use std::time::Duration;

use sqlx::SqlitePool;
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};

use super::record::{CallRecord, CallRow, EventRow};
use super::writer::Writer;
use crate::call_key::CallKey;
use crate::events::Event;

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
    /// A call's row could not be journaled (so its reply is withheld).
    #[error("audit log write failed: {0}")]
    Write(String),
    /// A read failed.
    #[error("audit log query failed: {0}")]
    Query(String),
    /// The writer has stopped (shutdown).
    #[error("audit log is closed")]
    Closed,
    /// Another process writes this audit log; this handle only reads.
    #[error("audit log is written by another toolgate process; this one may only read it")]
    ReadOnly,
    /// [`AuditLog::open_owned`]: another process holds the log's journal,
    /// so this one cannot record calls and must not serve any.
    #[error("audit log {} is written by another process", .path.display())]
    Busy {
        /// The database file.
        path: PathBuf,
    },
}

/// How a handle opens the log.
#[derive(Debug, Clone, Copy)]
enum Access {
    /// Takes the journal, and so writes, unless another process holds it.
    WriteIfFree,
    /// Never takes the journal.
    Read,
}

/// The audit log. Cloning shares it.
#[derive(Clone)]
pub struct AuditLog {
    writer: Writer,
    pool: SqlitePool,
    path: PathBuf,
    key: CallKey,
}

impl std::fmt::Debug for AuditLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuditLog")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

/// Makes the database file exist `0600` before SQLite opens it, and
/// narrows files an older version left wider. SQLite creates `-wal` and
/// `-shm` with the database file's mode, so a private database file keeps
/// them private with no change to the process umask; existing ones are
/// narrowed here. None of them may be a link.
fn private_db_files(db: &Path) -> std::io::Result<()> {
    let with = |suffix: &str| {
        let mut p = db.as_os_str().to_owned();
        p.push(suffix);
        PathBuf::from(p)
    };
    let named = |p: &Path, e: std::io::Error| {
        std::io::Error::new(e.kind(), format!("{}: {e}", p.display()))
    };
    crate::private_file::open(db, false).map_err(|e| named(db, e))?;
    for suffix in ["-wal", "-shm", "-journal"] {
        let p = with(suffix);
        crate::private_file::restrict(&p).map_err(|e| named(&p, e))?;
    }
    Ok(())
}

/// Connects to the log and applies the embedded migrations under an
/// exclusive lock on `<db>-migrate.lock`. sqlx's SQLite migrator takes no
/// lock, so two processes opening a new log at once (two bridges each
/// spawning an engine, `toolgate audit` beside an engine starting) both
/// created the tables and the loser failed with "table calls already
/// exists", before the journal's lock could decide which of them owns the
/// log. The first connection is made under the lock too: it switches a new
/// file to WAL, which needs the database to itself, and SQLite answers a
/// second process doing the same at that moment with "database is locked"
/// at once rather than through the busy timeout.
async fn connect_and_migrate(opts: SqliteConnectOptions, db: &Path) -> Result<SqlitePool, String> {
    let mut lock = db.as_os_str().to_owned();
    lock.push("-migrate.lock");
    let file = crate::private_file::open(Path::new(&lock), false)
        .map_err(|e| format!("{}: {e}", PathBuf::from(&lock).display()))?;
    // Blocking: the other process holds it only while it migrates.
    let file = tokio::task::spawn_blocking(move || {
        rustix::fs::flock(&file, rustix::fs::FlockOperation::LockExclusive).map(|()| file)
    })
    .await
    .map_err(|e| e.to_string())?
    .map_err(|e| format!("cannot lock the audit log for its migrations: {e}"))?;
    let pool = SqlitePoolOptions::new()
        .max_connections(4)
        .connect_with(opts)
        .await
        .map_err(|e| e.to_string())?;
    let migrated = sqlx::migrate!("./migrations").run(&pool).await;
    drop(file);
    migrated.map_err(|e| e.to_string())?;
    Ok(pool)
}

impl AuditLog {
    /// Opens (creating if needed) the log at `path` and applies migrations.
    ///
    /// # Errors
    /// [`AuditError::Open`] naming the file.
    pub async fn open(path: &Path) -> Result<Self, AuditError> {
        Self::open_as(path, Access::WriteIfFree).await
    }

    /// Opens the log only to read it, never taking its journal: for
    /// `toolgate audit`, which must not keep an engine from starting while
    /// it runs. Reads include rows the writer journaled and has not
    /// committed yet, as through a handle that found the log busy.
    ///
    /// # Errors
    /// [`AuditError::Open`] naming the file.
    pub async fn open_reader(path: &Path) -> Result<Self, AuditError> {
        Self::open_as(path, Access::Read).await
    }

    async fn open_as(path: &Path, access: Access) -> Result<Self, AuditError> {
        let open_err = |e: &dyn std::fmt::Display| AuditError::Open {
            path: path.to_owned(),
            message: e.to_string(),
        };
        let dir = path.parent().filter(|d| !d.as_os_str().is_empty());
        // Arguments and outputs are personal data: the data dir and every
        // file of the log are private to their owner.
        if let Some(dir) = dir {
            crate::private_file::dir(dir)
                .map_err(|e| open_err(&format!("{}: {e}", dir.display())))?;
        }
        private_db_files(path).map_err(|e| open_err(&e))?;
        let key =
            CallKey::load_or_create(dir.unwrap_or(Path::new("."))).map_err(|e| open_err(&e))?;
        let opts = SqliteConnectOptions::new()
            .filename(path)
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Normal)
            .busy_timeout(Duration::from_secs(5))
            // The pool serves the console's reads (a page of rows walks an
            // index from the newest row) and the small tables of approvals
            // and rules: SQLite's default 2 MB page cache per connection
            // was a fifth of what an engine kept after a burst of calls,
            // for reads that touch a few dozen pages. The writer thread
            // keeps the default for its inserts.
            .pragma("cache_size", "-256");
        let pool = connect_and_migrate(opts, path)
            .await
            .map_err(|e| open_err(&e))?;
        let writer = match access {
            Access::WriteIfFree => Writer::start(path).map_err(|e| open_err(&e))?,
            Access::Read => Writer::Reader(path.to_owned()),
        };
        Ok(Self {
            writer,
            pool,
            path: path.to_owned(),
            key,
        })
    }

    /// Opens the log like [`Self::open`], but only as its writer: the
    /// daemon's open. A process that cannot record calls must serve none
    /// (one engine per data dir, docs/architecture/overview.md), so a log
    /// whose journal
    /// another live process holds is an error here, where readers such as
    /// `toolgate audit` get a read-only handle from [`Self::open`].
    ///
    /// # Errors
    /// [`AuditError::Busy`] when another process writes the log, or
    /// [`AuditError::Open`] naming the file.
    pub async fn open_owned(path: &Path) -> Result<Self, AuditError> {
        let log = Self::open(path).await?;
        if log.is_owner() {
            Ok(log)
        } else {
            Err(AuditError::Busy {
                path: path.to_owned(),
            })
        }
    }

    /// Whether this process writes the log (holds its journal).
    pub fn is_owner(&self) -> bool {
        self.writer.is_owner()
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

    /// The data dir's argument-hash key (see [`crate::call_key`]), loaded
    /// once when the log was opened.
    pub fn call_key(&self) -> &CallKey {
        &self.key
    }

    /// Records a call; returns once its row is durable (appended to the
    /// call journal beside the database); it is in SQLite a moment later,
    /// and every read through this handle waits for that.
    ///
    /// # Errors
    /// The write failed or the log is closed.
    pub async fn record_call(&self, rec: CallRecord) -> Result<(), AuditError> {
        let body = serde_json::to_vec(&rec).map_err(|e| AuditError::Write(e.to_string()))?;
        self.writer.call(&body)
    }

    /// Records a finished call, like [`Self::record_call`], with its row
    /// written straight into journal form (see
    /// [`CallRecord::journal_body`]): the engine's path, where every
    /// microsecond is on the agent's reply.
    pub(crate) fn record_reply(
        &self,
        ts_ms: i64,
        session: &crate::context::Session,
        tool: &str,
        args: &serde_json::Value,
        schema: Option<&crate::tool::JsonObject>,
        reply: &crate::engine::CallReply,
    ) -> Result<(), AuditError> {
        let body = CallRecord::journal_body(&self.key, ts_ms, session, tool, args, schema, reply);
        self.writer.call(&body)
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
        if !self.writer.event(now_ms(), kind, body.to_string()) {
            tracing::warn!("audit queue full or closed; an event row was dropped");
        }
    }

    /// Waits until everything queued so far is committed.
    pub async fn flush(&self) {
        let _ = self.writer.flush().await;
    }

    /// The newest `limit` calls, newest last. Through a read-only handle
    /// this includes calls the writing process has journaled and not yet
    /// committed, so a reply an agent saw is always here.
    ///
    /// # Errors
    /// The query failed.
    pub async fn recent_calls(&self, limit: i64) -> Result<Vec<CallRow>, AuditError> {
        // The journal is read before SQLite: a row committed (and its
        // journal emptied) in between is then in one or the other.
        let unsettled = self.writer.unsettled().await;
        let mut rows: Vec<CallRow> = sqlx::query_as("SELECT * FROM calls ORDER BY id DESC LIMIT ?")
            .bind(limit)
            .fetch_all(&self.pool)
            .await
            .map_err(|e| AuditError::Query(e.to_string()))?;
        rows.reverse();
        let newest = rows.last().map_or(0, |r| r.id);
        rows.extend(newer(unsettled, newest));
        // SQLite's LIMIT: a negative one is no limit.
        if let Ok(limit) = usize::try_from(limit) {
            rows.drain(..rows.len().saturating_sub(limit));
        }
        Ok(rows)
    }

    /// Calls with a row id above `id`, oldest first (for `audit --tail`);
    /// like [`Self::recent_calls`], with journaled calls.
    ///
    /// # Errors
    /// The query failed.
    pub async fn calls_after(&self, id: i64, limit: i64) -> Result<Vec<CallRow>, AuditError> {
        // The journal is read before SQLite, as in `recent_calls`.
        let unsettled = self.writer.unsettled().await;
        let mut rows = self.committed_calls_after(id, limit).await?;
        let room = usize::try_from(limit).map_or(usize::MAX, |l| l.saturating_sub(rows.len()));
        // A full page may have more in SQLite: journaled rows come later.
        if room > 0 {
            let newest = rows.last().map_or(id, |r| r.id);
            rows.extend(newer(unsettled, newest).take(room));
        }
        Ok(rows)
    }

    /// Committed calls with a row id above `id`, oldest first, without
    /// the journaled ones: what a team link ships, keyed by row id, so
    /// only ids that can never change.
    ///
    /// # Errors
    /// The query failed.
    pub async fn committed_calls_after(
        &self,
        id: i64,
        limit: i64,
    ) -> Result<Vec<CallRow>, AuditError> {
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
        self.flush().await;
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
        self.flush().await;
        let cutoff = now_ms() - i64::try_from(max_age.as_millis()).unwrap_or(i64::MAX);
        let mut n = 0;
        for sql in [
            // Calls: everything before the first recent row, walking ids
            // from the oldest; the newest row always stays, so a row id is
            // never handed out twice (migration 4).
            "DELETE FROM calls WHERE id < coalesce( \
                 (SELECT id FROM calls WHERE ts_ms >= ?1 ORDER BY id LIMIT 1), \
                 (SELECT max(id) FROM calls))",
            "DELETE FROM events WHERE ts_ms < ?1",
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

/// Journaled rows after row id `newest` (the ones SQLite did not have).
fn newer(rows: Vec<(i64, CallRecord)>, newest: i64) -> impl Iterator<Item = CallRow> {
    rows.into_iter()
        .filter(move |(id, _)| *id > newest)
        .map(|(id, r)| CallRow::from_record(id, r))
}

/// Unix time in ms.
pub(crate) fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(call_id: i64) -> CallRecord {
        CallRecord::sample(call_id)
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
        // A second (read-only) handle on the same file sees every row.
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
    async fn pruning_everything_keeps_the_newest_row_so_ids_keep_rising() {
        let dir = tempfile::tempdir().unwrap();
        let log = AuditLog::open(&dir.path().join("a.db")).await.unwrap();
        for i in 1..=3 {
            let mut old = rec(i);
            old.ts_ms -= 10 * 86_400_000;
            log.record_call(old).await.unwrap();
        }
        assert_eq!(log.prune(Duration::from_secs(86_400)).await.unwrap(), 2);
        let kept = log.recent_calls(10).await.unwrap();
        assert_eq!(kept.iter().map(|r| r.call_id).collect::<Vec<_>>(), [3]);
        log.record_call(rec(4)).await.unwrap();
        let rows = log.recent_calls(10).await.unwrap();
        assert!(rows[1].id > kept[0].id, "{rows:?}");
    }

    #[tokio::test]
    async fn the_wal_and_the_journal_stay_bounded_under_a_long_run_of_calls() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.db");
        let log = AuditLog::open(&path).await.unwrap();
        for i in 0..6_000 {
            log.record_call(rec(i)).await.unwrap();
        }
        assert_eq!(log.recent_calls(10_000).await.unwrap().len(), 6_000);
        // Without checkpoints the WAL would hold 6,000 commits' pages, and
        // without emptying the journal would hold all 6,000 rows (~2.5 MB).
        let size = |name: &str| std::fs::metadata(dir.path().join(name)).unwrap().len();
        assert!(
            size("a.db-wal") < 8 << 20,
            "WAL grew to {}",
            size("a.db-wal")
        );
        assert!(
            size("a.db-calls.jsonl") < 3 << 19,
            "journal grew to {}",
            size("a.db-calls.jsonl")
        );
    }

    /// A new log (in the returned directory) whose database another
    /// connection holds SQLite's write lock on: its writer can commit
    /// nothing until that connection lets go.
    async fn log_behind_a_lock() -> (tempfile::TempDir, AuditLog, rusqlite::Connection) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.db");
        let log = AuditLog::open(&path).await.unwrap();
        let blocker = rusqlite::Connection::open(&path).unwrap();
        blocker.execute_batch("BEGIN IMMEDIATE").unwrap();
        (dir, log, blocker)
    }

    #[tokio::test]
    async fn calls_never_wait_for_a_locked_database_and_their_rows_follow_later() {
        let (_dir, log, blocker) = log_behind_a_lock().await;
        // More rows than any in-memory queue would hold; every call still
        // returns at once, its row durable in the journal.
        for i in 0..10_000 {
            log.record_call(rec(i)).await.unwrap();
        }
        blocker.execute_batch("ROLLBACK").unwrap();
        let rows = log.recent_calls(20_000).await.unwrap();
        assert_eq!(rows.len(), 10_000);
        assert!(rows.windows(2).all(|w| w[0].id < w[1].id));
    }

    #[tokio::test]
    async fn rows_a_failed_commit_left_in_the_journal_are_committed_by_the_next_try() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.db");
        let log = AuditLog::open(&path).await.unwrap();
        let other = rusqlite::Connection::open(&path).unwrap();
        other
            .execute_batch(
                "CREATE TRIGGER refuse BEFORE INSERT ON calls \
                 BEGIN SELECT RAISE(ABORT, 'refused for the test'); END;",
            )
            .unwrap();
        for i in 1..=3 {
            log.record_call(rec(i)).await.unwrap();
        }
        log.flush().await;
        let in_sqlite = |c: &rusqlite::Connection| {
            c.query_row("SELECT count(*) FROM calls", [], |r| r.get::<_, i64>(0))
                .unwrap()
        };
        assert_eq!(in_sqlite(&other), 0, "the commit was refused");
        // Reads meanwhile still see every answered call, from the journal.
        assert_eq!(log.recent_calls(10).await.unwrap().len(), 3);
        other.execute_batch("DROP TRIGGER refuse").unwrap();
        let rows = log.recent_calls(10).await.unwrap();
        assert_eq!(
            rows.iter().map(|r| r.call_id).collect::<Vec<_>>(),
            [1, 2, 3]
        );
        assert_eq!(in_sqlite(&other), 3);
    }

    #[tokio::test]
    async fn another_process_reading_the_log_sees_calls_not_yet_committed() {
        let (dir, owner, blocker) = log_behind_a_lock().await;
        for i in 1..=3 {
            owner.record_call(rec(i)).await.unwrap();
        }
        // A second handle only reads (`toolgate audit` beside the daemon):
        // the rows are in the writer's journal, not in SQLite.
        let reader = AuditLog::open(&dir.path().join("a.db")).await.unwrap();
        let call_ids = |rows: Vec<CallRow>| rows.iter().map(|r| r.call_id).collect::<Vec<_>>();
        assert_eq!(call_ids(reader.recent_calls(10).await.unwrap()), [1, 2, 3]);
        assert_eq!(call_ids(reader.recent_calls(2).await.unwrap()), [2, 3]);
        let first = reader.recent_calls(1).await.unwrap()[0].id - 2;
        assert_eq!(call_ids(reader.calls_after(first, 1).await.unwrap()), [2]);
        // Once committed (the journal may still hold them), nothing doubles.
        blocker.execute_batch("ROLLBACK").unwrap();
        owner.flush().await;
        assert_eq!(call_ids(reader.recent_calls(10).await.unwrap()), [1, 2, 3]);
        assert_eq!(
            call_ids(reader.calls_after(0, -1).await.unwrap()),
            [1, 2, 3]
        );
    }

    #[tokio::test]
    async fn events_and_calls_recorded_together_are_all_there_after_a_flush() {
        let dir = tempfile::tempdir().unwrap();
        let log = AuditLog::open(&dir.path().join("a.db")).await.unwrap();
        for i in 0..50 {
            log.record_call(rec(i)).await.unwrap();
            log.record_event(&Event::PolicyReloaded {
                version: u64::try_from(i).unwrap(),
            });
        }
        assert_eq!(log.recent_calls(100).await.unwrap().len(), 50);
        assert_eq!(log.events_after(0, 100).await.unwrap().len(), 50);
    }

    #[tokio::test]
    async fn rows_a_killed_process_left_in_the_journal_are_recovered_once() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.db");
        let log = AuditLog::open(&path).await.unwrap();
        log.record_call(rec(1)).await.unwrap();
        let first = log.recent_calls(10).await.unwrap();
        drop(log);
        // What a process killed mid-stream leaves: a row already in SQLite
        // (its journal was not emptied yet), two that are not, and a torn
        // last line whose write never finished (its reply never went out).
        let id = first[0].id;
        let mut journal = String::new();
        for (i, call_id) in [(id, 1), (id + 1, 2), (id + 2, 3)] {
            journal += &serde_json::to_string(&(i, rec(call_id))).unwrap();
            journal.push('\n');
        }
        journal += r#"[99,{"ts_ms":1,"session":"é"#;
        // The write ended inside the character.
        let mut journal = journal.into_bytes();
        journal.pop();
        std::fs::write(dir.path().join("a.db-calls.jsonl"), journal).unwrap();

        let log = AuditLog::open(&path).await.unwrap();
        let ids = |rows: Vec<CallRow>| rows.iter().map(|r| r.call_id).collect::<Vec<_>>();
        assert_eq!(ids(log.recent_calls(10).await.unwrap()), [1, 2, 3]);
        log.record_call(rec(4)).await.unwrap();
        let rows = log.recent_calls(10).await.unwrap();
        assert_eq!(rows.last().map(|r| (r.id, r.call_id)), Some((id + 3, 4)));
        let journal = std::fs::read_to_string(dir.path().join("a.db-calls.jsonl")).unwrap();
        assert_eq!(journal.lines().count(), 1, "only the new row is journaled");
    }

    #[tokio::test]
    async fn a_second_handle_on_a_journaled_log_only_reads() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.db");
        let owner = AuditLog::open(&path).await.unwrap();
        owner.record_call(rec(1)).await.unwrap();
        owner.flush().await;
        let other = AuditLog::open(&path).await.unwrap();
        assert!(matches!(
            other.record_call(rec(2)).await,
            Err(AuditError::ReadOnly)
        ));
        assert_eq!(other.recent_calls(10).await.unwrap().len(), 1);
    }

    #[tokio::test]
    async fn an_owned_open_of_a_log_another_handle_writes_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.db");
        let owner = AuditLog::open_owned(&path).await.unwrap();
        assert!(owner.is_owner());
        let e = AuditLog::open_owned(&path).await.unwrap_err();
        assert!(
            matches!(&e, AuditError::Busy { path: p } if *p == path),
            "{e}"
        );
        let reader = AuditLog::open(&path).await.unwrap();
        assert!(!reader.is_owner(), "readers still open it");
        drop((owner, reader));
        assert!(AuditLog::open_owned(&path).await.unwrap().is_owner());
    }

    #[tokio::test]
    async fn a_reader_never_takes_the_log_from_a_writer_to_come() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.db");
        let owner = AuditLog::open_owned(&path).await.unwrap();
        owner.record_call(rec(1)).await.unwrap();
        drop(owner);
        // No writer now: the reader still only reads, and sees the row.
        let reader = AuditLog::open_reader(&path).await.unwrap();
        assert!(!reader.is_owner());
        assert_eq!(reader.recent_calls(10).await.unwrap().len(), 1);
        assert!(matches!(
            reader.record_call(rec(2)).await,
            Err(AuditError::ReadOnly)
        ));
        assert!(AuditLog::open_owned(&path).await.unwrap().is_owner());
    }

    #[tokio::test]
    async fn unopenable_path_names_the_file() {
        let e = AuditLog::open(Path::new("/proc/nope/a.db"))
            .await
            .unwrap_err();
        assert!(e.to_string().contains("/proc/nope/a.db"), "{e}");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn processes_opening_a_new_log_at_once_all_get_its_tables() {
        // Two bridges spawning an engine, or `toolgate audit` beside an
        // engine starting, open a fresh log together: both migrate it.
        for _ in 0..5 {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("audit.db");
            let opens: Vec<_> = (0..6)
                .map(|_| {
                    let path = path.clone();
                    tokio::spawn(async move { AuditLog::open_reader(&path).await.map(drop) })
                })
                .collect();
            for open in opens {
                open.await
                    .unwrap()
                    .expect("every open migrates or finds the tables");
            }
        }
    }
}
