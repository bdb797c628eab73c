//! What the engine's own process costs the machine, read from `/proc/self`:
//! resident memory now and at its peak, threads, open file descriptors.
//! A person watching the console can see that the engine behaves (memory
//! comes back after a burst, descriptors do not leak); `None` where the OS
//! does not say.

use std::path::Path;

use serde::Serialize;
use ts_rs::TS;

/// The process's figures at one moment.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, TS)]
pub struct ProcessStats {
    /// Resident memory (`VmRSS`), bytes.
    pub rss_bytes: Option<u64>,
    /// The highest resident memory since the process started (`VmHWM`).
    pub peak_rss_bytes: Option<u64>,
    /// Threads.
    pub threads: Option<u32>,
    /// Open file descriptors (sockets, files, pipes).
    pub open_fds: Option<u32>,
}

/// Reads this process's figures.
pub fn read() -> ProcessStats {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    ProcessStats {
        rss_bytes: kib_field(&status, "VmRSS:"),
        peak_rss_bytes: kib_field(&status, "VmHWM:"),
        threads: field(&status, "Threads:").and_then(|v| v.parse().ok()),
        open_fds: count_entries(Path::new("/proc/self/fd")),
    }
}

fn field<'a>(status: &'a str, name: &str) -> Option<&'a str> {
    status
        .lines()
        .find_map(|l| l.strip_prefix(name))
        .map(str::trim)
}

/// `VmRSS:   41236 kB` → bytes.
fn kib_field(status: &str, name: &str) -> Option<u64> {
    let v = field(status, name)?;
    let kib: u64 = v.strip_suffix("kB").unwrap_or(v).trim().parse().ok()?;
    kib.checked_mul(1024)
}

fn count_entries(dir: &Path) -> Option<u32> {
    let n = std::fs::read_dir(dir).ok()?.count();
    // The directory handle read_dir holds is one of the entries.
    u32::try_from(n.saturating_sub(1)).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_fields_read_as_bytes_and_counts() {
        let status = "Name:\ttoolgate\nVmHWM:\t   60000 kB\nVmRSS:\t   41236 kB\nThreads:\t9\n";
        assert_eq!(kib_field(status, "VmRSS:"), Some(41_236 * 1024));
        assert_eq!(kib_field(status, "VmHWM:"), Some(60_000 * 1024));
        assert_eq!(field(status, "Threads:"), Some("9"));
        assert_eq!(kib_field(status, "VmSwap:"), None);
    }

    #[test]
    fn this_process_has_memory_threads_and_descriptors() {
        let s = read();
        assert!(s.rss_bytes.is_some_and(|b| b > 0), "{s:?}");
        assert!(s.peak_rss_bytes >= s.rss_bytes, "{s:?}");
        assert!(s.threads.is_some_and(|t| t >= 1), "{s:?}");
        // stdin, stdout and stderr at least (other tests open and close
        // files meanwhile, so no exact count).
        assert!(s.open_fds.is_some_and(|n| n >= 3), "{s:?}");
    }
}
