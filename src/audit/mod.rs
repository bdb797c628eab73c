//! The audit log: every call and every event that matters, in SQLite.
//!
//! A call's row is made durable before its reply by appending it to a
//! journal beside the database (one `write(2)`; see the `spool` module),
//! and the engine waits for that before replying, so a reply an agent saw
//! is never missing after `kill -9`: the bytes are in the OS page cache,
//! which a killed process does not lose (only a power cut could lose the
//! last rows, as with SQLite's WAL at `synchronous = NORMAL`). A writer
//! thread reads the journal on and moves its rows into SQLite in groups,
//! one transaction each (≈12k rows/s batched vs ≈3.7k/s one per commit;
//! docs/architecture/decisions.md, "Measured facts behind the stack"), and
//! empties the journal once everything in it is
//! committed; the next start recovers what a killed process left there.

mod record;
mod spool;
mod store;
mod writer;

pub use crate::schema::redact_secrets;
pub use record::{CallRecord, CallRow, EventRow};
pub(crate) use store::now_ms;
pub use store::{AuditError, AuditLog};
