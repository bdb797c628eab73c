//! The audit log: every call and every event that matters, in SQLite.
//!
//! One connection writes. A call that finds it idle commits its own row on
//! its own thread (no hand-off, the cheapest path for a lone call); calls
//! that find it busy queue for the writer thread, which commits whatever is
//! queued in one transaction (up to [`MAX_BATCH`]), which is what lets the
//! log keep up with many concurrent calls (STACK.md §5: ≈12k rows/s batched
//! vs ≈3.7k/s one per commit).
//! [`AuditLog::record_call`] returns only after the row's transaction has
//! committed, and the engine waits for it before replying, so a reply an
//! agent saw is never missing after `kill -9`. WAL with `synchronous =
//! NORMAL` is enough for that: a commit is in the OS page cache before
//! `COMMIT` returns, and a killed process does not lose the page cache (only
//! a power cut could lose the last commits).

mod record;
mod store;
mod writer;

pub use record::{CallRecord, CallRow, EventRow, redact_secrets};
pub(crate) use store::now_ms;
pub use store::{AuditError, AuditLog};
pub use writer::MAX_BATCH;
