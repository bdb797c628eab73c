//! Where "Approve & always…" starts: the narrowest remembered rule that
//! still covers the request being decided, and what a broader one would
//! also let through, in words.
//!
//! A rule made in a hurry should allow what the person just looked at and
//! little else, so the offer starts narrow and broadening is a deliberate
//! act:
//! - **this tool**;
//! - **the argument that says what the call does** (its command, URL or
//!   path, see [`crate::preview::lead`]), and every other path it names,
//!   ticked: a plain command (`ls -la`, `git status --short`) as *the same
//!   program (and subcommand) with plain arguments*, a regular expression
//!   that admits no `;`, `&`, `|`, `$`, quotes, brackets or redirection, so
//!   the rule cannot be stretched into `ls; curl … | sh`; any other command,
//!   a path or a URL as exactly this value;
//! - other short text arguments offered as exactly their value, unticked;
//! - **only these exact arguments** (by hash) instead, when the leading
//!   argument cannot be written as a pattern without showing a secret, or
//!   nothing can be;
//! - **this caller**, when the kernel named its program.
//!
//! Every offered clause is checked by binding it to the request the way a
//! decision would ([`super::ScopeSpec::bind`]); one that would not parse
//! back to itself or would miss the request is left out.

use serde::Serialize;
use serde_json::Value;

use super::scope::{ArgClause, ScopeDef, ScopeSpec};
use super::{ApprovalError, Approvals};
use crate::policy::PatternKind;
use crate::preview::{REDACTED, lead, secret_spans};
use crate::tool::{GuardKind, ToolDef};

/// How long a remembered rule lasts unless the person picks otherwise:
/// long enough for a day's work with the agent, gone by the next.
pub const DEFAULT_TTL_S: u64 = 86_400;

/// Longest text value offered as an exact pattern.
const MAX_EXACT: usize = 200;

/// Characters a plain argument may hold: no shell operator, quote,
/// substitution, bracket or redirection.
const PLAIN_ARG: &str = "A-Za-z0-9_./=:@%+~*?-";

/// The program (and subcommand) of a plain command, as a word.
const PLAIN_WORD: &str = "A-Za-z0-9_./+~-";

/// One argument condition the dialog offers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ts_rs::TS)]
pub struct ArgOffer {
    /// JSON pointer to the argument (`/command`).
    pub pointer: String,
    /// How the pattern matches.
    pub kind: PatternKind,
    /// The pattern, in SCOPE syntax.
    pub pattern: String,
    /// Part of the narrowest scope (ticked when the dialog opens).
    pub ticked: bool,
    /// The condition in words (`the command runs `git status` with plain
    /// arguments`).
    pub words: String,
}

/// The "always" dialog's starting point for one request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ts_rs::TS)]
pub struct ScopeOffer {
    /// Argument conditions offered, the ticked ones first.
    pub args: Vec<ArgOffer>,
    /// "Only these exact arguments" starts ticked.
    pub exact: bool,
    /// "Only this caller" can be chosen: the kernel named the caller's
    /// program (and it starts ticked).
    pub caller: bool,
    /// The narrowest scope that covers the request, in SCOPE syntax.
    pub narrowest: String,
    /// How long the rule lasts unless changed, seconds.
    #[ts(type = "number")]
    pub ttl_s: u64,
}

/// The argument conditions worth offering for a call of `def` (`None`:
/// unknown) with `shown` (its arguments as people see them), before any
/// is checked against the request.
fn candidates(def: Option<&ToolDef>, shown: &Value) -> Vec<ArgOffer> {
    let Some(obj) = shown.as_object() else {
        return Vec::new();
    };
    let lead = lead(def, shown);
    let path_guards: Vec<&str> = def
        .map(|d| {
            d.guards
                .iter()
                .filter(|g| g.kind == GuardKind::Path)
                .map(|g| g.arg.as_str())
                .collect()
        })
        .unwrap_or_default();
    let mut out = Vec::new();
    let mut keys: Vec<&String> = obj.keys().collect();
    keys.sort();
    for key in keys {
        let Some(value) = obj[key].as_str() else {
            continue;
        };
        if value == REDACTED || value.contains(REDACTED) || !secret_spans(value).is_empty() {
            continue;
        }
        let pointer = pointer_of(key);
        let name = arg_name(&pointer);
        let leads = lead.as_ref().is_some_and(|l| &l.arg == key);
        let kind = if leads {
            lead.as_ref().map(|l| l.kind)
        } else if path_guards.contains(&key.as_str()) {
            Some(GuardKind::Path)
        } else {
            None
        };
        let offer = match kind {
            Some(GuardKind::Command) => command_offer(pointer, &name, value),
            Some(GuardKind::Path) => ArgOffer {
                words: format!("the {name} is `{value}`"),
                pointer,
                kind: PatternKind::Path,
                pattern: literal_glob(value),
                ticked: true,
            },
            Some(GuardKind::Url) => exact(pointer, &name, value, true),
            None if value.chars().count() <= MAX_EXACT && !value.contains('\n') => {
                exact(pointer, &name, value, false)
            }
            None => continue,
        };
        out.push(offer);
    }
    out.sort_by_key(|o| !o.ticked);
    out
}

fn exact(pointer: String, name: &str, value: &str, ticked: bool) -> ArgOffer {
    ArgOffer {
        words: format!("the {name} is exactly `{value}`"),
        pointer,
        kind: PatternKind::Glob,
        pattern: literal_glob(value),
        ticked,
    }
}

/// A plain command as its program (and subcommand) with plain arguments;
/// anything else as exactly itself.
fn command_offer(pointer: String, name: &str, command: &str) -> ArgOffer {
    match plain_prefix(command) {
        Some(prefix) => ArgOffer {
            words: plain_words(name, &prefix),
            pattern: plain_command_regex(&prefix),
            pointer,
            kind: PatternKind::Regex,
            ticked: true,
        },
        None => exact(pointer, name, command, true),
    }
}

/// `git status --short` → `git status`; `ls -la` → `ls`; `None` for a
/// command with anything but plain words.
fn plain_prefix(command: &str) -> Option<String> {
    let plain = |w: &str, set: &str| !w.is_empty() && w.chars().all(|c| in_set(c, set));
    let words: Vec<&str> = command.split(' ').filter(|w| !w.is_empty()).collect();
    let (program, rest) = words.split_first()?;
    if !plain(program, PLAIN_WORD) || !rest.iter().all(|w| plain(w, PLAIN_ARG)) {
        return None;
    }
    let sub = rest.first().filter(|w| {
        w.starts_with(|c: char| c.is_ascii_alphabetic())
            && w.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | ':' | '-'))
    });
    Some(match sub {
        Some(s) => format!("{program} {s}"),
        None => (*program).to_owned(),
    })
}

/// Whether `c` is in a character-class body like [`PLAIN_ARG`] (ranges
/// `a-z`, a trailing `-` literal).
fn in_set(c: char, set: &str) -> bool {
    let s: Vec<char> = set.chars().collect();
    let mut i = 0;
    while i < s.len() {
        if i + 2 < s.len() && s[i + 1] == '-' {
            if (s[i]..=s[i + 2]).contains(&c) {
                return true;
            }
            i += 3;
        } else {
            if s[i] == c {
                return true;
            }
            i += 1;
        }
    }
    false
}

/// The regular expression of "runs PREFIX with plain arguments".
fn plain_command_regex(prefix: &str) -> String {
    format!("^{}(?: +[{PLAIN_ARG}]+)* *$", regex::escape(prefix))
}

/// The prefix of a pattern made by [`plain_command_regex`], so its words
/// can say what it means; `None` for any other pattern.
pub fn plain_command_prefix(pattern: &str) -> Option<String> {
    let body = pattern
        .strip_prefix('^')?
        .strip_suffix(&format!("(?: +[{PLAIN_ARG}]+)* *$"))?;
    let prefix = unescape_regex(body)?;
    (plain_command_regex(&prefix) == pattern).then_some(prefix)
}

fn unescape_regex(s: &str) -> Option<String> {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            out.push(chars.next()?);
        } else {
            out.push(c);
        }
    }
    Some(out)
}

/// `the command runs `git status` with plain arguments (…)`.
pub fn plain_words(name: &str, prefix: &str) -> String {
    format!(
        "the {name} runs `{prefix}` with any plain arguments (no `;`, `&`, `|`, `$`, quotes, brackets or redirection)"
    )
}

/// Whether a glob has no wildcard outside a backslash escape (or the
/// `[,]` a comma is written as).
pub fn is_literal(pattern: &str) -> bool {
    let unescaped = pattern.replace("[,]", ",");
    let mut chars = unescaped.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                chars.next();
            }
            '*' | '?' | '[' | ']' | '{' | '}' => return false,
            _ => {}
        }
    }
    true
}

/// A literal glob as the text it matches.
pub fn unescape_glob(pattern: &str) -> String {
    let unescaped = pattern.replace("[,]", ",");
    let mut out = String::with_capacity(unescaped.len());
    let mut chars = unescaped.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            out.extend(chars.next());
        } else {
            out.push(c);
        }
    }
    out
}

/// A value as a glob that matches only itself: metacharacters escaped,
/// commas in a class (a bare comma would end the SCOPE clause).
fn literal_glob(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for ch in s.chars() {
        match ch {
            ',' => out.push_str("[,]"),
            '*' | '?' | '[' | ']' | '{' | '}' | '\\' => {
                out.push('\\');
                out.push(ch);
            }
            c => out.push(c),
        }
    }
    out
}

/// A top-level key as a JSON pointer.
fn pointer_of(key: &str) -> String {
    let mut pointer = String::with_capacity(key.len() + 1);
    crate::schema::pointer::push_segment(&mut pointer, key);
    pointer
}

/// What people call the argument at `pointer`: `command`, `working
/// directory`, `URL`.
pub(crate) fn arg_name(pointer: &str) -> String {
    let last = pointer.rsplit('/').next().unwrap_or(pointer);
    let last = last.replace("~1", "/").replace("~0", "~");
    match last.to_ascii_lowercase().as_str() {
        "cwd" | "workdir" | "working_dir" => "working directory".to_owned(),
        "url" | "uri" => "URL".to_owned(),
        other => other.replace('_', " "),
    }
}

/// The SCOPE text of a choice: this tool, the ticked clauses, exact
/// arguments, this caller.
fn scope_text(args: &[ArgOffer], exact: bool, caller: bool) -> String {
    let mut clauses = vec!["tool".to_owned()];
    for a in args.iter().filter(|a| a.ticked) {
        clauses.push(clause(&ArgClause {
            pointer: a.pointer.clone(),
            kind: a.kind,
            pattern: a.pattern.clone(),
        }));
    }
    if exact {
        clauses.push("args".into());
    }
    if caller {
        clauses.push("caller".into());
    }
    clauses.join(",")
}

fn clause(a: &ArgClause) -> String {
    match a.kind {
        PatternKind::Glob => format!("{}={}", a.pointer, a.pattern),
        k => format!("{}:{}={}", a.pointer, k.as_str(), a.pattern),
    }
}

impl Approvals {
    /// The "always" dialog's starting point for pending request `id`
    /// (see the module docs); `def` is its tool's definition, if still
    /// registered.
    ///
    /// # Errors
    /// [`ApprovalError::NotFound`], [`ApprovalError::AlreadyDecided`], or
    /// the store.
    pub async fn offer(&self, id: i64, def: Option<&ToolDef>) -> Result<ScopeOffer, ApprovalError> {
        let (request, args) = self.live_request(id).await?;
        let key = self.call_key();
        let binds = |text: &str| {
            ScopeSpec::parse(text)
                .and_then(|s| s.bind(key, &request.tool, &args, &request.caller))
                .ok()
        };
        let mut offers = candidates(def, &request.args);
        offers.retain(|o| {
            let text = scope_text(
                std::slice::from_ref(&ArgOffer {
                    ticked: true,
                    ..o.clone()
                }),
                false,
                false,
            );
            binds(&text).is_some_and(|s| {
                s.def().args.len() == 1
                    && s.def().args[0].pattern == o.pattern
                    && s.def().args[0].kind == o.kind
            })
        });
        let lead_offered = match lead(def, &request.args) {
            Some(l) => offers
                .iter()
                .any(|o| o.ticked && o.pointer == pointer_of(&l.arg)),
            None => offers.iter().any(|o| o.ticked),
        };
        let exact = !lead_offered;
        let caller = request.caller.exe.is_some();
        let mut narrowest = scope_text(&offers, exact, caller);
        if binds(&narrowest).is_none() {
            // Cannot happen with clauses that bind one by one; if it did,
            // exact arguments still cover the request.
            narrowest = scope_text(&[], true, caller);
        }
        Ok(ScopeOffer {
            args: offers,
            exact,
            caller,
            narrowest,
            ttl_s: DEFAULT_TTL_S,
        })
    }

    /// The narrowest scope for request `id`, bound ([`Self::offer`]).
    ///
    /// # Errors
    /// As [`Self::offer`], or a scope error.
    pub async fn narrowest(
        &self,
        id: i64,
        def: Option<&ToolDef>,
    ) -> Result<ScopeDef, ApprovalError> {
        let offer = self.offer(id, def).await?;
        Ok(self.bind_scope(id, &offer.narrowest).await?.def().clone())
    }
}

/// What `chosen` allows beyond `narrow` (the narrowest scope for the same
/// request), and for how much longer, in words; `None` when nothing.
/// `ttl_s` is the chosen expiry (`None`: until revoked).
pub fn also_allows(narrow: &ScopeDef, chosen: &ScopeDef, ttl_s: Option<u64>) -> Option<String> {
    let mut what = Vec::new();
    if chosen.tool != narrow.tool {
        what.push(if chosen.tool == "*" {
            "calls of every tool".to_owned()
        } else {
            format!("calls of any tool matching `{}`", chosen.tool)
        });
    }
    if chosen.args_hash.is_none() {
        for n in &narrow.args {
            match chosen.args.iter().find(|c| c.pointer == n.pointer) {
                None => what.push(format!("any {}", arg_name(&n.pointer))),
                Some(c) if c.kind == n.kind && c.pattern == n.pattern => {}
                // One value, and it covers the request: no broader.
                Some(c) if c.kind != PatternKind::Regex && is_literal(&c.pattern) => {}
                Some(c) => what.push(loosened(c)),
            }
        }
        if narrow.args_hash.is_some() {
            if chosen.args.is_empty() {
                what.push("any arguments".to_owned());
            }
            what.extend(chosen.args.iter().map(loosened));
        }
    }
    let any_caller = narrow.caller.is_some() && chosen.caller.is_none();
    let longer = match ttl_s {
        None => Some("until you revoke it".to_owned()),
        Some(s) if s > DEFAULT_TTL_S => Some(format!("for {}", duration_words(s))),
        Some(_) => None,
    };
    if what.is_empty() && !any_caller && longer.is_none() {
        return None;
    }
    let mut s = String::from("Also allows ");
    s.push_str(&if what.is_empty() {
        "the same call".to_owned()
    } else {
        join_words(&what)
    });
    if any_caller {
        s.push_str(" from any caller");
    }
    if let Some(l) = longer {
        s.push_str(", ");
        s.push_str(&l);
    }
    s.push('.');
    Some(s)
}

/// "any command matching `git *`": what a clause lets through.
fn loosened(c: &ArgClause) -> String {
    let name = arg_name(&c.pointer);
    match (c.kind, plain_command_prefix(&c.pattern)) {
        (PatternKind::Regex, Some(prefix)) => {
            format!("any {name} that runs `{prefix}` with plain arguments")
        }
        (PatternKind::Path, _) => format!("any {name} under `{}`", c.pattern),
        (PatternKind::Regex, None) => {
            format!("any {name} matching the regular expression `{}`", c.pattern)
        }
        (PatternKind::Glob, _) => format!("any {name} matching `{}`", c.pattern),
    }
}

/// `a`, `a and b`, `a, b and c`.
fn join_words(parts: &[String]) -> String {
    match parts {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

/// `1 hour`, `7 days`, `90 minutes`, `45 seconds`.
pub fn duration_words(s: u64) -> String {
    let (n, unit) = if s.is_multiple_of(86_400) {
        (s / 86_400, "day")
    } else if s.is_multiple_of(3_600) {
        (s / 3_600, "hour")
    } else if s.is_multiple_of(60) {
        (s / 60, "minute")
    } else {
        (s, "second")
    };
    if n == 1 {
        format!("1 {unit}")
    } else {
        format!("{n} {unit}s")
    }
}

#[cfg(test)]
#[path = "suggest_tests.rs"]
mod tests;
