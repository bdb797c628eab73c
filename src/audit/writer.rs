//! The audit log's writing side. A call's row is appended to the journal
//! on the caller's thread (one `write(2)`, see [`spool`](super::spool)); a
//! writer thread reads the journal on from where it stopped and moves the
//! rows into SQLite in groups, with the events.
//!
//! The journal is the queue. A caller hands the writer nothing but, when
//! the writer is idle, a wake-up: no channel hop, no buffer that another
//! thread frees, and a slow SQLite (a long read holding back checkpoints,
//! a busy disk) never makes an agent wait; the journal only grows until
//! the writer catches up.
//!
//! rusqlite rather than sqlx here: writing is prepared inserts on one
//! connection, and sqlx's SQLite driver adds a worker-thread hop per
//! statement. Reads, migrations and the other stores stay on the sqlx pool.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

use tokio::sync::oneshot;

use super::record::{CallRecord, RecordRef};
use super::spool::{self, Opened, Spool};
use super::store::AuditError;

/// While calls keep coming, the writer commits this often, each time what
/// arrived since (the first row after a pause is committed at once).
/// Larger groups cost less per row: a page of the table is written to the
/// WAL once per commit, not once per row, and the writer competes with
/// calls in flight for the CPU once per group. Rows reach SQLite this much
/// later; reads through the owning handle wait for them.
const GATHER: Duration = Duration::from_millis(50);

/// How long the writer waits before trying again after a failed commit
/// (a flush tries at once).
const RETRY: Duration = Duration::from_secs(1);

/// Journal bytes read (and committed in one transaction) at a time;
/// bounds how long one commit holds the writer. A longer row is read
/// whole.
const CHUNK: usize = 1 << 20;

/// Events waiting for the writer beyond this are dropped with a warning,
/// rather than grow without bound while SQLite is stuck.
const MAX_EVENTS: usize = 8192;

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

/// An event row waiting for the writer.
#[derive(Debug)]
struct EventRow {
    ts_ms: i64,
    kind: String,
    body: String,
}

/// What callers leave for the writer besides journaled rows.
#[derive(Debug, Default)]
struct Inbox {
    events: Vec<EventRow>,
    /// Readers waiting until everything recorded before they asked is in
    /// SQLite; told whether it got there (false: a commit failed).
    flushes: Vec<oneshot::Sender<bool>>,
    /// The last handle is gone: commit what is left and end.
    stop: bool,
    /// The writer thread has ended (it panicked): nobody will answer.
    gone: bool,
}

#[derive(Debug, Default)]
struct Shared {
    inbox: Mutex<Inbox>,
    /// The writer is parked with nothing to do: the next row wakes it.
    /// Otherwise a row costs its caller no wake-up at all.
    idle: AtomicBool,
}

impl Shared {
    fn inbox(&self) -> MutexGuard<'_, Inbox> {
        self.inbox.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The handle callers hold.
#[derive(Clone, Debug)]
pub(super) enum Writer {
    /// This process writes the log.
    Owner(Arc<Owner>),
    /// Another process writes the log at this path; this handle only
    /// reads.
    Reader(PathBuf),
}

/// The writing side, shared by every clone of one handle. Dropping it (the
/// last handle) waits for the thread to commit what was journaled, so the
/// journal's lock is free again when the drop returns and the log can be
/// opened for writing at once (a daemon restarted in the same process).
#[derive(Debug)]
pub(super) struct Owner {
    shared: Arc<Shared>,
    spool: Arc<Spool>,
    thread: Option<JoinHandle<()>>,
}

impl Owner {
    /// Wakes the writer, if it is idle.
    fn nudge(&self) {
        if self.shared.idle.swap(false, Ordering::SeqCst) {
            self.wake();
        }
    }

    /// Wakes the writer now, even in the middle of gathering.
    fn wake(&self) {
        if let Some(t) = &self.thread {
            t.thread().unpark();
        }
    }
}

impl Drop for Owner {
    fn drop(&mut self) {
        self.shared.inbox().stop = true;
        self.wake();
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
            Opened::Busy => return Ok(Self::Reader(path.to_owned())),
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
        let shared = Arc::new(Shared::default());
        let (thread_spool, thread_shared) = (spool.clone(), shared.clone());
        let thread = std::thread::Builder::new()
            .name("toolgate-audit".into())
            .spawn(move || {
                let _gone = Gone(&thread_shared);
                run(&mut conn, &thread_spool, &thread_shared);
            })
            .map_err(|e| err(&e))?;
        Ok(Self::Owner(Arc::new(Owner {
            shared,
            spool,
            thread: Some(thread),
        })))
    }

    /// Whether this process writes the log.
    pub(super) fn is_owner(&self) -> bool {
        matches!(self, Self::Owner(_))
    }

    /// Makes a call's row durable; it reaches SQLite shortly after.
    /// `body` is a [`CallRecord`] as a JSON object.
    pub(super) fn call(&self, body: &[u8]) -> Result<(), AuditError> {
        let Self::Owner(owner) = self else {
            return Err(AuditError::ReadOnly);
        };
        owner.spool.append(body).map_err(|e| {
            let e = AuditError::Write(format!("journal: {e}"));
            tracing::error!("{e}");
            e
        })?;
        owner.nudge();
        Ok(())
    }

    /// Queues an event row; false if too many are waiting or the log is
    /// read-only or closed.
    pub(super) fn event(&self, ts_ms: i64, kind: String, body: String) -> bool {
        let Self::Owner(owner) = self else {
            return false;
        };
        {
            let mut inbox = owner.shared.inbox();
            if inbox.gone || inbox.events.len() >= MAX_EVENTS {
                return false;
            }
            inbox.events.push(EventRow { ts_ms, kind, body });
        }
        owner.nudge();
        true
    }

    /// Calls recorded so far that a read of SQLite may miss, oldest
    /// first (a few may be in SQLite already): none once this process's
    /// own rows are committed (this waits for that); otherwise the rows in
    /// the journal, this process's whose commit failed, or those of the
    /// process that writes the log.
    pub(super) async fn unsettled(&self) -> Vec<(i64, CallRecord)> {
        let rows = match self {
            Self::Owner(_) if self.flush().await => return Vec::new(),
            Self::Owner(owner) => owner.spool.rows(),
            Self::Reader(db) => spool::peek(db),
        };
        rows.unwrap_or_else(|e| {
            tracing::warn!("audit log: cannot read the journal: {e}");
            Vec::new()
        })
    }

    /// Waits until everything recorded so far is in SQLite; false if a
    /// commit failed (the rows wait in the journal) or no writer is left.
    pub(super) async fn flush(&self) -> bool {
        let Self::Owner(owner) = self else {
            return false;
        };
        let (ack, done) = oneshot::channel();
        {
            let mut inbox = owner.shared.inbox();
            if inbox.gone {
                return false;
            }
            inbox.flushes.push(ack);
        }
        owner.wake();
        done.await.unwrap_or(false)
    }
}

/// Marks the writer gone when its thread ends, however it ends, and lets
/// go of waiting readers, so a flush never waits for a thread that is not
/// there.
struct Gone<'a>(&'a Shared);

impl Drop for Gone<'_> {
    fn drop(&mut self) {
        let mut inbox = self.0.inbox();
        inbox.gone = true;
        inbox.flushes.clear();
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
            insert_call(c, insert_call_sql!("INSERT OR IGNORE"), *id, &rec.into())?;
        }
        Ok(())
    })?;
    conn.query_row("SELECT coalesce(max(id), 0) + 1 FROM calls", [], |r| {
        r.get(0)
    })
}

/// The writer thread. Parks while there is nothing to do; once woken,
/// commits what is there, then every [`GATHER`] what arrived since, until
/// a round finds nothing new.
fn run(conn: &mut rusqlite::Connection, spool: &Spool, shared: &Shared) {
    let mut journal = Cursor::default();
    loop {
        let round = round(conn, spool, shared, &mut journal);
        if round.stop {
            return;
        }
        if round.worked {
            // While SQLite refuses (a full disk, a lock held for long), the
            // rows wait in the journal; retrying every GATHER would re-read
            // them 20 times a second.
            let wait = if journal.failing.is_some() {
                RETRY
            } else {
                GATHER
            };
            std::thread::park_timeout(wait);
            continue;
        }
        shared.idle.store(true, Ordering::SeqCst);
        // A row appended before `idle` was set did not wake anyone: look
        // once more before sleeping.
        if !pending(spool, shared, &journal) {
            std::thread::park();
        }
        shared.idle.store(false, Ordering::SeqCst);
    }
}

/// Whether a round would find anything to do.
fn pending(spool: &Spool, shared: &Shared, journal: &Cursor) -> bool {
    let inbox = shared.inbox();
    spool.end() > journal.offset
        || !inbox.events.is_empty()
        || !inbox.flushes.is_empty()
        || inbox.stop
}

/// How far the writer has read the journal.
#[derive(Debug, Default)]
struct Cursor {
    /// Rows before this are in SQLite.
    offset: u64,
    buf: Vec<u8>,
    /// The last commit failed with this; said once, until one succeeds.
    failing: Option<String>,
}

struct Round {
    worked: bool,
    stop: bool,
}

/// Commits the events and every row journaled so far, then answers the
/// flushes that were waiting when the round began. A failed commit leaves
/// its rows where they are in the journal, for the next round (or the next
/// start) to retry.
fn round(
    conn: &mut rusqlite::Connection,
    spool: &Spool,
    shared: &Shared,
    journal: &mut Cursor,
) -> Round {
    // Taken before the journal's end is read: every row recorded before a
    // flush was asked for is below that end.
    let inbox = std::mem::take(&mut *shared.inbox());
    let end = spool.end();
    let worked = end > journal.offset || !inbox.events.is_empty();
    let ingested = ingest(conn, spool, journal, end, &inbox.events);
    // A row longer than a chunk was read whole; its buffer is not kept
    // for the small rows that follow.
    if journal.buf.capacity() > CHUNK {
        journal.buf = Vec::new();
    }
    let committed = ingested.is_ok();
    match ingested {
        Ok(()) => {
            if journal.failing.take().is_some() {
                tracing::info!("audit log writes resumed");
            }
            if spool.drained(journal.offset) {
                journal.offset = 0;
            }
        }
        Err(e) => {
            let e = e.to_string();
            if journal.failing.as_ref() != Some(&e) {
                tracing::error!("audit log write failed (rows stay journaled): {e}");
            }
            journal.failing = Some(e);
        }
    }
    for ack in inbox.flushes {
        let _ = ack.send(committed);
    }
    Round {
        worked,
        stop: inbox.stop,
    }
}

/// Why moving rows into SQLite failed.
#[derive(Debug, thiserror::Error)]
enum IngestError {
    #[error("reading the journal: {0}")]
    Read(#[from] std::io::Error),
    #[error(transparent)]
    Sql(#[from] rusqlite::Error),
}

/// Moves the journal's rows from the cursor up to `end` into SQLite, a
/// chunk per transaction, the events with the first.
fn ingest(
    conn: &mut rusqlite::Connection,
    spool: &Spool,
    journal: &mut Cursor,
    end: u64,
    events: &[EventRow],
) -> Result<(), IngestError> {
    let mut events = Some(events).filter(|e| !e.is_empty());
    while journal.offset < end || events.is_some() {
        let n = read_rows(spool, journal, end)?;
        let rows = &journal.buf[..n];
        commit(conn, |c| {
            write_events(c, events.unwrap_or_default())?;
            write_rows(c, rows)
        })?;
        journal.offset += n as u64;
        events = None;
    }
    Ok(())
}

/// Reads the next chunk of whole rows after the cursor into its buffer;
/// returns their length (0 at `end`). `end` is always at the end of a row,
/// so reading up to it ends in a whole one.
fn read_rows(spool: &Spool, journal: &mut Cursor, end: u64) -> std::io::Result<usize> {
    let left = usize::try_from(end - journal.offset).unwrap_or(usize::MAX);
    let mut want = CHUNK;
    loop {
        let len = left.min(want);
        journal.buf.resize(len, 0);
        spool.read_at(&mut journal.buf, journal.offset)?;
        match journal.buf.iter().rposition(|&b| b == b'\n') {
            Some(last) => return Ok(last + 1),
            None if len == 0 => return Ok(0),
            None if len == left => {
                return Err(std::io::Error::other("the journal ends inside a row"));
            }
            None => want = want.saturating_mul(2),
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
    r: &RecordRef<'_>,
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

/// Inserts journal lines (`[id,{record}]`), read back here, off the reply
/// path.
fn write_rows(conn: &rusqlite::Connection, rows: &[u8]) -> rusqlite::Result<()> {
    for line in rows.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
        match serde_json::from_slice::<(i64, RecordRef<'_>)>(line) {
            Ok((id, r)) => insert_call(conn, insert_call_sql!("INSERT"), id, &r)?,
            // Lines are written by this program, so this is a bug; the row
            // is skipped rather than stop every row after it.
            Err(e) => tracing::error!("audit journal: unreadable row skipped ({e})"),
        }
    }
    Ok(())
}

fn write_events(conn: &rusqlite::Connection, events: &[EventRow]) -> rusqlite::Result<()> {
    if events.is_empty() {
        return Ok(());
    }
    let mut insert =
        conn.prepare_cached("INSERT INTO events (ts_ms, kind, body) VALUES (?1, ?2, ?3)")?;
    for e in events {
        insert.execute(rusqlite::params![e.ts_ms, e.kind, e.body])?;
    }
    Ok(())
}
