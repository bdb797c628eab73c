//! The audit log's writing side: calls are journaled on the caller's
//! thread (one `write(2)`, see [`spool`](super::spool)) and a writer thread
//! moves them into SQLite in groups, with the events.
//!
//! rusqlite rather than sqlx here: writing is prepared inserts on one
//! connection, and sqlx's SQLite driver adds a worker-thread hop per
//! statement. Reads, migrations and the other stores stay on the sqlx pool.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{mpsc, oneshot};

use super::record::CallRecord;
use super::spool::{Opened, Spool};
use super::store::AuditError;

/// Most rows committed in one transaction. Bounds how long one commit
/// holds the writer.
pub const MAX_BATCH: usize = 256;

/// Rows that may wait for the writer before callers feel back-pressure.
const QUEUE: usize = 8192;

/// How long the writer gathers rows after the first one arrives. While it
/// gathers (and commits) it is not parked on the queue, so journaled calls
/// hand over their rows without waking a thread: waking it per call cost
/// lone calls more than the journal write itself. Rows reach SQLite this
/// much later; reads through the owning handle wait for them.
const GATHER: Duration = Duration::from_millis(2);

/// The insert of one call row, after `INSERT` or `INSERT OR IGNORE`.
macro_rules! insert_call_sql {
    ($verb:literal) => {
        concat!(
            $verb,
            " INTO calls (id, ts_ms, call_id, session, caller, tool, args, args_hash, \
             decision, outcome, error_kind, error_message, stages, notes, output_size, \
             output_digest, elapsed_us) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17)"
        )
    };
}

/// Work for the writer thread.
pub(super) enum Job {
    /// A journaled call row's id and body (a [`CallRecord`] as JSON),
    /// read back on the writer thread, off the reply path.
    Call(i64, Vec<u8>),
    Event {
        ts_ms: i64,
        kind: String,
        body: String,
    },
    Flush(oneshot::Sender<()>),
}

/// The handle callers hold.
#[derive(Clone, Debug)]
pub(super) enum Writer {
    /// This process writes the log.
    Owner(Arc<Owner>),
    /// Another process writes it; this handle only reads.
    Reader,
}

/// The writing side, shared by every clone of one handle. Dropping it (the
/// last handle) waits for the thread to commit what was queued, so the
/// journal's lock is free again when the drop returns and the log can be
/// opened for writing at once (a daemon restarted in the same process).
#[derive(Debug)]
pub(super) struct Owner {
    /// `None` only while dropping.
    tx: Option<mpsc::Sender<Job>>,
    spool: Arc<Spool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Owner {
    fn tx(&self) -> Option<&mpsc::Sender<Job>> {
        self.tx.as_ref()
    }
}

impl Drop for Owner {
    fn drop(&mut self) {
        drop(self.tx.take());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Writer {
    /// Takes the journal of the log at `path`, commits what a killed
    /// process left in it, and starts the writer thread; or, if another
    /// process holds the journal, a read-only handle.
    pub(super) fn start(path: &Path) -> Result<Self, String> {
        let err = |e: &dyn std::fmt::Display| e.to_string();
        let (spool, left) = match Spool::open(path).map_err(|e| err(&e))? {
            Opened::Owned(spool, left) => (spool, left),
            Opened::Busy => return Ok(Self::Reader),
        };
        let mut conn = open(path).map_err(|e| err(&e))?;
        let next_id = recover(&mut conn, &left).map_err(|e| err(&e))?;
        if !left.is_empty() {
            tracing::info!(
                "audit log: recovered {} call rows journaled before an abrupt stop",
                left.len()
            );
        }
        spool.recovered(next_id).map_err(|e| err(&e))?;
        let spool = Arc::new(spool);
        let (tx, rx) = mpsc::channel(QUEUE);
        let thread_spool = spool.clone();
        let thread = std::thread::Builder::new()
            .name("toolgate-audit".into())
            .spawn(move || run(&mut conn, &thread_spool, rx))
            .map_err(|e| err(&e))?;
        Ok(Self::Owner(Arc::new(Owner {
            tx: Some(tx),
            spool,
            thread: Some(thread),
        })))
    }

    /// Makes a call's row durable; it reaches SQLite shortly after.
    /// `body` is a [`CallRecord`] as a JSON object.
    pub(super) async fn call(&self, body: Vec<u8>) -> Result<(), AuditError> {
        let Self::Owner(owner) = self else {
            return Err(AuditError::ReadOnly);
        };
        let id = owner.spool.append(&body).map_err(|e| {
            let e = AuditError::Write(format!("journal: {e}"));
            tracing::error!("{e}");
            e
        })?;
        // The row is durable; a closed queue (shutdown) only delays it to
        // the next start's recovery.
        if let Some(tx) = owner.tx() {
            let _ = tx.send(Job::Call(id, body)).await;
        }
        Ok(())
    }

    /// Queues an event row; false if the queue is full or closed.
    pub(super) fn event(&self, ts_ms: i64, kind: String, body: String) -> bool {
        match self {
            Self::Owner(owner) => owner
                .tx()
                .is_some_and(|tx| tx.try_send(Job::Event { ts_ms, kind, body }).is_ok()),
            Self::Reader => false,
        }
    }

    /// Waits until everything queued so far is in SQLite.
    pub(super) async fn flush(&self) {
        let Some(tx) = (match self {
            Self::Owner(owner) => owner.tx(),
            Self::Reader => None,
        }) else {
            return;
        };
        let (ack, done) = oneshot::channel();
        if tx.send(Job::Flush(ack)).await.is_ok() {
            let _ = done.await;
        }
    }
}

/// The writing connection, in WAL mode. SQLite's own checkpoints run on it,
/// on the writer thread, off every call's path.
fn open(path: &Path) -> rusqlite::Result<rusqlite::Connection> {
    let conn = rusqlite::Connection::open(path)?;
    conn.pragma_update(None, "journal_mode", "WAL")?;
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    conn.busy_timeout(Duration::from_secs(5))?;
    Ok(conn)
}

/// Commits rows a killed process left in the journal (a row committed
/// just before the kill keeps its first copy); returns the next row id.
fn recover(conn: &mut rusqlite::Connection, left: &[(i64, CallRecord)]) -> rusqlite::Result<i64> {
    commit(conn, |c| {
        for (id, rec) in left {
            insert_call(c, insert_call_sql!("INSERT OR IGNORE"), *id, rec)?;
        }
        Ok(())
    })?;
    conn.query_row("SELECT coalesce(max(id), 0) + 1 FROM calls", [], |r| {
        r.get(0)
    })
}

/// The writer thread: waits for a row, gathers for [`GATHER`], then
/// commits whatever is queued (up to [`MAX_BATCH`]) in one transaction. A failed commit leaves its call rows in
/// the journal, where the next start recovers them.
fn run(conn: &mut rusqlite::Connection, spool: &Spool, mut rx: mpsc::Receiver<Job>) {
    let mut batch = Vec::with_capacity(MAX_BATCH);
    while let Some(first) = rx.blocking_recv() {
        batch.push(first);
        std::thread::sleep(GATHER);
        while batch.len() < MAX_BATCH {
            match rx.try_recv() {
                Ok(job) => batch.push(job),
                Err(_) => break,
            }
        }
        match commit(conn, |c| write_batch(c, &batch)) {
            Ok(()) => {
                let calls = batch.iter().filter(|j| matches!(j, Job::Call(..))).count();
                spool.ingested(calls as u64);
            }
            Err(e) => tracing::error!("audit log write failed: {e}"),
        }
        for job in batch.drain(..) {
            if let Job::Flush(ack) = job {
                let _ = ack.send(());
            }
        }
    }
}

/// Runs `body` in one transaction. BEGIN and COMMIT are cached statements
/// (rusqlite's `Transaction` prepares them anew every time).
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

fn insert_call(
    conn: &rusqlite::Connection,
    sql: &str,
    id: i64,
    r: &CallRecord,
) -> rusqlite::Result<()> {
    conn.prepare_cached(sql)?.execute(rusqlite::params![
        id,
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
            Job::Call(id, body) => match serde_json::from_slice::<CallRecord>(body) {
                Ok(r) => insert_call(conn, insert_call_sql!("INSERT"), *id, &r)?,
                // Bodies are written by this program, so this is a bug; the
                // line stays in the journal for a person to look at.
                Err(e) => tracing::error!("audit row {id}: unreadable journal body ({e})"),
            },
            Job::Event { ts_ms, kind, body } => {
                event.execute(rusqlite::params![ts_ms, kind, body])?;
            }
            Job::Flush(_) => {}
        }
    }
    Ok(())
}
