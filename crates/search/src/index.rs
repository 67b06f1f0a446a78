//! The index of one catalog and its ranking: min-max(BM25F) + 1.5 ×
//! min-max(static cosine) over the visible tools, of the whole request (less
//! its pasted data) plus of its best clause when it has several; then the
//! exact-name rule, ties by exposed name.

use crate::Document;
use crate::bm25f::Bm25f;
use crate::embed::{DIMS, dot, model};
use crate::names::Names;
use crate::query::segments;
use std::cmp::Ordering;
use std::collections::HashMap;
use std::mem::size_of;

/// The weight of the static cosine against BM25F, both min-max normalized
/// (tuned with [`crate::bm25f::FIELDS`]).
pub const STATIC_WEIGHT: f32 = 1.5;

/// The weight of a tool's best clause against the whole request, for
/// requests of several clauses (`crate::query`). Fixed at 1, not tuned: the
/// tasks it was tuned on are mostly one sentence.
const CLAUSE_WEIGHT: f32 = 1.0;

/// A catalog's search index, built once per catalog (it cannot be updated:
/// build a new one). `Send + Sync`: share it behind an `Arc`.
#[derive(Debug)]
pub struct Index {
    /// Each tool's exposed name.
    exposed: Vec<Box<str>>,
    /// Each tool's place in the order of exposed names (the tie-break).
    name_rank: Vec<u32>,
    bm25f: Bm25f,
    /// Each tool's unit vector, `DIMS` floats a tool.
    vectors: Vec<f32>,
    names: Names,
}

/// One result: the tool's position in the documents given to [`Index::build`],
/// and its score (higher is better; comparable within one search only).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Hit {
    /// Index of the tool in the documents the index was built from.
    pub doc: usize,
    /// Its fused score; a tool named by the query scores above every other.
    pub score: f32,
}

impl Index {
    /// Indexes `docs`: analyses the five BM25F fields and embeds each tool's
    /// text. Takes about 0.1 ms a tool; the first index of a process also
    /// reads the compiled-in table and tokenizer (a few tens of ms).
    pub fn build(docs: Vec<Document>) -> Index {
        let model = model();
        let fields: Vec<[String; 5]> = docs.iter().map(Document::fields).collect();
        let bm25f = Bm25f::build(&fields);
        drop(fields);
        let mut vectors = Vec::with_capacity(docs.len() * DIMS);
        let mut pieces = HashMap::new();
        for doc in &docs {
            vectors.extend_from_slice(&model.embed_ids(&model.ids_cached(&doc.rich_text(), &mut pieces)));
        }
        drop(pieces);
        let names = Names::build(&docs);
        let exposed: Vec<Box<str>> = docs.into_iter().map(|d| d.exposed.into_boxed_str()).collect();
        let mut order: Vec<u32> = (0..exposed.len() as u32).collect();
        order.sort_by(|&a, &b| exposed[a as usize].cmp(&exposed[b as usize]).then(a.cmp(&b)));
        let mut name_rank = vec![0u32; exposed.len()];
        for (rank, &d) in order.iter().enumerate() {
            name_rank[d as usize] = rank as u32;
        }
        Index { exposed, name_rank, bm25f, vectors, names }
    }

    /// The best tools for `query`, best first, at most `limit`, only those for
    /// which `visible(doc)` holds; the min-max normalizations are taken over
    /// the visible tools. Equal scores are ordered by exposed name. Any text is
    /// a valid query; one without a known word or token scores every tool 0.
    /// `visible` is called once for each tool, in order.
    pub fn search(&self, query: &str, limit: usize, visible: impl Fn(usize) -> bool) -> Vec<Hit> {
        let shown: Vec<u32> = (0..self.len()).filter(|&d| visible(d)).map(|d| d as u32).collect();
        if limit == 0 || shown.is_empty() {
            return Vec::new();
        }
        let segments = segments(query);
        let mut fused = self.fused(&segments.whole, &shown);
        if !segments.clauses.is_empty() {
            // each tool adds its best clause's score: every step of the request has its chance
            let mut best = vec![f32::NEG_INFINITY; shown.len()];
            for clause in &segments.clauses {
                for (b, s) in best.iter_mut().zip(self.fused(clause, &shown)) {
                    *b = b.max(s);
                }
            }
            for (f, b) in fused.iter_mut().zip(best) {
                *f += CLAUSE_WEIGHT * b;
            }
        }
        let mut scored: Vec<(f32, u32)> = fused.into_iter().zip(shown.iter().copied()).collect();

        let mut named: Vec<u32> = self.names.named(query).collect();
        if !named.is_empty() {
            named.sort_unstable();
            named.dedup();
            let (lo, hi) = bounds(scored.iter().map(|s| s.0));
            let top = hi - lo + 1.0;
            for s in &mut scored {
                if named.binary_search(&s.1).is_ok() {
                    s.0 += top;
                }
            }
        }

        let order = |a: &(f32, u32), b: &(f32, u32)| -> Ordering {
            b.0.total_cmp(&a.0).then(self.name_rank[a.1 as usize].cmp(&self.name_rank[b.1 as usize]))
        };
        if limit < scored.len() {
            scored.select_nth_unstable_by(limit - 1, order);
            scored.truncate(limit);
        }
        scored.sort_unstable_by(order);
        scored.into_iter().map(|(score, d)| Hit { doc: d as usize, score }).collect()
    }

    /// min-max(BM25F) + [`STATIC_WEIGHT`] × min-max(static cosine) of `text`
    /// for each tool of `shown`, in its order.
    fn fused(&self, text: &str, shown: &[u32]) -> Vec<f32> {
        let mut lexical = vec![0f32; self.len()];
        self.bm25f.accumulate(&self.bm25f.query_terms(text), &mut lexical);
        let q = model().embed(text);
        let lexical = min_max(shown.iter().map(|&d| lexical[d as usize]).collect());
        let cosine = min_max(shown.iter().map(|&d| dot(&q, self.vector(d as usize))).collect());
        lexical.iter().zip(&cosine).map(|(l, c)| l + STATIC_WEIGHT * c).collect()
    }

    /// How many tools the index holds.
    pub fn len(&self) -> usize {
        self.exposed.len()
    }

    /// Whether the index holds no tool.
    pub fn is_empty(&self) -> bool {
        self.exposed.is_empty()
    }

    /// The exposed name of tool `doc`.
    ///
    /// # Panics
    ///
    /// When `doc` is not below [`len`](Self::len).
    pub fn exposed(&self, doc: usize) -> &str {
        &self.exposed[doc]
    }

    /// Heap bytes this index holds (postings, term table, vectors, names);
    /// the compiled-in table and tokenizer, shared by every index, are not counted.
    pub fn heap_bytes(&self) -> usize {
        let exposed: usize = self.exposed.iter().map(|e| e.len()).sum();
        exposed
            + self.exposed.capacity() * size_of::<Box<str>>()
            + self.name_rank.capacity() * size_of::<u32>()
            + self.bm25f.heap_bytes()
            + self.vectors.capacity() * size_of::<f32>()
            + self.names.heap_bytes()
    }

    fn vector(&self, doc: usize) -> &[f32] {
        &self.vectors[doc * DIMS..(doc + 1) * DIMS]
    }
}

/// The smallest and largest of `values` (0, 0 when empty).
fn bounds(values: impl Iterator<Item = f32>) -> (f32, f32) {
    values
        .fold(None, |acc, v| match acc {
            None => Some((v, v)),
            Some((lo, hi)) => Some((v.min(lo), v.max(hi))),
        })
        .unwrap_or((0.0, 0.0))
}

/// `(s − min) / (max − min)` for each score, or all 0 when max = min.
fn min_max(mut scores: Vec<f32>) -> Vec<f32> {
    let (lo, hi) = bounds(scores.iter().copied());
    let range = hi - lo;
    for s in &mut scores {
        *s = if range > 0.0 { (*s - lo) / range } else { 0.0 };
    }
    scores
}

#[cfg(test)]
mod tests;
