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

use std::fs::File;
use std::io::{BufRead, BufReader, IoSlice, Write};
use std::os::unix::fs::FileExt;
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
    /// The writer thread's own handle on the file, for positioned reads
    /// that never wait for an append.
    reader: File,
    path: PathBuf,
}

#[derive(Debug)]
struct State {
    file: File,
    next_id: i64,
    /// Bytes of complete rows in the journal.
    bytes: u64,
    /// A failed append left bytes that could not be cut off; appending
    /// more would misplace every later row, so appends fail (closed).
    torn: bool,
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
        let file = crate::private_file::open(&path, true)?;
        if flock(&file, FlockOperation::NonBlockingLockExclusive).is_err() {
            return Ok(Opened::Busy);
        }
        let left = left_rows(&file, &path)?;
        let reader = file.try_clone()?;
        let state = State {
            file,
            next_id: 1,
            bytes: 0,
            torn: false,
        };
        Ok(Opened::Owned(
            Self {
                state: Mutex::new(state),
                reader,
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
    /// next id, as `[id,body]`, in one write. Once this returns the row
    /// survives the process being killed.
    pub(super) fn append(&self, body: &[u8]) -> std::io::Result<()> {
        let mut s = self.lock();
        if s.torn {
            return Err(std::io::Error::other(
                "the journal holds an unfinished row that could not be removed",
            ));
        }
        let id = s.next_id;
        let mut head = Vec::with_capacity(24);
        head.push(b'[');
        serde_json::to_writer(&mut head, &id).map_err(std::io::Error::other)?;
        head.push(b',');
        let len = head.len() + body.len() + 2;
        // One `writev` of the three pieces: the body is never copied into
        // a line of its own. On a regular file a short write only happens
        // when the disk refuses, which fails this row like an error.
        let written = write_parts(&mut s.file, [&head, body, b"]\n"]);
        if !matches!(written, Ok(n) if n == len) {
            // Leave no fragment for the next row to be glued to: the
            // writer reads rows by their byte ranges.
            let end = s.bytes;
            s.torn = s.file.set_len(end).is_err();
            return Err(match written {
                Err(e) => e,
                Ok(_) => std::io::Error::new(std::io::ErrorKind::WriteZero, "short write"),
            });
        }
        s.next_id += 1;
        s.bytes += len as u64;
        Ok(())
    }

    /// Where the complete rows end: the writer reads up to here.
    pub(super) fn end(&self) -> u64 {
        self.lock().bytes
    }

    /// Reads `buf.len()` bytes of rows from `offset` (below [`Self::end`]).
    pub(super) fn read_at(&self, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
        self.reader.read_exact_at(buf, offset)
    }

    /// Every complete row in this journal, as [`peek`] reads another
    /// process's: reads fall back to it while commits fail.
    pub(super) fn rows(&self) -> std::io::Result<Vec<(i64, CallRecord)>> {
        read_journal(&self.path)
    }

    /// Once every row up to `committed` is in SQLite: empties the journal
    /// if it is large and nothing was appended since; returns whether it
    /// did (reading then starts again at 0).
    pub(super) fn drained(&self, committed: u64) -> bool {
        let mut s = self.lock();
        if s.bytes != committed || s.bytes < ROTATE_BYTES {
            return false;
        }
        match s.file.set_len(0) {
            Ok(()) => {
                s.bytes = 0;
                true
            }
            Err(e) => {
                tracing::warn!("cannot empty {}: {e}", self.path.display());
                false
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

/// Rows in the journal of the log at `db`, read without taking it: what
/// the process that owns it has recorded, including rows it has not
/// committed to SQLite yet (and, until the journal is emptied, some that
/// it has). A last line still being written is left out.
pub(super) fn peek(db: &Path) -> std::io::Result<Vec<(i64, CallRecord)>> {
    read_journal(&journal_path(db))
}

/// Every complete row in the journal at `path` (none if there is none).
fn read_journal(path: &Path) -> std::io::Result<Vec<(i64, CallRecord)>> {
    match File::open(path) {
        Ok(file) => read_rows(&file, |_, _| {}),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(e),
    }
}

/// Rows a killed process left in its journal. A torn last line is a row
/// whose write never finished, so its reply was never sent: it is skipped.
fn left_rows(file: &File, path: &Path) -> std::io::Result<Vec<(i64, CallRecord)>> {
    read_rows(file, |n, e| {
        tracing::warn!(
            "{} line {n}: skipped an unfinished row ({e})",
            path.display()
        );
    })
}

/// Every complete row in a journal; `skipped(line, why)` hears of the
/// others.
fn read_rows(
    file: &File,
    skipped: impl Fn(usize, serde_json::Error),
) -> std::io::Result<Vec<(i64, CallRecord)>> {
    let mut rows = Vec::new();
    // Bytes, not text: a torn line may end inside a character.
    for (n, line) in BufReader::new(file).split(b'\n').enumerate() {
        match serde_json::from_slice(&line?) {
            Ok(row) => rows.push(row),
            Err(e) => skipped(n + 1, e),
        }
    }
    Ok(rows)
}

/// Writes `parts` in one `writev`, retrying only if a signal came first.
fn write_parts<const N: usize>(file: &mut File, parts: [&[u8]; N]) -> std::io::Result<usize> {
    let slices = parts.map(IoSlice::new);
    loop {
        match file.write_vectored(&slices) {
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            other => return other,
        }
    }
}
