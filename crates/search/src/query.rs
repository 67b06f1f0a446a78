//! Query handling for long requests (`segments` in `benches/search/eval.py`):
//! a request of several steps is also ranked clause by clause, and lines of
//! pasted data are left out.
//!
//! Why: one ranking of a whole long request favours the tools that match its
//! most frequent words, so a request of two steps finds the tools of one, and
//! a request with a log or a JSON record pasted under it finds tools that
//! match the data. On held-out tasks with data pasted under them, this took
//! recall@10 from 53% to 75% and recall@1 from 19% to 48%; on requests of
//! two steps, the share with a tool of each step in the first ten from 43%
//! to 50% (`benches/search/README.md`, "Held out"). A one-sentence request
//! is ranked as before.
//!
//! The prototype keeps a clause's closing punctuation and splits lines as
//! Python's `splitlines`; neither changes the words that are ranked, except
//! for the rare line separators other than `\n` and `\r\n`.

use regex::Regex;
use std::sync::OnceLock;

/// At most this many clauses are ranked on their own; later ones count only
/// in the whole request (a bound on the cost of a search: one ranking each).
pub(crate) const MAX_CLAUSES: usize = 16;

/// A request as it is ranked: the whole (without its data lines) and, when it
/// has several, its clauses.
#[derive(Debug, PartialEq)]
pub(crate) struct Segments {
    /// The request, less the lines that read as pasted data.
    pub(crate) whole: String,
    /// Its clauses when it has two or more (none otherwise), at most [`MAX_CLAUSES`].
    pub(crate) clauses: Vec<String>,
}

/// Where a line splits into clauses: after sentence punctuation, and at the
/// words that join steps ("then", "and then", "after that", "also", ...).
fn splitter() -> &'static Regex {
    static SPLIT: OnceLock<Regex> = OnceLock::new();
    SPLIT.get_or_init(|| {
        Regex::new(r"(?i)[.!?;:]\s+|,?\s+(?:and\s+then|and\s+also|then|after\s+that|afterwards|also|finally)\s+")
            .expect("a valid pattern")
    })
}

/// The request's lines, less those that read as pasted data ([`data_like`])
/// unless every line does; each line split into clauses, a clause of fewer
/// than 3 words joined to the next (the last to the one before).
pub(crate) fn segments(query: &str) -> Segments {
    let mut lines: Vec<&str> = query.lines().filter(|l| !l.trim().is_empty()).collect();
    let mut whole = query.to_string();
    let natural: Vec<&str> = lines.iter().copied().filter(|l| !data_like(l)).collect();
    if !natural.is_empty() && natural.len() < lines.len() {
        whole = natural.join(" ");
        lines = natural;
    }
    let mut clauses: Vec<String> = Vec::new();
    let mut carry = String::new();
    for part in lines.iter().flat_map(|line| splitter().split(line.trim())) {
        let part = if carry.is_empty() { part.trim().to_string() } else { format!("{carry} {}", part.trim()) };
        let part = part.trim().to_string();
        if part.split_whitespace().count() < 3 {
            carry = part;
            continue;
        }
        clauses.push(part);
        carry.clear();
    }
    if let Some(last) = clauses.last_mut()
        && !carry.is_empty()
    {
        last.push(' ');
        last.push_str(&carry);
    }
    if clauses.len() < 2 {
        clauses.clear();
    }
    clauses.truncate(MAX_CLAUSES);
    Segments { whole, clauses }
}

/// Whether a line reads as pasted data rather than words: under 60% of its
/// whitespace-separated tokens are plain words (letters, with an inner `'` or
/// `-`, surrounding punctuation ignored), or over 8% of its characters are
/// symbols (neither letters, digits, spaces nor `.,;:!?'-`). JSON, CSV, log
/// lines and stack traces are; a sentence with an identifier or two is not.
pub(crate) fn data_like(line: &str) -> bool {
    let tokens: Vec<&str> = line.split_whitespace().collect();
    let plain = tokens.iter().filter(|t| plain_word(t.trim_matches(|c: char| ".,;:!?()[]{}\"'".contains(c)))).count();
    let chars = line.chars().count();
    let symbols =
        line.chars().filter(|&c| !(c.is_alphanumeric() || c.is_whitespace() || ".,;:!?'-".contains(c))).count();
    (plain as f64) < 0.6 * tokens.len() as f64 || symbols as f64 > 0.08 * chars as f64
}

/// Letters only, an inner `'` or `-` allowed between two letters.
fn plain_word(token: &str) -> bool {
    let chars: Vec<char> = token.chars().collect();
    !chars.is_empty()
        && chars.iter().enumerate().all(|(i, &c)| {
            c.is_alphabetic()
                || ((c == '\'' || c == '-')
                    && i > 0
                    && chars.get(i + 1).is_some_and(|n| n.is_alphabetic())
                    && chars[i - 1].is_alphabetic())
        })
}

#[cfg(test)]
mod tests;
