//! The catalog's size and token cost per upstream: the full definitions
//! against what `tools/list` serves. Tokens are counted as `toolgate
//! tokens` counts them (o200k_base, the model projection of each tool: name,
//! description, input schema), once per catalog change and on a blocking
//! thread: loading the tokenizer takes a fraction of a second the first time,
//! and a large catalog takes milliseconds to count.

use std::sync::Arc;

use parking_lot::Mutex;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

use super::labels::{Label, Labels};
use crate::config::Mode;
use crate::gateway::CatalogView;
use crate::tokens::projection_tokens;

/// The catalog gauges, per upstream.
#[derive(Debug)]
pub struct CatalogGauges {
    tools: Box<[Gauge]>,
    full: Box<[Gauge]>,
    served: Box<[Gauge]>,
    describe_tool: Gauge,
    /// The epoch of the catalog the gauges show (a slow count of an older
    /// catalog must not overwrite a newer one's).
    shown: Mutex<Option<u64>>,
}

/// One catalog's counts.
#[derive(Debug, Default, PartialEq)]
pub struct Counts {
    pub tools: Vec<i64>,
    pub full: Vec<i64>,
    pub served: Vec<i64>,
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
        let upstream = |u: &Arc<str>| ("upstream", Label::Name(u.clone()));
        let form = |f: &'static str| ("form", Label::Static(f));
        Self {
            tools: upstreams.iter().map(|u| tools.get_or_create_owned(&[upstream(u)])).collect(),
            full: upstreams.iter().map(|u| tokens.get_or_create_owned(&[upstream(u), form("full")])).collect(),
            served: upstreams.iter().map(|u| tokens.get_or_create_owned(&[upstream(u), form("served")])).collect(),
            describe_tool,
            shown: Mutex::new(None),
        }
    }

    /// Counts `view` on a blocking thread (outside a runtime: not at all).
    pub fn count_later(self: &Arc<Self>, view: Arc<CatalogView>) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else { return };
        let gauges = self.clone();
        runtime.spawn_blocking(move || gauges.count(&view));
    }

    /// Counts `view` and shows the counts, unless a newer catalog's are shown.
    pub fn count(&self, view: &CatalogView) {
        let counts = counts(view, self.tools.len());
        let mut shown = self.shown.lock();
        if shown.is_some_and(|epoch| epoch > view.epoch) {
            return;
        }
        for (gauges, values) in
            [(&self.tools, &counts.tools), (&self.full, &counts.full), (&self.served, &counts.served)]
        {
            for (gauge, value) in gauges.iter().zip(values) {
                gauge.set(*value);
            }
        }
        self.describe_tool.set(counts.describe_tool);
        *shown = Some(view.epoch);
    }
}

/// The counts of a catalog of `upstreams` upstreams.
pub fn counts(view: &CatalogView, upstreams: usize) -> Counts {
    let mut counts =
        Counts { tools: vec![0; upstreams], full: vec![0; upstreams], served: vec![0; upstreams], describe_tool: 0 };
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
