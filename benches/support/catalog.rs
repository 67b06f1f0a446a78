//! A catalog entry as the gateway builds it, for the benchmarks that time
//! what reads one (`limits`, `audit`).

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::{Value, json};
use toolgate::catalog::{Catalog, ToolEntry, UpstreamTools};
use toolgate::config::{DisclosureConfig, UpstreamConfig};

/// The entry of `definition`, the one tool of a progressive upstream named
/// `upstream` (so its exposed name is its own).
pub fn entry(upstream: &str, definition: Value) -> Arc<ToolEntry> {
    let config: UpstreamConfig =
        serde_json::from_value(json!({"name": upstream, "command": "bench"})).expect("a valid upstream");
    let tools = [definition];
    let extras = HashMap::new();
    let upstreams = [UpstreamTools { config: &config, tools: &tools, extras: &extras }];
    let catalog = Catalog::build(&upstreams, &DisclosureConfig::default());
    catalog.tools().next().cloned().expect("the tool is in the catalog")
}
