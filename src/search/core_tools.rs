//! Which tools are never deferred, and why: toolgate's built-ins, the
//! tools matching a `[search] core` glob, and the tools a person pinned as
//! core from the console or the CLI.
//!
//! A pin is a person's answer to "this agent keeps reaching for that tool
//! through `tool_search`": the tool is listed directly to every client
//! that may see it, exactly as if the config named it, without editing
//! the config. Pins are exact registry names, not globs, and may name a
//! tool that is not registered now (its server may be down): the pin
//! holds for when it comes back.

use std::collections::BTreeSet;

use serde::Serialize;

use super::disclosure::DisclosureConfig;
use crate::tool::{Source, ToolDef, ToolName};

/// Why a tool is never deferred. When more than one reason holds, the
/// first in this order: the one a person cannot undo from the console
/// comes first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ts_rs::TS)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum CoreReason {
    /// One of toolgate's built-in tools.
    Builtin,
    /// It matches a glob of the config's `[search] core`.
    Config {
        /// The first glob it matches.
        glob: String,
    },
    /// A person pinned it as core.
    Pinned,
}

/// A core tool as a person reads it: why, whether a person pinned it
/// (also when another reason holds, so the pin can still be taken back),
/// and the rule in words.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ts_rs::TS)]
pub struct CoreView {
    /// The first reason that holds.
    pub reason: CoreReason,
    /// Whether a person pinned it as core.
    pub pinned: bool,
    /// Why it is never deferred, in a sentence.
    pub words: String,
}

/// The most tools a person may pin as core: far more than any agent's
/// window lists directly, and it bounds the file they are kept in.
pub const MAX_PINS: usize = 1_000;

/// Why a pin was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CorePinError {
    /// [`MAX_PINS`] tools are pinned already.
    #[error("{MAX_PINS} tools are pinned as core already, the most there may be; unpin one first")]
    TooMany,
}

/// The tools a person pinned as core, by exact registry name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CorePins(BTreeSet<ToolName>);

impl CorePins {
    /// From names read back from where they were kept.
    pub fn from_names(names: impl IntoIterator<Item = ToolName>) -> Self {
        Self(names.into_iter().collect())
    }

    /// Whether `name` is pinned.
    pub fn contains(&self, name: &str) -> bool {
        self.0.contains(name)
    }

    /// The pinned names, sorted.
    pub fn names(&self) -> impl Iterator<Item = &ToolName> {
        self.0.iter()
    }

    /// How many are pinned.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether none is.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// These pins with `name` pinned or not; `None` when that changes
    /// nothing.
    ///
    /// # Errors
    /// Pinning one more than [`MAX_PINS`].
    pub fn with(&self, name: &ToolName, pinned: bool) -> Result<Option<Self>, CorePinError> {
        if self.0.contains(name) == pinned {
            return Ok(None);
        }
        let mut next = self.0.clone();
        if pinned {
            if next.len() >= MAX_PINS {
                return Err(CorePinError::TooMany);
            }
            next.insert(name.clone());
        } else {
            next.remove(name.as_str());
        }
        Ok(Some(Self(next)))
    }
}

/// Why `tool` is never deferred under `config` and `pins`, or `None`: it
/// may be deferred.
pub fn reason(config: &DisclosureConfig, pins: &CorePins, tool: &ToolDef) -> Option<CoreReason> {
    if matches!(tool.source, Source::Builtin) {
        return Some(CoreReason::Builtin);
    }
    if let Some(glob) = config.core_glob(tool.name.as_str()) {
        return Some(CoreReason::Config {
            glob: glob.to_owned(),
        });
    }
    pins.contains(tool.name.as_str())
        .then_some(CoreReason::Pinned)
}

/// `tool`'s core status as a person reads it, or `None` when it may be
/// deferred.
pub fn view(config: &DisclosureConfig, pins: &CorePins, tool: &ToolDef) -> Option<CoreView> {
    let reason = reason(config, pins, tool)?;
    let pinned = pins.contains(tool.name.as_str());
    let words = words(&reason, pinned);
    Some(CoreView {
        reason,
        pinned,
        words,
    })
}

/// "Built-in tools are never deferred: …"; a pin is named when another
/// reason comes first, with what it would still do.
fn words(reason: &CoreReason, pinned: bool) -> String {
    const LISTED: &str = "every agent that may see it has it in its tools list, \
        even one whose other tools are behind tool_search";
    match (reason, pinned) {
        (CoreReason::Builtin, false) => format!("Built-in tools are never deferred: {LISTED}."),
        (CoreReason::Builtin, true) => format!(
            "Built-in tools are never deferred: {LISTED}. It is pinned as core too, which changes nothing for a built-in."
        ),
        (CoreReason::Config { glob }, false) => {
            format!("It matches `{glob}` in the config's `[search] core`: {LISTED}.")
        }
        (CoreReason::Config { glob }, true) => format!(
            "It matches `{glob}` in the config's `[search] core`: {LISTED}. It is pinned as core too, which keeps it core if the config stops naming it."
        ),
        (CoreReason::Pinned, _) => format!("Pinned as core by a person: {LISTED}."),
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::sync::Arc;

    use super::*;
    use crate::search::DeferMode;
    use crate::tool::JsonObject;

    fn tool(name: &str, source: Source) -> ToolDef {
        ToolDef::new(ToolName::new(name).unwrap(), "d", JsonObject::new()).with_source(source)
    }

    fn mcp(name: &str) -> ToolDef {
        tool(
            name,
            Source::Mcp(Arc::from(name.split("__").next().unwrap())),
        )
    }

    fn config(core: &[&str]) -> DisclosureConfig {
        let core = core.iter().map(|s| (*s).to_owned()).collect();
        DisclosureConfig::new(DeferMode::On, 10, 128_000, BTreeMap::new(), core).unwrap()
    }

    fn pins(names: &[&str]) -> CorePins {
        CorePins::from_names(names.iter().map(|n| ToolName::new(n).unwrap()))
    }

    #[test]
    fn the_first_reason_that_holds_is_given_and_a_pin_is_always_shown() {
        let c = config(&["github__get_*"]);
        let p = pins(&["github__get_me", "git__git_status", "fs_read"]);
        let r = |t: &ToolDef| reason(&c, &p, t);
        assert_eq!(
            r(&tool("fs_read", Source::Builtin)),
            Some(CoreReason::Builtin)
        );
        assert_eq!(
            r(&mcp("github__get_me")),
            Some(CoreReason::Config {
                glob: "github__get_*".into()
            })
        );
        assert_eq!(r(&mcp("git__git_status")), Some(CoreReason::Pinned));
        assert_eq!(r(&mcp("git__git_log")), None);

        let pinned_too = view(&c, &p, &mcp("github__get_me")).unwrap();
        assert!(pinned_too.pinned);
        assert!(
            pinned_too
                .words
                .ends_with("keeps it core if the config stops naming it."),
            "{}",
            pinned_too.words
        );
        let only_pinned = view(&c, &p, &mcp("git__git_status")).unwrap();
        assert_eq!(
            only_pinned.words,
            "Pinned as core by a person: every agent that may see it has it in its \
             tools list, even one whose other tools are behind tool_search."
        );
        let by_glob = view(&c, &CorePins::default(), &mcp("github__get_me")).unwrap();
        assert!(!by_glob.pinned);
        assert!(
            by_glob
                .words
                .starts_with("It matches `github__get_*` in the config's `[search] core`: "),
            "{}",
            by_glob.words
        );
        assert!(view(&c, &p, &mcp("git__git_log")).is_none());
    }

    #[test]
    fn pinning_twice_changes_nothing_and_the_count_is_bounded() {
        let name = ToolName::new("git__git_status").unwrap();
        let none = CorePins::default();
        let one = none.with(&name, true).unwrap().expect("a change");
        assert!(one.contains("git__git_status"));
        assert_eq!(one.with(&name, true), Ok(None), "pinned already");
        assert_eq!(none.with(&name, false), Ok(None), "not pinned");
        assert_eq!(one.with(&name, false).unwrap(), Some(CorePins::default()));

        let full = CorePins::from_names(
            (0..MAX_PINS).map(|i| ToolName::new(&format!("s__t{i}")).unwrap()),
        );
        assert_eq!(full.with(&name, true), Err(CorePinError::TooMany));
        let first = ToolName::new("s__t0").unwrap();
        assert!(
            full.with(&first, false).unwrap().is_some(),
            "unpinning is always allowed"
        );
    }

    #[test]
    fn a_pinned_tool_is_listed_to_a_deferring_client_like_a_config_core_tool() {
        use crate::search::Plan;
        let visible = || {
            vec![
                tool("fs_read", Source::Builtin),
                mcp("git__git_status"),
                mcp("git__git_log"),
                mcp("github__get_me"),
            ]
        };
        let c = config(&["github__get_*"]);
        let names = |tools: Vec<ToolDef>| -> Vec<String> {
            tools.iter().map(|t| t.name.to_string()).collect()
        };
        let before = Plan::make(&c, &CorePins::default(), Some("a"), None, visible());
        assert!(before.defers("git__git_status"));

        let p = pins(&["git__git_status", "absent__tool"]);
        let plan = Plan::make(&c, &p, Some("a"), None, visible());
        assert!(plan.deferring);
        assert!(!plan.defers("git__git_status"));
        assert!(plan.defers("git__git_log"));
        assert_eq!(
            names(plan.listed()),
            [
                "fs_read",
                "git__git_status",
                "github__get_me",
                "tool_search",
                "tool_describe",
                "tool_call"
            ]
        );
        assert!(
            plan.words().ends_with(
                "; 3 core tools (1 pinned by a person) are listed with the bridge tools."
            ),
            "{}",
            plan.words()
        );
    }
}
