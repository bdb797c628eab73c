//! The warden: the small process every governed program runs under.
//!
//! toolgate's binaries start themselves as `<exe> __toolgate-warden PLAN --
//! PROGRAM ARGS…` (see [`super::Barrier::command`]). Before anything else
//! (no async runtime, no threads), the warden
//! 1. confines itself: Landlock rules that hide toolgate's places
//!    ([`super::rules`]) and the seccomp filter ([`super::seccomp`]). Both
//!    are inherited by everything it starts and cannot be undone, so the
//!    program, its children, the daemons they leave behind and the hooks
//!    and scripts they run are all confined the same way;
//! 2. refuses to go on when the plan requires a confinement the kernel did
//!    not give (exit 125, the reason on stderr);
//! 3. becomes a child subreaper and starts the program: every process
//!    the program leaves behind, double-forked or `setsid` daemons
//!    included, becomes the warden's child when its parent exits;
//! 4. waits for the program, reaping orphans as they come, and watches its
//!    own stdin (the *lifeline*): when toolgate closes it, because the
//!    call was cancelled or timed out, or because toolgate itself died,
//!    the program gets `grace_ms` to exit;
//! 5. then kills every process still under it and exits the way the
//!    program did (its exit code, or its signal).
//!
//! The warden confines itself rather than the program alone because this
//! crate has no `unsafe`, and so no `pre_exec` hook to restrict a child
//! between `fork` and `exec`. The price: a governed process can signal its
//! warden (same Landlock domain). Killing it only stops the clean-up of
//! step 5; what was started stays confined.

use std::ffi::{OsStr, OsString};
use std::os::fd::AsFd;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use rustix::event::{PollFd, PollFlags, Timespec, poll};
use rustix::io::Errno;
use rustix::process::{Pid, PidfdFlags, Signal, WaitOptions, WaitStatus};
use serde::{Deserialize, Serialize};

use super::shield::Shield;
use super::status::{BarrierStatus, Probe};
use super::{caps, landlock, procfs, rules, seccomp};

/// The first argument that makes a toolgate binary a warden.
pub const ARG: &str = "__toolgate-warden";
/// The second argument that makes it print a probe instead of running a
/// program.
pub const PROBE: &str = "--probe";
/// Exit code when the program could not be confined (as `env` and
/// `timeout` use 125 for their own failures).
pub const CANNOT_CONFINE: i32 = 125;

/// Whether this binary called [`run_if_asked`], and so can be a warden.
static HOSTS: AtomicBool = AtomicBool::new(false);

/// What the warden does with its stdin.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Stdin {
    /// The program reads `/dev/null`; stdin is only the lifeline.
    Null,
    /// The program shares stdin (an MCP server's requests); its hang-up is
    /// still the lifeline.
    Inherit,
    /// The program reads the bytes toolgate sends first (a decimal length,
    /// a newline, then that many bytes), then end of file. The warden's
    /// stdin stays open after them as the lifeline, so a cancelled call
    /// ends at once; were the program's input the warden's own stdin, its
    /// end would break the lifeline the moment it was written.
    Feed,
}

/// The most a [`Stdin::Feed`] frame may carry: far above any tool call's
/// arguments, and a bound on what a garbled length can make the warden
/// allocate.
const MAX_FEED: usize = 256 * 1024 * 1024;

/// `bytes` framed for a warden started with [`Stdin::Feed`].
pub fn feed_frame(bytes: &[u8]) -> Vec<u8> {
    let mut frame = format!("{}\n", bytes.len()).into_bytes();
    frame.extend_from_slice(bytes);
    frame
}

/// Reads one [`feed_frame`] from stdin.
fn read_feed() -> std::io::Result<Vec<u8>> {
    use std::io::{BufRead, Read};
    let invalid = |why: String| std::io::Error::new(std::io::ErrorKind::InvalidData, why);
    let mut stdin = std::io::stdin().lock();
    let mut header = String::new();
    (&mut stdin).take(24).read_line(&mut header)?;
    let len: usize = header
        .trim_end_matches('\n')
        .parse()
        .map_err(|_| invalid(format!("the input's length is not a number: {header:?}")))?;
    if len > MAX_FEED {
        return Err(invalid(format!(
            "the input is {len} bytes, over {MAX_FEED}"
        )));
    }
    let mut bytes = vec![0; len];
    stdin.read_exact(&mut bytes)?;
    Ok(bytes)
}

/// How to confine and run one program; passed as JSON on the command line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Plan {
    /// What the program may not reach.
    pub shield: Shield,
    /// Unix sockets are allowed (no seccomp filter).
    pub unix_sockets: bool,
    /// Refuse to run when the barrier does not confine.
    pub require: bool,
    /// The program's stdin.
    pub stdin: Stdin,
    /// How long the program may run on after the lifeline breaks.
    pub grace_ms: u64,
}

/// Called first thing by every toolgate binary: if this process was
/// started as a warden, it runs as one and exits; otherwise it only
/// records that this binary can be one (see [`hosts_warden`]).
pub fn run_if_asked() {
    HOSTS.store(true, Ordering::Relaxed);
    let mut args = std::env::args_os().skip(1);
    if args.next().as_deref() != Some(OsStr::new(ARG)) {
        return;
    }
    let code = main(args.collect());
    std::process::exit(code);
}

/// Whether this binary called [`run_if_asked`] at start.
pub fn hosts_warden() -> bool {
    HOSTS.load(Ordering::Relaxed)
}

fn main(args: Vec<OsString>) -> i32 {
    let Some((plan, rest)) = args.split_first() else {
        return refuse("no plan given");
    };
    let plan: Plan = match serde_json::from_str(&plan.to_string_lossy()) {
        Ok(p) => p,
        Err(e) => return refuse(&format!("unreadable plan: {e}")),
    };
    let probe = confine(&plan);
    if rest.first().map(OsString::as_os_str) == Some(OsStr::new(PROBE)) {
        println!("{}", serde_json::to_string(&probe).unwrap_or_default());
        return 0;
    }
    let Some((program, args)) = rest
        .split_first()
        .filter(|(sep, _)| *sep == "--")
        .and_then(|(_, cmd)| cmd.split_first())
    else {
        return refuse("no program given after `--`");
    };
    let status = BarrierStatus::from_probe(&probe, plan.unix_sockets, plan.require);
    if plan.require && !status.confines() {
        return refuse(&format!(
            "cannot confine `{}`: {}",
            program.to_string_lossy(),
            status.gaps.join("; ")
        ));
    }
    run(&plan, program, args)
}

fn refuse(why: &str) -> i32 {
    eprintln!("toolgate barrier: {why}; refusing to run it unconfined");
    CANNOT_CONFINE
}

/// Confines this thread as `plan` says and reports what held.
fn confine(plan: &Plan) -> Probe {
    let mut probe = Probe::default();
    match landlock::restrict(&rules::rules(&plan.shield)) {
        Ok(e) if e.enforced => probe.landlock_abi = e.abi,
        Ok(_) => probe.landlock_error = Some("the kernel enforced no ruleset".into()),
        Err(e) => probe.landlock_error = Some(e.to_string()),
    }
    if !plan.unix_sockets {
        let applied = seccomp::deny_unix_sockets();
        probe.seccomp = Some(applied.is_ok());
        probe.seccomp_error = applied.err().map(|e| e.to_string());
    }
    probe.capabilities_error = caps::drop_all().err().map(|e| e.to_string());
    probe.reachable = plan
        .shield
        .hidden()
        .filter(|p| opens(p))
        .map(|p| p.display().to_string())
        .collect();
    probe
}

/// Whether this process can still reach what `path` holds: read the file,
/// or, for a directory (whose names stay listable: its parents are), read
/// a file in it or create one.
fn opens(path: &std::path::Path) -> bool {
    if !path.is_dir() {
        return std::fs::File::open(path).is_ok();
    }
    let readable = std::fs::read_dir(path).is_ok_and(|entries| {
        entries
            .flatten()
            .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
            .take(8)
            .any(|e| std::fs::File::open(e.path()).is_ok())
    });
    let probe = path.join(format!(".toolgate-probe-{}", std::process::id()));
    let writable = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&probe)
        .is_ok();
    if writable {
        let _ = std::fs::remove_file(&probe);
    }
    readable || writable
}

fn run(plan: &Plan, program: &OsStr, args: &[OsString]) -> i32 {
    // Orphans of the program become ours, so none escapes step 5.
    let _ = rustix::process::set_child_subreaper(Some(rustix::process::getpid()));
    let mut cmd = Command::new(program);
    cmd.args(args);
    let input = match plan.stdin {
        Stdin::Null => {
            cmd.stdin(Stdio::null());
            None
        }
        Stdin::Inherit => None,
        Stdin::Feed => match read_feed() {
            Ok(bytes) => {
                cmd.stdin(Stdio::piped());
                Some(bytes)
            }
            Err(e) => {
                eprintln!("toolgate barrier: cannot read the program's input: {e}");
                return 126;
            }
        },
    };
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            eprintln!(
                "toolgate barrier: cannot start `{}`: {e}",
                program.to_string_lossy()
            );
            return if e.kind() == std::io::ErrorKind::NotFound {
                127
            } else {
                126
            };
        }
    };
    if let (Some(bytes), Some(mut pipe)) = (input, child.stdin.take()) {
        // A thread of its own: a program that reads slowly, or never,
        // must not keep the warden from watching it and its lifeline.
        let _ = std::thread::Builder::new()
            .name("toolgate-warden-feed".into())
            .spawn(move || {
                use std::io::Write;
                // A program that exits unread breaks the pipe: its exit
                // status says what happened.
                let _ = pipe.write_all(&bytes);
            });
    }
    let main = Pid::from_raw(child.id() as i32);
    // Reaped with waitpid below; std's handle does nothing when dropped.
    drop(child);
    let status = main.and_then(|m| supervise(m, Duration::from_millis(plan.grace_ms)));
    kill_everything_left();
    exit_like(status)
}

/// Waits for `main` to exit, or for the lifeline to break and `grace` to
/// pass; reaps orphans meanwhile. `None`: the lifeline broke first.
fn supervise(main: Pid, grace: Duration) -> Option<WaitStatus> {
    let pidfd = rustix::process::pidfd_open(main, PidfdFlags::empty()).ok();
    let stdin = std::io::stdin();
    let mut lifeline = true;
    let mut broke: Option<Instant> = None;
    loop {
        if let Some(status) = reap(main) {
            return Some(status);
        }
        let wait = match broke {
            Some(at) => grace.checked_sub(at.elapsed())?,
            None => Duration::from_secs(1),
        };
        let mut fds = Vec::with_capacity(2);
        if let Some(fd) = &pidfd {
            fds.push(PollFd::new(fd, PollFlags::IN));
        }
        if lifeline && broke.is_none() {
            fds.push(PollFd::new(&stdin, PollFlags::empty()));
        }
        let timeout = Timespec::try_from(wait).unwrap_or(Timespec {
            tv_sec: 1,
            tv_nsec: 0,
        });
        match poll(&mut fds, Some(&timeout)) {
            Ok(_) | Err(Errno::INTR) => {}
            Err(_) => std::thread::sleep(Duration::from_millis(50)),
        }
        if lifeline
            && broke.is_none()
            && let Some(fd) = fds.last().filter(|f| same_fd(f, &stdin))
        {
            let r = fd.revents();
            if r.contains(PollFlags::NVAL) {
                lifeline = false; // no stdin at all: nothing to watch
            } else if r.intersects(PollFlags::HUP | PollFlags::ERR) {
                broke = Some(Instant::now());
            }
        }
    }
}

fn same_fd(fd: &PollFd<'_>, stdin: &std::io::Stdin) -> bool {
    use std::os::fd::AsRawFd;
    fd.as_fd().as_raw_fd() == stdin.as_fd().as_raw_fd()
}

/// Reaps every child that has exited; `main`'s status if it was one.
fn reap(main: Pid) -> Option<WaitStatus> {
    let mut found = None;
    while let Ok(Some((pid, status))) = rustix::process::wait(WaitOptions::NOHANG) {
        if pid == main {
            found = Some(status);
        }
    }
    found
}

/// Kills and reaps every process under the warden: its children, and
/// theirs as they are orphaned to it, until none is left.
fn kill_everything_left() {
    let me = std::process::id() as i32;
    loop {
        match rustix::process::wait(WaitOptions::NOHANG) {
            Err(_) => return, // ECHILD: nobody left
            Ok(Some(_)) => continue,
            Ok(None) => {}
        }
        for child in procfs::children_of(me) {
            if let Some(pid) = Pid::from_raw(child) {
                let _ = rustix::process::kill_process(pid, Signal::KILL);
            }
        }
        if rustix::process::wait(WaitOptions::empty()).is_err() {
            return;
        }
    }
}

/// Exits with the program's code, or dies of its signal (without a core
/// dump of our own). `None` (cancelled) dies of `SIGKILL`.
fn exit_like(status: Option<WaitStatus>) -> i32 {
    let code = status.and_then(WaitStatus::exit_status);
    if let Some(code) = code {
        return code;
    }
    let sig = status
        .and_then(WaitStatus::terminating_signal)
        .unwrap_or(libc::SIGKILL);
    let no_core = rustix::process::Rlimit {
        current: Some(0),
        maximum: rustix::process::getrlimit(rustix::process::Resource::Core).maximum,
    };
    let _ = rustix::process::setrlimit(rustix::process::Resource::Core, no_core);
    if let Some(signal) = Signal::from_named_raw(sig) {
        let _ = rustix::process::kill_process(rustix::process::getpid(), signal);
    }
    // Still here: the signal is ignored in this process (SIGPIPE is).
    128 + sig
}
