//! Hiding known secret values in text that people and logs see.
//!
//! An upstream server gets real credentials (its `keyring:` references
//! resolved into `env` and `headers`, its `auth`), and it may print them:
//! a startup banner echoing its environment, an error quoting the key it
//! rejected. Its stderr lines, its status and error strings (the console,
//! `toolgate servers`, the event table, the log) and the error messages of
//! its calls pass through a [`Scrubber`] made from those values, which
//! replaces every occurrence with `[redacted]` in one pass (Aho-Corasick,
//! leftmost-longest, so a value containing another is hidden whole).
//!
//! Besides each value as written, its JSON-escaped and URL-encoded forms
//! are hidden (a value quoted inside a JSON-RPC error, or a query string),
//! and a Basic credential's base64 form.
//!
//! Values shorter than [`MIN_LEN`] characters are not scrubbed: every
//! occurrence of a two-letter string would garble the text, and where
//! `[redacted]` then appeared would spell the value out. Such a value
//! protects nothing anyway; resolving it logs a warning naming the secret
//! (see `docs/architecture/decisions.md`, "Resolved secrets are scrubbed
//! from what people read").

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

use aho_corasick::{AhoCorasick, MatchKind};

/// Text put in place of a secret value.
pub const REDACTED: &str = "[redacted]";

/// Shortest value scrubbed, in characters.
pub const MIN_LEN: usize = 4;

/// Known secret values and the automaton that finds them. Cloning shares
/// it; the default hides nothing and costs nothing.
#[derive(Clone, Default)]
pub struct Scrubber(Option<Arc<Needles>>);

struct Needles {
    /// Every form hidden, sorted (for equality).
    values: Vec<String>,
    finder: AhoCorasick,
}

impl Scrubber {
    /// A scrubber for `values` (and their encoded forms); values shorter
    /// than [`MIN_LEN`] are left out.
    pub fn new<S: AsRef<str>>(values: impl IntoIterator<Item = S>) -> Self {
        let mut forms: Vec<String> = Vec::new();
        for v in values {
            let v = v.as_ref();
            if !long_enough(v) {
                continue;
            }
            forms.push(v.to_owned());
            let json = serde_json::to_string(v).unwrap_or_default();
            forms.extend(json.get(1..json.len().saturating_sub(1)).map(str::to_owned));
            forms.push(form_urlencoded::byte_serialize(v.as_bytes()).collect());
        }
        forms.sort();
        forms.dedup();
        if forms.is_empty() {
            return Self(None);
        }
        match AhoCorasick::builder()
            .match_kind(MatchKind::LeftmostLongest)
            .build(&forms)
        {
            Ok(finder) => Self(Some(Arc::new(Needles {
                values: forms,
                finder,
            }))),
            Err(e) => {
                // Only a pattern set beyond the automaton's size limits
                // fails; hiding nothing silently would be worse.
                tracing::error!("secret values cannot be scrubbed from logs: {e}");
                Self(None)
            }
        }
    }

    /// Whether this hides nothing.
    pub fn is_empty(&self) -> bool {
        self.0.is_none()
    }

    /// `text` with every known value replaced by `[redacted]`; borrowed
    /// when there is none in it.
    pub fn scrub<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let Some(n) = &self.0 else {
            return Cow::Borrowed(text);
        };
        if !n.finder.is_match(text) {
            return Cow::Borrowed(text);
        }
        let mut out = String::with_capacity(text.len());
        n.finder.replace_all_with(text, &mut out, |_, _, dst| {
            dst.push_str(REDACTED);
            true
        });
        Cow::Owned(out)
    }

    /// [`Self::scrub`] of an owned string, reusing it when nothing changes.
    pub fn scrub_owned(&self, text: String) -> String {
        match self.scrub(&text) {
            Cow::Borrowed(_) => text,
            Cow::Owned(s) => s,
        }
    }
}

/// Whether a value is long enough to be scrubbed (see the module docs).
pub fn long_enough(value: &str) -> bool {
    value.chars().nth(MIN_LEN - 1).is_some()
}

impl PartialEq for Scrubber {
    fn eq(&self, other: &Self) -> bool {
        let values = |s: &Self| s.0.as_ref().map(|n| n.values.clone());
        values(self) == values(other)
    }
}

impl fmt::Debug for Scrubber {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.0.as_ref().map_or(0, |n| n.values.len());
        write!(f, "Scrubber({n} forms)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_occurrence_and_every_form_is_hidden() {
        let s = Scrubber::new(["sk-live-42", "p\"w/d 9"]);
        assert_eq!(
            s.scrub("key=sk-live-42; again sk-live-42!"),
            "key=[redacted]; again [redacted]!"
        );
        // JSON-escaped and URL-encoded.
        assert_eq!(s.scrub(r#"{"pw":"p\"w/d 9"}"#), r#"{"pw":"[redacted]"}"#);
        assert_eq!(s.scrub("q=p%22w%2Fd+9&x=1"), "q=[redacted]&x=1");
        assert!(matches!(s.scrub("nothing here"), Cow::Borrowed(_)));
    }

    #[test]
    fn a_value_containing_another_is_hidden_whole() {
        let s = Scrubber::new(["abcd", "abcdefgh"]);
        assert_eq!(s.scrub("xabcdefghx abcdx"), "x[redacted]x [redacted]x");
    }

    #[test]
    fn short_values_are_not_scrubbed() {
        let s = Scrubber::new(["abc", "", "é€"]);
        assert!(s.is_empty());
        assert_eq!(s.scrub("abc"), "abc");
        assert!(long_enough("abcd") && !long_enough("abc"));
        assert_eq!(
            format!("{:?}", Scrubber::new(["abcd"])),
            "Scrubber(1 forms)"
        );
    }

    #[test]
    fn equal_values_make_equal_scrubbers() {
        assert_eq!(
            Scrubber::new(["abcd", "wxyz"]),
            Scrubber::new(["wxyz", "abcd"])
        );
        assert_ne!(Scrubber::new(["abcd"]), Scrubber::default());
    }
}
