//! What ends a governed program, and everything it started, when its call
//! is over: the [`Leash`] of a process started from
//! [`super::Barrier::command`].
//!
//! Under a warden, toolgate holds the warden's stdin (its lifeline) and
//! lets go of it: the warden then kills every process under it, those that
//! left the process group included (see [`super::warden`]). Only once the
//! warden is gone is its process group killed too, for what a warden
//! killed by its own program could not clean up; killing the group at once
//! would kill the warden before it cleaned up. Without a warden (the
//! barrier off, by choice) the group is all there is, and it is killed at
//! once.

use std::os::fd::OwnedFd;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use rustix::event::{PollFd, PollFlags, Timespec, poll};
use rustix::process::{Pid, PidfdFlags, Signal};
use tokio::process::{Child, ChildStdin};

/// How long a warden gets to clean up after its lifeline is cut before its
/// process group is killed from here.
const WARDEN_CLEANUP: Duration = Duration::from_secs(2);

/// Ends a governed program at most once: when asked, and otherwise when
/// dropped, so a cancelled call leaves no process behind.
#[derive(Debug)]
pub struct Leash {
    lifeline: Mutex<Option<ChildStdin>>,
    warden: Option<OwnedFd>,
    group: Option<Pid>,
    ended: AtomicBool,
}

impl Leash {
    /// The leash of `child`, spawned from [`super::Barrier::command`] (so
    /// it leads its own process group). Under a warden this takes the
    /// child's stdin: keep the leash for as long as the program may run.
    pub fn of(child: &mut Child, under_warden: bool) -> Self {
        let pid = child
            .id()
            .and_then(|id| i32::try_from(id).ok())
            .and_then(Pid::from_raw);
        let (lifeline, warden) = if under_warden {
            let pidfd = pid.and_then(|p| rustix::process::pidfd_open(p, PidfdFlags::empty()).ok());
            (child.stdin.take(), pidfd)
        } else {
            (None, None)
        };
        Self {
            lifeline: Mutex::new(lifeline),
            warden,
            group: pid,
            ended: AtomicBool::new(false),
        }
    }

    /// Keeps `lifeline`, the warden's stdin once a [`super::Spawn::fed`]
    /// program's input is written to it, until the program ends; dropped
    /// at once if it has ended already.
    pub fn hold(&self, lifeline: ChildStdin) {
        let mut held = self
            .lifeline
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        // Read under the lock that `cut_lifeline` takes after setting it,
        // so a lifeline held after the end is never kept.
        if !self.ended.load(Ordering::SeqCst) {
            *held = Some(lifeline);
        }
    }

    /// The program's top process has exited (its warden, when there is
    /// one): whatever is left of its group is killed now.
    pub fn release(&self) {
        if self.ended.swap(true, Ordering::SeqCst) {
            return;
        }
        self.cut_lifeline();
        kill_group(self.group);
    }

    /// Ends the program before it exited on its own (timeout,
    /// cancellation).
    pub fn cut(&self) {
        if self.ended.swap(true, Ordering::SeqCst) {
            return;
        }
        self.cut_lifeline();
        let group = self.group;
        match self.warden.as_ref().and_then(|fd| fd.try_clone().ok()) {
            // The warden cleans up and exits within milliseconds; the
            // group goes once it has (or after the bound, if it was
            // killed and cannot).
            Some(pidfd) => {
                let spawned = std::thread::Builder::new()
                    .name("toolgate-leash".into())
                    .spawn(move || {
                        let mut fds = [PollFd::new(&pidfd, PollFlags::IN)];
                        let bound = Timespec::try_from(WARDEN_CLEANUP).unwrap_or_default();
                        let _ = poll(&mut fds, Some(&bound));
                        kill_group(group);
                    });
                if spawned.is_err() {
                    kill_group(group);
                }
            }
            None => kill_group(group),
        }
    }

    fn cut_lifeline(&self) {
        let stdin = self
            .lifeline
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        drop(stdin);
    }
}

impl Drop for Leash {
    fn drop(&mut self) {
        self.cut();
    }
}

fn kill_group(group: Option<Pid>) {
    if let Some(g) = group {
        // ESRCH (the group is gone already) is the expected case.
        let _ = rustix::process::kill_process_group(g, Signal::KILL);
    }
}
