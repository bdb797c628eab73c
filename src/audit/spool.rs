//! The call journal: where a call's row becomes durable before its reply.
//!
//! A call's row must survive `kill -9` once its reply is out. Committing it
//! to SQLite on the reply path cost 8–30 µs per call here (four WAL
//! `pwrite`s, four `fcntl` locks and B-tree work, cache-cold between
//! calls). Appending one JSON line to this file is one `write(2)`, durable
//! against `kill -9` for the same reason a WAL commit with `synchronous =
//! NORMAL` is: the bytes are in the OS page cache. The writer thread then
//! moves rows into SQLite in groups, and empties the journal once every row
//! in it is committed. At open, rows left by a killed process are replayed
//! (`INSERT OR IGNORE` on their pre-assigned ids, so a row committed just
//! before the kill is not doubled).
//!
//! No crate fits: this is a single-producer-lock append log whose only
//! reader is startup recovery, a few dozen lines over `std::fs::File`.
//!
//! One process owns the journal, by an exclusive `flock`; another process
//! opening the same audit log gets a read-only handle.

use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

use rustix::fs::{FlockOperation, flock};

use super::record::CallRecord;

/// The journal is emptied once it holds this much and every row in it is
/// in SQLite.
const ROTATE_BYTES: u64 = 1 << 20;

/// The journal of one audit log, owned by this process.
#[derive(Debug)]
pub(super) struct Spool {
    state: Mutex<State>,
    path: PathBuf,
}

#[derive(Debug)]
struct State {
    file: File,
    next_id: i64,
    bytes: u64,
    /// Rows appended since the journal was last emptied.
    spooled: u64,
    /// Of those, rows committed to SQLite.
    ingested: u64,
}

/// What opening the journal found.
pub(super) enum Opened {
    /// This process owns it; these rows were left by a killed process.
    Owned(Spool, Vec<(i64, CallRecord)>),
    /// Another process owns it.
    Busy,
}

impl Spool {
    /// The journal beside `db`; replays nothing itself (see [`Opened`]).
    pub(super) fn open(db: &Path) -> std::io::Result<Opened> {
        let path = journal_path(db);
        let file = OpenOptions::new()
            .create(true)
            .read(true)
            .append(true)
            .mode(0o600)
            .open(&path)?;
        if flock(&file, FlockOperation::NonBlockingLockExclusive).is_err() {
            return Ok(Opened::Busy);
        }
        let left = read_rows(&file, &path)?;
        let state = State {
            file,
            next_id: 1,
            bytes: 0,
            spooled: 0,
            ingested: 0,
        };
        Ok(Opened::Owned(
            Self {
                state: Mutex::new(state),
                path,
            },
            left,
        ))
    }

    /// Empties the journal after its leftover rows were committed, and sets
    /// the first id to hand out.
    pub(super) fn recovered(&self, next_id: i64) -> std::io::Result<()> {
        let mut s = self.lock();
        s.file.set_len(0)?;
        s.next_id = next_id;
        Ok(())
    }

    /// Appends a row (`body`: a [`CallRecord`] as a JSON object) with the
    /// next id, as `[id,body]`, in one write; returns the id. Once this
    /// returns the row survives the process being killed.
    pub(super) fn append(&self, body: &[u8]) -> std::io::Result<i64> {
        let mut s = self.lock();
        let id = s.next_id;
        let mut line = Vec::with_capacity(body.len() + 24);
        line.push(b'[');
        serde_json::to_writer(&mut line, &id).map_err(std::io::Error::other)?;
        line.push(b',');
        line.extend_from_slice(body);
        line.extend_from_slice(b"]\n");
        s.file.write_all(&line)?;
        s.next_id += 1;
        s.bytes += line.len() as u64;
        s.spooled += 1;
        Ok(id)
    }

    /// Counts `n` rows as committed to SQLite; empties the journal when it
    /// is large and holds nothing that is not committed.
    pub(super) fn ingested(&self, n: u64) {
        let mut s = self.lock();
        s.ingested += n;
        if s.ingested == s.spooled && s.bytes >= ROTATE_BYTES {
            match s.file.set_len(0) {
                Ok(()) => {
                    s.bytes = 0;
                    s.spooled = 0;
                    s.ingested = 0;
                }
                Err(e) => tracing::warn!("cannot empty {}: {e}", self.path.display()),
            }
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// `audit.db` → `audit.db-calls.jsonl`.
fn journal_path(db: &Path) -> PathBuf {
    let mut name = db.as_os_str().to_owned();
    name.push("-calls.jsonl");
    PathBuf::from(name)
}

/// Every complete row in the journal. A torn last line is a row whose
/// write never finished, so its reply was never sent: it is skipped.
fn read_rows(file: &File, path: &Path) -> std::io::Result<Vec<(i64, CallRecord)>> {
    let mut rows = Vec::new();
    for (n, line) in BufReader::new(file).lines().enumerate() {
        let line = line?;
        match serde_json::from_str(&line) {
            Ok(row) => rows.push(row),
            Err(e) => tracing::warn!(
                "{} line {}: skipped an unfinished row ({e})",
                path.display(),
                n + 1
            ),
        }
    }
    Ok(rows)
}
