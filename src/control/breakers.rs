//! The Breakers view: every tool's breaker with its recent traffic
//! (a Hystrix-style tile), and a person's reset.

use super::Control;
use super::types::{BreakerLimits, BreakerView, LastError, Latency, ResetResult, SparkShape};
use crate::pipeline::breaker::stats::{BUCKET, BUCKETS, BreakerStats};

impl Control {
    /// Breakers of the tools that have been called, by tool name. Error %
    /// and call volume are over the sparkline's two minutes; `failures`
    /// against `threshold` is over the breaker's own window.
    pub fn breakers(&self) -> Vec<BreakerView> {
        self.engine()
            .breaker()
            .stats()
            .into_iter()
            .map(view)
            .collect()
    }

    /// How every breaker's sparkline buckets calls.
    pub fn spark_shape(&self) -> SparkShape {
        SparkShape {
            bucket_ms: u64::try_from(BUCKET.as_millis()).unwrap_or(u64::MAX),
            buckets: u32::try_from(BUCKETS).unwrap_or(u32::MAX),
        }
    }

    /// The breaker limits of a tool without an override of its own.
    pub fn breaker_defaults(&self) -> BreakerLimits {
        let b = &self.engine().settings().defaults().breaker;
        BreakerLimits {
            threshold: b.failure_threshold.max(1),
            window_s: b.window.as_secs(),
            cooldown_s: b.cooldown.as_secs(),
        }
    }

    /// Closes `tool`'s breaker and forgets its failures (a person who
    /// knows the tool is healthy again). `reset: false` if the tool has
    /// never been called, so it has no breaker.
    pub fn reset_breaker(&self, tool: &str) -> ResetResult {
        ResetResult {
            reset: self.engine().breaker().reset(tool),
        }
    }
}

fn view(s: BreakerStats) -> BreakerView {
    let calls: u32 = s.buckets.iter().map(|(c, _)| c).sum();
    let failed: u32 = s.buckets.iter().map(|(_, f)| f).sum();
    let error_pct = if calls == 0 {
        0.0
    } else {
        f64::from(failed) * 100.0 / f64::from(calls)
    };
    let tool = s.status.tool.to_string();
    let shown_as = crate::hooks::agent::shown_as(&tool);
    BreakerView {
        tool,
        shown_as,
        state: s.status.state,
        failures: s.status.failures,
        threshold: s.cfg.failure_threshold.max(1),
        window_s: s.cfg.window.as_secs(),
        cooldown_s: s.cfg.cooldown.as_secs(),
        calls,
        error_pct,
        retry_in_ms: s
            .status
            .retry_in
            .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX)),
        last_error: s.last_failure.map(|f| LastError {
            kind: f.kind,
            message: f.message,
            at_ms: f.at_ms,
        }),
        spark: s.buckets.iter().map(|(c, _)| *c).collect(),
        spark_failed: s.buckets.iter().map(|(_, f)| *f).collect(),
        latency_ms: s.latency.map(|[p50, p90, p99]| Latency {
            p50: ms(p50),
            p90: ms(p90),
            p99: ms(p99),
            calls: s.latency_calls,
        }),
    }
}

/// Milliseconds with three decimals (µs precision).
fn ms(d: std::time::Duration) -> f64 {
    (d.as_secs_f64() * 1_000_000.0).round() / 1000.0
}

#[cfg(test)]
#[path = "breakers_tests.rs"]
mod tests;
