//! Scopes of remembered decisions ("always allow" / "always deny"), and the
//! SCOPE syntax people type after `--always`.
//!
//! A scope is a conjunction: a tool-name glob, zero or more argument
//! conditions, optionally the exact arguments (by canonical hash) and
//! optionally one caller. A call is in the scope only when every part
//! matches, so adding a clause can only narrow it.
//!
//! SCOPE syntax (comma-separated clauses; commas inside `{}`/`[]` belong to
//! the pattern). Clauses that say "this" take their value from the request
//! being decided:
//!
//! | clause            | meaning                                                     |
//! |-------------------|-------------------------------------------------------------|
//! | `tool`            | this request's tool (the default when no `tool=` is given)  |
//! | `tool=GLOB`       | tools whose name matches GLOB (`tool=*` = every tool)        |
//! | `args`            | exactly this request's arguments (canonical hash)           |
//! | `caller`          | this request's caller program (exe, uid; client name, agent id narrow it) |
//! | `PTR=GLOB`        | argument at JSON pointer PTR matches a whole-string glob    |
//! | `PTR:path=GLOB`   | argument is a path under GLOB (`~` expanded, `*` = one dir) |
//! | `PTR:re=REGEX`    | argument matches a regular expression                       |
//!
//! Examples: `tool`; `/path:path=~/proj/**`; `caller`;
//! `tool=fs_*,caller`; `/command=git status*`; `args`.
//! Creating a remembered rule from a request fails if the scope does not
//! cover that request: a scope that misses the very call being approved is
//! a typo, not an intent.

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::call_key::CallKey;
use crate::canonical::call_hash;
use crate::context::Caller;
use crate::policy::tool_glob;
use crate::policy::{ArgCondition, Pattern, PatternError, PatternKind, pointer_of};
use crate::wire::{CallerView, write_caller};

/// A caller as stored with a request. It is sent as a [`CallerView`],
/// which adds `text`, the engine's words for it, so no host words a
/// caller itself.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
#[serde(into = "CallerView")]
#[ts(as = "CallerView")]
pub struct CallerInfo {
    /// Entry point: `socket`, `cli`, ...
    pub via: String,
    /// The client's pid (the bridge's parent for bridged clients); used
    /// only to tell whether the caller is still there.
    pub pid: Option<i32>,
    /// Peer uid.
    pub uid: Option<u32>,
    /// The client's executable, as the kernel reports it.
    pub exe: Option<String>,
    /// The pid of toolgate's stdio bridge, when it relayed the client.
    #[serde(default)]
    pub bridge_pid: Option<i32>,
    /// MCP client name, as the client reports it.
    pub client_name: Option<String>,
    /// Agent id the connection registered.
    pub agent_id: Option<String>,
    /// The call came through the `tool_call` bridge tool.
    #[serde(default)]
    pub through_tool_call: bool,
}

impl From<CallerInfo> for CallerView {
    fn from(c: CallerInfo) -> Self {
        let text = c.short();
        Self {
            via: c.via,
            pid: c.pid,
            uid: c.uid,
            exe: c.exe,
            bridge_pid: c.bridge_pid,
            client_name: c.client_name,
            agent_id: c.agent_id,
            through_tool_call: c.through_tool_call,
            text,
        }
    }
}

impl From<&Caller> for CallerInfo {
    fn from(c: &Caller) -> Self {
        Self {
            via: c.via.to_owned(),
            pid: c.pid,
            uid: c.uid,
            exe: c.exe.clone(),
            bridge_pid: c.bridge_pid,
            client_name: c.client_name.clone(),
            agent_id: c.agent_id.clone(),
            through_tool_call: c.through_tool_call,
        }
    }
}

impl CallerInfo {
    /// The words of a caller as an audit row stores it (JSON); text that
    /// does not read as one is shown as stored.
    pub fn stored_words(json: &str) -> String {
        serde_json::from_str::<Self>(json).map_or_else(|_| json.to_owned(), |c| c.short())
    }

    /// The caller in the words people read (`cursor 1.0 (pid 4242)`),
    /// made by the same function as the live [`Caller`]'s text and
    /// sent with it on the wire ([`CallerView::text`]).
    pub fn short(&self) -> String {
        let mut s = String::new();
        // Writing to a String cannot fail.
        let _ = write_caller(
            &mut s,
            &self.via,
            self.client_name.as_deref(),
            self.pid,
            self.bridge_pid,
            self.through_tool_call,
        );
        s
    }

    /// The identity a `caller` scope remembers: everything but the pids,
    /// which change every run while the agent stays the same. Its anchor
    /// is `exe`, the client program as the kernel reports it (for a
    /// bridged client, the program that started the bridge, not
    /// toolgate); client name and agent id only narrow it.
    pub fn key(&self) -> CallerKey {
        CallerKey {
            via: self.via.clone(),
            uid: self.uid,
            exe: self.exe.clone(),
            client_name: self.client_name.clone(),
            agent_id: self.agent_id.clone(),
        }
    }
}

impl fmt::Display for CallerInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.key(), f)?;
        if let Some(p) = self.pid {
            write!(f, " pid {p}")?;
        }
        Ok(())
    }
}

/// A caller's identity across runs.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize, ts_rs::TS)]
pub struct CallerKey {
    /// Entry point.
    pub via: String,
    /// Peer uid.
    pub uid: Option<u32>,
    /// The client's executable, as the kernel reports it.
    pub exe: Option<String>,
    /// MCP client name.
    pub client_name: Option<String>,
    /// Agent id.
    pub agent_id: Option<String>,
}

impl fmt::Display for CallerKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.via)?;
        if let Some(c) = &self.client_name {
            write!(f, " client {c}")?;
        }
        if let Some(a) = &self.agent_id {
            write!(f, " agent {a}")?;
        }
        if let Some(e) = &self.exe {
            write!(f, " exe {e}")?;
        }
        if let Some(u) = self.uid {
            write!(f, " uid {u}")?;
        }
        Ok(())
    }
}

/// One argument clause as stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
pub struct ArgClause {
    /// JSON pointer.
    pub pointer: String,
    /// Pattern kind.
    pub kind: PatternKind,
    /// Pattern text as typed (`~` not yet expanded).
    pub pattern: String,
}

/// A scope with every "this" resolved: what is stored in SQLite.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
pub struct ScopeDef {
    /// Tool-name glob (an exact name for "this tool").
    pub tool: String,
    /// Argument clauses.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<ArgClause>,
    /// Exact arguments: `call_hash(key, tool, args)`, keyed per data dir.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub args_hash: Option<String>,
    /// One caller.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub caller: Option<CallerKey>,
}

impl fmt::Display for ScopeDef {
    /// The SCOPE syntax, with "this" spelled out, so people see exactly
    /// what a remembered rule covers.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "tool={}", self.tool)?;
        for a in &self.args {
            match a.kind {
                PatternKind::Glob => write!(f, ",{}={}", a.pointer, a.pattern)?,
                k => write!(f, ",{}:{}={}", a.pointer, k.as_str(), a.pattern)?,
            }
        }
        if let Some(h) = &self.args_hash {
            write!(f, ",args=#{}", h.get(..12).unwrap_or(h))?;
        }
        if let Some(c) = &self.caller {
            write!(f, ",caller=[{c}]")?;
        }
        Ok(())
    }
}

/// Why a scope could not be parsed, compiled or used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ScopeError {
    /// The text is empty.
    #[error("empty scope; try `tool`, `caller`, `args` or `/path:path=~/proj/**`")]
    Empty,
    /// A clause is not in the syntax.
    #[error(
        "scope clause `{0}` not understood; use tool, tool=GLOB, args, caller, PTR=GLOB, PTR:path=GLOB or PTR:re=REGEX"
    )]
    BadClause(String),
    /// Two clauses set the same thing.
    #[error("scope clause `{0}` is given twice")]
    Duplicate(String),
    /// A pattern does not compile.
    #[error(transparent)]
    Pattern(#[from] PatternError),
    /// A "this" clause used where there is no request to take it from.
    #[error(
        "scope clause `{0}` refers to a request; outside one, use tool=GLOB and argument clauses"
    )]
    NeedsRequest(&'static str),
    /// A `caller` clause for a caller whose program the kernel did not
    /// name: the rest of a caller (client name, agent id) is not proof
    /// enough to tie a rule to.
    #[error(
        "scope clause `caller` needs the calling program, and the kernel did not say which program \
         this caller runs (its executable could not be read); a rule tied to the client name alone \
         would apply to any program that claims it, so use tool and argument clauses instead"
    )]
    UnknownCaller,
    /// The scope would not cover the request it was made from.
    #[error("the rule `{scope}` would not cover the very request being decided: {why}")]
    MissesRequest {
        /// The scope.
        scope: String,
        /// Which clause misses.
        why: String,
    },
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum ToolSpec {
    This,
    Glob(String),
}

/// A parsed SCOPE, not yet bound to a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScopeSpec {
    tool: ToolSpec,
    args: Vec<ArgClause>,
    exact: bool,
    caller: bool,
}

impl ScopeSpec {
    /// Parses SCOPE syntax (see the module docs).
    ///
    /// # Errors
    /// Empty text, an unknown or repeated clause, or a bad pattern.
    pub fn parse(text: &str) -> Result<Self, ScopeError> {
        let clauses = split_clauses(text);
        if clauses.is_empty() {
            return Err(ScopeError::Empty);
        }
        let mut spec = Self {
            tool: ToolSpec::This,
            args: Vec::new(),
            exact: false,
            caller: false,
        };
        let mut tool_set = false;
        for c in clauses {
            let once = |flag: &mut bool| {
                if std::mem::replace(flag, true) {
                    Err(ScopeError::Duplicate(c.to_owned()))
                } else {
                    Ok(())
                }
            };
            match c {
                "tool" => once(&mut tool_set)?,
                "args" => once(&mut spec.exact)?,
                "caller" => once(&mut spec.caller)?,
                _ if c.starts_with("tool=") => {
                    once(&mut tool_set)?;
                    let glob = &c["tool=".len()..];
                    tool_glob(glob)?;
                    spec.tool = ToolSpec::Glob(glob.to_owned());
                }
                _ if c.starts_with('/') => spec.args.push(arg_clause(c)?),
                _ => return Err(ScopeError::BadClause(c.to_owned())),
            }
        }
        Ok(spec)
    }

    /// Resolves "this" against the request being decided and checks that
    /// the result covers it; `key` hashes exact arguments.
    ///
    /// # Errors
    /// [`ScopeError::MissesRequest`] naming the clause that misses,
    /// [`ScopeError::UnknownCaller`] for `caller` when the caller's
    /// executable is unknown, or a pattern error.
    pub fn bind(
        &self,
        key: &CallKey,
        tool: &str,
        args: &Value,
        caller: &CallerInfo,
    ) -> Result<Scope, ScopeError> {
        if self.caller && caller.exe.is_none() {
            return Err(ScopeError::UnknownCaller);
        }
        let def = ScopeDef {
            tool: match &self.tool {
                ToolSpec::This => tool.to_owned(),
                ToolSpec::Glob(g) => g.clone(),
            },
            args: self.args.clone(),
            args_hash: self.exact.then(|| call_hash(key, tool, args)),
            caller: self.caller.then(|| caller.key()),
        };
        let scope = Scope::compile(def, key)?;
        if let Some(why) = scope.miss(tool, args, &caller.key()) {
            return Err(ScopeError::MissesRequest {
                scope: scope.def.to_string(),
                why,
            });
        }
        Ok(scope)
    }
}

impl ScopeSpec {
    /// The scope for a rule made without a request: every "this" clause is
    /// refused and `tool=GLOB` is required, so nothing is implied.
    ///
    /// # Errors
    /// [`ScopeError::NeedsRequest`] naming the clause.
    pub fn standalone(&self) -> Result<ScopeDef, ScopeError> {
        let tool = match &self.tool {
            ToolSpec::Glob(g) => g.clone(),
            ToolSpec::This => return Err(ScopeError::NeedsRequest("tool")),
        };
        if self.exact {
            return Err(ScopeError::NeedsRequest("args"));
        }
        if self.caller {
            return Err(ScopeError::NeedsRequest("caller"));
        }
        Ok(ScopeDef {
            tool,
            args: self.args.clone(),
            args_hash: None,
            caller: None,
        })
    }
}

fn arg_clause(c: &str) -> Result<ArgClause, ScopeError> {
    let (lhs, pattern) = c
        .split_once('=')
        .ok_or_else(|| ScopeError::BadClause(c.to_owned()))?;
    let (pointer, kind) = match lhs.rsplit_once(':') {
        Some((p, "path")) => (p, PatternKind::Path),
        Some((p, "re")) => (p, PatternKind::Regex),
        Some((p, "glob")) => (p, PatternKind::Glob),
        _ => (lhs, PatternKind::Glob),
    };
    if pattern.is_empty() {
        return Err(ScopeError::BadClause(c.to_owned()));
    }
    Pattern::new(kind, pattern, None)?;
    Ok(ArgClause {
        pointer: pointer_of(pointer),
        kind,
        pattern: pattern.to_owned(),
    })
}

/// Splits on commas outside `{}` and `[]`, trimming blanks.
fn split_clauses(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut depth, mut start) = (0i32, 0);
    for (i, ch) in text.char_indices() {
        match ch {
            '{' | '[' => depth += 1,
            '}' | ']' => depth -= 1,
            ',' if depth <= 0 => {
                out.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&text[start..]);
    out.into_iter()
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .collect()
}

/// A compiled scope.
#[derive(Debug, Clone)]
pub struct Scope {
    def: ScopeDef,
    tool: globset::GlobMatcher,
    conds: Vec<ArgCondition>,
    /// Hashes a call's arguments to compare with `def.args_hash`.
    key: CallKey,
}

impl Scope {
    /// Compiles a stored scope; `key` is the data dir's argument-hash key
    /// its `args_hash` was made with.
    ///
    /// # Errors
    /// A glob or regex does not compile.
    pub fn compile(def: ScopeDef, key: &CallKey) -> Result<Self, ScopeError> {
        let tool = tool_glob(&def.tool)?;
        let conds = def
            .args
            .iter()
            .map(|a| {
                Ok(ArgCondition {
                    pointer: a.pointer.clone(),
                    pattern: Pattern::new(a.kind, &a.pattern, None)?,
                    negate: false,
                })
            })
            .collect::<Result<Vec<_>, PatternError>>()?;
        Ok(Self {
            def,
            tool,
            conds,
            key: key.clone(),
        })
    }

    /// The stored form.
    pub fn def(&self) -> &ScopeDef {
        &self.def
    }

    /// Whether the call is inside the scope.
    pub fn matches(&self, tool: &str, args: &Value, caller: &CallerKey) -> bool {
        self.miss(tool, args, caller).is_none()
    }

    /// The first clause the call misses, in words; `None` = inside.
    fn miss(&self, tool: &str, args: &Value, caller: &CallerKey) -> Option<String> {
        if !self.tool.is_match(tool) {
            return Some(format!(
                "its tool `{tool}` does not match `{}`",
                self.def.tool
            ));
        }
        if let Some(c) = self.conds.iter().find(|c| !c.holds(args)) {
            let name = c.pointer.trim_start_matches('/');
            return Some(match args.pointer(&c.pointer) {
                None => format!("it has no argument `{name}`"),
                Some(_) => format!(
                    "its argument `{name}` does not match `{}`",
                    c.pattern.source()
                ),
            });
        }
        if let Some(h) = &self.def.args_hash
            && *h != call_hash(&self.key, tool, args)
        {
            return Some("its arguments are not the same".into());
        }
        if let Some(k) = &self.def.caller
            && k != caller
        {
            return Some(format!("it comes from another caller than {k}"));
        }
        None
    }
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.def, f)
    }
}

#[cfg(test)]
#[path = "scope_tests.rs"]
mod tests;
