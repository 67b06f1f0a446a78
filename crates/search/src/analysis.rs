//! Text analysis shared by documents and queries: identifier-aware words,
//! then stopwords, one-character words and Snowball English stemming for the
//! BM25F terms (`words` and `analyze` in `benches/search/eval.py`).

use rust_stemmers::{Algorithm, Stemmer};
use std::sync::OnceLock;

/// Lucene's classic English stop set (33 words), sorted for binary search.
const STOPWORDS: [&str; 33] = [
    "a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into", "is", "it", "no", "not", "of",
    "on", "or", "such", "that", "the", "their", "then", "there", "these", "they", "this", "to", "was", "will", "with",
];

/// Identifier-aware words of `text`, lowercased.
///
/// camelCase and acronym boundaries split (`getUserData` → get user data,
/// `HTTPServer` → http server), then every maximal run of Unicode letters and
/// digits is a word, so `snake_case`, `kebab-case`, `a/b` and `x.y` split too.
/// The boundaries are ASCII only, as the prototype's regular expressions
/// `([a-z0-9])([A-Z])` and `([A-Z]+)([A-Z][a-z])`.
pub fn words(text: &str) -> Vec<String> {
    split_case(text)
        .to_lowercase()
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(String::from)
        .collect()
}

/// `text` with a space at each lower/digit → upper boundary and before the
/// last capital of a run of two or more capitals that a lowercase letter follows.
fn split_case(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len() + 8);
    let mut run = 0; // length of the run of ASCII capitals ending at i (inclusive)
    for (i, &c) in chars.iter().enumerate() {
        let prev = i.checked_sub(1).map(|p| chars[p]);
        let next = chars.get(i + 1).copied();
        if c.is_ascii_uppercase() {
            run += 1;
            let after_lower = prev.is_some_and(|p| p.is_ascii_lowercase() || p.is_ascii_digit());
            // the last capital of a run of at least two, before a lowercase letter
            let acronym_end = run >= 2 && next.is_some_and(|n| n.is_ascii_lowercase());
            if after_lower || acronym_end {
                out.push(' ');
            }
        } else {
            run = 0;
        }
        out.push(c);
    }
    out
}

/// The BM25F terms of `text`: its [`words`] less one-character words and
/// Lucene's 33 English stopwords, each stemmed with Snowball English (Porter2).
pub fn analyze(text: &str) -> Vec<String> {
    let stemmer = stemmer();
    words(text)
        .into_iter()
        .filter(|w| w.chars().nth(1).is_some() && STOPWORDS.binary_search(&w.as_str()).is_err())
        .map(|w| stemmer.stem(&w).into_owned())
        .collect()
}

fn stemmer() -> &'static Stemmer {
    static STEMMER: OnceLock<Stemmer> = OnceLock::new();
    STEMMER.get_or_init(|| Stemmer::create(Algorithm::English))
}

#[cfg(test)]
mod tests;
