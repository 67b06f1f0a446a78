//! Measuring a catalog: the upstream definitions against what toolgate serves.

use std::collections::HashMap;

use serde_json::Value;

use super::count::{count_json, count_text};
use super::projection::{list_json_tokens, projection_tokens};
use super::report::{Added, Section, SessionCost, ToolTokens, Totals, UpstreamReport, saving_percent};
use crate::catalog::{Catalog, Extras, UpstreamTools};
use crate::config::{DisclosureConfig, UpstreamConfig};
use crate::disclosure;

/// How many fetched tools the typical sessions assume.
pub const SESSION_FETCHES: [usize; 3] = [1, 2, 5];

/// One upstream's catalog, however it was obtained (a live crawl or a stored
/// file).
#[derive(Debug, Clone)]
pub struct UpstreamInput {
    /// Its configuration (name, mode, prefix, per-tool overrides).
    pub config: UpstreamConfig,
    /// Its complete `tools/list`, or why it could not be listed.
    pub tools: Result<Vec<Value>, String>,
    /// Its `serverInfo`, when known.
    pub server_info: Option<Value>,
    /// Its package name, when known.
    pub package: Option<String>,
    /// Its package version, when known.
    pub version: Option<String>,
    /// Extras from its `descriptions_dir`, keyed by upstream tool name.
    pub extras: HashMap<String, Extras>,
}

/// Measures the catalog toolgate builds from `inputs` with `disclosure`:
/// per tool the full and minimal projections and the cost of fetching it, per
/// upstream the sums, what toolgate adds, and the typical sessions.
/// `source` names what was measured in the report.
pub fn measure(source: &str, disclosure: &DisclosureConfig, inputs: &[UpstreamInput]) -> Section {
    let views: Vec<UpstreamTools<'_>> = inputs
        .iter()
        .map(|i| UpstreamTools { config: &i.config, tools: i.tools.as_deref().unwrap_or(&[]), extras: &i.extras })
        .collect();
    let catalog = Catalog::build(&views, disclosure);

    let mut upstreams: Vec<UpstreamReport> = inputs
        .iter()
        .map(|i| UpstreamReport {
            name: i.config.name.clone(),
            package: i.package.clone(),
            version: i.version.clone(),
            server_info: i.server_info.clone(),
            error: i.tools.as_ref().err().cloned(),
            tools: Vec::new(),
            totals: Totals::default(),
        })
        .collect();
    // Per upstream: the upstream objects renamed as exposed, and the minimal forms.
    let mut full_lists: Vec<Vec<Value>> = vec![Vec::new(); inputs.len()];
    let mut minimal_lists: Vec<Vec<&Value>> = vec![Vec::new(); inputs.len()];
    let originals: Vec<HashMap<&str, &Value>> = views.iter().map(|v| by_name(v.tools)).collect();

    for entry in catalog.tools() {
        let u = entry.upstream;
        upstreams[u].tools.push(ToolTokens {
            name: entry.exposed.clone(),
            full: projection_tokens(&entry.full),
            minimal: projection_tokens(&entry.minimal),
            fetch: fetch_tokens(&catalog, &entry.exposed),
        });
        if let Some(original) = originals[u].get(entry.original.as_str()) {
            let mut renamed = (*original).clone();
            renamed["name"] = Value::String(entry.exposed.clone());
            full_lists[u].push(renamed);
        }
        minimal_lists[u].push(&entry.minimal);
    }

    let mut totals = Totals::default();
    for (u, report) in upstreams.iter_mut().enumerate() {
        if report.error.is_some() {
            continue;
        }
        let full: usize = report.tools.iter().map(|t| t.full).sum();
        let minimal: usize = report.tools.iter().map(|t| t.minimal).sum();
        report.totals = Totals {
            tools: report.tools.len(),
            full,
            minimal,
            saving_percent: saving_percent(full, minimal),
            full_list_json: list_json_tokens(&full_lists[u]),
            minimal_list_json: list_json_tokens(minimal_lists[u].iter().copied()),
        };
        totals.add(&report.totals);
    }

    let describe = catalog.describe_tool_name();
    let progressive = catalog.has_progressive();
    let added = Added {
        describe_tool: describe.map(|name| projection_tokens(&disclosure::describe_tool_definition(name))),
        resource_entry: progressive.then(|| count_json(&disclosure::resource_entry(describe))),
        template_entry: progressive.then(|| count_json(&disclosure::template_entry(describe))),
    };
    let served_projection = totals.minimal + added.describe_tool.unwrap_or(0);
    let fetches: Vec<usize> = upstreams.iter().flat_map(|u| u.tools.iter().map(|t| t.fetch)).collect();
    let sessions = if progressive {
        sessions(served_projection + added.resource_entry.unwrap_or(0), &fetches, totals.full)
    } else {
        Vec::new()
    };

    Section {
        source: source.to_owned(),
        upstreams,
        totals,
        added,
        served_projection,
        served_list_json: count_json(catalog.list_result()),
        sessions,
        problems: catalog.problems().to_vec(),
    }
}

/// Tools by name (the first of each name wins, as in the catalog).
fn by_name(tools: &[Value]) -> HashMap<&str, &Value> {
    let mut map = HashMap::with_capacity(tools.len());
    for tool in tools {
        if let Some(name) = tool.get("name").and_then(Value::as_str) {
            map.entry(name).or_insert(tool);
        }
    }
    map
}

/// The tokens a model reads when it fetches `name` alone: the text of the
/// `resources/read` result (the `describe_tools` result carries the same
/// text).
fn fetch_tokens(catalog: &Catalog, name: &str) -> usize {
    let names = [name.to_owned()];
    let described = disclosure::describe(catalog, &names);
    let result = disclosure::read_result(&disclosure::selection_uri(&names), &described.body);
    let text = result["contents"][0]["text"].as_str().unwrap_or_default();
    count_text(text)
}

/// Sessions that start from `base` tokens (the served list and the resource
/// entry) and fetch N tools, one read each, for each N of [`SESSION_FETCHES`]
/// that the catalog has enough tools for.
fn sessions(base: usize, fetches: &[usize], baseline: usize) -> Vec<SessionCost> {
    if fetches.is_empty() {
        return Vec::new();
    }
    let mean = fetches.iter().sum::<usize>() as f64 / fetches.len() as f64;
    let mut largest = fetches.to_vec();
    largest.sort_unstable_by(|a, b| b.cmp(a));
    SESSION_FETCHES
        .iter()
        .filter(|&&n| n <= fetches.len())
        .map(|&n| {
            let typical = base + (mean * n as f64).round() as usize;
            SessionCost {
                fetched: n,
                typical,
                worst: base + largest[..n].iter().sum::<usize>(),
                baseline,
                saving_percent: saving_percent(baseline, typical),
            }
        })
        .collect()
}
