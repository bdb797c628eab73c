//! A breaker's recent traffic, for the console's breaker tiles: calls and
//! counted failures per bucket over the last two minutes, call-time
//! percentiles and the last failure. Apart from the state machine because
//! nothing here decides a call's fate; the breaker only counts into it, as
//! calls complete, under the lock it takes anyway.

use std::collections::VecDeque;
use std::time::Duration;

use tokio::time::Instant;

use super::BreakerStatus;
use crate::pipeline::CallResult;
use crate::settings::BreakerConfig;

/// Width of one bucket of [`CallBuckets`].
pub const BUCKET: Duration = Duration::from_secs(5);

/// Buckets kept: 24 of 5 s, the last two minutes (a Hystrix-style
/// sparkline; the console draws one per breaker).
pub const BUCKETS: usize = 24;

/// Calls that reached a tool, and how many of them failed, per 5-second
/// bucket over the last two minutes. Counted as calls complete, under the
/// lock the breaker takes anyway; buckets are reused in a ring, so the
/// cost is a few integer operations per call and nothing is allocated.
#[derive(Debug, Clone, Copy)]
pub struct CallBuckets {
    /// Bucket 0 starts here; the first call of the tool.
    epoch: Instant,
    /// (bucket number since `epoch`, calls, failures) in ring slot
    /// `number % BUCKETS`.
    slots: [(u64, u32, u32); BUCKETS],
}

impl CallBuckets {
    /// Empty buckets counted from `epoch`.
    pub fn new(epoch: Instant) -> Self {
        Self {
            epoch,
            slots: [(u64::MAX, 0, 0); BUCKETS],
        }
    }

    fn number(&self, at: Instant) -> u64 {
        let since = at.saturating_duration_since(self.epoch);
        u64::try_from(since.as_nanos() / BUCKET.as_nanos()).unwrap_or(u64::MAX)
    }

    /// Counts one call ending at `now`.
    pub fn record(&mut self, now: Instant, failed: bool) {
        let n = self.number(now);
        let slot = &mut self.slots[slot_of(n)];
        if slot.0 != n {
            *slot = (n, 0, 0);
        }
        slot.1 = slot.1.saturating_add(1);
        slot.2 = slot.2.saturating_add(u32::from(failed));
    }

    /// Calls and failures per bucket, oldest first, the last one being the
    /// bucket `now` falls in.
    pub fn series(&self, now: Instant) -> [(u32, u32); BUCKETS] {
        let current = self.number(now);
        let mut out = [(0, 0); BUCKETS];
        for (k, v) in out.iter_mut().enumerate() {
            let Some(n) = current.checked_sub((BUCKETS - 1 - k) as u64) else {
                continue;
            };
            let slot = self.slots[slot_of(n)];
            if slot.0 == n {
                *v = (slot.1, slot.2);
            }
        }
        out
    }
}

fn slot_of(n: u64) -> usize {
    usize::try_from(n % BUCKETS as u64).unwrap_or(0)
}

/// The last failure that counted against a tool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LastFailure {
    /// Its class.
    pub kind: crate::error::ErrorKind,
    /// Its message (a tool's own error text, cut at 300 bytes).
    pub message: String,
    /// When, unix ms.
    pub at_ms: i64,
}

impl LastFailure {
    /// Longest message kept.
    const MAX: usize = 300;

    pub(super) fn of(result: &CallResult) -> Option<Self> {
        let (kind, mut message) = match result {
            Ok(r) if r.is_error => (crate::error::ErrorKind::ToolFailed, r.joined_text()),
            Ok(_) => return None,
            Err(e) => (e.kind(), e.to_string()),
        };
        if message.len() > Self::MAX {
            message.truncate(message.floor_char_boundary(Self::MAX));
            message.push('…');
        }
        Some(Self {
            kind,
            message,
            at_ms: crate::audit::now_ms(),
        })
    }
}

/// One tool's breaker with its recent traffic, for the console's
/// breaker tiles ([`Breaker::stats`]).
#[derive(Debug, Clone)]
pub struct BreakerStats {
    /// State, failures in the window, time to the next probe.
    pub status: BreakerStatus,
    /// The config its last call carried (threshold, window, cooldown).
    pub cfg: BreakerConfig,
    /// Calls and failures per 5 s over the last two minutes, oldest first.
    pub buckets: [(u32, u32); BUCKETS],
    /// The last failure that counted.
    pub last_failure: Option<LastFailure>,
    /// Median, 90th and 99th percentile time of the tool's recent calls
    /// (the last [`LATENCY_SAMPLES`] that reached it); `None` before any.
    pub latency: Option<[Duration; 3]>,
    /// How many calls `latency` is over. Not `buckets`' two minutes: the
    /// samples are the last calls however old, so a quiet tool has call
    /// times and no calls in the window, and a tile says which is which.
    pub latency_calls: u32,
}

/// How many recent call times each breaker keeps for its percentiles: a
/// Hystrix tile's median/90/99, enough for a 99th percentile that means
/// something, small enough to sort on every read (a few µs).
pub const LATENCY_SAMPLES: usize = 256;

/// The recent call times of one tool, oldest first.
#[derive(Debug, Default)]
pub(super) struct Latencies(VecDeque<Duration>);

impl Latencies {
    pub(super) fn record(&mut self, d: Duration) {
        if self.0.len() == LATENCY_SAMPLES {
            self.0.pop_front();
        }
        self.0.push_back(d);
    }

    /// How many call times are kept (at most [`LATENCY_SAMPLES`]).
    pub(super) fn len(&self) -> u32 {
        u32::try_from(self.0.len()).unwrap_or(u32::MAX)
    }

    /// Nearest-rank percentiles 50, 90, 99.
    pub(super) fn percentiles(&self) -> Option<[Duration; 3]> {
        if self.0.is_empty() {
            return None;
        }
        let mut v: Vec<Duration> = self.0.iter().copied().collect();
        v.sort_unstable();
        let at = |p: usize| v[(v.len() * p).div_ceil(100).max(1) - 1];
        Some([at(50), at(90), at(99)])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latency_percentiles_are_nearest_rank_over_the_recent_calls() {
        let mut l = Latencies::default();
        assert_eq!(l.percentiles(), None);
        assert_eq!(l.len(), 0);
        // Out of order, 1..=100 ms.
        for ms in (1..=100u64).rev() {
            l.record(Duration::from_millis(ms));
        }
        let ms = |d: Duration| d.as_millis();
        let [p50, p90, p99] = l.percentiles().unwrap();
        assert_eq!((ms(p50), ms(p90), ms(p99)), (50, 90, 99));
        // Only the last LATENCY_SAMPLES count: slow calls long ago fall out.
        for _ in 0..LATENCY_SAMPLES {
            l.record(Duration::from_millis(7));
        }
        assert_eq!(l.percentiles().unwrap(), [Duration::from_millis(7); 3]);
        assert_eq!(l.len() as usize, LATENCY_SAMPLES);
        let mut one = Latencies::default();
        one.record(Duration::from_millis(3));
        assert_eq!(one.percentiles().unwrap(), [Duration::from_millis(3); 3]);
    }
}
