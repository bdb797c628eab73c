//! Which tools a session's `tools/list` carries: all of them, or the core
//! tools and the bridge tools, with the rest found through `tool_search`.
//!
//! PraisonAI's invariants, kept here:
//! 1. core tools are never deferred (built-ins, the `core` globs and the
//!    tools a person pinned as core, see [`super::core_tools`]);
//! 2. no tool is ever dropped: each visible tool is either listed or in
//!    the deferred set the bridge searches, describes and calls;
//! 3. the deferred set is the session's own visible tools, so a hidden
//!    tool is never found, described or called through the bridge;
//! 4. `auto` defers once the deferrable tools' schemas would take
//!    `threshold_pct` of the client's context window.
//!
//! What it decides is recomputed for every `tools/list` from the registry
//! and the filter as they are, so it follows every change that already
//! sends `list_changed` (a server connecting, a new allowlist, a person
//! switching deferral for a client).

use std::collections::BTreeMap;

use globset::{Glob, GlobSet, GlobSetBuilder};
use serde::{Deserialize, Serialize};

use super::core_tools::CorePins;
use crate::tool::ToolDef;

/// Whether a client's deferrable tools are folded behind the bridge.
#[derive(
    Debug,
    Clone,
    Copy,
    Default,
    PartialEq,
    Eq,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
    ts_rs::TS,
)]
#[serde(rename_all = "snake_case")]
pub enum DeferMode {
    /// Defer once the deferrable schemas reach the threshold.
    #[default]
    Auto,
    /// Always defer the deferrable tools.
    On,
    /// Never defer: list every tool.
    Off,
}

/// `[search]` settings, validated.
#[derive(Debug, Clone)]
pub struct DisclosureConfig {
    /// The mode for clients without their own.
    pub mode: DeferMode,
    /// `auto` defers at this share of the context window, in percent.
    pub threshold_pct: u32,
    /// The context window, in tokens, of a client not named below.
    pub context_window: u32,
    /// Per client, by the name it gives in `initialize`.
    pub clients: BTreeMap<String, ClientSettings>,
    /// Tool-name globs that are never deferred, beside the built-ins.
    pub core: Vec<String>,
    core_set: GlobSet,
}

/// One client's own settings; unset keys follow `[search]`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
pub struct ClientSettings {
    /// Its mode.
    pub mode: Option<DeferMode>,
    /// Its context window, in tokens.
    pub context_window: Option<u32>,
}

/// The default context window: a common size among today's models for a
/// client that does not say and is not known below.
pub const DEFAULT_WINDOW: u32 = 128_000;

/// Context windows of clients whose `initialize` name is known. A person's
/// `[search.clients.NAME]` wins.
const KNOWN_WINDOWS: &[(&str, u32)] = &[
    ("claude-ai", 200_000),
    ("claude-code", 200_000),
    ("gemini-cli-mcp-client", 1_000_000),
];

impl Default for DisclosureConfig {
    fn default() -> Self {
        Self {
            mode: DeferMode::Auto,
            threshold_pct: 10,
            context_window: DEFAULT_WINDOW,
            clients: BTreeMap::new(),
            core: Vec::new(),
            core_set: GlobSet::empty(),
        }
    }
}

/// Why `[search]` is not valid.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DisclosureError {
    /// A `core` glob does not parse.
    #[error("search.core: `{pattern}` is not a valid glob: {message}")]
    BadCore {
        /// The glob.
        pattern: String,
        /// Why.
        message: String,
    },
    /// The threshold is not a share of the window.
    #[error("search.threshold_pct: {0} is not between 1 and 100")]
    Threshold(u32),
    /// A window of no tokens.
    #[error("{0}: a context window must be at least 1,000 tokens")]
    Window(String),
}

impl DisclosureConfig {
    /// A validated config.
    ///
    /// # Errors
    /// A bad glob, a threshold outside 1–100 or a window under 1,000.
    pub fn new(
        mode: DeferMode,
        threshold_pct: u32,
        context_window: u32,
        clients: BTreeMap<String, ClientSettings>,
        core: Vec<String>,
    ) -> Result<Self, DisclosureError> {
        if !(1..=100).contains(&threshold_pct) {
            return Err(DisclosureError::Threshold(threshold_pct));
        }
        let small = |w: u32| w < 1_000;
        if small(context_window) {
            return Err(DisclosureError::Window("search.context_window".into()));
        }
        if let Some((name, _)) = clients
            .iter()
            .find(|(_, c)| c.context_window.is_some_and(small))
        {
            return Err(DisclosureError::Window(format!(
                "search.clients.{name}.context_window"
            )));
        }
        let mut set = GlobSetBuilder::new();
        for pattern in &core {
            let glob = Glob::new(pattern).map_err(|e| DisclosureError::BadCore {
                pattern: pattern.clone(),
                message: e.kind().to_string(),
            })?;
            set.add(glob);
        }
        let core_set = set.build().map_err(|e| DisclosureError::BadCore {
            pattern: core.join(", "),
            message: e.to_string(),
        })?;
        Ok(Self {
            mode,
            threshold_pct,
            context_window,
            clients,
            core,
            core_set,
        })
    }

    /// The first `core` glob `name` matches, if any.
    pub fn core_glob(&self, name: &str) -> Option<&str> {
        let first = self.core_set.matches(name).into_iter().min()?;
        self.core.get(first).map(String::as_str)
    }

    /// The mode and window for a client (by its `initialize` name), with a
    /// person's switch from the console (`chosen`) over the config.
    pub fn for_client(&self, client: Option<&str>, chosen: Option<DeferMode>) -> (DeferMode, u32) {
        let own = client.and_then(|c| self.clients.get(c));
        let known =
            client.and_then(|c| KNOWN_WINDOWS.iter().find(|(n, _)| *n == c).map(|(_, w)| *w));
        let mode = chosen
            .or_else(|| own.and_then(|o| o.mode))
            .unwrap_or(self.mode);
        let window = own
            .and_then(|o| o.context_window)
            .or(known)
            .unwrap_or(self.context_window);
        (mode, window)
    }
}

/// What one agent client sees: its `tools/list` as sent, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ts_rs::TS)]
pub struct ClientView {
    /// The client's `initialize` name (`claude-code`, `cursor-vscode`).
    pub client: String,
    /// Whether it is connected now.
    pub connected: bool,
    /// The mode in force for it.
    pub mode: DeferMode,
    /// The mode a person chose for it in the console, over the config.
    pub chosen: Option<DeferMode>,
    /// Its context window, in tokens.
    pub window: u32,
    /// Tokens at which `auto` defers.
    pub threshold: u32,
    /// Whether its deferrable tools are behind `tool_search`.
    pub deferring: bool,
    /// The tools its `tools/list` carries, as sent.
    pub listed: Vec<String>,
    /// Estimated tokens of what it is listed.
    pub listed_tokens: u32,
    /// The tools it reaches only through `tool_search`.
    pub deferred: Vec<String>,
    /// Estimated tokens those would take if listed.
    pub deferred_tokens: u32,
    /// The decision in words.
    pub words: String,
}

/// What one client is sent, and why.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The mode in force for the client.
    pub mode: DeferMode,
    /// Its context window, in tokens.
    pub window: u32,
    /// Tokens at which `auto` defers.
    pub threshold: u32,
    /// Visible tools never deferred.
    pub core: Vec<ToolDef>,
    /// How many of them are core only because a person pinned them.
    pub pinned: usize,
    /// Visible tools that may be deferred.
    pub deferrable: Vec<ToolDef>,
    /// Estimated tokens of the deferrable tools' schemas.
    pub deferrable_tokens: u32,
    /// Whether the deferrable tools are folded behind the bridge.
    pub deferring: bool,
}

impl Plan {
    /// Splits `visible` (the tools the filter lets the client see) into
    /// core (by `config` and a person's `pins`) and deferrable, and decides.
    pub fn make(
        config: &DisclosureConfig,
        pins: &CorePins,
        client: Option<&str>,
        chosen: Option<DeferMode>,
        visible: Vec<ToolDef>,
    ) -> Self {
        let (mode, window) = config.for_client(client, chosen);
        let mut pinned = 0;
        let (core, deferrable): (Vec<_>, Vec<_>) = visible.into_iter().partition(|t| {
            let reason = super::core_tools::reason(config, pins, t);
            pinned += usize::from(reason == Some(super::core_tools::CoreReason::Pinned));
            reason.is_some()
        });
        let deferrable_tokens = deferrable.iter().map(super::tokens::estimate).sum();
        let threshold = threshold(window, config.threshold_pct);
        let deferring = !deferrable.is_empty()
            && match mode {
                DeferMode::On => true,
                DeferMode::Off => false,
                DeferMode::Auto => deferrable_tokens >= threshold,
            };
        Self {
            mode,
            window,
            threshold,
            core,
            pinned,
            deferrable,
            deferrable_tokens,
            deferring,
        }
    }

    /// The tools `tools/list` sends: every visible tool, or the core tools
    /// and the bridge tools.
    pub fn listed(&self) -> Vec<ToolDef> {
        if !self.deferring {
            let mut all: Vec<ToolDef> = self.core.iter().chain(&self.deferrable).cloned().collect();
            all.sort_by(|a, b| a.name.cmp(&b.name));
            return all;
        }
        let mut out = self.core.clone();
        out.extend(super::bridge::definitions());
        out
    }

    /// Whether `name` is one of the deferred tools.
    pub fn defers(&self, name: &str) -> bool {
        self.deferring && self.deferrable.iter().any(|t| t.name.as_str() == name)
    }

    /// The decision in words, for people: "Deferring 112 tools: their
    /// schemas take about 41,000 tokens, 20% of the 200,000-token window,
    /// at or over the 10% threshold; 5 core tools are listed with the
    /// bridge tools." Counts are of the client's visible tools.
    pub fn words(&self) -> String {
        let (n_def, n_core) = (self.deferrable.len(), self.core.len());
        let total = n_def + n_core;
        let size = format!(
            "about {} tokens, {} of the {}-token window",
            thousands(self.deferrable_tokens),
            share(self.deferrable_tokens, self.window),
            thousands(self.window)
        );
        let limit = share(self.threshold, self.window);
        let pinned = match self.pinned {
            0 => String::new(),
            p if p == n_core => ", pinned by a person,".to_owned(),
            p => format!(" ({p} pinned by a person)"),
        };
        let core = format!(
            "{}{pinned} {} listed with the bridge tools",
            count(n_core, "core tool", "core tools"),
            if n_core == 1 { "is" } else { "are" }
        );
        match (self.mode, self.deferring) {
            (_, false) if n_def == 0 => format!(
                "Nothing to defer: {} {} core.",
                count_all(total),
                if total == 1 { "is" } else { "are" }
            ),
            (DeferMode::Off, _) => format!(
                "Deferral is off: {} listed ({n_def} could be deferred: {size}).",
                count_all(total)
            ),
            (DeferMode::On, _) => format!(
                "Deferral is on: {} behind tool_search ({size}); {core}.",
                count(n_def, "tool is", "tools are")
            ),
            (DeferMode::Auto, true) => format!(
                "Deferring {}: their schemas take {size}, at or over the {limit} threshold; {core}.",
                count(n_def, "tool", "tools")
            ),
            (DeferMode::Auto, false) => format!(
                "Listing {}: the {n_def} that could be deferred take {size}, under the {limit} threshold.",
                count_all(total)
            ),
        }
    }
}

/// `3 tools`, `1 tool`.
fn count(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// `all 3 tools`, `the 1 tool`.
fn count_all(n: usize) -> String {
    if n == 1 {
        "the 1 tool".to_owned()
    } else {
        format!("all {n} tools")
    }
}

/// `20%`, or `under 1%` for a share that rounds to nothing.
fn share(part: u32, whole: u32) -> String {
    match pct(part, whole) {
        0 if part > 0 => "under 1%".to_owned(),
        p => format!("{p}%"),
    }
}

impl Plan {
    /// The plan as a person reads it, for `client`.
    pub fn view(&self, client: &str, connected: bool, chosen: Option<DeferMode>) -> ClientView {
        let listed = self.listed();
        let deferred: Vec<String> = if self.deferring {
            self.deferrable.iter().map(|t| t.name.to_string()).collect()
        } else {
            Vec::new()
        };
        ClientView {
            client: client.to_owned(),
            connected,
            mode: self.mode,
            chosen,
            window: self.window,
            threshold: self.threshold,
            deferring: self.deferring,
            listed_tokens: listed.iter().map(super::tokens::estimate).sum(),
            listed: listed.iter().map(|t| t.name.to_string()).collect(),
            deferred_tokens: if self.deferring {
                self.deferrable_tokens
            } else {
                0
            },
            deferred,
            words: self.words(),
        }
    }
}

fn threshold(window: u32, pct: u32) -> u32 {
    u32::try_from(u64::from(window) * u64::from(pct) / 100).unwrap_or(u32::MAX)
}

fn pct(part: u32, whole: u32) -> u64 {
    (u64::from(part) * 100)
        .checked_div(u64::from(whole))
        .unwrap_or(0)
}

fn thousands(n: u32) -> String {
    crate::pipeline::truncate::thousands(n as usize)
}
