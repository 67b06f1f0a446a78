//! The token report: plain data that serializes to JSON (`--json`) and renders
//! as a table (its `Display`, in [`super::table`]).

use serde::Serialize;
use serde_json::Value;

/// Everything one `toolgate tokens` run measured.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    /// The tokenizer encoding, [`super::ENCODING`].
    pub encoding: &'static str,
    /// What "projection" means, [`super::PROJECTION`].
    pub projection: &'static str,
    /// One section per catalog measured: the configured gateway, or one
    /// stored catalog file.
    pub sections: Vec<Section>,
    /// The sums over every section's tools.
    pub total: Totals,
}

/// One catalog as toolgate would serve it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Section {
    /// What was measured: the config file or the catalog file.
    pub source: String,
    /// Per upstream, in configuration order.
    pub upstreams: Vec<UpstreamReport>,
    /// The sums over this catalog's tools (without what toolgate adds).
    pub totals: Totals,
    /// What toolgate adds to the catalog.
    pub added: Added,
    /// The projection of the whole minimal `tools/list` toolgate serves: every
    /// tool's minimal form plus the describe tool.
    pub served_projection: usize,
    /// The whole served `tools/list` result as compact JSON.
    pub served_list_json: usize,
    /// Typical sessions: the minimal list plus some fetched descriptions.
    pub sessions: Vec<SessionCost>,
    /// Problems the catalog build reported (collisions, skipped tools).
    pub problems: Vec<String>,
}

/// One upstream's tools.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct UpstreamReport {
    /// The upstream's configured name (or the stored catalog's server name).
    pub name: String,
    /// Its package (`@scope/pkg`, `pkg`), when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub package: Option<String>,
    /// Its package version, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// Its `serverInfo`, when known.
    #[serde(rename = "serverInfo", skip_serializing_if = "Option::is_none")]
    pub server_info: Option<Value>,
    /// Why its tools could not be listed; it then has no tools.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Per tool, in listing order.
    pub tools: Vec<ToolTokens>,
    /// The sums over its tools.
    pub totals: Totals,
}

/// One tool's costs, in tokens.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ToolTokens {
    /// The exposed name.
    pub name: String,
    /// Projection of the full definition (what the model gets without toolgate).
    pub full: usize,
    /// Projection of the form toolgate lists.
    pub minimal: usize,
    /// The text of the `resources/read` result that fetches this tool alone
    /// (its full definition with extras, as the model reads it).
    pub fetch: usize,
}

/// Sums over a set of tools, in tokens.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Totals {
    /// Number of tools.
    pub tools: usize,
    /// Sum of the full projections.
    pub full: usize,
    /// Sum of the minimal projections.
    pub minimal: usize,
    /// `100 × (1 − minimal / full)`, one decimal.
    pub saving_percent: f64,
    /// The whole `tools/list` JSON of the upstream definitions (names as
    /// exposed).
    pub full_list_json: usize,
    /// The whole `tools/list` JSON of the minimal forms (without the describe
    /// tool).
    pub minimal_list_json: usize,
}

impl Totals {
    /// Adds `other`'s sums and recomputes the saving.
    pub fn add(&mut self, other: &Totals) {
        self.tools += other.tools;
        self.full += other.full;
        self.minimal += other.minimal;
        self.full_list_json += other.full_list_json;
        self.minimal_list_json += other.minimal_list_json;
        self.saving_percent = saving_percent(self.full, self.minimal);
    }

    /// `minimal / full` (0 when there is nothing to save).
    pub fn ratio(&self) -> f64 {
        if self.full == 0 { 0.0 } else { self.minimal as f64 / self.full as f64 }
    }
}

/// What toolgate adds, in tokens.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Added {
    /// The projection of the `describe_tools` tool, listed in every
    /// `tools/list` (`None` when it is not offered).
    pub describe_tool: Option<usize>,
    /// The `resources/list` entry of `resource:///tool_descriptions`, as
    /// compact JSON (`None` when no upstream is progressive).
    pub resource_entry: Option<usize>,
    /// The `resources/templates/list` entry, as compact JSON.
    pub template_entry: Option<usize>,
}

/// The cost of a session that fetches some descriptions.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct SessionCost {
    /// How many tools the session fetches (one read each).
    pub fetched: usize,
    /// Served projection + resource entry + `fetched` × the mean single-tool
    /// fetch, rounded.
    pub typical: usize,
    /// The same with the `fetched` most expensive tools.
    pub worst: usize,
    /// The full projection of every tool (the cost without toolgate).
    pub baseline: usize,
    /// `100 × (1 − typical / baseline)`, one decimal; negative when toolgate
    /// costs more.
    pub saving_percent: f64,
}

/// `100 × (1 − minimal / full)`, rounded to one decimal; 0 when `full` is 0.
pub fn saving_percent(full: usize, minimal: usize) -> f64 {
    if full == 0 {
        return 0.0;
    }
    let saving = 100.0 * (1.0 - minimal as f64 / full as f64);
    (saving * 10.0).round() / 10.0
}

impl Report {
    /// A report over `sections`, with the totals summed.
    pub fn new(sections: Vec<Section>) -> Report {
        let mut total = Totals::default();
        for section in &sections {
            total.add(&section.totals);
        }
        Report { encoding: super::ENCODING, projection: super::PROJECTION, sections, total }
    }
}
