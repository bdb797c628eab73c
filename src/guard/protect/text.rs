//! Protected paths in free text, as written: one pass over the text for
//! every spelling of every protected place.

use std::path::{Path, PathBuf};

use aho_corasick::AhoCorasick;

use super::Refusal;
use super::places::{Entry, Place};

/// A spelling of a protected path to look for in text.
#[derive(Debug, Clone)]
struct Needle {
    entry: usize,
    /// The spelling may be followed by more name characters (the socket's
    /// name is the prefix of the control socket's and the token file's).
    prefix: bool,
}

/// Every spelling of every protected place, searched in one pass.
#[derive(Debug, Clone, Default)]
pub(super) struct Needles {
    ac: Option<AhoCorasick>,
    info: Vec<Needle>,
}

impl Needles {
    /// The spellings of `entries`: the path, its `~/`, `$HOME/` and
    /// `${HOME}/` forms, its form relative to each of `roots` when that
    /// names a `toolgate` directory (a command run inside a root may use
    /// it), and the socket's file name.
    pub(super) fn new(entries: &[Entry], home: Option<&Path>, roots: &[PathBuf]) -> Self {
        let mut patterns: Vec<String> = Vec::new();
        let mut info = Vec::new();
        let mut push = |text: String, entry: usize, prefix: bool| {
            if !text.is_empty() && !patterns.contains(&text) {
                patterns.push(text);
                info.push(Needle { entry, prefix });
            }
        };
        for (i, e) in entries.iter().enumerate() {
            let prefix = e.place == Place::Sockets;
            push(e.path.to_string_lossy().into_owned(), i, prefix);
            if let Some(rel) = home.and_then(|h| e.path.strip_prefix(h).ok()) {
                let rel = rel.to_string_lossy();
                for home_form in ["~", "$HOME", "${HOME}"] {
                    push(format!("{home_form}/{rel}"), i, prefix);
                }
            }
            for root in roots {
                if let Ok(rel) = e.path.strip_prefix(root)
                    && rel.components().any(|c| c.as_os_str() == "toolgate")
                {
                    push(rel.to_string_lossy().into_owned(), i, prefix);
                }
            }
            if prefix && let Some(name) = e.path.file_name() {
                push(name.to_string_lossy().into_owned(), i, true);
            }
        }
        let ac = (!patterns.is_empty())
            .then(|| AhoCorasick::new(&patterns).ok())
            .flatten();
        Self { ac, info }
    }

    /// The first spelling found in `text` that stands alone (not part of a
    /// longer name: `/x/data` in `/x/database` is not one).
    pub(super) fn find(&self, entries: &[Entry], text: &str) -> Option<Refusal> {
        let ac = self.ac.as_ref()?;
        let bytes = text.as_bytes();
        for m in ac.find_overlapping_iter(text) {
            let info = &self.info[m.pattern().as_usize()];
            let before_ok = m.start() == 0 || !is_name_byte(bytes[m.start() - 1]);
            let after_ok = info.prefix || bytes.get(m.end()).is_none_or(|b| !is_name_byte(*b));
            if before_ok && after_ok {
                let e = &entries[info.entry];
                return Some(Refusal::Mention {
                    found: text[m.start()..m.end()].to_owned(),
                    what: e.place.what(),
                    protected: e.path.clone(),
                });
            }
        }
        None
    }
}

/// Characters that can continue a file name.
fn is_name_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-')
}

/// Where a path-like token in free text ends: whitespace, quotes and the
/// shell's operators, and `=`/`:`/`,` (`--config=/x`, `PATH=/a:/b`, JSON
/// arrays).
pub(super) fn is_separator(c: char) -> bool {
    c.is_whitespace()
        || matches!(
            c,
            '\'' | '"'
                | '`'
                | ';'
                | '|'
                | '&'
                | '<'
                | '>'
                | '('
                | ')'
                | '='
                | ':'
                | ','
                | '['
                | ']'
        )
}
