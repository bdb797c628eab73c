//! Matching one argument of a call against a pattern: the shared core of
//! argument rules (policy) and remembered-decision scopes (approvals).
//!
//! Contract:
//! - An argument is found by JSON pointer (`/command`, `/paths/0`). A
//!   missing argument never matches, negated or not: a rule or scope only
//!   speaks about arguments that are there.
//! - Strings match as they are; numbers and booleans as their JSON text; an
//!   array matches when any element does (a negated condition then holds
//!   only when no element matches).
//! - Three pattern kinds: `glob` (whole-string glob, `*` crosses `/`),
//!   `path` (the value is normalised as a path first, `*` stays inside one
//!   directory, `**` crosses) and `regex` (unanchored; anchor with `^…$`).
//! - Path values are normalised lexically (`.` dropped, `..` popped, never
//!   above `/`), and relative values are joined to the condition's base
//!   directory. Without a base a relative path stays relative, so it never
//!   matches an absolute pattern (`~/proj/**`): that errs on the side of
//!   *not* widening a scope, while `**/.env` still catches it. Symlinks are
//!   the path guard's business (stage 7), not this module's.

use std::path::{Component, Path, PathBuf};

use globset::{GlobBuilder, GlobMatcher};
use regex::Regex;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// How a pattern reads a value.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema, ts_rs::TS,
)]
#[serde(rename_all = "snake_case")]
pub enum PatternKind {
    /// Whole-string glob; `*` matches `/` too (commands, URLs, names).
    Glob,
    /// Path glob on the normalised path; `*` stays in one directory.
    Path,
    /// Unanchored regular expression.
    Regex,
}

impl PatternKind {
    /// The name used in config and scope syntax.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Glob => "glob",
            Self::Path => "path",
            Self::Regex => "re",
        }
    }
}

/// Why a pattern did not compile.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("bad {kind} pattern `{pattern}`: {message}")]
pub struct PatternError {
    /// Which kind was asked for.
    pub kind: &'static str,
    /// The pattern as written.
    pub pattern: String,
    /// The compiler's message.
    pub message: String,
}

#[derive(Debug, Clone)]
enum Compiled {
    Glob(GlobMatcher),
    Regex(Regex),
}

/// A compiled pattern. Keeps its source text so it can be shown and stored.
#[derive(Debug, Clone)]
pub struct Pattern {
    kind: PatternKind,
    source: String,
    compiled: Compiled,
    base: Option<PathBuf>,
}

impl Pattern {
    /// Compiles `source` as `kind`. Path patterns get `~` expanded and are
    /// normalised like the values they will be compared with; relative
    /// values are joined to `base`.
    ///
    /// # Errors
    /// The glob or regex does not compile.
    pub fn new(
        kind: PatternKind,
        source: &str,
        base: Option<PathBuf>,
    ) -> Result<Self, PatternError> {
        let err = |message: String| PatternError {
            kind: kind.as_str(),
            pattern: source.to_owned(),
            message,
        };
        let compiled = match kind {
            PatternKind::Glob => Compiled::Glob(glob(source, false).map_err(err)?),
            PatternKind::Path => {
                let expanded = crate::paths::expand_home(source);
                let text = normalize(&expanded).to_string_lossy().into_owned();
                Compiled::Glob(glob(&text, true).map_err(err)?)
            }
            PatternKind::Regex => {
                Compiled::Regex(Regex::new(source).map_err(|e| err(e.to_string()))?)
            }
        };
        Ok(Self {
            kind,
            source: source.to_owned(),
            compiled,
            base,
        })
    }

    /// The kind.
    pub fn kind(&self) -> PatternKind {
        self.kind
    }

    /// The pattern as written.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// Whether one string value matches.
    pub fn matches_str(&self, value: &str) -> bool {
        match (&self.compiled, self.kind) {
            (Compiled::Regex(r), _) => r.is_match(value),
            (Compiled::Glob(g), PatternKind::Path) => g.is_match(self.resolve(value)),
            (Compiled::Glob(g), _) => g.is_match(value),
        }
    }

    fn resolve(&self, value: &str) -> PathBuf {
        match &self.base {
            Some(b) => normalize(&b.join(value)),
            None => normalize(Path::new(value)),
        }
    }
}

fn glob(source: &str, literal_separator: bool) -> Result<GlobMatcher, String> {
    GlobBuilder::new(source)
        .literal_separator(literal_separator)
        .backslash_escape(true)
        .build()
        .map(|g| g.compile_matcher())
        .map_err(|e| e.kind().to_string())
}

/// Lexical normalisation: drops `.`, pops `..` (never above the root).
pub fn normalize(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                // Popping at the root leaves the root: `/..` is `/`.
                let at_root = out.parent().is_none();
                if !at_root {
                    out.pop();
                } else if out.as_os_str().is_empty() {
                    out.push("..");
                }
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// A condition on one argument: pointer + pattern, optionally negated.
#[derive(Debug, Clone)]
pub struct ArgCondition {
    /// JSON pointer to the argument.
    pub pointer: String,
    /// What the value must match.
    pub pattern: Pattern,
    /// Holds when the (present) value does *not* match.
    pub negate: bool,
}

impl ArgCondition {
    /// Whether the condition holds for `args`. A missing argument never
    /// holds (see the module contract).
    pub fn holds(&self, args: &Value) -> bool {
        let Some(v) = args.pointer(&self.pointer) else {
            return false;
        };
        let hit = match v {
            Value::Array(items) => items.iter().any(|i| self.value_matches(i)),
            other => self.value_matches(other),
        };
        hit != self.negate
    }

    fn value_matches(&self, v: &Value) -> bool {
        match v {
            Value::String(s) => self.pattern.matches_str(s),
            Value::Null | Value::Object(_) | Value::Array(_) => false,
            scalar => self.pattern.matches_str(&scalar.to_string()),
        }
    }

    /// `"/path" matches path "~/proj/**"`, for reasons people read.
    pub fn describe(&self) -> String {
        format!(
            "`{}` {} {} `{}`",
            self.pointer,
            if self.negate {
                "does not match"
            } else {
                "matches"
            },
            self.pattern.kind().as_str(),
            self.pattern.source()
        )
    }
}

/// Accepts `/a/b` (a JSON pointer) or a bare top-level name `a`.
pub fn pointer_of(arg: &str) -> String {
    if arg.is_empty() || arg.starts_with('/') {
        arg.to_owned()
    } else {
        let mut pointer = String::with_capacity(arg.len() + 1);
        crate::schema::pointer::push_segment(&mut pointer, arg);
        pointer
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn cond(pointer: &str, kind: PatternKind, p: &str, base: Option<&str>) -> ArgCondition {
        ArgCondition {
            pointer: pointer.into(),
            pattern: Pattern::new(kind, p, base.map(PathBuf::from)).unwrap(),
            negate: false,
        }
    }

    #[test]
    fn path_patterns_normalise_and_stay_in_their_directory() {
        let c = cond("/path", PatternKind::Path, "/home/u/proj/**", None);
        assert!(c.holds(&json!({"path": "/home/u/proj/a/b.rs"})));
        assert!(c.holds(&json!({"path": "/home/u/proj/./a"})));
        assert!(!c.holds(&json!({"path": "/home/u/proj/../secret"})));
        assert!(!c.holds(&json!({"path": "/home/u/project2/x"})));
        assert!(!c.holds(&json!({"path": "a/b"})), "relative without base");
        let c = cond("/path", PatternKind::Path, "/r/*", Some("/r"));
        assert!(c.holds(&json!({"path": "x"})));
        assert!(
            !c.holds(&json!({"path": "x/y"})),
            "* stays in one directory"
        );
        assert!(!c.holds(&json!({"path": "../r2"})));
    }

    #[test]
    fn globs_regexes_arrays_and_missing_values() {
        let c = cond("/command", PatternKind::Glob, "git *", None);
        assert!(c.holds(&json!({"command": "git log -p src/x"})));
        assert!(!c.holds(&json!({"command": "rm -rf /"})));
        assert!(!c.holds(&json!({})));
        let mut n = cond("/command", PatternKind::Regex, r"\brm\b", None);
        n.negate = true;
        assert!(n.holds(&json!({"command": "ls"})));
        assert!(!n.holds(&json!({"command": "ls; rm x"})));
        assert!(!n.holds(&json!({})), "missing never holds, even negated");
        let a = cond("/paths", PatternKind::Glob, "*.pem", None);
        assert!(a.holds(&json!({"paths": ["a.txt", "k.pem"]})));
        let num = cond("/n", PatternKind::Glob, "4*", None);
        assert!(num.holds(&json!({"n": 42})));
    }

    #[test]
    fn normalize_never_climbs_above_root() {
        assert_eq!(normalize(Path::new("/../a/./b/..")), PathBuf::from("/a"));
        assert_eq!(pointer_of("command"), "/command");
        assert_eq!(pointer_of("/a/0"), "/a/0");
    }

    #[test]
    fn bad_patterns_are_reported() {
        let e = Pattern::new(PatternKind::Regex, "(", None).unwrap_err();
        assert!(e.to_string().starts_with("bad re pattern `(`"), "{e}");
        assert!(Pattern::new(PatternKind::Glob, "a[", None).is_err());
    }
}
