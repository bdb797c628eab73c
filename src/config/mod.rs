//! Configuration: one TOML file, parsed into [`raw::RawConfig`] and then
//! validated into [`Config`], the only form the engine accepts.
//!
//! `Config::from_raw` resolves per-tool overrides over the global limits once
//! and reports every problem with its path (`pipeline.breaker.
//! failure_threshold: must be at least 1`), so a person fixes the file in one
//! pass. Defaults live in `settings` and `policy`, one place each.

pub mod import;
mod locate;
pub mod raw;
pub mod restart;
pub mod servers;
pub mod watch;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::barrier::BarrierSettings;
use crate::policy::PolicyConfig;
use crate::settings::{Settings, ToolSettings};
use crate::tool::ToolName;
use raw::{RawConfig, RawLimits};

/// Why a config could not be loaded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The file could not be read.
    #[error("cannot read config {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The TOML is malformed or has an unknown key (message has the line).
    #[error("config {path}: {message}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// toml's message, with line, column and key.
        message: String,
    },
    /// Values are out of range.
    #[error("config {path}: {}", .problems.join("; "))]
    Invalid {
        /// The file (or `<defaults>`).
        path: PathBuf,
        /// Every problem, each with its key path.
        problems: Vec<String>,
    },
}

/// Settings for the built-in tools.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BuiltinConfig {
    /// Roots for file access and `shell_exec`'s working directory. Empty by
    /// default: file tools then refuse every path until a root is chosen.
    pub roots: Vec<PathBuf>,
    /// SSRF exception for loopback and private ranges (PraisonAI's
    /// `ALLOW_LOCAL_CRAWL`).
    pub allow_local: bool,
    /// Exact host or host:port SSRF exceptions.
    pub allowed_hosts: Vec<String>,
    /// Cap on `shell_exec` timeouts. Default 60 s.
    pub shell_max_timeout: Duration,
    /// Built-ins not to register.
    pub disabled: Vec<String>,
}

/// The validated configuration.
#[derive(Debug, Clone)]
pub struct Config {
    /// Where it came from (`None` = built-in defaults).
    pub path: Option<PathBuf>,
    /// Warnings become errors.
    pub strict: bool,
    /// Close tool object schemas.
    pub strict_schemas: bool,
    /// Data directory override (`None` = XDG default).
    pub data_dir: Option<PathBuf>,
    /// Allowlist from the file (the environment may override it).
    pub allowed_tools: Option<Vec<String>>,
    /// Denylist.
    pub denied_tools: Vec<String>,
    /// Resolved per-tool limits.
    pub settings: Settings,
    /// Policy.
    pub policy: PolicyConfig,
    /// Built-in tools.
    pub builtin: BuiltinConfig,
    /// Upstream MCP servers, validated (names unique, URLs checked).
    pub servers: Vec<servers::ServerSpec>,
    /// How governed processes are confined.
    pub barrier: BarrierSettings,
    /// `[tools.NAME] shell`: tools said to be shell-like or not, over what
    /// their definitions say.
    pub shell_overrides: HashMap<String, bool>,
    /// `[search]`: tool search and deferral.
    pub search: crate::search::DisclosureConfig,
    /// `[hooks]`: coding agents' hooks.
    pub hooks: crate::hooks::fallback::HooksConfig,
    /// `[plugins] trusted`: plugins whose tools are not `untrusted`.
    pub trusted_plugins: Vec<String>,
    /// `[storage]`: the team's shared database, if any.
    pub storage: Option<crate::team::StorageSettings>,
    /// `[team] deciders`: who of the team may decide this engine's
    /// requests; `None`: anyone.
    pub team_deciders: Option<Vec<String>>,
    /// `[team] rules`: whether remembered rules are shared with the team.
    pub team_rules: crate::team::Sharing,
    /// `[team] pins`: whether approved upstream tool versions are shared.
    pub team_pins: crate::team::Sharing,
}

impl Default for Config {
    fn default() -> Self {
        // Defaults always validate; fall back field by field if that ever
        // changes rather than panic.
        Self::from_raw(RawConfig::default(), None).unwrap_or_else(|_| Self {
            path: None,
            strict: false,
            strict_schemas: false,
            data_dir: None,
            allowed_tools: None,
            denied_tools: Vec::new(),
            settings: Settings::default(),
            policy: PolicyConfig::default(),
            builtin: BuiltinConfig {
                shell_max_timeout: Duration::from_secs(60),
                ..BuiltinConfig::default()
            },
            servers: Vec::new(),
            barrier: BarrierSettings::default(),
            shell_overrides: HashMap::new(),
            search: crate::search::DisclosureConfig::default(),
            hooks: crate::hooks::fallback::HooksConfig::default(),
            trusted_plugins: Vec::new(),
            storage: None,
            team_deciders: None,
            team_rules: crate::team::Sharing::Engine,
            team_pins: crate::team::Sharing::Engine,
        })
    }
}

impl Config {
    /// Parses TOML text. `path` is only used in messages.
    ///
    /// # Errors
    /// Malformed TOML, unknown keys, or invalid values.
    pub fn parse(text: &str, path: &Path) -> Result<Self, ConfigError> {
        let raw: RawConfig = toml::from_str(text).map_err(|e| ConfigError::Parse {
            path: path.to_owned(),
            message: locate::parse_error(text, &e),
        })?;
        Self::from_raw(raw, Some(path.to_owned())).map_err(|e| locate::add_lines(text, e))
    }

    /// Loads `path`, or the default location if `None` (defaults if absent).
    ///
    /// # Errors
    /// An explicit path that cannot be read, or any parse/validation error.
    pub fn load(path: Option<&Path>) -> Result<Self, ConfigError> {
        let (path, must_exist) = match path {
            Some(p) => (p.to_owned(), true),
            None => match crate::paths::default_config_file() {
                Some(p) => (p, false),
                None => return Ok(Self::default()),
            },
        };
        match std::fs::read_to_string(&path) {
            Ok(text) => Self::parse(&text, &path),
            Err(e) if !must_exist && e.kind() == std::io::ErrorKind::NotFound => {
                Ok(Self::default())
            }
            Err(source) => Err(ConfigError::Read { path, source }),
        }
    }

    /// Validates a raw config.
    ///
    /// # Errors
    /// [`ConfigError::Invalid`] listing every problem.
    pub fn from_raw(raw: RawConfig, path: Option<PathBuf>) -> Result<Self, ConfigError> {
        let mut problems = Vec::new();
        for (key, set) in [
            ("policy", raw.pipeline.policy.is_some()),
            ("risk", raw.pipeline.risk.is_some()),
            ("shell", raw.pipeline.shell.is_some()),
        ] {
            if set {
                problems.push(format!("pipeline.{key}: only per tool, in [tools.NAME]"));
            }
        }
        let defaults = merge_limits(
            &ToolSettings::default(),
            &raw.pipeline,
            "pipeline",
            &mut problems,
        );
        let mut per_tool = HashMap::new();
        for (name, o) in &raw.tools {
            if let Err(e) = ToolName::new(name) {
                problems.push(format!("tools.{name}: {e}"));
                continue;
            }
            per_tool.insert(
                name.clone(),
                merge_limits(&defaults, o, &format!("tools.{name}"), &mut problems),
            );
        }
        tool_lists(&raw, &mut problems);
        let builtin = builtin_config(&raw, &mut problems);
        let servers = servers::validate(&raw.servers, &mut problems);
        let policy = crate::policy::load::policy_config(&raw, &builtin.roots, &mut problems);
        let search = search_config(&raw.search, &mut problems);
        let storage = storage_settings(&raw.storage, &mut problems);
        if raw.team.deciders.as_ref().is_some_and(Vec::is_empty) {
            problems.push(
                "team.deciders: an empty list would let nobody decide; leave it out to let anyone"
                    .into(),
            );
        }
        if !problems.is_empty() {
            return Err(ConfigError::Invalid {
                path: path.unwrap_or_else(|| "<defaults>".into()),
                problems,
            });
        }
        Ok(Self {
            path,
            strict: raw.strict.unwrap_or(false),
            strict_schemas: raw.strict_schemas.unwrap_or(false),
            data_dir: raw.data_dir.as_deref().map(crate::paths::expand_home),
            allowed_tools: raw.allowed_tools,
            denied_tools: raw.denied_tools,
            settings: Settings::new(defaults, per_tool),
            policy,
            builtin,
            servers,
            barrier: barrier_settings(&raw.barrier),
            shell_overrides: raw
                .tools
                .iter()
                .filter_map(|(name, o)| Some((name.clone(), o.shell?)))
                .collect(),
            search,
            hooks: crate::hooks::fallback::HooksConfig {
                when_engine_down: raw.hooks.when_engine_down.unwrap_or_default(),
            },
            trusted_plugins: raw.plugins.trusted.clone(),
            storage,
            team_deciders: raw.team.deciders.clone(),
            team_rules: raw.team.rules.unwrap_or_default(),
            team_pins: raw.team.pins.unwrap_or_default(),
        })
    }
}

/// `[storage]`, checked (docs/team.md).
fn storage_settings(
    raw: &raw::RawStorage,
    problems: &mut Vec<String>,
) -> Option<crate::team::StorageSettings> {
    match (&raw.url, &raw.password) {
        (None, None) => None,
        (None, Some(_)) => {
            problems.push("storage.password: set only with storage.url".into());
            None
        }
        (Some(url), password) => crate::team::StorageSettings::new(url, password.as_deref())
            .map_err(|e| problems.push(e.to_string()))
            .ok(),
    }
}

/// `[search]`, each unset key at its default.
fn search_config(
    raw: &raw::RawSearch,
    problems: &mut Vec<String>,
) -> crate::search::DisclosureConfig {
    let defaults = crate::search::DisclosureConfig::default();
    crate::search::DisclosureConfig::new(
        raw.mode.unwrap_or(defaults.mode),
        raw.threshold_pct.unwrap_or(defaults.threshold_pct),
        raw.context_window.unwrap_or(defaults.context_window),
        raw.clients.clone(),
        raw.core.clone().unwrap_or_default(),
    )
    .unwrap_or_else(|e| {
        problems.push(e.to_string());
        defaults
    })
}

/// `[barrier]`, each unset key at its strict default.
fn barrier_settings(raw: &raw::RawBarrier) -> BarrierSettings {
    let defaults = BarrierSettings::default();
    BarrierSettings {
        when_unavailable: raw.when_unavailable.unwrap_or(defaults.when_unavailable),
        unix_sockets: raw.unix_sockets.unwrap_or(defaults.unix_sockets),
        read_only: raw.read_only.as_ref().map_or(defaults.read_only, |list| {
            list.iter().map(|p| crate::paths::expand_home(p)).collect()
        }),
    }
}

/// Checks `allowed_tools` / `denied_tools` the way the engine will compile
/// them, so a file with an empty allowlist or a bad glob is refused as a
/// whole (on reload too) instead of failing later at engine start.
fn tool_lists(raw: &RawConfig, problems: &mut Vec<String>) {
    use crate::pipeline::allowlist::{FilterError, ToolFilter};
    let Err(e) = ToolFilter::check(raw.allowed_tools.clone(), raw.denied_tools.clone()) else {
        return;
    };
    let at = |list: &str, pattern: &str| {
        let (key, patterns) = match list {
            "allow" => ("allowed_tools", raw.allowed_tools.as_deref().unwrap_or(&[])),
            _ => ("denied_tools", raw.denied_tools.as_slice()),
        };
        match patterns.iter().position(|p| p.trim() == pattern) {
            Some(i) => format!("{key}[{i}]"),
            None => key.to_owned(),
        }
    };
    problems.push(match &e {
        FilterError::BadPattern { list, pattern, .. } => format!("{}: {e}", at(list, pattern)),
        _ => format!("allowed_tools: {e}"),
    });
}

fn builtin_config(raw: &RawConfig, problems: &mut Vec<String>) -> BuiltinConfig {
    let b = &raw.builtin;
    let shell_max = b.shell_max_timeout_ms.unwrap_or(60_000);
    if shell_max == 0 {
        problems.push("builtin.shell_max_timeout_ms: must be at least 1".into());
    }
    BuiltinConfig {
        roots: b
            .roots
            .iter()
            .map(|r| crate::paths::expand_home(r))
            .collect(),
        allow_local: b.allow_local.unwrap_or(false),
        allowed_hosts: b.allowed_hosts.clone(),
        shell_max_timeout: Duration::from_millis(shell_max),
        disabled: b.disabled.clone(),
    }
}

/// `base` with the values set in `raw`, checking each against its bounds.
fn merge_limits(
    base: &ToolSettings,
    raw: &RawLimits,
    at: &str,
    problems: &mut Vec<String>,
) -> ToolSettings {
    let mut s = base.clone();
    let mut ms = |v: Option<u64>, key: &str, min: u64, out: &mut Duration| {
        if let Some(v) = v {
            if v < min {
                problems.push(format!("{at}.{key}: must be at least {min}"));
            }
            *out = Duration::from_millis(v);
        }
    };
    ms(raw.timeout_ms, "timeout_ms", 1, &mut s.timeout);
    ms(raw.deadline_ms, "deadline_ms", 1, &mut s.deadline);
    if let Some(r) = &raw.retry {
        ms(
            r.initial_backoff_ms,
            "retry.initial_backoff_ms",
            0,
            &mut s.retry.initial_backoff,
        );
        ms(
            r.max_backoff_ms,
            "retry.max_backoff_ms",
            0,
            &mut s.retry.max_backoff,
        );
    }
    if let Some(b) = &raw.breaker {
        ms(
            b.window_s.map(|v| v.saturating_mul(1000)),
            "breaker.window_s",
            1000,
            &mut s.breaker.window,
        );
        ms(
            b.cooldown_s.map(|v| v.saturating_mul(1000)),
            "breaker.cooldown_s",
            0,
            &mut s.breaker.cooldown,
        );
    }
    if let Some(l) = &raw.loop_guard {
        ms(
            l.window_s.map(|v| v.saturating_mul(1000)),
            "loop_guard.window_s",
            1000,
            &mut s.loop_guard.window,
        );
    }
    merge_counts(&mut s, raw, at, problems);
    if s.deadline < s.timeout {
        problems.push(format!(
            "{at}.deadline_ms: {} is shorter than timeout_ms {}; no attempt could use its full timeout",
            s.deadline.as_millis(),
            s.timeout.as_millis()
        ));
    }
    s
}

fn merge_counts(s: &mut ToolSettings, raw: &RawLimits, at: &str, problems: &mut Vec<String>) {
    if let Some(v) = raw.max_output_bytes {
        if v < 256 {
            problems.push(format!("{at}.max_output_bytes: must be at least 256"));
        }
        s.truncate.max_bytes = v;
    }
    if let Some(r) = &raw.retry {
        s.retry.max_retries = r.max_retries.unwrap_or(s.retry.max_retries);
        if let Some(m) = r.multiplier {
            if !(m.is_finite() && m >= 1.0) {
                problems.push(format!(
                    "{at}.retry.multiplier: must be a number ≥ 1.0, got {m}"
                ));
            }
            s.retry.multiplier = m;
        }
    }
    if let Some(b) = &raw.breaker {
        s.breaker.count_is_error = b.count_is_error.unwrap_or(s.breaker.count_is_error);
        for (v, key, out) in [
            (
                b.failure_threshold,
                "failure_threshold",
                &mut s.breaker.failure_threshold,
            ),
            (
                b.half_open_probes,
                "half_open_probes",
                &mut s.breaker.half_open_probes,
            ),
        ] {
            if let Some(v) = v {
                if v == 0 {
                    problems.push(format!("{at}.breaker.{key}: must be at least 1"));
                }
                *out = v;
            }
        }
    }
    if let Some(l) = &raw.loop_guard {
        let g = &mut s.loop_guard;
        g.warn_at = l.warn_at.unwrap_or(g.warn_at);
        g.block_at = l.block_at.unwrap_or(g.block_at);
        g.halt_at = l.halt_at.unwrap_or(g.halt_at);
        // 0 turns a level off (the loop guard's contract); the levels
        // that are on must escalate in order.
        let on: Vec<u32> = [g.warn_at, g.block_at, g.halt_at]
            .into_iter()
            .filter(|&n| n != 0)
            .collect();
        if on.iter().any(|&n| n < 2) || on.windows(2).any(|w| w[0] > w[1]) {
            problems.push(format!(
                "{at}.loop_guard: need 2 ≤ warn_at ≤ block_at ≤ halt_at (0 turns a level off), \
                 got {} / {} / {}",
                g.warn_at, g.block_at, g.halt_at
            ));
        }
    }
}

#[cfg(test)]
#[path = "config_tests.rs"]
mod tests;
