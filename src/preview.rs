//! A call's arguments in one short line, for the places people scan many
//! calls at once: the console's approval cards and recent calls, and
//! `toolgate approvals`. Four waiting `shell_exec` requests differ only in
//! their commands; the preview is what tells them apart.
//!
//! Which argument leads is decided from what the engine knows about the
//! tool, not from how the console spells things:
//! - its guarded parameters ([`crate::tool::ParamGuard`]): a command line,
//!   then a URL, then a path;
//! - else the parameter names the engine already reads as a command line
//!   ([`crate::guard::shell_like::COMMAND_PARAMS`]), a URL or a path;
//! - else the first few `key=value` pairs in key order.
//!
//! A file write shows its path and the size of what it writes; a fetch
//! with another method than GET shows the method before the URL.
//!
//! The preview is made from arguments already redacted by the tool's
//! schema, and hides more on top, because a command line or a URL is not
//! marked secret by any schema and still carries credentials:
//! `Authorization:` and similar header values, `Bearer`/`Basic`
//! credentials, `NAME=value` pairs whose name says password, token, key or
//! secret, well-known token shapes (`sk-…`, `ghp_…`, `AKIA…`, JWTs), PEM
//! private keys and a URL's password. Values under such names are hidden whole.
//!
//! One line, at most [`MAX_CHARS`] characters: line breaks show as `⏎`,
//! tabs as `⇥`, other control characters and the invisible direction
//! overrides (which can make text read backwards) as `\u{…}` escapes; long
//! values are cut with `…` (paths and URLs in the middle, so the file name
//! and the host stay, commands at the end).

use std::fmt::Write as _;
use std::ops::Range;
use std::sync::LazyLock;

use regex::Regex;
use serde_json::Value;

use crate::guard::shell_like::{COMMAND_PARAMS, ShellLike};
use crate::tool::{GuardKind, ToolDef};

/// Longest preview, in characters.
pub const MAX_CHARS: usize = 120;

/// What a hidden value reads as (the schema redaction's word).
pub const REDACTED: &str = crate::schema::REDACTED;

/// How many `key=value` pairs a generic preview shows.
const MAX_PAIRS: usize = 4;

/// Longest value of one `key=value` pair, in characters.
const MAX_PAIR_VALUE: usize = 40;

/// Parameter names read as a URL when no guard says so.
const URL_PARAMS: [&str; 4] = ["url", "uri", "href", "endpoint"];

/// Parameter names read as a path when no guard says so.
const PATH_PARAMS: [&str; 6] = ["path", "file", "filename", "file_path", "filepath", "dir"];

/// Parameter names holding what a write writes: its size is shown.
const CONTENT_PARAMS: [&str; 4] = ["content", "contents", "data", "text"];

/// The argument a preview leads with, and what kind of value it holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lead {
    /// Its top-level name.
    pub arg: String,
    /// A command line, a URL or a path.
    pub kind: GuardKind,
}

/// The argument that says most about a call of `def` (`None`: no
/// definition known, decide from the names) with `args`: see the module
/// docs for the order. `None` when nothing leads.
pub fn lead(def: Option<&ToolDef>, args: &Value) -> Option<Lead> {
    let obj = args.as_object()?;
    let present = |name: &str| obj.get(name).is_some_and(Value::is_string);
    if let Some(def) = def {
        for kind in [GuardKind::Command, GuardKind::Url, GuardKind::Path] {
            if let Some(g) = def
                .guards
                .iter()
                .find(|g| g.kind == kind && present(&g.arg))
            {
                return Some(Lead {
                    arg: g.arg.clone(),
                    kind,
                });
            }
        }
        if let Some(arg) = ShellLike::of(def)
            .into_iter()
            .flat_map(|s| s.command_args)
            .find(|a| present(a))
        {
            return Some(Lead {
                arg,
                kind: GuardKind::Command,
            });
        }
    }
    let named = |names: &[&str], kind: GuardKind| {
        obj.keys()
            .find(|k| names.contains(&k.to_ascii_lowercase().as_str()) && present(k))
            .map(|k| Lead {
                arg: k.clone(),
                kind,
            })
    };
    named(&COMMAND_PARAMS, GuardKind::Command)
        .or_else(|| named(&URL_PARAMS, GuardKind::Url))
        .or_else(|| named(&PATH_PARAMS, GuardKind::Path))
}

/// The one-line preview of a call of `def` with `args` (already redacted
/// by the tool's schema; see the module docs).
pub fn preview(def: Option<&ToolDef>, args: &Value) -> String {
    let Some(obj) = args.as_object() else {
        return match args {
            Value::Null => String::new(),
            other => elide_end(&one_line(&redact_text(&other.to_string())), MAX_CHARS),
        };
    };
    if obj.is_empty() {
        return "no arguments".to_owned();
    }
    let Some(lead) = lead(def, args) else {
        return pairs(obj);
    };
    let value = obj.get(&lead.arg).and_then(Value::as_str).unwrap_or("");
    let shown = one_line(&redact_text(value));
    match lead.kind {
        GuardKind::Command => elide_end(&shown, MAX_CHARS),
        GuardKind::Url => {
            let method = obj
                .get("method")
                .and_then(Value::as_str)
                .filter(|m| !m.eq_ignore_ascii_case("get"));
            match method {
                Some(m) => {
                    let m = elide_end(&one_line(m), 10);
                    let room = MAX_CHARS.saturating_sub(m.chars().count() + 1);
                    format!("{m} {}", elide_middle(&shown, room))
                }
                None => elide_middle(&shown, MAX_CHARS),
            }
        }
        GuardKind::Path => match written_size(obj) {
            Some(size) => {
                let tail = format!(" ({})", bytes(size));
                let room = MAX_CHARS.saturating_sub(tail.chars().count());
                elide_middle(&shown, room) + &tail
            }
            None => elide_middle(&shown, MAX_CHARS),
        },
    }
}

/// The size of what a write writes: the first content-like string.
fn written_size(obj: &serde_json::Map<String, Value>) -> Option<usize> {
    obj.iter()
        .find(|(k, v)| CONTENT_PARAMS.contains(&k.to_ascii_lowercase().as_str()) && v.is_string())
        .and_then(|(_, v)| v.as_str())
        .filter(|s| *s != REDACTED)
        .map(str::len)
}

/// `12 bytes`, `1.2 KB`, `3.4 MB`.
fn bytes(n: usize) -> String {
    // Display only: a rounding of sizes people read.
    #[allow(clippy::cast_precision_loss)]
    let f = n as f64;
    match n {
        1 => "1 byte".to_owned(),
        0..1_000 => format!("{n} bytes"),
        1_000..1_000_000 => format!("{:.1} KB", f / 1e3),
        _ => format!("{:.1} MB", f / 1e6),
    }
}

/// The first [`MAX_PAIRS`] members in key order as `key=value`.
fn pairs(obj: &serde_json::Map<String, Value>) -> String {
    let mut keys: Vec<&String> = obj.keys().collect();
    keys.sort();
    let mut out = String::new();
    for k in keys.iter().take(MAX_PAIRS) {
        let v = &obj[*k];
        let text = if secret_name(k) && !v.is_null() {
            REDACTED.to_owned()
        } else {
            match v {
                Value::String(s) => redact_text(s),
                other => redact_text(&other.to_string()),
            }
        };
        if !out.is_empty() {
            out.push(' ');
        }
        let _ = write!(
            out,
            "{}={}",
            one_line(k),
            elide_end(&one_line(&text), MAX_PAIR_VALUE)
        );
    }
    if keys.len() > MAX_PAIRS {
        let _ = write!(out, " +{} more", keys.len() - MAX_PAIRS);
    }
    elide_end(&out, MAX_CHARS)
}

/// Whether a name says its value is a credential (`api_key`,
/// `GITHUB_TOKEN`, `password`, `client-secret`, `Authorization`).
pub fn secret_name(name: &str) -> bool {
    SECRET_NAME.is_match(name)
}

static SECRET_NAME: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)(passw(or)?d|passwd|\bpwd\b|secret|token|api[_-]?key|apikey|access[_-]?key|private[_-]?key|credential|authori[sz]ation|\bauth\b|cookie|session[_-]?id)",
    )
    .unwrap_or_else(|e| unreachable!("constant regex: {e}"))
});

/// Patterns of credentials inside free text; the capture group named `v`
/// is what gets hidden (the whole match when there is none).
static SECRET_TEXT: LazyLock<Vec<Regex>> = LazyLock::new(|| {
    [
        // A header line: `Authorization: Bearer x`, `X-Api-Key: x`, `Cookie: a=b`.
        r#"(?i)\b(?:proxy-)?(?:authorization|x-api-key|api-key|x-auth-token|x-access-token|cookie)\s*:\s*(?P<v>[^'"\n\r]+)"#,
        // An auth scheme and its credential anywhere else (`Basic` and
        // `Token` only as schemes are written, so prose keeps "basic").
        r"\b(?:(?i:bearer)|Basic|Token)\s+(?P<v>[A-Za-z0-9._~+/=-]{8,})",
        // A PEM private key, to its end line or the end of the text.
        r"-----BEGIN [A-Z ]*PRIVATE KEY-----(?s:.*?)(?:-----END [A-Z ]*PRIVATE KEY-----|\z)",
        // NAME=value, NAME: value, "NAME": "value", --NAME=value.
        r#"(?i)[A-Za-z0-9_.-]*(?:passw(?:or)?d|passwd|secret|token|api[_-]?key|apikey|access[_-]?key|private[_-]?key|credentials?)[A-Za-z0-9_.-]*['"]?\s*[=:]\s*['"]?(?P<v>[^\s'"&;,}]+)"#,
        // --NAME value.
        r#"(?i)--?[A-Za-z0-9_.-]*(?:passw(?:or)?d|passwd|secret|token|api[_-]?key|apikey|access[_-]?key|private[_-]?key|credentials?)[A-Za-z0-9_.-]*\s+['"]?(?P<v>[^\s'"&;,}-][^\s'"&;,}]*)"#,
        // curl's `-u user:password`.
        r#"(?:^|\s)(?:-u|--user)\s*['"]?[^:\s'"]+:(?P<v>[^\s'"]+)"#,
        // A URL's password: scheme://user:PASSWORD@host.
        r"(?i)\b[a-z][a-z0-9+.-]*://[^/\s:@]+:(?P<v>[^/\s@]+)@",
        // Well-known token shapes.
        r"\b(?:sk-[A-Za-z0-9_-]{8,}|sk_(?:live|test)_[A-Za-z0-9]{8,}|gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|xox[abprs]-[A-Za-z0-9-]{10,}|glpat-[A-Za-z0-9_-]{20,}|AKIA[0-9A-Z]{16}|eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,})",
    ]
    .iter()
    .map(|p| Regex::new(p).unwrap_or_else(|e| unreachable!("constant regex: {e}")))
    .collect()
});

/// Byte ranges of `text` that look like credentials, sorted and merged.
pub fn secret_spans(text: &str) -> Vec<Range<usize>> {
    let mut spans: Vec<Range<usize>> = Vec::new();
    for re in SECRET_TEXT.iter() {
        for c in re.captures_iter(text) {
            let m = c.name("v").or_else(|| c.get(0));
            if let Some(m) = m.filter(|m| !m.is_empty() && m.as_str() != REDACTED) {
                spans.push(m.range());
            }
        }
    }
    spans.sort_by_key(|r| r.start);
    let mut merged: Vec<Range<usize>> = Vec::with_capacity(spans.len());
    for s in spans {
        match merged.last_mut() {
            Some(last) if s.start <= last.end => last.end = last.end.max(s.end),
            _ => merged.push(s),
        }
    }
    merged
}

/// `text` with every [`secret_spans`] range replaced by `[redacted]`.
pub fn redact_text(text: &str) -> String {
    let spans = secret_spans(text);
    if spans.is_empty() {
        return text.to_owned();
    }
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for s in spans {
        out.push_str(&text[at..s.start]);
        out.push_str(REDACTED);
        at = s.end;
    }
    out.push_str(&text[at..]);
    out
}

/// `text` on one line: `⏎` for a line break, `⇥` for a tab, `\u{…}` for
/// other control characters and the direction overrides.
pub fn one_line(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\r' => {
                if chars.peek() == Some(&'\n') {
                    chars.next();
                }
                out.push('⏎');
            }
            '\n' => out.push('⏎'),
            '\t' => out.push('⇥'),
            c if c.is_control() || is_direction_control(c) => {
                let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out
}

/// The invisible characters that reorder how text reads (bidi embeddings,
/// overrides and isolates), and the marks that only exist to do so.
fn is_direction_control(c: char) -> bool {
    matches!(c, '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// `text` cut to `max` characters with `…` at the end.
pub fn elide_end(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let keep: String = text.chars().take(max.saturating_sub(1)).collect();
    keep + "…"
}

/// `text` cut to `max` characters with `…` in the middle (two thirds of
/// the room for the end, where a file name or a path's last part is).
pub fn elide_middle(text: &str, max: usize) -> String {
    let n = text.chars().count();
    if n <= max {
        return text.to_owned();
    }
    let room = max.saturating_sub(1);
    let tail = (room * 2).div_ceil(3);
    let head = room - tail;
    let start: String = text.chars().take(head).collect();
    let end: String = text.chars().skip(n - tail).collect();
    format!("{start}…{end}")
}

#[cfg(test)]
#[path = "preview_tests.rs"]
mod tests;
