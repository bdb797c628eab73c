//! The daemon's allocator returns freed memory to the system at once.
//!
//! mimalloc (see Cargo.toml) gives freed pages back to the OS only after a
//! purge delay (1 s), and only when it is next called: a daemon that falls
//! quiet after a burst of large frames kept ~75 MiB it no longer used, for
//! as long as it stayed quiet. With the delay at 0, memory comes back as
//! frames are freed (docs/architecture/decisions.md, "Memory under hostile
//! input is bounded by design", has the figures).
//!
//! mimalloc reads its options from the environment when the process
//! starts, and setting one later needs `unsafe` (which this crate
//! forbids), so `serve` starts its own program again with the option set:
//! `exec` keeps the pid, the open files and the arguments.

use std::os::unix::process::CommandExt;

/// mimalloc's option: milliseconds before freed pages are given back.
const PURGE_DELAY: &str = "MIMALLOC_PURGE_DELAY";

/// Replaces this process with itself, the purge delay set to 0, unless it
/// is set already (by this or by the user, whose value wins). Returns only
/// if that is impossible, and then the daemon runs on as it is.
pub(crate) fn purge_promptly() {
    if std::env::var_os(PURGE_DELAY).is_some() {
        return;
    }
    let Ok(exe) = std::env::current_exe() else {
        return;
    };
    let err = std::process::Command::new(exe)
        .args(std::env::args_os().skip(1))
        .env(PURGE_DELAY, "0")
        .exec();
    tracing::warn!("freed memory is returned to the system only after a delay: {err}");
}
