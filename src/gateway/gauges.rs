//! What the gateway shows on its metrics' gauges: its live state, read at
//! scrape time ([`LiveState`]), and the token counts of each catalog it
//! builds ([`count_catalog`]).

use std::sync::Arc;

use super::{CatalogView, Gateway};
use crate::config::Mode;
use crate::metrics::{CatalogCounts, Live, LiveState, LiveUpstream};
use crate::tokens::projection_tokens;

impl LiveState for Gateway {
    fn live(&self) -> Live {
        let sessions = self.sessions().sessions();
        let upstreams = self.upstreams();
        let mut connections: Vec<i64> = upstreams.iter().map(|u| i64::from(u.control().is_some())).collect();
        for s in &sessions {
            for (index, _) in s.state.live_connections() {
                if let Some(n) = connections.get_mut(index) {
                    *n += 1;
                }
            }
        }
        Live {
            sessions: sessions.iter().map(|s| Arc::from(s.state.client_name())).collect(),
            listening: self.listeners().len(),
            upstreams: upstreams
                .iter()
                .zip(connections)
                // Slots a reload retired are no upstream any more.
                .filter(|(u, _)| !u.is_retired())
                .map(|(u, connections)| LiveUpstream { name: u.label.clone(), up: u.control().is_some(), connections })
                .collect(),
        }
    }
}

/// Has the metrics count `view`'s tokens (when they are served), on a
/// blocking thread.
pub(super) fn count_catalog(gateway: &Gateway, view: &Arc<CatalogView>) {
    let counted = view.clone();
    gateway.metrics().catalog_changed(view.epoch, move |upstreams| counts(&counted, upstreams));
}

/// The counts of a catalog of `upstreams` upstreams.
pub(crate) fn counts(view: &CatalogView, upstreams: usize) -> CatalogCounts {
    let mut counts = CatalogCounts {
        tools: vec![0; upstreams],
        full: vec![0; upstreams],
        served: vec![0; upstreams],
        describe_tool: 0,
    };
    for entry in view.catalog.tools() {
        let u = entry.upstream;
        if u >= upstreams {
            continue;
        }
        let full = projection_tokens(&entry.full) as i64;
        // A passthrough tool is served as the upstream lists it.
        let served = match entry.mode {
            Mode::Passthrough => full,
            Mode::Progressive => projection_tokens(&entry.minimal) as i64,
        };
        counts.tools[u] += 1;
        counts.full[u] += full;
        counts.served[u] += served;
    }
    if let Some(name) = view.catalog.describe_tool_name() {
        counts.describe_tool = projection_tokens(&crate::disclosure::describe_tool_definition(name)) as i64;
    }
    counts
}

#[cfg(test)]
mod tests;
