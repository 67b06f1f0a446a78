//! The catalog's token counts agree with `toolgate tokens`.

use std::collections::HashMap;

use serde_json::{Value, json};

use super::counts;
use crate::catalog::{Catalog, UpstreamTools};
use crate::config::{DisclosureConfig, UpstreamConfig};
use crate::gateway::CatalogView;

fn upstream(name: &str, mode: &str) -> UpstreamConfig {
    serde_json::from_value(json!({"name": name, "command": "x", "mode": mode})).unwrap()
}

fn tool(name: &str) -> Value {
    json!({
        "name": name,
        "description": "Searches the issue tracker for issues matching a query. Supports filters for state, labels, \
                        assignee and milestone, and sorts by any field; results are paged.",
        "inputSchema": {"type": "object", "properties": {
            "query": {"type": "string", "description": "Free text, matched against titles and bodies"},
            "state": {"type": "string", "enum": ["open", "closed", "all"]},
            "page": {"type": "integer", "minimum": 1}
        }, "required": ["query"]}
    })
}

#[test]
fn catalog_counts_compare_full_and_served_per_upstream() {
    let (a, b) = (upstream("alpha", "progressive"), upstream("beta", "passthrough"));
    let (tools_a, tools_b) = (vec![tool("search"), tool("find")], vec![tool("list")]);
    let extras = HashMap::new();
    let inputs = [
        UpstreamTools { config: &a, tools: &tools_a, extras: &extras },
        UpstreamTools { config: &b, tools: &tools_b, extras: &extras },
    ];
    let view = CatalogView { catalog: Catalog::build(&inputs, &DisclosureConfig::default()), epoch: 5 };
    let counted = counts(&view, 2);
    let (full_a, served_a) = (counted.full[0], counted.served[0]);
    assert!(served_a > 0 && served_a < full_a / 2, "progressive saves: {served_a} of {full_a}");
    assert_eq!(counted.full[1], counted.served[1], "a passthrough tool is served whole");
    assert_eq!(counted.tools, vec![2, 1]);
    assert!(counted.describe_tool > 0);

    // The figures are the ones `toolgate tokens` reports for the same
    // upstreams (both: with two, tool names are prefixed).
    let input = |config: &UpstreamConfig, tools: &Vec<Value>| crate::tokens::UpstreamInput {
        config: config.clone(),
        tools: Ok(tools.clone()),
        server_info: None,
        package: None,
        version: None,
        extras: HashMap::new(),
    };
    let measured =
        crate::tokens::measure("test", &DisclosureConfig::default(), &[input(&a, &tools_a), input(&b, &tools_b)]);
    assert_eq!(measured.upstreams[0].totals.full as i64, full_a);
    assert_eq!(measured.upstreams[0].totals.minimal as i64, served_a);

    // Upstream indexes past the count are left out, not a panic.
    assert_eq!(counts(&view, 1).tools, vec![2]);
}
