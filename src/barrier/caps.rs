//! Capabilities: a governed process has none, even when toolgate runs as
//! root.
//!
//! Landlock confines file access for every process, root included, but
//! some capabilities reach past it: `CAP_SYS_ADMIN` or `CAP_PERFMON` let a
//! process read another's memory map and environment through `/proc`
//! (Landlock's ptrace rule does not cover that path), and `CAP_SYS_MODULE`
//! would load kernel code. So the warden empties its bounding set (a root
//! `exec` cannot grant more than it), the ambient set, and its own sets,
//! before the program starts; `no_new_privs` (set with Landlock) keeps
//! setuid files from giving any back. A process that had none has nothing
//! to drop.

use rustix::thread::{CapabilitySet, CapabilitySets};

/// Drops every capability of this thread and of what it will start.
///
/// # Errors
/// The kernel refused to clear the thread's sets (the bounding and
/// ambient sets are best effort: an unprivileged process holds nothing
/// they could give back under `no_new_privs`).
pub(super) fn drop_all() -> std::io::Result<()> {
    let now = rustix::thread::capabilities(None)?;
    if now.permitted.contains(CapabilitySet::SETPCAP) {
        for cap in CapabilitySet::all().iter() {
            // EINVAL: a capability this kernel does not know.
            let _ = rustix::thread::remove_capability_from_bounding_set(cap);
        }
    }
    let _ = rustix::thread::clear_ambient_capability_set();
    let none = CapabilitySet::empty();
    rustix::thread::set_capabilities(
        None,
        CapabilitySets {
            effective: none,
            permitted: none,
            inheritable: none,
        },
    )?;
    Ok(())
}
