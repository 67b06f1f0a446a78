//! The token counts the gateway's metrics show of each catalog it builds
//! ([`count_catalog`]); its live state, read at scrape time, is the
//! gateway's own ([`LiveState`](crate::metrics::LiveState)).

use std::sync::Arc;

use super::CatalogView;
use crate::config::Mode;
use crate::metrics::{CatalogCounts, Metrics};
use crate::tokens::projection_tokens;

/// Has the metrics count `view`'s tokens (when they are served), on a
/// blocking thread.
pub(super) fn count_catalog(metrics: &Metrics, view: &Arc<CatalogView>) {
    let counted = view.clone();
    metrics.catalog_changed(view.epoch, move |upstreams| counts(&counted, upstreams));
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
