//! The demo upstream (`toolgate demo-upstream`): an in-memory project tracker
//! and knowledge base for a five-person team.
//!
//! It exists to make progressive disclosure visible: its twelve tools carry
//! the long, careful definitions real servers have (several paragraphs of
//! guidance, detailed input schemas, output schemas, annotations), so the
//! full `tools/list` is several thousand tokens while the minimal form is a
//! few hundred. The tools really work, on seeded data held in memory for the
//! life of the process, and refuse bad input with messages a model can act
//! on. Resources and prompts are there so their passthrough can be shown.
//!
//! Everything is deterministic: "today" is fixed ([`model::TODAY`]) and
//! timestamps come from a logical clock.

use std::sync::Arc;

use parking_lot::Mutex;

use crate::kit::{Registry, ServerInfo};

pub mod model;
mod prompts;
mod resources;
mod seed;
mod tools;

const INSTRUCTIONS: &str = "\
Project tracker and knowledge base for a five-person product team (projects ATLAS, BEACON, CEDAR; DUNE is \
archived). Start with list_projects or summarize_project for an overview, search_issues to find work, and \
search_notes for how the team works. Search before creating issues to avoid duplicates, and prefer cancelling \
(update_issue) over delete_issue. Dates are YYYY-MM-DD; people are referred to by handle (list_team_members).";

/// A fresh demo registry with its own seeded state.
pub fn registry() -> Arc<Registry> {
    let state = Arc::new(Mutex::new(seed::tracker()));
    let mut info = ServerInfo::new("toolgate-demo-tracker", env!("CARGO_PKG_VERSION"));
    info.title = Some("Team tracker (toolgate demo)".into());
    info.instructions = Some(INSTRUCTIONS.into());
    info.logger = Some("tracker".into());
    let registry = tools::all(&state).into_iter().fold(Registry::new(info), Registry::with_tool);
    let registry = resources::register(registry, &state);
    Arc::new(prompts::register(registry, &state))
}

#[cfg(test)]
mod tests;
