//! Puts `servers[i].key` and a line number on config errors about servers.
//!
//! serde reports a problem inside a `[[servers]]` entry either with the span
//! of the entry (for keys merged through `flatten`) or of the value, but
//! never with the entry's index; `from_raw` knows the index but not the
//! text. This module re-reads the text with toml's spanned parser so both
//! kinds of error read the same way: `servers[2].url: … (line 14)`. When the
//! text cannot be mapped the original message is kept unchanged.

use std::ops::Range;

use toml::de::{DeTable, DeValue};

use super::ConfigError;

/// One `[[servers]]` entry: where it is, and where each of its keys is.
struct Entry {
    range: Range<usize>,
    keys: Vec<(String, usize)>,
}

fn line_of(text: &str, offset: usize) -> usize {
    text.get(..offset).map_or(0, |t| t.matches('\n').count()) + 1
}

/// The end of the last span inside `v` (an entry's header span covers only
/// `[[servers]]`, so the body is found from its keys and values).
fn max_end(v: &toml::Spanned<DeValue<'_>>) -> usize {
    let inner = match v.get_ref() {
        DeValue::Table(t) => t.iter().map(|(k, v)| k.span().end.max(max_end(v))).max(),
        DeValue::Array(a) => a.into_iter().map(max_end).max(),
        _ => None,
    };
    inner.unwrap_or(0).max(v.span().end)
}

fn entries(text: &str) -> Vec<Entry> {
    let Ok(doc) = DeTable::parse(text) else {
        return Vec::new();
    };
    let Some(servers) = doc
        .get_ref()
        .iter()
        .find(|(k, _)| k.get_ref() == "servers")
        .map(|(_, v)| v)
    else {
        return Vec::new();
    };
    let DeValue::Array(list) = servers.get_ref() else {
        return Vec::new();
    };
    list.into_iter()
        .map(|item| Entry {
            range: item.span().start..max_end(item),
            keys: match item.get_ref() {
                DeValue::Table(t) => t
                    .iter()
                    .map(|(k, _)| (k.get_ref().to_string(), k.span().start))
                    .collect(),
                _ => Vec::new(),
            },
        })
        .collect()
}

/// The key a message starts with (`url: …` → `url`, `env.X: …` → `env`).
fn leading_key(message: &str) -> Option<&str> {
    let (path, _) = message.split_once(": ")?;
    let ok = !path.is_empty()
        && path
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
    ok.then(|| path.split('.').next().unwrap_or(path))
}

/// A parse error, as `servers[i].key: message (line N)` if it is inside a
/// server entry, else toml's own rendering (which has the line).
pub(super) fn parse_error(text: &str, e: &toml::de::Error) -> String {
    let fallback = || e.to_string().trim_end().to_owned();
    let Some(span) = e.span() else {
        return fallback();
    };
    let list = entries(text);
    let Some((i, entry)) = list
        .iter()
        .enumerate()
        .find(|(_, en)| en.range.contains(&span.start))
    else {
        return fallback();
    };
    let message = e.message().trim();
    let named = leading_key(message)
        .and_then(|k| entry.keys.iter().find(|(name, _)| name == k))
        .map(|(_, at)| *at);
    match named {
        Some(at) => format!("servers[{i}].{message} (line {})", line_of(text, at)),
        None if span.start == entry.range.start || leading_key(message).is_some() => {
            format!(
                "servers[{i}]: {message} (line {})",
                line_of(text, span.start)
            )
        }
        // A value-level error (`timeout_ms = "x"`): name the key whose value
        // it is, found as the last key that starts before the error.
        None => {
            let key = entry
                .keys
                .iter()
                .filter(|(_, at)| *at <= span.start)
                .max_by_key(|(_, at)| *at)
                .map_or(String::new(), |(k, _)| format!(".{k}"));
            format!(
                "servers[{i}]{key}: {message} (line {})",
                line_of(text, span.start)
            )
        }
    }
}

/// Appends `(line N)` to each `servers[i].key…` problem of an
/// [`ConfigError::Invalid`].
pub(super) fn add_lines(text: &str, e: ConfigError) -> ConfigError {
    let ConfigError::Invalid { path, problems } = e else {
        return e;
    };
    let list = entries(text);
    let problems = problems
        .into_iter()
        .map(|p| match problem_line(&list, text, &p) {
            Some(line) => format!("{p} (line {line})"),
            None => p,
        })
        .collect();
    ConfigError::Invalid { path, problems }
}

fn problem_line(list: &[Entry], text: &str, problem: &str) -> Option<usize> {
    let rest = problem.strip_prefix("servers[")?;
    let (index, rest) = rest.split_once("].")?;
    let entry = list.get(index.parse::<usize>().ok()?)?;
    let key = leading_key(rest)?;
    let at = entry
        .keys
        .iter()
        .find(|(k, _)| k == key)
        .map_or(entry.range.start, |(_, at)| *at);
    Some(line_of(text, at))
}
