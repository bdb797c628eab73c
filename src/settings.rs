//! The tunables of the pipeline, resolved per tool.
//!
//! Every threshold has one documented default here and can be overridden
//! globally (`[pipeline]` in the config) and per tool (`[tools.NAME]`).
//! PraisonAI hard-codes its breaker at 5 failures / 60 s for every tool; a
//! slow upstream and a local file read deserve different limits.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use arc_swap::ArcSwap;

/// Circuit-breaker thresholds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BreakerConfig {
    /// Failures inside `window` that open the breaker. Default 5
    /// (PraisonAI's fixed value).
    pub failure_threshold: u32,
    /// The sliding window failures are counted in. Default 60 s.
    pub window: Duration,
    /// How long an open breaker fails fast before letting probes through.
    /// Default 30 s: long enough for a restarted upstream to come back,
    /// short enough that a person does not wait on a healed tool.
    pub cooldown: Duration,
    /// Probe calls allowed while half-open; all must succeed to close.
    /// Default 1.
    pub half_open_probes: u32,
    /// Whether results the tool itself marks `isError` count as failures.
    /// Default false: such a result is the tool's answer to this one call
    /// (a command that exited non-zero, a page that was 404, an upstream
    /// tool saying "no such issue"), which any agent can provoke; counting
    /// it would let one agent switch the tool off for all. Set per upstream
    /// server with `breaker_counts_is_error = true` (or per tool) for
    /// servers that report their own outages that way.
    pub count_is_error: bool,
}

impl Default for BreakerConfig {
    fn default() -> Self {
        Self {
            failure_threshold: 5,
            window: Duration::from_secs(60),
            cooldown: Duration::from_secs(30),
            half_open_probes: 1,
            count_is_error: false,
        }
    }
}

/// Retry of transient failures (see `CallError::is_retryable`).
#[derive(Debug, Clone, PartialEq)]
pub struct RetryConfig {
    /// Extra attempts after the first. Default 2.
    pub max_retries: u32,
    /// Backoff cap for the first retry. Default 100 ms.
    pub initial_backoff: Duration,
    /// Upper bound of any single backoff. Default 5 s.
    pub max_backoff: Duration,
    /// Growth factor per attempt. Default 2.
    pub multiplier: f64,
}

impl Default for RetryConfig {
    fn default() -> Self {
        Self {
            max_retries: 2,
            initial_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_secs(5),
            multiplier: 2.0,
        }
    }
}

/// Loop-guard thresholds: how many identical calls (or A-B-A-B rounds)
/// inside `window` lead to each level.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoopGuardConfig {
    /// Window the repeats are counted in. Default 120 s.
    pub window: Duration,
    /// Repeats at which the result carries a warning. Default 3.
    pub warn_at: u32,
    /// Repeats at which the call is refused. Default 5.
    pub block_at: u32,
    /// Repeats at which the whole session is halted. Default 8.
    pub halt_at: u32,
}

impl Default for LoopGuardConfig {
    fn default() -> Self {
        Self {
            window: Duration::from_secs(120),
            warn_at: 3,
            block_at: 5,
            halt_at: 8,
        }
    }
}

/// Output truncation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TruncateConfig {
    /// Largest text output passed on, in bytes. Default 32 KiB: roughly
    /// 8k tokens, a quarter of a small context window.
    pub max_bytes: usize,
}

impl Default for TruncateConfig {
    fn default() -> Self {
        Self {
            max_bytes: 32 * 1024,
        }
    }
}

/// Everything the pipeline needs to know about one tool's limits.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolSettings {
    /// Limit for one attempt. Default 30 s.
    pub timeout: Duration,
    /// Limit for the whole call, all retries and backoffs included (approval
    /// waiting excluded). Default 120 s.
    pub deadline: Duration,
    /// Retry policy.
    pub retry: RetryConfig,
    /// Breaker thresholds.
    pub breaker: BreakerConfig,
    /// Loop-guard thresholds.
    pub loop_guard: LoopGuardConfig,
    /// Truncation limit.
    pub truncate: TruncateConfig,
}

impl Default for ToolSettings {
    fn default() -> Self {
        Self {
            timeout: Duration::from_secs(30),
            deadline: Duration::from_secs(120),
            retry: RetryConfig::default(),
            breaker: BreakerConfig::default(),
            loop_guard: LoopGuardConfig::default(),
            truncate: TruncateConfig::default(),
        }
    }
}

/// Global defaults plus per-tool overrides, already merged.
///
/// Two layers of overrides: `per_tool` comes from `[tools.NAME]` in the
/// config and is fixed; `runtime` is set by components whose tools come and
/// go while the daemon runs (an upstream MCP server's `timeout_ms`,
/// `max_retries`, breaker overrides apply to each of its tools). The config
/// layer wins: a person's per-tool line is more specific than a server-wide
/// one. Clones share the runtime layer, so the engine sees changes at once.
#[derive(Debug, Clone, Default)]
pub struct Settings {
    defaults: Arc<ToolSettings>,
    per_tool: HashMap<String, Arc<ToolSettings>>,
    runtime: Arc<ArcSwap<HashMap<String, Arc<ToolSettings>>>>,
}

impl Settings {
    /// Settings from merged defaults and overrides.
    pub fn new(defaults: ToolSettings, per_tool: HashMap<String, ToolSettings>) -> Self {
        Self {
            defaults: Arc::new(defaults),
            per_tool: per_tool
                .into_iter()
                .map(|(k, v)| (k, Arc::new(v)))
                .collect(),
            runtime: Arc::default(),
        }
    }

    /// The settings that apply to `tool`: config override, else runtime
    /// override, else the defaults. Lock-free.
    pub fn resolve(&self, tool: &str) -> Arc<ToolSettings> {
        if let Some(s) = self.per_tool.get(tool) {
            return s.clone();
        }
        match self.runtime.load().get(tool) {
            Some(s) => s.clone(),
            None => self.defaults.clone(),
        }
    }

    /// Whether `tool` has settings of its own (a `[tools.NAME]` entry or a
    /// runtime override), rather than the defaults.
    pub fn has_own(&self, tool: &str) -> bool {
        self.per_tool.contains_key(tool) || self.runtime.load().contains_key(tool)
    }

    /// Sets the runtime override for `tool` (replacing any earlier one).
    /// A `[tools.NAME]` entry in the config still takes precedence.
    pub fn set_tool(&self, tool: &str, settings: ToolSettings) {
        let settings = Arc::new(settings);
        self.runtime.rcu(|m| {
            let mut m = HashMap::clone(m);
            m.insert(tool.to_owned(), settings.clone());
            m
        });
    }

    /// Removes the runtime override for `tool`, if any.
    pub fn clear_tool(&self, tool: &str) {
        if self.runtime.load().contains_key(tool) {
            self.runtime.rcu(|m| {
                let mut m = HashMap::clone(m);
                m.remove(tool);
                m
            });
        }
    }

    /// The global defaults.
    pub fn defaults(&self) -> &ToolSettings {
        &self.defaults
    }
}
