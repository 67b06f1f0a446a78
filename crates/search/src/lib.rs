//! Tool search for catalogs of hundreds of tools: given a request in a
//! user's words ("find the tool to do X"), rank the catalog's tools.
//!
//! ```
//! use toolgate_search::{Document, Index};
//! let tool = serde_json::json!({"name": "create_issue", "description": "Create a GitHub issue"});
//! let index = Index::build(vec![Document::from_tool("github__create_issue", "github", &tool)]);
//! let hits = index.search("open a bug report", 5, |_| true);
//! assert_eq!(index.exposed(hits[0].doc), "github__create_issue");
//! ```
//!
//! # The ranking
//!
//! The design `bm25f+static+names` of `benches/search/eval.py`, its settings
//! tuned on the tasks of `benches/search/tasks.jsonl` by a procedure checked
//! on catalogs it never saw (`benches/search/heldout.py`: leave-servers-out
//! and RestBench; its README has the figures and how they were chosen; this
//! crate reproduces them, `cargo bench -p toolgate-search --bench eval`):
//!
//! - **Documents** have five fields: the upstream tool name, the server (its
//!   name plus what it says about itself), the title, the description, and
//!   the parameters (names, descriptions, enum values).
//! - **Analysis** ([`analysis`]): camelCase and acronym boundaries split,
//!   then runs of letters and digits, lowercased (so `snake_case` and
//!   `kebab-case` split); one-character words and Lucene's 33 English
//!   stopwords dropped; Snowball English stemming (`rust-stemmers`).
//! - **BM25F** ([`bm25f`]): k1 1.2; (weight, b) name (2, .75), server
//!   (.5, .75), title (1, .75), description (1, .75), params (.5, .75).
//! - **Static embeddings**: the sum of the rows of a text's WordPiece tokens
//!   in a token → vector table distilled from all-MiniLM-L6-v2 (each token
//!   alone through the model, PCA to 256 dimensions, SIF weights),
//!   L2-normalized; cosine between the query and the tool's text (split
//!   name, server, title, description, parameters). No model runs at query
//!   time: the table (int8, 7.9 MB) and the tokenizer are compiled in
//!   (`data/README.md`: provenance, licence, hashes, `data/distill.py`).
//! - **Fusion**: min-max(BM25F) + 1.5 × min-max(cosine) over the visible
//!   tools; then a tool whose multi-word name (upstream or exposed) the query
//!   spells out goes first; ties by exposed name.
//! - **Long requests**: lines that read as pasted data (JSON, CSV, logs) are
//!   left out, and a request of several clauses (sentences, "then", "also")
//!   adds each tool's best clause's fused score to the whole request's, so
//!   that every step has its chance (one more ranking per clause, at most 16).
//!
//! # Why BM25F is written here
//!
//! BM25F sums a term's weighted, length-normalized frequencies over the
//! fields *before* saturating it, with one IDF over the whole tool. A search
//! library's per-field BM25 summed with field boosts (tantivy's multi-field
//! queries: per-field IDF and saturation) scored MRR 0.48 against 0.59 for
//! true BM25F on the dev tasks, and no well-kept crate implements BM25F; the
//! scoring is a few dozen lines over precomputed postings ([`bm25f`]).
//! Crates do what they are for: `rust-stemmers` stems, `tokenizers` runs the
//! model's own WordPiece `tokenizer.json`.
//!
//! # Cost
//!
//! A search scores every visible tool: the query's postings, then one
//! 256-dimension dot product a tool. Over 10,000 tools (`cargo bench -p
//! toolgate-search --bench speed`) a search takes under a millisecond at the
//! median, a build about 3 s (0.3 ms a tool, mostly analysis and WordPiece),
//! and an index holds about 1.7 KiB a tool ([`Index::heap_bytes`]: the f32
//! vectors are 1 KiB of it). The compiled-in table (7.9 MB) is read in place;
//! the tokenizer is parsed once per process (tens of milliseconds, a few MB).

#![forbid(unsafe_code)]

pub mod analysis;
pub mod bm25f;
mod document;
mod embed;
mod index;
mod names;
mod query;

pub use document::{Document, Param};
pub use embed::{DIMS, MAX_TOKENS};
pub use index::{Hit, Index, STATIC_WEIGHT};
