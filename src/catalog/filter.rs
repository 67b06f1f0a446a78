//! A catalog narrowed to the tools one client may see ([`Catalog::visible`]).
//!
//! Filtering happens after naming: a client sees every tool it may use under
//! the same exposed name as everyone else (a hidden tool never frees its name
//! or changes a collision suffix), and its `tools/list`, descriptions,
//! completions and calls all resolve through the narrowed catalog, so a
//! hidden tool is unknown everywhere.

use super::{Catalog, ToolEntry};

impl Catalog {
    /// The catalog without the tools `keep` refuses. toolgate's describe tool
    /// stays (it describes only what the narrowed catalog holds); build
    /// problems are the full catalog's and are not repeated.
    pub fn visible(&self, keep: impl Fn(&ToolEntry) -> bool) -> Catalog {
        let entries = self.entries.iter().filter(|e| keep(e)).cloned().collect();
        // Build problems are the full catalog's and are not repeated.
        Catalog::assemble(entries, Vec::new(), self.has_progressive, self.describe_tool.clone(), self.fetch_limits)
    }
}

#[cfg(test)]
mod tests;
