//! The words of a tool definition or a query, as the index counts them.
//!
//! Tool names are identifiers (`github__create_issue`, `listPullRequests`,
//! `get-file-contents`), which an English tokenizer keeps whole: a query
//! for "create issue" would never meet them. So identifiers are split into
//! their words first (snake_case, kebab-case, camelCase, the `server__tool`
//! prefix), and only then does bm25's English tokenizer lower-case, drop
//! stop words and stem ("issues" and "issue" meet).
//!
//! A query is also widened by a small table of the words tools use for the
//! same action or thing ("remove" for "delete", "folder" for "directory",
//! "bug" for "issue"), added at half the weight of the words typed, so a
//! tool described in other words is still found and an exact match still
//! ranks first. BM25 alone ranks only shared words; the table is what lets
//! "open a bug report" reach `create_issue`.

use bm25::{DefaultTokenizer, Language, Tokenizer};

/// Each word's stems, by the word (see `Terms::word`).
type StemCache = std::collections::HashMap<String, Vec<String>, foldhash::fast::RandomState>;

/// Whether a camelCase word starts at `i`: a capital after a lower-case
/// letter or digit, or the last capital of a run followed by lower case
/// (`parseHTMLPage`: the `P`), inside a word that itself starts in lower
/// case. A word that starts with a capital is a name (`GitHub`,
/// `PostgreSQL`, `YouTube`) and stays whole: split, "GitHub" would read as
/// the git server's name.
fn starts_word(chars: &[char], i: usize) -> bool {
    let (prev, c) = (chars[i - 1], chars[i]);
    if !c.is_uppercase() || !word_start(chars, i).is_lowercase() {
        return false;
    }
    if prev.is_lowercase() || prev.is_ascii_digit() {
        return true;
    }
    prev.is_uppercase() && chars.get(i + 1).is_some_and(|n| n.is_lowercase())
}

/// The first character of the run of letters and digits `i` is in.
fn word_start(chars: &[char], i: usize) -> char {
    let mut at = i;
    while at > 0 && chars[at - 1].is_alphanumeric() {
        at -= 1;
    }
    chars[at]
}

/// The byte ranges of the words in `text`: split at anything but letters
/// and digits (`create_issue`, `get-file-contents`, `github__x`), and at
/// camelCase boundaries inside a word that starts in lower case
/// (`listPullRequests`, `parseHTMLPage`); a capitalised name (`GitHub`)
/// stays whole.
pub fn word_spans(text: &str) -> Vec<std::ops::Range<usize>> {
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    let plain: Vec<char> = chars.iter().map(|(_, c)| *c).collect();
    let mut spans = Vec::new();
    let mut start: Option<usize> = None;
    for (i, &(at, c)) in chars.iter().enumerate() {
        let word = c.is_alphanumeric();
        if let Some(s) = start
            && (!word || (i > 0 && starts_word(&plain, i)))
        {
            spans.push(s..at);
            start = None;
        }
        if word && start.is_none() {
            start = Some(at);
        }
    }
    if let Some(s) = start {
        spans.push(s..text.len());
    }
    spans
}

/// Words that name the same action or thing in tool definitions, each
/// group read both ways. Kept short on purpose: a word in two groups would
/// pull unrelated tools together.
const SYNONYMS: &[&[&str]] = &[
    // Actions.
    &[
        "create", "add", "new", "make", "open", "insert", "post", "register",
    ],
    &[
        "delete", "remove", "erase", "drop", "destroy", "trash", "purge",
    ],
    &["list", "show", "enumerate", "browse", "all"],
    &[
        "get", "fetch", "read", "retrieve", "load", "view", "download", "obtain",
    ],
    &[
        "update", "edit", "modify", "change", "patch", "set", "alter", "adjust", "rename",
    ],
    &[
        "search", "find", "query", "lookup", "look", "locate", "discover",
    ],
    &["send", "deliver", "dispatch", "notify"],
    &["draft", "compose", "prepare"],
    &["copy", "duplicate", "clone", "fork"],
    &["move", "relocate", "transfer"],
    &[
        "run", "execute", "exec", "invoke", "launch", "start", "trigger",
    ],
    &["stop", "kill", "terminate", "cancel", "halt", "abort"],
    &["write", "save", "store", "put", "upload", "persist"],
    &["deploy", "release", "publish"],
    &["summary", "summarize", "overview"],
    // Things.
    &["directory", "folder", "dir"],
    &["file", "document", "doc"],
    &["issue", "bug", "ticket", "defect"],
    &["pull", "pr", "merge"],
    &["repository", "repo"],
    &["commit", "revision"],
    &["history", "log", "logs"],
    &["email", "mail", "inbox"],
    &["message", "dm", "sms"],
    &["chat", "channel", "conversation"],
    &["page", "website", "site", "url", "web", "webpage"],
    &["image", "picture", "photo", "screenshot"],
    &["database", "db", "sql", "table"],
    &["time", "clock", "date", "timezone"],
    &["weather", "forecast"],
    &["user", "member", "person", "people", "account", "profile"],
    &["comment", "reply", "note"],
    &[
        "calendar",
        "event",
        "meeting",
        "appointment",
        "schedule",
        "booking",
    ],
    &[
        "location",
        "place",
        "address",
        "coordinates",
        "latitude",
        "longitude",
        "geocode",
    ],
    &["elevation", "altitude", "height"],
    &["dialog", "popup", "alert", "modal", "prompt"],
    &["network", "request", "traffic", "http"],
    &["theme", "dark", "appearance", "color", "colour"],
    &["money", "balance", "funds"],
    &["payment", "pay", "checkout", "charge"],
    &["secret", "vault", "credential", "password"],
    &["relationship", "relation", "link", "connection"],
    &["permission", "role", "privilege"],
    &["error", "exception", "crash"],
    &["translate", "translation", "language"],
];

/// The base form of a past form of a verb tools are described with,
/// which the stemmer leaves alone ("sent" never meets "send").
fn base_form(stem: &str) -> Option<&'static str> {
    Some(match stem {
        "sent" => "send",
        "made" => "make",
        "found" => "find",
        "got" => "get",
        "gotten" => "get",
        "ran" => "run",
        "wrote" => "write",
        "written" => "write",
        "built" => "build",
        "began" => "begin",
        "begun" => "begin",
        "took" => "take",
        "taken" => "take",
        "gave" => "give",
        "given" => "give",
        "kept" => "keep",
        "left" => "leave",
        "paid" => "pay",
        "sold" => "sell",
        "bought" => "buy",
        "told" => "tell",
        "brought" => "bring",
        "chose" => "choose",
        "chosen" => "choose",
        "lost" => "lose",
        "met" => "meet",
        "spent" => "spend",
        "broke" => "break",
        "broken" => "break",
        "forgot" => "forget",
        "forgotten" => "forget",
        "froze" => "freeze",
        "frozen" => "freeze",
        "spoke" => "speak",
        "spoken" => "speak",
        "drove" => "drive",
        "driven" => "drive",
        "threw" => "throw",
        "thrown" => "throw",
        "knew" => "know",
        "known" => "know",
        "saw" => "see",
        "seen" => "see",
        "done" => "do",
        "went" => "go",
        "gone" => "go",
        "hid" => "hide",
        "hidden" => "hide",
        "stole" => "steal",
        "stolen" => "steal",
        "won" => "win",
        _ => return None,
    })
}

/// bm25's English tokenizer over identifiers split into words.
#[derive(Debug)]
pub struct Terms {
    english: DefaultTokenizer,
    /// Each synonym's stem with the stems of its group, built once.
    groups: Vec<Vec<String>>,
    /// Each word's stems, as stemmed before: tool definitions repeat a
    /// small vocabulary, and stemming was most of the cost of indexing.
    /// Bounded: emptied when it reaches [`CACHED_WORDS`].
    cache: std::sync::Mutex<StemCache>,
}

/// Words whose stems [`Terms`] remembers at most (a few MB).
const CACHED_WORDS: usize = 50_000;

impl Default for Terms {
    fn default() -> Self {
        let english = DefaultTokenizer::new(Language::English);
        let groups = SYNONYMS
            .iter()
            .map(|g| {
                let mut stems: Vec<String> = g
                    .iter()
                    .flat_map(|w| english.tokenize(w))
                    .collect::<Vec<_>>();
                stems.dedup();
                stems
            })
            .collect();
        Self {
            english,
            groups,
            cache: std::sync::Mutex::default(),
        }
    }
}

impl Terms {
    /// The stems a query matches: its own and their synonyms'.
    pub fn matching(&self, query: &str) -> std::collections::HashSet<String> {
        self.query(query).into_iter().collect()
    }

    /// `text` cut into runs that match one of `stems` or not: what a host
    /// marks, without stemming anything itself.
    pub fn marks(&self, stems: &std::collections::HashSet<String>, text: &str) -> Vec<Marked> {
        let mut out: Vec<Marked> = Vec::new();
        let mut at = 0;
        let mut cache = self.cache();
        for span in word_spans(text) {
            let word = &text[span.clone()];
            if self
                .word(&mut cache, word)
                .iter()
                .any(|s| stems.contains(s))
            {
                push(&mut out, &text[at..span.start], false);
                push(&mut out, word, true);
                at = span.end;
            }
        }
        push(&mut out, &text[at..], false);
        out
    }

    /// The stems of `text`, identifiers split, in order.
    pub fn stems(&self, text: &str) -> Vec<String> {
        let mut cache = self.cache();
        let mut out = Vec::new();
        for span in word_spans(text) {
            out.extend_from_slice(self.word(&mut cache, &text[span]));
        }
        out
    }

    /// One word's stems (none for a stop word), remembered.
    fn word<'c>(&self, cache: &'c mut StemCache, word: &str) -> &'c [String] {
        if !cache.contains_key(word) {
            if cache.len() >= CACHED_WORDS {
                cache.clear();
            }
            let mut stems = self.english.tokenize(word);
            for stem in &mut stems {
                if let Some(base) = base_form(stem) {
                    *stem = base.to_owned();
                }
            }
            cache.insert(word.to_owned(), stems);
        }
        cache.get(word).map_or(&[], Vec::as_slice)
    }

    fn cache(&self) -> std::sync::MutexGuard<'_, StemCache> {
        self.cache
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The stems a query searches for: its own twice (their weight), then
    /// each word of their synonym groups once, so a synonym counts half
    /// as much as a word the query used.
    pub fn query(&self, text: &str) -> Vec<String> {
        let own = self.stems(text);
        let mut out: Vec<String> = own.iter().chain(own.iter()).cloned().collect();
        for stem in &own {
            for group in self.groups.iter().filter(|g| g.contains(stem)) {
                out.extend(group.iter().filter(|s| !own.contains(s)).cloned());
            }
        }
        out
    }
}

/// A run of text, matched by the search or not.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, ts_rs::TS)]
pub struct Marked {
    /// The text.
    pub text: String,
    /// Whether it is a word the search matched.
    pub hit: bool,
}

/// Appends `text`, joining it to the last run when both are hits or both
/// are not (so `create_issue` reads as one marked run, not three).
fn push(out: &mut Vec<Marked>, text: &str, hit: bool) {
    if text.is_empty() {
        return;
    }
    match out.last_mut() {
        Some(last) if last.hit == hit => last.text.push_str(text),
        _ => out.push(Marked {
            text: text.to_owned(),
            hit,
        }),
    }
}

/// The tokenizer the index hands to bm25: its text is stems already
/// (made by [`Terms`]), joined by spaces, so a stem is never stemmed twice.
#[derive(Debug, Default, Clone, Copy)]
pub struct Stems;

impl Tokenizer for Stems {
    fn tokenize(&self, input_text: &str) -> Vec<String> {
        input_text
            .split(' ')
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(text: &str) -> Vec<&str> {
        word_spans(text).into_iter().map(|r| &text[r]).collect()
    }

    #[test]
    fn identifiers_split_on_case_underscores_and_the_server_prefix() {
        assert_eq!(words("github__create_issue"), ["github", "create", "issue"]);
        assert_eq!(words("listPullRequests"), ["list", "Pull", "Requests"]);
        assert_eq!(words("parseHTMLPage s3"), ["parse", "HTML", "Page", "s3"]);
        assert_eq!(words("GitHub PostgreSQL"), ["GitHub", "PostgreSQL"]);
        assert_eq!(words("get-file-contents"), ["get", "file", "contents"]);
        assert_eq!(words("plain words."), ["plain", "words"]);
    }

    #[test]
    fn marks_cut_the_text_at_the_matched_words_and_keep_every_byte() {
        let t = Terms::default();
        let stems = t.matching("create issues");
        let marks = t.marks(&stems, "github__createIssue: Create a new issue.");
        let text: String = marks.iter().map(|m| m.text.as_str()).collect();
        assert_eq!(text, "github__createIssue: Create a new issue.");
        let hits: Vec<&str> = marks
            .iter()
            .filter(|m| m.hit)
            .map(|m| m.text.as_str())
            .collect();
        // "new" is marked as well: the search counts it as a synonym of "create".
        assert_eq!(hits, ["createIssue", "Create", "new", "issue"]);
        // A synonym the search used is marked too.
        let marks = t.marks(&t.matching("bug"), "Open an issue");
        assert!(
            marks.iter().any(|m| m.hit && m.text == "issue"),
            "{marks:?}"
        );
    }

    #[test]
    fn stems_meet_across_plural_case_and_past_forms() {
        let t = Terms::default();
        assert_eq!(t.stems("emails sent"), t.stems("email send"));
        assert_eq!(t.stems("Issues"), t.stems("issue"));
        assert_eq!(t.stems("createIssue"), t.stems("create the issue"));
    }

    #[test]
    fn a_query_counts_its_own_words_twice_and_synonyms_once() {
        let t = Terms::default();
        let q = t.query("bug");
        let bug = &t.stems("bug")[0];
        let issue = &t.stems("issue")[0];
        assert_eq!(q.iter().filter(|s| *s == bug).count(), 2);
        assert_eq!(q.iter().filter(|s| *s == issue).count(), 1);
    }
}
