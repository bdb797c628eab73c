//! What the kernel says about the daemon: resident memory, open file
//! descriptors, child processes. Read from `/proc`, the figures a person
//! would look at with `ps` and `ls /proc/PID/fd`.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

/// Memory of a process, in KiB.
#[derive(Debug, Clone, Copy, Default)]
pub struct Mem {
    /// Resident now (`VmRSS`).
    pub rss_kb: u64,
    /// Highest resident since it started (`VmHWM`).
    pub hwm_kb: u64,
    /// Resident and anonymous (`RssAnon`): what the daemon allocated, as
    /// opposed to the pages of its own program and libraries it has run.
    pub anon_kb: u64,
}

/// `VmRSS`, `VmHWM` and `RssAnon` of `pid`; zeros when it is gone.
pub fn mem(pid: u32) -> Mem {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    Mem {
        rss_kb: field("VmRSS:"),
        hwm_kb: field("VmHWM:"),
        anon_kb: field("RssAnon:"),
    }
}

/// Open file descriptors of `pid`.
pub fn fd_count(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, Iterator::count)
}

/// The soft limit on open files of `pid` (`/proc/PID/limits`).
pub fn fd_limit(pid: u32) -> Option<u64> {
    let limits = std::fs::read_to_string(format!("/proc/{pid}/limits")).ok()?;
    let line = limits.lines().find(|l| l.starts_with("Max open files"))?;
    line.split_whitespace().nth(3)?.parse().ok()
}

/// One process below the daemon.
#[derive(Debug, Clone)]
pub struct Proc {
    /// Its id.
    pub pid: u32,
    /// Its parent's id.
    pub ppid: u32,
    /// Its state letter (`Z` is a zombie).
    pub state: char,
    /// Its command name.
    pub comm: String,
}

fn stat_of(pid: u32) -> Option<Proc> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let open = stat.find('(')?;
    let close = stat.rfind(')')?;
    let comm = stat[open + 1..close].to_owned();
    let mut rest = stat[close + 2..].split_whitespace();
    let state = rest.next()?.chars().next()?;
    let ppid = rest.next()?.parse().ok()?;
    Some(Proc {
        pid,
        ppid,
        state,
        comm,
    })
}

/// Every process descended from `pid` (children, grandchildren, ...).
pub fn descendants(pid: u32) -> Vec<Proc> {
    let all: Vec<Proc> = std::fs::read_dir("/proc")
        .map(|d| {
            d.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
                .filter_map(stat_of)
                .collect()
        })
        .unwrap_or_default();
    let mut found = Vec::new();
    let mut parents = vec![pid];
    while let Some(parent) = parents.pop() {
        for p in all.iter().filter(|p| p.ppid == parent) {
            parents.push(p.pid);
            found.push(p.clone());
        }
    }
    found
}

/// Whether `pid` exists and is not a zombie.
pub fn alive(pid: u32) -> bool {
    stat_of(pid).is_some_and(|p| !matches!(p.state, 'Z' | 'X'))
}

/// Samples a process's resident memory every 20 ms in the background and
/// keeps the highest value seen: `VmHWM` cannot be reset, so a section's
/// own peak comes from here.
pub struct Sampler {
    peak_kb: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
    task: tokio::task::JoinHandle<()>,
}

impl Sampler {
    /// Starts sampling `pid`.
    pub fn start(pid: u32) -> Self {
        let peak_kb = Arc::new(AtomicU64::new(mem(pid).rss_kb));
        let stop = Arc::new(AtomicBool::new(false));
        let (p, s) = (peak_kb.clone(), stop.clone());
        let task = tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_millis(20));
            while !s.load(Ordering::Relaxed) {
                tick.tick().await;
                p.fetch_max(mem(pid).rss_kb, Ordering::Relaxed);
            }
        });
        Self {
            peak_kb,
            stop,
            task,
        }
    }

    /// Stops sampling; returns the peak.
    pub async fn finish(self) -> u64 {
        self.stop.store(true, Ordering::Relaxed);
        let peak = self.peak_kb.clone();
        let _ = self.task.await;
        peak.load(Ordering::Relaxed)
    }
}

/// Machine facts for the report: `uname -a`, CPUs, memory.
pub fn machine() -> (String, usize, u64) {
    let uname = std::process::Command::new("uname")
        .arg("-a")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_else(|_| "unknown".to_owned());
    let cpus = std::thread::available_parallelism().map_or(1, usize::from);
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    let total_kb = meminfo
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    (uname, cpus, total_kb)
}
