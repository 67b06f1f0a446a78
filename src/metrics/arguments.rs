//! `toolgate_argument_errors_total{upstream, tool}`: calls refused because
//! their arguments do not match the tool's `inputSchema`. Such refusals are
//! rare and concern few tools, so this is the one series labelled by tool;
//! at most [`MAX_TOOL_SERIES`] (upstream, tool) pairs get series of their
//! own, later ones count as tool `other`.

use std::collections::HashSet;
use std::sync::Arc;

use parking_lot::Mutex;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::registry::Registry;

use super::labels::{Label, Labels};

/// Most (upstream, tool) pairs with series of their own.
pub const MAX_TOOL_SERIES: usize = 1000;

/// The tool label of pairs past [`MAX_TOOL_SERIES`].
const OTHER: &str = "other";

/// Argument errors by upstream and tool.
pub struct ArgumentErrors {
    family: Family<Labels<2>, Counter>,
    /// The pairs that have series of their own.
    named: Mutex<HashSet<(Arc<str>, Arc<str>)>>,
}

impl ArgumentErrors {
    pub fn register(registry: &mut Registry) -> Self {
        let family = Family::<Labels<2>, Counter>::default();
        registry.register(
            "toolgate_argument_errors",
            "Tool calls refused because their arguments do not match the tool's inputSchema, by upstream and tool \
             (the upstream's own tool name)",
            family.clone(),
        );
        Self { family, named: Mutex::new(HashSet::new()) }
    }

    /// Counts a refused call to `tool` of `upstream`.
    pub fn count(&self, upstream: &Arc<str>, tool: &str) {
        let tool = {
            let mut named = self.named.lock();
            let pair = (upstream.clone(), Arc::from(tool));
            if named.contains(&pair) || named.len() < MAX_TOOL_SERIES {
                let label = Label::Name(pair.1.clone());
                named.insert(pair);
                label
            } else {
                Label::Static(OTHER)
            }
        };
        self.family.get_or_create(&[("upstream", Label::Name(upstream.clone())), ("tool", tool)]).inc();
    }
}
