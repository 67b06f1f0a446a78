//! The exact-name rule: a query that spells out a tool's name puts that tool
//! first (`named_tools` in `benches/search/eval.py`).
//!
//! A tool counts as named when the query contains, as one identifier (a
//! maximal match of `[A-Za-z0-9][A-Za-z0-9_-]*[A-Za-z0-9]`, compared
//! case-insensitively), its upstream name or its exposed name, and that name
//! has at least two [`words`]: `jira_get_issue`, `get-sum` and
//! `API-post-search` count, plain words such as "fetch" or "click" do not.

use crate::Document;
use crate::analysis::words;
use std::collections::HashMap;
use std::mem::size_of;

/// Lowercased multi-word names → the tools that have them.
#[derive(Debug, Default)]
pub(crate) struct Names {
    tools: HashMap<Box<str>, Vec<u32>>,
}

impl Names {
    pub(crate) fn build(docs: &[Document]) -> Names {
        let mut tools: HashMap<Box<str>, Vec<u32>> = HashMap::new();
        for (d, doc) in docs.iter().enumerate() {
            if words(&doc.name).len() < 2 {
                continue;
            }
            for name in [&doc.name, &doc.exposed] {
                let list = tools.entry(name.to_lowercase().into_boxed_str()).or_default();
                if list.last() != Some(&(d as u32)) {
                    list.push(d as u32);
                }
            }
        }
        for list in tools.values_mut() {
            list.shrink_to_fit();
        }
        tools.shrink_to_fit();
        Names { tools }
    }

    /// The tools that `query` names, in no particular order, possibly repeated.
    pub(crate) fn named<'a>(&'a self, query: &'a str) -> impl Iterator<Item = u32> + 'a {
        identifiers(query)
            .filter_map(|id| self.tools.get(id.to_ascii_lowercase().as_str()))
            .flat_map(|list| list.iter().copied())
    }

    pub(crate) fn heap_bytes(&self) -> usize {
        let entries: usize = self.tools.iter().map(|(k, v)| k.len() + v.capacity() * size_of::<u32>()).sum();
        entries + self.tools.capacity() * (size_of::<(Box<str>, Vec<u32>)>() + 1)
    }
}

/// The matches of `[A-Za-z0-9][A-Za-z0-9_-]*[A-Za-z0-9]` in `text`, left to
/// right: each maximal run of ASCII letters, digits, `_` and `-`, less its
/// leading and trailing `_` and `-`, when two characters or more remain.
fn identifiers(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '-'))
        .map(|run| run.trim_matches(|c| c == '_' || c == '-'))
        .filter(|id| id.len() >= 2)
}

#[cfg(test)]
mod tests;
