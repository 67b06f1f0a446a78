//! The catalog's size and token cost per upstream: the full definitions
//! against what `tools/list` serves. The gateway counts them (as `toolgate
//! tokens` does: o200k_base, the model projection of each tool), once per
//! catalog change and on a blocking thread: loading the tokenizer takes a
//! fraction of a second the first time, and a large catalog takes
//! milliseconds to count. These gauges show the newest catalog's counts.

use std::sync::Arc;

use parking_lot::Mutex;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

use super::labels::{Label, Labels};

/// The catalog gauges, per upstream. A series appears once its catalog is
/// counted, not before: a scrape right after start (the count takes a
/// moment) finds no series rather than a zero that reads as an empty
/// catalog.
#[derive(Debug)]
pub struct CatalogGauges {
    upstreams: Box<[Arc<str>]>,
    tools: Family<Labels<1>, Gauge>,
    tokens: Family<Labels<2>, Gauge>,
    describe_tool: Gauge,
    /// The epoch of the catalog the gauges show (a slow count of an older
    /// catalog must not overwrite a newer one's).
    shown: Mutex<Option<u64>>,
}

/// One catalog's counts, by upstream index.
#[derive(Debug, Default, PartialEq)]
pub struct CatalogCounts {
    /// Tools listed.
    pub tools: Vec<i64>,
    /// Tokens of the full definitions.
    pub full: Vec<i64>,
    /// Tokens of what `tools/list` serves.
    pub served: Vec<i64>,
    /// Tokens of the `describe_tools` tool (0 without it).
    pub describe_tool: i64,
}

impl CatalogGauges {
    pub fn register(registry: &mut Registry, upstreams: &[Arc<str>]) -> Self {
        let tools = Family::<Labels<1>, Gauge>::default();
        registry.register("toolgate_catalog_tools", "Tools the catalog lists, by upstream", tools.clone());
        let tokens = Family::<Labels<2>, Gauge>::default();
        registry.register(
            "toolgate_catalog_tokens",
            "Tokens (o200k_base) of the upstream's tool definitions as a model reads them (name, description, \
             input schema): form=full as the upstream lists them, form=served as toolgate's tools/list serves them",
            tokens.clone(),
        );
        let describe_tool = Gauge::default();
        registry.register(
            "toolgate_catalog_describe_tool_tokens",
            "Tokens (o200k_base) of the describe_tools tool toolgate adds to tools/list (0 without it)",
            describe_tool.clone(),
        );
        Self { upstreams: upstreams.into(), tools, tokens, describe_tool, shown: Mutex::new(None) }
    }

    /// Runs `count` (the counts of the catalog of `epoch`) on a blocking
    /// thread and shows them (outside a runtime: not at all).
    pub fn count_later(self: &Arc<Self>, epoch: u64, count: impl FnOnce(usize) -> CatalogCounts + Send + 'static) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else { return };
        let gauges = self.clone();
        // Counting tokens runs after a catalog change, outside any request.
        #[allow(clippy::disallowed_methods)]
        runtime.spawn_blocking(move || gauges.show(epoch, &count(gauges.upstreams.len())));
    }

    /// Shows the counts of the catalog of `epoch`, unless a newer catalog's
    /// are shown.
    pub fn show(&self, epoch: u64, counts: &CatalogCounts) {
        let mut shown = self.shown.lock();
        if shown.is_some_and(|newer| newer > epoch) {
            return;
        }
        let upstream = |u: &Arc<str>| ("upstream", Label::Name(u.clone()));
        let form = |f: &'static str| ("form", Label::Static(f));
        for (u, (tools, (full, served))) in
            self.upstreams.iter().zip(counts.tools.iter().zip(counts.full.iter().zip(&counts.served)))
        {
            self.tools.get_or_create(&[upstream(u)]).set(*tools);
            self.tokens.get_or_create(&[upstream(u), form("full")]).set(*full);
            self.tokens.get_or_create(&[upstream(u), form("served")]).set(*served);
        }
        self.describe_tool.set(counts.describe_tool);
        *shown = Some(epoch);
    }
}
