//! A catalog narrowed to the tools one client may see ([`Catalog::visible`]).
//!
//! Filtering happens after naming: a client sees every tool it may use under
//! the same exposed name as everyone else (a hidden tool never frees its name
//! or changes a collision suffix), and its `tools/list`, descriptions,
//! completions and calls all resolve through the narrowed catalog, so a
//! hidden tool is unknown everywhere.

use std::collections::HashMap;

use serde_json::json;

use super::{Catalog, ToolEntry, raw};
use crate::disclosure;

impl Catalog {
    /// The catalog without the tools `keep` refuses. toolgate's describe tool
    /// stays (it describes only what the narrowed catalog holds); build
    /// problems are the full catalog's and are not repeated.
    pub fn visible(&self, keep: impl Fn(&ToolEntry) -> bool) -> Catalog {
        let entries: Vec<_> = self.entries.iter().filter(|e| keep(e)).cloned().collect();
        let index: HashMap<String, usize> = entries.iter().enumerate().map(|(i, e)| (e.exposed.clone(), i)).collect();
        let mut listed: Vec<_> = entries.iter().map(|e| e.minimal.clone()).collect();
        if let Some(name) = &self.describe_tool {
            listed.push(disclosure::describe_tool_definition(name));
        }
        let list_result = json!({ "tools": listed });
        Catalog {
            entries,
            index,
            list_result_raw: raw(&list_result),
            forwarded: Default::default(),
            list_result,
            problems: Vec::new(),
            has_progressive: self.has_progressive,
            describe_tool: self.describe_tool.clone(),
            fetch_limits: self.fetch_limits,
        }
    }
}

#[cfg(test)]
mod tests;
