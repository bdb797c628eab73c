//! The daemon's allocators return freed memory to the system at once.
//!
//! Two allocators serve the daemon: jemalloc (see Cargo.toml) for Rust's
//! allocations, glibc's malloc for SQLite's (the audit log copies every
//! argument it stores). Neither gives memory back promptly as shipped:
//!
//! - jemalloc keeps freed pages for up to 10 s, and purges only when some
//!   thread calls it. With both decays at 0 a page goes back the moment it
//!   is empty, on the thread that freed it, so a daemon that falls quiet
//!   after a burst of large frames does not keep them. (`muzzy` pages,
//!   given back with `MADV_FREE`, would still count as resident until the
//!   system is short of memory, hence both.)
//! - glibc raises its mmap threshold to the largest block freed, so after
//!   one large row every later one comes from an arena that is seldom
//!   trimmed. A fixed threshold (glibc's own starting value) keeps large
//!   blocks mapped on their own and unmapped when freed.
//!
//! docs/architecture/decisions.md, "Memory under hostile input is bounded
//! by design", has the figures. Both read their options from the
//! environment when the process starts, and setting them later needs
//! `unsafe` (which this crate forbids), so `serve` starts its own program
//! again with the options set: `exec` keeps the pid, the open files and
//! the arguments.

use std::os::unix::process::CommandExt;

/// Each variable, and the value the daemon runs with unless the user set
/// the variable (whose value then wins). jemalloc's variable carries the
/// `_rjem_` prefix of the symbols of the jemalloc built into this program.
const OPTIONS: [(&str, &str); 2] = [
    ("_RJEM_MALLOC_CONF", "dirty_decay_ms:0,muzzy_decay_ms:0"),
    ("GLIBC_TUNABLES", "glibc.malloc.mmap_threshold=131072"),
];

/// Replaces this process with itself, the options set, unless they are
/// all set already (by this or by the user). Returns only if that is
/// impossible, and then the daemon runs on as it is.
pub(crate) fn return_freed_memory() {
    let unset: Vec<_> = OPTIONS
        .iter()
        .filter(|(name, _)| std::env::var_os(name).is_none())
        .collect();
    if unset.is_empty() {
        return;
    }
    let Ok(exe) = std::env::current_exe() else {
        return;
    };
    let err = std::process::Command::new(exe)
        .args(std::env::args_os().skip(1))
        .envs(unset.iter().map(|(name, value)| (name, value)))
        .exec();
    tracing::warn!("freed memory is returned to the system only after a delay: {err}");
}
