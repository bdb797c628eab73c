//! A section's memory figures: resident size when idle, its peak under
//! the section's load, and where it settles in the 10 s after the load
//! (the memory target: peak within a bound, and back to at most 1.5×
//! idle within 10 s). Reported always; checked only against bounds given
//! on the command line.

use std::time::{Duration, Instant};

use crate::daemon::Daemon;
use crate::procfs::{Sampler, mem};
use crate::report::{Check, Section, mb};
use crate::wait::until;

/// Memory bounds from the command line.
#[derive(Debug, Clone, Copy, Default)]
pub struct Bounds {
    /// Peak resident size, MB.
    pub max_rss_mb: Option<u64>,
    /// Resident size 10 s after the load over idle.
    pub max_settled_ratio: Option<f64>,
}

/// How long the daemon gets to give memory back after a load.
pub const SETTLE_WITHIN: Duration = Duration::from_secs(10);

/// The ratio the settle wait aims for (what the memory target asks).
pub const SETTLE_RATIO: f64 = 1.5;

/// Watches one daemon through a section.
pub struct MemWatch {
    pid: u32,
    idle_kb: u64,
    idle_anon_kb: u64,
    sampler: Sampler,
}

impl MemWatch {
    /// Warms `d` up ([`Daemon::warm_up`]) and starts watching; the resident
    /// size then is the idle figure.
    ///
    /// # Errors
    /// The warm-up failed.
    pub async fn start(d: &Daemon) -> anyhow::Result<Self> {
        d.warm_up().await?;
        let idle = mem(d.pid);
        Ok(Self {
            pid: d.pid,
            idle_kb: idle.rss_kb,
            idle_anon_kb: idle.anon_kb,
            sampler: Sampler::start(d.pid),
        })
    }

    /// Ends the load: stops sampling, waits (10 s at most) for the
    /// resident size to come back to 1.5× idle, and records the figures
    /// and, when bounds are given, their checks.
    pub async fn finish(self, s: &mut Section, bounds: Bounds) {
        let peak = self.sampler.finish().await;
        let started = Instant::now();
        let target = (self.idle_kb as f64 * SETTLE_RATIO) as u64;
        let pid = self.pid;
        let mut settled = mem(pid).rss_kb;
        let _ = until(SETTLE_WITHIN, || {
            settled = mem(pid).rss_kb;
            std::future::ready((settled <= target).then_some(()))
        })
        .await;
        let waited = started.elapsed();
        let peak = peak.max(mem(pid).rss_kb);
        let ratio = settled as f64 / self.idle_kb.max(1) as f64;
        s.figure("RSS idle", mb(self.idle_kb));
        s.figure("RSS peak (sampled every 20 ms)", mb(peak));
        s.figure(
            "RSS after the load",
            format!(
                "{} after {:.1} s ({ratio:.2}× idle{})",
                mb(settled),
                waited.as_secs_f64(),
                if settled <= target {
                    ""
                } else {
                    "; not back to 1.5× idle within 10 s"
                }
            ),
        );
        let anon = mem(pid).anon_kb;
        s.figure(
            "of it anonymous (RssAnon), idle → after",
            format!(
                "{} → {} ({:.2}×)",
                mb(self.idle_anon_kb),
                mb(anon),
                anon as f64 / self.idle_anon_kb.max(1) as f64
            ),
        );
        s.figure("VmHWM (process lifetime)", mb(mem(pid).hwm_kb));
        if let Some(max) = bounds.max_rss_mb {
            s.bounded.push(Check {
                what: format!("peak RSS at most {max} MB"),
                held: peak <= max * 1024,
                detail: format!("peak {}", mb(peak)),
            });
        }
        if let Some(r) = bounds.max_settled_ratio {
            s.bounded.push(Check {
                what: format!("RSS back to at most {r}× idle within 10 s of the load"),
                held: ratio <= r,
                detail: format!("{ratio:.2}× ({} of {} idle)", mb(settled), mb(self.idle_kb)),
            });
        }
    }
}
