//! Who is on the other end of an agent-socket connection, as the kernel
//! says, read once when the connection is accepted.
//!
//! The peer's pid and uid come from `SO_PEERCRED`, its program from
//! `/proc/<pid>/exe`. A peer that is toolgate's own stdio bridge
//! (`toolgate mcp-bridge`) only relays for the MCP client that started it,
//! so for such a peer the caller is the bridge's parent: its pid from
//! `/proc/<bridge>/stat` and its program from `/proc/<parent>/exe`. Nothing
//! the bridge sends is believed about that. The parent is the one the
//! kernel names, launcher or not (`npx`, `sh -c`): walking further up would
//! need a rule for where to stop that no launcher announces. See
//! `docs/policy.md`, "Who is calling", for what this proves.

use std::fs::Metadata;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use crate::context::Caller;

/// One file, as the kernel knows it: device and inode. Two paths (or a
/// process's `/proc/<pid>/exe`) are the same program when these match,
/// whatever they are called.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct FileId {
    dev: u64,
    ino: u64,
}

impl FileId {
    fn of(path: &Path) -> Option<Self> {
        std::fs::metadata(path).ok().as_ref().map(Self::from_meta)
    }

    fn from_meta(m: &Metadata) -> Self {
        Self {
            dev: m.dev(),
            ino: m.ino(),
        }
    }
}

/// The executables that are toolgate's stdio bridge: a peer running one of
/// them is taken to relay for its parent.
///
/// Recognised by file identity, never by name (anything can be called
/// `toolgate`): the engine's own executable when it is the CLI (the image
/// it runs, and the file at the path it was started from, looked at anew
/// for each connection so a binary replaced by an upgrade is still
/// recognised), `toolgate` beside the engine's executable (the desktop app
/// installed next to the CLI), and any path a host adds
/// ([`Self::with`]).
#[derive(Debug, Clone, Default)]
pub struct BridgeExes {
    /// The image this process runs, fixed at start.
    running: Option<FileId>,
    /// Paths looked at for each connection.
    paths: Vec<PathBuf>,
}

impl BridgeExes {
    /// No bridge is recognised: every peer is its own caller.
    pub fn none() -> Self {
        Self::default()
    }

    /// This process's executable and the `toolgate` beside it: right for
    /// `toolgate serve` and for the desktop app. Hosts whose own
    /// executable also connects as a client (a test binary, a benchmark)
    /// use [`Self::none`] and [`Self::with`] instead.
    pub fn of_this_process() -> Self {
        let mut paths = Vec::new();
        if let Ok(exe) = std::env::current_exe() {
            if let Some(dir) = exe.parent() {
                paths.push(dir.join("toolgate"));
            }
            paths.push(exe);
        }
        Self {
            running: FileId::of(Path::new("/proc/self/exe")),
            paths,
        }
    }

    /// Also recognises the executable at `path`.
    pub fn with(mut self, path: impl Into<PathBuf>) -> Self {
        self.paths.push(path.into());
        self
    }

    fn contains(&self, exe: FileId) -> bool {
        self.running == Some(exe) || self.paths.iter().any(|p| FileId::of(p) == Some(exe))
    }
}

/// The caller of a peer with `pid` and `uid` (already checked to be ours).
/// With `bridges`, a peer running one of them is replaced by its parent
/// (see the module docs); `None` (the control socket, whose peers are the
/// CLI itself) takes every peer as it is.
pub(super) fn caller_of(pid: Option<i32>, uid: u32, bridges: Option<&BridgeExes>) -> Caller {
    let socket = |pid, exe, bridge_pid| Caller {
        pid,
        uid: Some(uid),
        exe,
        bridge_pid,
        ..Caller::via("socket")
    };
    let Some(pid) = pid else {
        return socket(None, None, None);
    };
    let proc_exe = format!("/proc/{pid}/exe");
    let is_bridge =
        bridges.is_some_and(|b| FileId::of(Path::new(&proc_exe)).is_some_and(|id| b.contains(id)));
    if !is_bridge {
        return socket(Some(pid), exe_of(pid), None);
    }
    let (client, exe) = parent_of_bridge(pid);
    socket(client, exe, Some(pid))
}

/// The program a process runs, as `/proc/<pid>/exe` names it.
fn exe_of(pid: i32) -> Option<String> {
    std::fs::read_link(format!("/proc/{pid}/exe"))
        .ok()
        .map(|e| e.display().to_string())
}

/// The bridge's parent and its program. The parent's program is read
/// between two readings of the bridge's parent pid: a parent that exits
/// meanwhile has its children adopted at once, so the same pid before and
/// after means the program read was that parent's and not a process that
/// reused its pid. Otherwise the program is unknown (`None`), which grants
/// nothing.
fn parent_of_bridge(bridge: i32) -> (Option<i32>, Option<String>) {
    let Some(parent) = ppid(bridge) else {
        return (None, None);
    };
    let exe = exe_of(parent);
    if ppid(bridge) != Some(parent) {
        return (Some(parent), None);
    }
    (Some(parent), exe)
}

/// The parent pid of `pid`, from `/proc/<pid>/stat`; `None` if the process
/// is gone or its parent is outside our pid namespace (0).
fn ppid(pid: i32) -> Option<i32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    ppid_in_stat(&stat)
}

/// The fourth field of a `stat` line. The second, the command name in
/// parentheses, may itself hold spaces and parentheses, so the fields are
/// counted from the last `)`.
fn ppid_in_stat(stat: &str) -> Option<i32> {
    let (_, rest) = stat.rsplit_once(')')?;
    let mut fields = rest.split_ascii_whitespace();
    let _state = fields.next()?;
    fields.next()?.parse().ok().filter(|p| *p > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_parent_pid_is_read_past_any_command_name() {
        assert_eq!(ppid_in_stat("42 (bash) S 7 42 42 0 -1"), Some(7));
        assert_eq!(ppid_in_stat("42 (a) b (c) R 9 1 1"), Some(9));
        assert_eq!(ppid_in_stat("1 (init) S 0 1 1"), None, "no parent in view");
        assert_eq!(ppid_in_stat("garbage"), None);
        assert_eq!(ppid_in_stat("42 (x)"), None);
        let me = std::process::id().cast_signed();
        assert_eq!(
            ppid(me),
            Some(rustix::process::getppid().map_or(0, |p| p.as_raw_nonzero().get())),
        );
    }

    #[test]
    fn a_peer_running_a_bridge_executable_is_its_parent() {
        let me = std::process::id().cast_signed();
        let mine = std::fs::read_link("/proc/self/exe").unwrap();
        let parent = ppid(me).expect("the test runs under a parent");
        let uid = rustix::process::getuid().as_raw();

        // Not a bridge: the peer itself.
        let plain = caller_of(Some(me), uid, Some(&BridgeExes::none()));
        assert_eq!(plain.pid, Some(me));
        assert_eq!(plain.exe.as_deref(), Some(mine.to_str().unwrap()));
        assert_eq!(plain.bridge_pid, None);
        // On a socket that recognises no bridge at all, the same.
        assert_eq!(caller_of(Some(me), uid, None), plain);

        // Our own executable, added by path, is taken for a bridge: the
        // caller is our parent as the kernel reports it.
        let bridged = caller_of(Some(me), uid, Some(&BridgeExes::none().with(&mine)));
        assert_eq!(bridged.pid, Some(parent));
        assert_eq!(bridged.exe, exe_of(parent));
        assert_eq!(bridged.bridge_pid, Some(me));
        assert_eq!(bridged.uid, Some(uid));

        // A path to another file is not; a missing file is not either.
        let other = BridgeExes::none()
            .with("/bin/sh")
            .with("/nonexistent/toolgate");
        assert_eq!(caller_of(Some(me), uid, Some(&other)).bridge_pid, None);
        // The running image is recognised without any path.
        assert_eq!(
            caller_of(Some(me), uid, Some(&BridgeExes::of_this_process())).bridge_pid,
            Some(me)
        );
    }
}
