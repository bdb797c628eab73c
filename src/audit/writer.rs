//! The audit log's one writing connection: calls commit inline when it is
//! idle, a writer thread commits in groups when it is not, and WAL
//! checkpoints run off every call's path.
//!
//! rusqlite rather than sqlx here: writing is prepared inserts on one
//! connection, and sqlx's SQLite driver would add a worker-thread hop per
//! statement to every call's reply (measured: about half of a lone call's
//! latency). Reads, migrations and the other stores stay on the sqlx pool.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::sync::{mpsc, oneshot};

use super::record::CallRecord;
use super::store::AuditError;

/// Most rows committed in one transaction. Bounds the latency one commit
/// adds to the calls waiting on it.
pub const MAX_BATCH: usize = 256;

/// Rows that may wait for the writer before callers feel back-pressure.
const QUEUE: usize = 8192;

/// Rows between two WAL checkpoints: at about two pages per row, close to
/// SQLite's own default of 1000 pages.
const CHECKPOINT_ROWS: u64 = 500;

/// Work for the writer thread.
enum Job {
    Call(Box<CallRecord>, oneshot::Sender<Result<(), AuditError>>),
    Event {
        ts_ms: i64,
        kind: String,
        body: String,
    },
    Flush(oneshot::Sender<()>),
    Checkpoint,
}

/// What the callers and the writer thread share.
struct Shared {
    conn: Mutex<rusqlite::Connection>,
    /// Rows committed so far; crossing a multiple of [`CHECKPOINT_ROWS`]
    /// asks the writer thread for a checkpoint.
    rows: AtomicU64,
}

impl Shared {
    /// Counts `n` committed rows; true when a checkpoint is due.
    fn committed(&self, n: u64) -> bool {
        let before = self.rows.fetch_add(n, Ordering::Relaxed);
        before / CHECKPOINT_ROWS != (before + n) / CHECKPOINT_ROWS
    }
}

/// The handle callers hold. Dropping the last one stops the thread after
/// it has committed what was queued.
#[derive(Clone)]
pub(super) struct Writer {
    tx: mpsc::Sender<Job>,
    shared: Arc<Shared>,
}

impl Writer {
    /// Opens the writing connection (and the checkpointer's) on `path` and
    /// starts the writer thread.
    pub(super) fn start(path: &Path) -> Result<Self, String> {
        let err = |e: &dyn std::fmt::Display| e.to_string();
        let conn = open(path).map_err(|e| err(&e))?;
        let checkpointer = open(path).map_err(|e| err(&e))?;
        let shared = Arc::new(Shared {
            conn: Mutex::new(conn),
            rows: AtomicU64::new(0),
        });
        let (tx, rx) = mpsc::channel(QUEUE);
        let thread_shared = shared.clone();
        std::thread::Builder::new()
            .name("toolgate-audit".into())
            .spawn(move || run(&thread_shared, &checkpointer, rx))
            .map_err(|e| err(&e))?;
        Ok(Self { tx, shared })
    }

    /// Commits a call's row; returns once it is committed.
    ///
    /// When nothing is queued and no commit is under way, the row is
    /// committed right here, on the caller's thread: a lone call then pays
    /// for one small transaction (a few µs of WAL append) instead of two
    /// cross-thread wake-ups, which measured as most of a call's latency.
    /// Under contention rows go to the writer thread, which commits them in
    /// groups.
    pub(super) async fn call(&self, rec: CallRecord) -> Result<(), AuditError> {
        if let Some(done) = self.try_inline(&rec) {
            return done;
        }
        let (ack, done) = oneshot::channel();
        self.tx
            .send(Job::Call(Box::new(rec), ack))
            .await
            .map_err(|_| AuditError::Closed)?;
        done.await.map_err(|_| AuditError::Closed)?
    }

    /// Commits `rec` alone if the writer is idle; `None` if it is busy.
    fn try_inline(&self, rec: &CallRecord) -> Option<Result<(), AuditError>> {
        if self.tx.is_closed() || self.tx.capacity() < self.tx.max_capacity() {
            return None;
        }
        let result = {
            let mut conn = self.shared.conn.try_lock().ok()?;
            commit(&mut conn, |c| insert_call(c, rec))
        };
        if result.is_ok() && self.shared.committed(1) {
            // A full queue only delays the checkpoint to the next request.
            let _ = self.tx.try_send(Job::Checkpoint);
        }
        Some(result.map_err(write_error))
    }

    /// Queues an event row; false if the queue is full or closed.
    pub(super) fn event(&self, ts_ms: i64, kind: String, body: String) -> bool {
        self.tx.try_send(Job::Event { ts_ms, kind, body }).is_ok()
    }

    /// Waits until everything queued so far is committed.
    pub(super) async fn flush(&self) {
        let (ack, done) = oneshot::channel();
        if self.tx.send(Job::Flush(ack)).await.is_ok() {
            let _ = done.await;
        }
    }
}

fn write_error(e: rusqlite::Error) -> AuditError {
    let e = AuditError::Write(e.to_string());
    tracing::error!("{e}");
    e
}

/// A connection in WAL mode that never checkpoints on its own: a
/// checkpoint copies pages and syncs the database file, which would
/// otherwise land on whichever call's commit crossed the threshold.
fn open(path: &Path) -> rusqlite::Result<rusqlite::Connection> {
    let conn = rusqlite::Connection::open(path)?;
    conn.pragma_update(None, "journal_mode", "WAL")?;
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    conn.pragma_update(None, "wal_autocheckpoint", 0)?;
    conn.busy_timeout(Duration::from_secs(5))?;
    Ok(conn)
}

/// The writer thread: takes whatever is queued (up to [`MAX_BATCH`]),
/// commits it in one transaction, then acknowledges every call in it.
/// Checkpoints run on their own connection, so inline commits go on
/// meanwhile (WAL lets one checkpointer and one writer work at once).
fn run(shared: &Shared, checkpointer: &rusqlite::Connection, mut rx: mpsc::Receiver<Job>) {
    let mut batch = Vec::with_capacity(MAX_BATCH);
    while let Some(first) = rx.blocking_recv() {
        batch.push(first);
        while batch.len() < MAX_BATCH {
            match rx.try_recv() {
                Ok(job) => batch.push(job),
                Err(_) => break,
            }
        }
        let rows = batch
            .iter()
            .filter(|j| matches!(j, Job::Call(..) | Job::Event { .. }))
            .count();
        let mut checkpoint = batch.iter().any(|j| matches!(j, Job::Checkpoint));
        let result = if rows == 0 {
            Ok(())
        } else {
            let mut conn = shared.conn.lock().unwrap_or_else(PoisonError::into_inner);
            commit(&mut conn, |c| write_batch(c, &batch)).map_err(write_error)
        };
        if result.is_ok() && shared.committed(rows as u64) {
            checkpoint = true;
        }
        acknowledge(&mut batch, &result);
        if checkpoint && let Err(e) = self::checkpoint(shared, checkpointer) {
            tracing::warn!("audit log checkpoint failed: {e}");
        }
    }
    // The last handle is gone: fold what it can of the WAL into the file.
    let _ = checkpointer.execute_batch("PRAGMA wal_checkpoint(PASSIVE)");
}

/// Copies the WAL into the database file so SQLite can start the WAL over.
///
/// Two passes: the first copies nearly everything while calls keep
/// committing; the second, holding the writing connection, copies the few
/// frames added meanwhile, so the WAL ends fully copied and the next
/// commit restarts it from the top. A single pass never completes under a
/// steady stream of commits and the WAL would grow without bound.
fn checkpoint(shared: &Shared, checkpointer: &rusqlite::Connection) -> rusqlite::Result<()> {
    checkpointer.execute_batch("PRAGMA wal_checkpoint(PASSIVE)")?;
    let _writing = shared.conn.lock().unwrap_or_else(PoisonError::into_inner);
    checkpointer.execute_batch("PRAGMA wal_checkpoint(PASSIVE)")
}

fn acknowledge(batch: &mut Vec<Job>, result: &Result<(), AuditError>) {
    for job in batch.drain(..) {
        match job {
            Job::Call(_, ack) => {
                let _ = ack.send(result.clone());
            }
            Job::Flush(ack) => {
                let _ = ack.send(());
            }
            Job::Event { .. } | Job::Checkpoint => {}
        }
    }
}

const INSERT_CALL: &str = "INSERT INTO calls (ts_ms, call_id, session, caller, tool, args, args_hash, \
     decision, outcome, error_kind, error_message, stages, notes, output_size, output_digest, elapsed_us) \
     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16)";

/// Runs `body` in one transaction. BEGIN and COMMIT are cached statements
/// (rusqlite's `Transaction` prepares them anew every time, a measurable
/// share of a one-row commit).
fn commit(
    conn: &mut rusqlite::Connection,
    body: impl FnOnce(&rusqlite::Connection) -> rusqlite::Result<()>,
) -> rusqlite::Result<()> {
    conn.prepare_cached("BEGIN")?.execute([])?;
    let done = body(conn).and_then(|()| conn.prepare_cached("COMMIT")?.execute([]).map(drop));
    if done.is_err() && !conn.is_autocommit() {
        let _ = conn.execute_batch("ROLLBACK");
    }
    done
}

fn insert_call(conn: &rusqlite::Connection, r: &CallRecord) -> rusqlite::Result<()> {
    conn.prepare_cached(INSERT_CALL)?
        .execute(rusqlite::params![
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
    Ok(())
}

fn write_batch(conn: &rusqlite::Connection, batch: &[Job]) -> rusqlite::Result<()> {
    let mut event =
        conn.prepare_cached("INSERT INTO events (ts_ms, kind, body) VALUES (?1, ?2, ?3)")?;
    for job in batch {
        match job {
            Job::Call(r, _) => insert_call(conn, r)?,
            Job::Event { ts_ms, kind, body } => {
                event.execute(rusqlite::params![ts_ms, kind, body])?;
            }
            Job::Flush(_) | Job::Checkpoint => {}
        }
    }
    Ok(())
}
