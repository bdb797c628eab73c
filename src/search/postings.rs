//! BM25 scoring over an inverted index of the documents' term weights.
//!
//! bm25 makes the weights (its `Embedder`: tokens to per-document BM25
//! term weights); its own `Scorer` is not used because it scores every
//! document that shares any term with the query by scanning that
//! document's whole embedding once per query term. With the synonyms a
//! query is widened by, on 10,000 tools a query touched most documents and
//! took milliseconds (docs/architecture/decisions.md, "Tool search ranks
//! with bm25's weights and its own postings"). Here each term keeps the
//! list of documents holding it with their weight, and a query adds up
//! only those lists: its cost is the length of its terms' lists.

use std::collections::HashMap;

use foldhash::fast::RandomState;

use bm25::Embedding;

use crate::tool::ToolName;

/// The index proper: term → documents holding it, with their weights.
/// Each document carries a `T` (the tool), handed back with its score so a
/// query looks nothing up by name.
#[derive(Debug)]
pub(super) struct Postings<T> {
    by_term: HashMap<u32, Vec<(u32, f32)>, RandomState>,
    /// Each slot's document and distinct terms; `None` once freed.
    slots: Vec<Option<(T, Vec<u32>)>>,
    free: Vec<u32>,
    by_name: HashMap<ToolName, u32, RandomState>,
}

impl<T> Default for Postings<T> {
    fn default() -> Self {
        Self {
            by_term: HashMap::default(),
            slots: Vec::new(),
            free: Vec::new(),
            by_name: HashMap::default(),
        }
    }
}

impl<T> Postings<T> {
    /// Indexes `name` (carrying `doc`) with `embedding`'s weights,
    /// replacing what it had.
    pub(super) fn upsert(&mut self, name: &ToolName, doc: T, embedding: &Embedding<u32>) {
        self.remove(name);
        let mut terms: Vec<(u32, f32)> = embedding.iter().map(|t| (t.index, t.value)).collect();
        // The embedding repeats a term once per occurrence, each with the
        // same weight: one posting per term.
        terms.sort_by_key(|t| t.0);
        terms.dedup_by_key(|t| t.0);
        let slot = self.free.pop().unwrap_or_else(|| {
            self.slots.push(None);
            u32::try_from(self.slots.len() - 1).unwrap_or(u32::MAX)
        });
        for (term, weight) in &terms {
            self.by_term.entry(*term).or_default().push((slot, *weight));
        }
        let ids = terms.into_iter().map(|t| t.0).collect();
        self.slots[slot as usize] = Some((doc, ids));
        self.by_name.insert(name.clone(), slot);
    }

    /// Forgets `name`.
    pub(super) fn remove(&mut self, name: &ToolName) {
        let Some(slot) = self.by_name.remove(name) else {
            return;
        };
        if let Some((_, terms)) = self.slots[slot as usize].take() {
            for term in terms {
                if let Some(list) = self.by_term.get_mut(&term) {
                    list.retain(|(s, _)| *s != slot);
                    if list.is_empty() {
                        self.by_term.remove(&term);
                    }
                }
            }
        }
        self.free.push(slot);
    }

    /// Every document sharing a term with `query` and its BM25 score: the
    /// sum over the query's terms (a repeated term counts again) of the
    /// term's IDF times the document's weight for it.
    pub(super) fn scores(&self, query: &Embedding<u32>) -> Vec<(&T, f32)> {
        let docs = self.by_name.len() as f32;
        let mut acc = vec![0f32; self.slots.len()];
        let mut touched = Vec::new();
        for term in query.indices() {
            let Some(list) = self.by_term.get(term) else {
                continue;
            };
            let df = list.len() as f32;
            let idf = (1.0 + (docs - df + 0.5) / (df + 0.5)).ln();
            for (slot, weight) in list {
                let a = &mut acc[*slot as usize];
                if *a == 0.0 {
                    touched.push(*slot);
                }
                *a += idf * weight;
            }
        }
        touched
            .into_iter()
            .filter_map(|slot| {
                let (doc, _) = self.slots[slot as usize].as_ref()?;
                Some((doc, acc[slot as usize]))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use bm25::{EmbedderBuilder, Scorer};

    use super::*;
    use crate::search::terms::Stems;

    fn name(s: &str) -> ToolName {
        ToolName::new(s).unwrap()
    }

    #[test]
    fn scores_are_the_ones_bm25s_own_scorer_gives() {
        let embedder = EmbedderBuilder::<u32, Stems>::with_avgdl(4.0).build();
        let docs = [
            ("a", "creat issu repo repo"),
            ("b", "list pull request repo"),
            ("c", "send messag channel"),
            ("d", "creat pull request"),
        ];
        let mut ours = Postings::<String>::default();
        let mut theirs = Scorer::<ToolName, u32>::new();
        for (n, text) in docs {
            ours.upsert(&name(n), n.to_owned(), &embedder.embed(text));
            theirs.upsert(&name(n), embedder.embed(text));
        }
        for q in ["creat repo", "pull request pull", "messag", "nothing here"] {
            let query = embedder.embed(q);
            let mut mine: Vec<(String, f32)> = ours
                .scores(&query)
                .into_iter()
                .map(|(n, s)| (n.to_string(), s))
                .collect();
            mine.sort_by(|a, b| a.0.cmp(&b.0));
            let mut want: Vec<(String, f32)> = theirs
                .matches(&query)
                .into_iter()
                .map(|m| (m.id.to_string(), m.score))
                .collect();
            want.sort_by(|a, b| a.0.cmp(&b.0));
            assert_eq!(mine.len(), want.len(), "{q}");
            for ((n1, s1), (n2, s2)) in mine.iter().zip(&want) {
                assert_eq!(n1, n2);
                assert!((s1 - s2).abs() < 1e-4, "{q}: {n1} {s1} vs {s2}");
            }
        }
    }

    #[test]
    fn a_removed_or_replaced_document_leaves_no_posting_behind() {
        let embedder = EmbedderBuilder::<u32, Stems>::with_avgdl(3.0).build();
        let mut p = Postings::<()>::default();
        p.upsert(&name("a"), (), &embedder.embed("creat issu"));
        p.upsert(&name("b"), (), &embedder.embed("creat pull"));
        p.upsert(&name("a"), (), &embedder.embed("send messag"));
        assert!(p.scores(&embedder.embed("issu")).is_empty());
        assert_eq!(p.scores(&embedder.embed("messag")).len(), 1);
        p.remove(&name("b"));
        assert!(p.scores(&embedder.embed("creat")).is_empty());
        // The freed slot is used again.
        p.upsert(&name("c"), (), &embedder.embed("creat"));
        assert_eq!(p.slots.len(), 2);
    }
}
