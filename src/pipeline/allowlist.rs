//! Stage 3: allowlist / denylist.
//!
//! Contract: a call of a tool hidden by the [`ToolFilter`] is refused with
//! [`CallError::NotAllowed`] before any other stage sees it, and the reason
//! names the rule that hid it. The same filter decides which tools are
//! *listed*, so an agent never sees a tool it cannot call.
//!
//! Semantics follow PraisonAI's `AllowedToolsFilter` (it exists to stop tool
//! shadowing across environments), with globs added:
//! - allowlist unset: every tool is allowed, and a warning is logged once per
//!   process, because "no list" is easy to get by accident;
//! - allowlist set but empty (`TOOLGATE_ALLOWED_TOOLS=""`, only commas, or
//!   `[]` in the config): a startup error, because a filter that hides every
//!   tool is never what anyone meant; `"*"` allows everything explicitly;
//! - deny patterns always win over allow patterns;
//! - patterns that match no registered tool are reported
//!   ([`ToolFilter::check_unmatched`]), and fail startup in strict mode (CI).
//!
//! The filter in force sits in a [`FilterHandle`], so a config reload or a
//! person's edit in the console replaces it without a restart: the next
//! call and the next `tools/list` see the new lists.

use std::sync::{Arc, Once};

use arc_swap::ArcSwap;
use globset::{Glob, GlobSet, GlobSetBuilder};

use super::{Call, Enter, Stage};
use crate::error::CallError;
use crate::events::StageName;

/// The environment variable holding the allowlist, comma-separated.
pub const ALLOWED_TOOLS_ENV: &str = "TOOLGATE_ALLOWED_TOOLS";

/// Why a filter could not be built, or failed its strict check.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FilterError {
    /// The allowlist is set but holds no pattern.
    #[error(
        "the allowlist ({origin}) is set but empty, so no tool could be called; \
         list the tools to allow, set it to \"*\" to allow every tool, or unset it"
    )]
    EmptyAllowlist {
        /// Where the empty list came from.
        origin: &'static str,
    },
    /// A pattern is not a valid glob.
    #[error("invalid {list} pattern `{pattern}`: {message}")]
    BadPattern {
        /// `allow` or `deny`.
        list: &'static str,
        /// The pattern as written.
        pattern: String,
        /// globset's description of the problem.
        message: String,
    },
    /// Strict mode: some patterns match no registered tool.
    #[error("patterns match no registered tool: {}", .patterns.join(", "))]
    Unmatched {
        /// The patterns, allow patterns first.
        patterns: Vec<String>,
    },
}

/// Where an allowlist came from; named in refusals so a person knows what to
/// edit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Origin {
    Env,
    Config,
}

impl Origin {
    fn label(self) -> &'static str {
        match self {
            Self::Env => ALLOWED_TOOLS_ENV,
            Self::Config => "config",
        }
    }
}

/// Compiled patterns, kept with their source text for messages.
#[derive(Debug, Clone)]
struct Patterns {
    raw: Vec<String>,
    set: GlobSet,
}

impl Patterns {
    fn compile(list: &'static str, raw: Vec<String>) -> Result<Self, FilterError> {
        let mut builder = GlobSetBuilder::new();
        for pattern in &raw {
            let glob = Glob::new(pattern).map_err(|e| FilterError::BadPattern {
                list,
                pattern: pattern.clone(),
                message: e.kind().to_string(),
            })?;
            builder.add(glob);
        }
        let set = builder.build().map_err(|e| FilterError::BadPattern {
            list,
            pattern: e.glob().unwrap_or_default().to_owned(),
            message: e.kind().to_string(),
        })?;
        Ok(Self { raw, set })
    }

    fn empty() -> Self {
        Self {
            raw: Vec::new(),
            set: GlobSet::empty(),
        }
    }

    /// The first pattern (in written order) matching `name`.
    fn first_match(&self, name: &str) -> Option<&str> {
        let first = self.set.matches(name).into_iter().min()?;
        self.raw.get(first).map(String::as_str)
    }
}

/// Which tool names are visible and callable. Built once at startup (or on
/// config reload) and shared; checking a name is one glob-set match per list.
#[derive(Debug, Clone)]
pub struct ToolFilter {
    allow: Option<(Origin, Patterns)>,
    deny: Patterns,
}

impl Default for ToolFilter {
    fn default() -> Self {
        Self::allow_all()
    }
}

impl ToolFilter {
    /// Everything allowed, nothing denied. For tests and embedders that
    /// filter elsewhere; logs no warning, unlike an unset allowlist.
    pub fn allow_all() -> Self {
        Self {
            allow: None,
            deny: Patterns::empty(),
        }
    }

    /// A filter from configured lists. `allow: None` means "not configured":
    /// everything not denied is allowed, with a one-time warning.
    ///
    /// # Errors
    /// [`FilterError::EmptyAllowlist`] when `allow` is `Some` but holds no
    /// non-blank pattern; [`FilterError::BadPattern`] for an invalid glob.
    pub fn new(allow: Option<Vec<String>>, deny: Vec<String>) -> Result<Self, FilterError> {
        Self::build(allow.map(|a| (Origin::Config, a)), deny)
    }

    /// Checks configured lists as [`ToolFilter::new`] would build them,
    /// without logging the "no allowlist" warning: config validation
    /// runs in commands that never build an engine.
    ///
    /// # Errors
    /// As [`ToolFilter::new`].
    pub fn check(allow: Option<Vec<String>>, deny: Vec<String>) -> Result<(), FilterError> {
        if let Some(raw) = allow {
            Self::build(Some((Origin::Config, raw)), Vec::new())?;
        }
        Patterns::compile("deny", clean(deny)).map(drop)
    }

    /// A filter from the environment and the config. `env` is the value of
    /// [`ALLOWED_TOOLS_ENV`] if set (comma-separated); it wins over
    /// `config_allow` so one run can be narrowed without editing the config.
    ///
    /// # Errors
    /// As [`ToolFilter::new`]; an env value of only commas or blanks counts
    /// as empty.
    pub fn from_sources(
        env: Option<&str>,
        config_allow: Option<Vec<String>>,
        deny: Vec<String>,
    ) -> Result<Self, FilterError> {
        let allow = match env {
            Some(value) => Some((Origin::Env, value.split(',').map(str::to_owned).collect())),
            None => config_allow.map(|a| (Origin::Config, a)),
        };
        Self::build(allow, deny)
    }

    fn build(allow: Option<(Origin, Vec<String>)>, deny: Vec<String>) -> Result<Self, FilterError> {
        let allow = match allow {
            None => {
                warn_unrestricted();
                None
            }
            Some((origin, raw)) => {
                let raw = clean(raw);
                if raw.is_empty() {
                    return Err(FilterError::EmptyAllowlist {
                        origin: origin.label(),
                    });
                }
                Some((origin, Patterns::compile("allow", raw)?))
            }
        };
        Ok(Self {
            allow,
            deny: Patterns::compile("deny", clean(deny))?,
        })
    }

    /// The allow patterns as written, if an allowlist is set.
    pub fn allow_patterns(&self) -> Option<&[String]> {
        self.allow.as_ref().map(|(_, p)| p.raw.as_slice())
    }

    /// The deny patterns as written.
    pub fn deny_patterns(&self) -> &[String] {
        &self.deny.raw
    }

    /// Whether an allowlist restricts tools at all.
    pub fn is_restricted(&self) -> bool {
        self.allow.is_some()
    }

    /// Whether the allowlist in force comes from [`ALLOWED_TOOLS_ENV`]
    /// (then the config file's `allowed_tools` is not what applies).
    pub fn allow_from_env(&self) -> bool {
        matches!(self.allow, Some((Origin::Env, _)))
    }

    /// Whether `other` has the same lists, from the same origin: a reload
    /// that changes nothing here must not tell every agent the tool list
    /// changed.
    pub fn same_lists(&self, other: &Self) -> bool {
        let allow = |f: &Self| f.allow.as_ref().map(|(o, p)| (*o, p.raw.clone()));
        allow(self) == allow(other) && self.deny.raw == other.deny.raw
    }

    /// Whether `name` may be listed and called; `Err` says which rule hid it.
    /// Deny patterns are checked first: they win over any allow pattern.
    pub fn permits(&self, name: &str) -> Result<(), String> {
        if let Some(pattern) = self.deny.first_match(name) {
            return Err(format!("matches deny pattern `{pattern}`"));
        }
        match &self.allow {
            Some((origin, allow)) if !allow.set.is_match(name) => {
                Err(format!("not in the allowlist ({})", origin.label()))
            }
            _ => Ok(()),
        }
    }

    /// Allow and deny patterns (allow first) that match none of
    /// `tool_names`: usually a typo or a tool that went away, and a pattern
    /// that silently matches nothing is how shadowing creeps back in.
    pub fn unmatched(&self, tool_names: &[&str]) -> Vec<String> {
        let lists = self.allow.iter().map(|(_, p)| p).chain([&self.deny]);
        lists
            .flat_map(|patterns| {
                let mut hit = vec![false; patterns.raw.len()];
                for name in tool_names {
                    for i in patterns.set.matches(name) {
                        hit[i] = true;
                    }
                }
                patterns
                    .raw
                    .iter()
                    .zip(hit)
                    .filter(|(_, hit)| !hit)
                    .map(|(p, _)| p.clone())
                    .collect::<Vec<_>>()
            })
            .collect()
    }

    /// [`ToolFilter::unmatched`] as a startup check: the unmatched patterns
    /// as warnings, or an error when `strict` (CI) and any pattern matches
    /// nothing. Patterns that start with one of `upstream_prefixes`
    /// (`github__`, one per configured upstream server) are left out: at
    /// startup those servers have not connected yet, so their tools cannot
    /// have been matched.
    ///
    /// # Errors
    /// [`FilterError::Unmatched`] in strict mode.
    pub fn check_unmatched(
        &self,
        tool_names: &[&str],
        upstream_prefixes: &[String],
        strict: bool,
    ) -> Result<Vec<String>, FilterError> {
        let mut patterns = self.unmatched(tool_names);
        patterns.retain(|p| !upstream_prefixes.iter().any(|prefix| p.starts_with(prefix)));
        if strict && !patterns.is_empty() {
            return Err(FilterError::Unmatched { patterns });
        }
        Ok(patterns)
    }
}

/// Trims patterns and drops blank ones (`"a, ,b"` is `["a", "b"]`).
fn clean(raw: Vec<String>) -> Vec<String> {
    raw.into_iter()
        .map(|p| p.trim().to_owned())
        .filter(|p| !p.is_empty())
        .collect()
}

static UNRESTRICTED_WARNING: Once = Once::new();

/// Logs the "no allowlist" warning once per process; returns whether this
/// call logged it. Once, because filters are rebuilt on every config reload.
fn warn_unrestricted() -> bool {
    let mut logged = false;
    UNRESTRICTED_WARNING.call_once(|| {
        tracing::warn!(
            "no allowlist configured ({ALLOWED_TOOLS_ENV} unset): every registered tool is \
             callable; set it (\"*\" for all) to make this explicit"
        );
        logged = true;
    });
    logged
}

/// The filter in force, replaceable at run time. Cloning shares it.
///
/// Reads are one `ArcSwap` load (no lock on the call path); a swap is seen
/// by every call that reaches the allowlist stage afterwards. Calls already
/// past the stage finish under the filter they were checked against.
#[derive(Debug, Clone)]
pub struct FilterHandle {
    current: Arc<ArcSwap<ToolFilter>>,
}

impl Default for FilterHandle {
    fn default() -> Self {
        Self::new(ToolFilter::allow_all())
    }
}

impl FilterHandle {
    /// A handle holding `filter`.
    pub fn new(filter: ToolFilter) -> Self {
        Self {
            current: Arc::new(ArcSwap::from_pointee(filter)),
        }
    }

    /// The filter in force.
    pub fn load(&self) -> Arc<ToolFilter> {
        self.current.load_full()
    }

    /// Puts `filter` in force. Returns whether its lists differ from the
    /// ones it replaced, so the caller knows whether to announce a changed
    /// tool list.
    pub fn swap(&self, filter: ToolFilter) -> bool {
        let new = Arc::new(filter);
        let old = self.current.swap(new.clone());
        !old.same_lists(&new)
    }
}

/// The allowlist stage.
pub struct Allowlist {
    filter: FilterHandle,
}

impl Allowlist {
    /// A stage enforcing the filter in force in `filter`.
    pub fn new(filter: FilterHandle) -> Self {
        Self { filter }
    }
}

impl Stage for Allowlist {
    fn name(&self) -> StageName {
        StageName::Allowlist
    }

    fn enter(&self, call: &mut Call) -> Enter {
        match self
            .filter
            .current
            .load()
            .permits(call.tool.def.name.as_str())
        {
            Ok(()) => Enter::Pass,
            Err(reason) => Enter::Refuse(CallError::NotAllowed {
                tool: call.tool_name().to_owned(),
                reason,
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::pipeline::testing::{Script, call_of, def, run_stage};

    fn strings(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| (*s).to_owned()).collect()
    }

    fn filter(allow: Option<&[&str]>, deny: &[&str]) -> ToolFilter {
        ToolFilter::new(allow.map(strings), strings(deny)).unwrap()
    }

    #[test]
    fn unset_allows_everything_and_warns_once() {
        let f = ToolFilter::from_sources(None, None, vec![]).unwrap();
        assert!(!f.is_restricted());
        assert_eq!(f.permits("anything"), Ok(()));
        // Whoever logged first, a second call never logs again.
        assert!(!warn_unrestricted());
    }

    #[test]
    fn empty_allowlists_are_startup_errors() {
        for env in ["", " ", ",", " , ,"] {
            let e = ToolFilter::from_sources(Some(env), None, vec![]).unwrap_err();
            assert_eq!(
                e,
                FilterError::EmptyAllowlist {
                    origin: ALLOWED_TOOLS_ENV
                }
            );
            assert!(e.to_string().contains("\"*\""), "{e}");
        }
        let e = ToolFilter::new(Some(vec![]), vec![]).unwrap_err();
        assert_eq!(e, FilterError::EmptyAllowlist { origin: "config" });
    }

    #[test]
    fn check_refuses_what_new_refuses() {
        assert_eq!(ToolFilter::check(None, vec![]), Ok(()));
        assert_eq!(
            ToolFilter::check(Some(strings(&["fs_*"])), strings(&["x"])),
            Ok(())
        );
        assert_eq!(
            ToolFilter::check(Some(vec![" ".into()]), vec![]),
            Err(FilterError::EmptyAllowlist { origin: "config" })
        );
        assert!(matches!(
            ToolFilter::check(None, strings(&["{a"])),
            Err(FilterError::BadPattern { list: "deny", .. })
        ));
    }

    #[test]
    fn env_wins_over_config() {
        let f = ToolFilter::from_sources(Some("fs_*, http_get"), Some(strings(&["shell"])), vec![])
            .unwrap();
        assert_eq!(f.permits("fs_read"), Ok(()));
        assert_eq!(f.permits("http_get"), Ok(()));
        assert_eq!(
            f.permits("shell"),
            Err("not in the allowlist (TOOLGATE_ALLOWED_TOOLS)".to_owned())
        );
        let f = ToolFilter::from_sources(None, Some(strings(&["shell"])), vec![]).unwrap();
        assert_eq!(f.permits("shell"), Ok(()));
        assert_eq!(
            f.permits("fs_read"),
            Err("not in the allowlist (config)".to_owned())
        );
    }

    #[test]
    fn deny_wins_over_allow_and_names_the_pattern() {
        let f = filter(Some(&["*"]), &["net_*", "shell_*"]);
        assert_eq!(f.permits("fs_read"), Ok(()));
        assert_eq!(
            f.permits("shell_exec"),
            Err("matches deny pattern `shell_*`".to_owned())
        );
        // Deny alone, with no allowlist.
        let f = filter(None, &["shell_*"]);
        assert_eq!(f.permits("fs_read"), Ok(()));
        assert!(f.permits("shell_x").is_err());
    }

    #[test]
    fn bad_glob_names_the_pattern() {
        let e = ToolFilter::new(Some(strings(&["ok", "fs_[a"])), vec![]).unwrap_err();
        assert!(
            matches!(&e, FilterError::BadPattern { list: "allow", pattern, .. } if pattern == "fs_[a"),
            "{e:?}"
        );
        assert!(e.to_string().contains("`fs_[a`"), "{e}");
        let e = ToolFilter::new(None, strings(&["{a"])).unwrap_err();
        assert!(matches!(e, FilterError::BadPattern { list: "deny", .. }));
    }

    #[test]
    fn unmatched_patterns_warn_or_fail_strictly() {
        let f = filter(Some(&["fs_*", "gti_*", "shell"]), &["net_*", "shell"]);
        let tools = ["fs_read", "fs_write", "shell"];
        assert_eq!(f.unmatched(&tools), strings(&["gti_*", "net_*"]));
        assert_eq!(
            f.check_unmatched(&tools, &[], false),
            Ok(strings(&["gti_*", "net_*"]))
        );
        let e = f.check_unmatched(&tools, &[], true).unwrap_err();
        assert_eq!(
            e.to_string(),
            "patterns match no registered tool: gti_*, net_*"
        );
        let all = filter(Some(&["*"]), &[]);
        assert_eq!(all.check_unmatched(&tools, &[], true), Ok(vec![]));
    }

    #[test]
    fn patterns_for_servers_not_yet_connected_are_not_unmatched_at_startup() {
        let f = filter(
            Some(&["fs_*", "github__*", "github__push_files"]),
            &["gti_*"],
        );
        let tools = ["fs_read"];
        let later = strings(&["github__"]);
        assert_eq!(
            f.check_unmatched(&tools, &later, true)
                .unwrap_err()
                .to_string(),
            "patterns match no registered tool: gti_*"
        );
        let f = filter(Some(&["fs_*", "github__*"]), &[]);
        assert_eq!(f.check_unmatched(&tools, &later, true), Ok(vec![]));
    }

    #[tokio::test]
    async fn stage_refuses_hidden_tools_before_the_inner_stage() {
        let stage = Allowlist::new(FilterHandle::new(filter(Some(&["fs_*"]), &["fs_delete"])));
        let script = Script::new(vec![]);
        let mut call = call_of(def("fs_delete", json!({"type": "object"})), json!({}));
        let err = run_stage(&stage, &mut call, &script).await.unwrap_err();
        assert!(
            matches!(&err, CallError::NotAllowed { tool, reason }
                if tool == "fs_delete" && reason == "matches deny pattern `fs_delete`"),
            "{err:?}"
        );
        let mut call = call_of(def("shell", json!({"type": "object"})), json!({}));
        let err = run_stage(&stage, &mut call, &script).await.unwrap_err();
        assert_eq!(
            err.to_string(),
            "tool `shell` is not allowed: not in the allowlist (config)"
        );
        assert_eq!(script.calls(), 0);

        let mut call = call_of(def("fs_read", json!({"type": "object"})), json!({"p": 1}));
        let ok = run_stage(&stage, &mut call, &script).await.unwrap();
        assert_eq!(ok.joined_text(), "default");
        assert_eq!(script.seen(), vec![json!({"p": 1})]);
    }
}
