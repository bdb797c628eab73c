//! The seccomp half of the barrier: a governed process cannot create a
//! Unix socket, nor an io_uring (which could create one behind seccomp's
//! back).
//!
//! Why all Unix sockets: Landlock (before ABI 9) does not cover
//! `connect(2)` to a socket file, and the user's own daemons listen on
//! such sockets: the systemd user manager and D-Bus (`systemd-run
//! --user`), tmux, terminal servers. Each starts programs on request, and
//! what they start is *not* confined, so one `systemd-run --user toolgate
//! approve 7` would undo everything else. A seccomp filter cannot see a
//! socket's path, so the choice is all or nothing; `[barrier] unix_sockets
//! = true` (or per server) turns it off, knowing what that opens
//! (docs/self-protection.md). `socketpair(2)` stays allowed: its two ends
//! reach nobody else.

use std::collections::BTreeMap;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule,
};

/// Why the filter could not be built or applied.
#[derive(Debug, thiserror::Error)]
#[error("seccomp: {0}")]
pub(super) struct SeccompError(String);

/// The x32 ABI shares x86_64's audit arch but numbers its calls from
/// here, so each denied call is listed under both numbers.
#[cfg(target_arch = "x86_64")]
const X32_BIT: i64 = 0x4000_0000;

/// The denied calls, each with whether only its `AF_UNIX` form is.
fn denied_calls() -> Vec<(i64, bool)> {
    let native = [(libc::SYS_socket, true), (libc::SYS_io_uring_setup, false)];
    #[cfg(target_arch = "x86_64")]
    let native = native
        .map(|(c, unix)| [(c, unix), (c | X32_BIT, unix)])
        .concat();
    native.to_vec()
}

/// Denies (`EPERM`) `socket(AF_UNIX, …)` and `io_uring_setup` to the
/// calling thread and everything it starts. Calls of another architecture
/// (32-bit programs) kill the process: the filter could not judge them.
///
/// # Errors
/// The filter could not be compiled or the kernel refused it.
pub(super) fn deny_unix_sockets() -> Result<(), SeccompError> {
    let err = |e: &dyn std::fmt::Display| SeccompError(e.to_string());
    let unix = SeccompCondition::new(
        0,
        SeccompCmpArgLen::Dword,
        SeccompCmpOp::Eq,
        libc::AF_UNIX as u64,
    )
    .map_err(|e| err(&e))?;
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    for (call, only_unix) in denied_calls() {
        // An empty rule list matches the call whatever its arguments.
        let conditions = if only_unix {
            vec![SeccompRule::new(vec![unix.clone()]).map_err(|e| err(&e))?]
        } else {
            Vec::new()
        };
        rules.insert(call, conditions);
    }
    let arch = std::env::consts::ARCH
        .try_into()
        .map_err(|e: seccompiler::BackendError| err(&e))?;
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        arch,
    )
    .map_err(|e| err(&e))?;
    let program: BpfProgram = filter
        .try_into()
        .map_err(|e: seccompiler::BackendError| err(&e))?;
    seccompiler::apply_filter(&program).map_err(|e| err(&e))
}
