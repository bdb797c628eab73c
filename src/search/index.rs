//! The BM25 index over the registry's tools.
//!
//! It follows the registry rather than being rebuilt per query (PraisonAI
//! rebuilds its catalog on every assembly): each search first compares the
//! registry's version with the one it indexed, and when they differ it
//! embeds only the tools that came, changed (a new `Arc` in the snapshot)
//! or went. A search with no change in between costs no indexing at all.
//!
//! A tool's document weighs its fields by repeating them: the tool's own
//! name three times, its title twice, then its description, its server's
//! name and its parameters' names and descriptions once each. BM25
//! saturates repeated terms, so a word of the name outranks the same word
//! deep in a long description without drowning it.
//!
//! BM25 needs the corpus's average document length (`avgdl`), which bm25
//! bakes into each document's embedding. It is tracked as tools come and
//! go, and when it drifts more than a quarter from the value the
//! embeddings were made with, every document is embedded again from its
//! stored stems (no re-tokenising): rare, and never on a query without a
//! change.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::Value;

use super::postings::Postings;
use super::terms::Terms;
use super::weights;
use crate::registry::{RegisteredTool, Registry};
use crate::tool::{Source, ToolName};

/// One tool found by a search.
#[derive(Debug, Clone)]
pub struct Hit {
    /// The tool.
    pub tool: Arc<RegisteredTool>,
    /// Its BM25 score (0 for a substring match).
    pub score: f32,
}

/// The index. Cheap to share behind an `Arc`; searches lock it briefly.
#[derive(Debug, Default)]
pub struct ToolIndex {
    terms: Terms,
    state: Mutex<State>,
}

struct State {
    /// The registry version indexed, `None` before the first sync.
    version: Option<u64>,
    /// The average document length the stored weights were made with.
    avgdl: f32,
    postings: Postings<Arc<RegisteredTool>>,
    docs: HashMap<ToolName, Doc, foldhash::fast::RandomState>,
    /// Sum of every document's stem count, for the true `avgdl`.
    total_len: usize,
}

struct Doc {
    tool: Arc<RegisteredTool>,
    /// The document's stems, kept to weigh it again.
    stems: Vec<String>,
}

impl std::fmt::Debug for State {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("State")
            .field("version", &self.version)
            .field("docs", &self.docs.len())
            .finish_non_exhaustive()
    }
}

/// `avgdl` before any tool is indexed: a typical tool's stem count.
const FIRST_AVGDL: f32 = 40.0;
/// Relative drift of the true `avgdl` that re-embeds every document.
const AVGDL_DRIFT: f32 = 0.25;

impl Default for State {
    fn default() -> Self {
        Self {
            version: None,
            avgdl: FIRST_AVGDL,
            postings: Postings::default(),
            docs: HashMap::default(),
            total_len: 0,
        }
    }
}

impl ToolIndex {
    /// An empty index.
    pub fn new() -> Self {
        Self::default()
    }

    /// Brings the index up to the registry's current tools.
    pub fn sync(&self, registry: &Registry) {
        let version = registry.version();
        let mut st = self.lock();
        if st.version == Some(version) {
            return;
        }
        let snap = registry.snapshot();
        let gone: Vec<ToolName> = st
            .docs
            .keys()
            .filter(|n| snap.get(n.as_str()).is_none())
            .cloned()
            .collect();
        for name in gone {
            st.remove(&name);
        }
        // New and changed tools are read first and counted into `avgdl`
        // before anything is weighed, so a first build weighs each tool
        // once rather than again when the average moves.
        let fresh: Vec<(Arc<RegisteredTool>, Vec<String>)> = snap
            .iter()
            .filter(|t| {
                !st.docs
                    .get(&t.def.name)
                    .is_some_and(|d| Arc::ptr_eq(&d.tool, t))
            })
            .map(|t| (t.clone(), self.document(t)))
            .collect();
        for (tool, _) in &fresh {
            st.remove(&tool.def.name);
        }
        let fresh_len: usize = fresh.iter().map(|(_, stems)| stems.len()).sum();
        st.refit(fresh.len(), fresh_len);
        for (tool, stems) in fresh {
            st.add(tool, stems);
        }
        st.version = Some(version);
    }

    /// The tools matching `query`, best first, at most `limit`, among
    /// those `keep` accepts. BM25 first; when it finds nothing, tools
    /// whose name (then description) contains the query as typed, as
    /// PraisonAI falls back to substrings.
    pub fn search(
        &self,
        query: &str,
        limit: usize,
        keep: impl Fn(&RegisteredTool) -> bool,
    ) -> Vec<Hit> {
        let st = self.lock();
        let stems = self.terms.query(query);
        let mut hits: Vec<Hit> = if stems.is_empty() {
            Vec::new()
        } else {
            let q = weights::embed(&stems, st.avgdl);
            let mut scored: Vec<(&Arc<RegisteredTool>, f32)> = st
                .postings
                .scores(&q)
                .into_iter()
                .filter(|(tool, _)| keep(tool))
                .collect();
            best(&mut scored, limit);
            scored
                .into_iter()
                .map(|(tool, score)| Hit {
                    tool: tool.clone(),
                    score,
                })
                .collect()
        };
        if hits.is_empty() {
            hits = st.substring(query, &keep);
        }
        best(&mut hits, limit);
        hits
    }

    /// The stems `query` matches (its own and their synonyms').
    pub fn matching(&self, query: &str) -> std::collections::HashSet<String> {
        self.terms.matching(query)
    }

    /// `text` cut at the words matching `stems` (see [`Self::matching`]).
    pub fn marks(
        &self,
        stems: &std::collections::HashSet<String>,
        text: &str,
    ) -> Vec<super::terms::Marked> {
        self.terms.marks(stems, text)
    }

    /// The stems the index holds for tool `name`, joined by spaces: what
    /// a bench feeds other scorers to compare them on the same text.
    pub fn document_text(&self, name: &str) -> Option<String> {
        self.lock().docs.get(name).map(|d| d.stems.join(" "))
    }

    /// The stems a search for `query` looks for, weighted by repetition
    /// (its own words twice, their synonyms once), joined by spaces.
    pub fn query_text(&self, query: &str) -> String {
        self.terms.query(query).join(" ")
    }

    /// Number of tools indexed.
    pub fn len(&self) -> usize {
        self.lock().docs.len()
    }

    /// Whether no tool is indexed.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A tool's document as stems, its fields weighted by repetition.
    fn document(&self, tool: &RegisteredTool) -> Vec<String> {
        let def = &tool.def;
        // An upstream tool's registry name carries its server's (as
        // `<server>__<tool>`); the server is weighed once, below.
        let (own_name, server) = match &def.source {
            Source::Mcp(server) => (
                def.name
                    .as_str()
                    .split_once("__")
                    .map_or(def.name.as_str(), |(_, t)| t),
                &**server,
            ),
            Source::Plugin(n) | Source::Agent(n) => (def.name.as_str(), &**n),
            Source::Builtin => (def.name.as_str(), ""),
        };
        let mut stems = Vec::new();
        let name = self.terms.stems(own_name);
        for _ in 0..3 {
            stems.extend(name.iter().cloned());
        }
        if let Some(title) = &def.annotations.title {
            let title = self.terms.stems(title);
            stems.extend(title.iter().cloned());
            stems.extend(title);
        }
        stems.extend(self.terms.stems(&def.description));
        stems.extend(self.terms.stems(server));
        if let Some(Value::Object(props)) = def.input_schema.get("properties") {
            for (param, schema) in props {
                stems.extend(self.terms.stems(param));
                if let Some(Value::String(d)) = schema.get("description") {
                    stems.extend(self.terms.stems(d));
                }
            }
        }
        stems
    }
}

impl State {
    /// Indexes a tool that is not indexed now (`sync` removes a changed
    /// tool first, to count its length out of `avgdl` before weighing).
    fn add(&mut self, tool: Arc<RegisteredTool>, stems: Vec<String>) {
        let name = tool.def.name.clone();
        debug_assert!(!self.docs.contains_key(&name), "{name} is indexed already");
        self.postings
            .upsert(&name, tool.clone(), &weights::embed(&stems, self.avgdl));
        self.total_len += stems.len();
        self.docs.insert(name, Doc { tool, stems });
    }

    fn remove(&mut self, name: &ToolName) {
        if let Some(doc) = self.docs.remove(name) {
            self.postings.remove(name);
            self.total_len -= doc.stems.len();
        }
    }

    /// Weighs every stored document again when the true `avgdl`, counting
    /// `more` documents of `more_len` stems about to be added, has drifted
    /// from the one their weights were made with.
    fn refit(&mut self, more: usize, more_len: usize) {
        let docs = self.docs.len() + more;
        if docs == 0 {
            return;
        }
        let truth = (self.total_len + more_len) as f32 / docs as f32;
        let used = self.avgdl;
        if (truth - used).abs() <= used * AVGDL_DRIFT {
            return;
        }
        self.avgdl = truth.max(1.0);
        let mut postings = Postings::default();
        for (name, doc) in &self.docs {
            postings.upsert(
                name,
                doc.tool.clone(),
                &weights::embed(&doc.stems, self.avgdl),
            );
        }
        self.postings = postings;
    }

    fn substring(&self, query: &str, keep: &impl Fn(&RegisteredTool) -> bool) -> Vec<Hit> {
        let q = query.trim().to_lowercase();
        if q.is_empty() {
            return Vec::new();
        }
        let by = |field: fn(&RegisteredTool) -> String| {
            self.docs
                .values()
                .filter(|d| keep(&d.tool) && field(&d.tool).contains(&q))
                .map(|d| Hit {
                    tool: d.tool.clone(),
                    score: 0.0,
                })
                .collect::<Vec<_>>()
        };
        let names = by(|t| t.def.name.as_str().to_lowercase());
        if names.is_empty() {
            by(|t| t.def.description.to_lowercase())
        } else {
            names
        }
    }
}

/// Something ranked: a tool and its score.
trait Ranked {
    fn score(&self) -> f32;
    fn name(&self) -> &str;
}

impl Ranked for Hit {
    fn score(&self) -> f32 {
        self.score
    }
    fn name(&self) -> &str {
        self.tool.def.name.as_str()
    }
}

impl Ranked for (&Arc<RegisteredTool>, f32) {
    fn score(&self) -> f32 {
        self.1
    }
    fn name(&self) -> &str {
        self.0.def.name.as_str()
    }
}

/// Keeps the best `limit` of `items`, best first. Equal scores are ordered
/// by name, so a search reads the same every time (the postings' order of
/// ties is a hash order). Only the best are sorted: a common word matches
/// thousands of tools.
fn best<R: Ranked>(items: &mut Vec<R>, limit: usize) {
    let order = |a: &R, b: &R| {
        b.score()
            .total_cmp(&a.score())
            .then_with(|| a.name().cmp(b.name()))
    };
    if limit == 0 {
        items.clear();
        return;
    }
    if items.len() > limit {
        items.select_nth_unstable_by(limit - 1, order);
        items.truncate(limit);
    }
    items.sort_by(order);
}
