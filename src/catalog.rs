//! The merged tool catalog: exposed names, minimal forms and full definitions.
//!
//! A [`Catalog`] is an immutable snapshot built from every upstream's tool
//! list; the gateway swaps in a new one whenever a list changes. Building does
//! all the work once: naming (prefixes, collisions), the minimal and full form
//! of every tool, and the `tools/list` result served downstream, so serving a
//! request is a lookup. Upstream tool objects stay [`Value`]s end to end, so no
//! field an upstream sends is ever lost.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use serde_json::value::RawValue;
use serde_json::{Map, Value, json};

use crate::concerns::{Declared, Mapping};
use crate::config::{ConcernValues, DisclosureConfig, Mode, UpstreamConfig};
pub use fetch_limits::{FetchLimits, MAX_REQUESTED_NAME, escaped_len};

mod arguments;
mod extras;
mod fetch_limits;
mod filter;
mod forms;
mod naming;
mod summary;

#[cfg(test)]
mod tests;

/// The catalog entries of `tools` served by an upstream configured as
/// `config` (its JSON form; `command` added), as the gateway builds them:
/// for the tests of what reads entries.
#[cfg(test)]
pub(crate) fn test_entries(mut config: Value, tools: Vec<Value>) -> Vec<Arc<ToolEntry>> {
    config["command"] = serde_json::json!("server");
    let config: UpstreamConfig = serde_json::from_value(config).expect("a valid upstream");
    let extras = HashMap::new();
    let catalog =
        Catalog::build(&[UpstreamTools { config: &config, tools: &tools, extras: &extras }], &Default::default());
    catalog.tools().cloned().collect()
}

pub use arguments::{Arguments, CompiledSlot, InvalidArguments, SchemaError, validator_for};
pub use extras::{EXTRA_KEYS, Extras, load_extras_dir};
pub use naming::{MAX_NAME_CHARS, name_problem, natural_name};
pub use summary::minimal_description;

/// One upstream's contribution to a catalog.
#[derive(Debug, Clone, Copy)]
pub struct UpstreamTools<'a> {
    /// The upstream's configuration.
    pub config: &'a UpstreamConfig,
    /// Its full `Tool` objects, in the upstream's order.
    pub tools: &'a [Value],
    /// Extras from its `descriptions_dir`, keyed by upstream tool name.
    pub extras: &'a HashMap<String, Extras>,
}

/// One exposed tool.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolEntry {
    /// Index of the upstream in the slice given to [`Catalog::build`], which is
    /// `config.upstreams` order.
    pub upstream: usize,
    /// The upstream's own name for the tool (what `tools/call` sends upstream).
    pub original: String,
    /// The name clients see.
    pub exposed: String,
    /// The name it has unless a collision renamed it (`<prefix>__<tool>`):
    /// client policies match both (see [`crate::auth::ToolPolicy`]).
    pub natural: String,
    /// How the tool is presented (and whether calls are gated).
    pub mode: Mode,
    /// The full definition: every upstream field, `name` set to the exposed
    /// name, plus extras (progressive tools only).
    pub full: Value,
    /// What `tools/list` shows: the minimal form for progressive tools, the
    /// renamed upstream object for passthrough tools.
    pub minimal: Value,
    /// Hash of `full`; stable within a process, changes with the definition.
    pub fingerprint: u64,
    /// The digest of the upstream's definition as served (`sha256:` of its
    /// canonical JSON, as in the lockfile): what the audit trail names.
    pub digest: Arc<str>,
    /// Its concern values (see [`crate::concerns`]), also in `full`'s
    /// `_meta.concerns`.
    pub concerns: Mapping,
    /// Whether its calls' arguments are checked against `full`'s
    /// `inputSchema` ([`Arguments`]), as configured when the catalog was
    /// built (`validate_arguments`).
    pub validate_arguments: bool,
    /// The compiled schema its last checked call used ([`Arguments`]).
    pub compiled: CompiledSlot,
}

/// An immutable snapshot of every exposed tool.
#[derive(Debug, Clone)]
pub struct Catalog {
    entries: Vec<Arc<ToolEntry>>,
    /// foldhash: looked up on every call (see Cargo.toml).
    index: foldhash::HashMap<String, usize>,
    list_result: Value,
    list_result_raw: Arc<RawValue>,
    /// Every tool in its renamed upstream form, made on first use (only a
    /// gateway without the disclosure layer serves it, and then it is the
    /// same list as `list_result`).
    forwarded: std::sync::OnceLock<Arc<RawValue>>,
    problems: Vec<String>,
    has_progressive: bool,
    describe_tool: Option<String>,
    /// Bounds on a description fetch from this catalog.
    fetch_limits: FetchLimits,
}

impl Default for Catalog {
    fn default() -> Self {
        Self::empty()
    }
}

impl Catalog {
    /// A catalog without tools (before any upstream has listed its tools).
    pub fn empty() -> Catalog {
        Catalog::assemble(Vec::new(), Vec::new(), false, None, FetchLimits::default())
    }

    /// A catalog of `entries` (in listing order): their index by exposed
    /// name and the served `tools/list` (minimal forms, then the describe
    /// tool when there is one).
    fn assemble(
        entries: Vec<Arc<ToolEntry>>,
        problems: Vec<String>,
        has_progressive: bool,
        describe_tool: Option<String>,
        fetch_limits: FetchLimits,
    ) -> Catalog {
        let index = entries.iter().enumerate().map(|(i, e)| (e.exposed.clone(), i)).collect();
        let mut listed: Vec<_> = entries.iter().map(|e| e.minimal.clone()).collect();
        if let Some(name) = &describe_tool {
            listed.push(describe_tool_definition(name));
        }
        let list_result = json!({ "tools": listed });
        Catalog {
            entries,
            index,
            list_result_raw: raw(&list_result),
            forwarded: Default::default(),
            list_result,
            problems,
            has_progressive,
            describe_tool,
            fetch_limits,
        }
    }

    /// Builds the catalog from every upstream, in `config.upstreams` order.
    ///
    /// `has_progressive` is true when any given upstream is in progressive mode
    /// (even one that lists no tools yet), so the resource and describe tool
    /// do not flicker while an upstream starts.
    pub fn build(upstreams: &[UpstreamTools<'_>], disclosure: &DisclosureConfig) -> Catalog {
        Self::build_with_ids(upstreams, None, disclosure, &Declared::default())
    }

    /// As [`Catalog::build`], where each entry's `upstream` is `ids[i]` for
    /// the tools of `upstreams[i]` rather than `i` (the gateway's upstream
    /// slots, which a reload keeps stable while it removes upstreams), and
    /// each tool has its values of the `concerns` declared.
    pub fn build_with_ids(
        upstreams: &[UpstreamTools<'_>],
        ids: Option<&[usize]>,
        disclosure: &DisclosureConfig,
        concerns: &Declared,
    ) -> Catalog {
        let mut problems = Vec::new();
        // The search listing needs the describe tool (and the descriptions
        // resource) for passthrough tools too.
        let has_progressive = upstreams.iter().any(|u| u.config.mode == Mode::Progressive) || disclosure.may_search();
        let describe_tool = describe_tool_name(disclosure, has_progressive, &mut problems);

        // Every usable upstream tool, in listing order.
        struct Found<'a> {
            upstream: usize,
            tool: &'a Map<String, Value>,
        }
        let mut found: Vec<Found<'_>> = Vec::new();
        let mut candidates = Vec::new();
        for (ui, up) in upstreams.iter().enumerate() {
            let uname = up.config.name.as_str();
            for (ti, tool) in up.tools.iter().enumerate() {
                let Some(obj) = tool.as_object() else {
                    problems.push(format!("upstream `{uname}`: tool #{} is not a JSON object; skipped", ti + 1));
                    continue;
                };
                let Some(original) = obj.get("name").and_then(Value::as_str).filter(|n| !n.is_empty()) else {
                    problems.push(format!("upstream `{uname}`: tool #{} has no name; skipped", ti + 1));
                    continue;
                };
                // A client must not call a tool whose header annotations it
                // cannot honour (2026-07-28, `x-mcp-header`): left out.
                if let Err(why) = crate::upstream::modern::headers::annotations(obj) {
                    problems.push(format!("upstream `{uname}` tool `{original}`: {why}; skipped"));
                    continue;
                }
                candidates.push(naming::Candidate {
                    upstream: uname,
                    original,
                    natural: naming::natural_name(up.config, upstreams.len(), original),
                });
                found.push(Found { upstream: ui, tool: obj });
            }
            report_unknown_names(up, &mut problems);
        }

        let mut reserved = Vec::new();
        if let Some(name) = describe_tool.as_deref() {
            reserved.push(naming::Reserved { name, what: "toolgate's describe tool (disclosure.describe_tool_name)" });
        }
        if disclosure.may_search() {
            let name = disclosure.search_tool_name.as_str();
            reserved.push(naming::Reserved { name, what: "toolgate's search tool (disclosure.search_tool_name)" });
            let name = disclosure.call_tool_name.as_str();
            reserved.push(naming::Reserved { name, what: "toolgate's call tool (disclosure.call_tool_name)" });
        }
        let exposed = naming::assign(&candidates, &reserved, &mut problems);

        let mut entries = Vec::with_capacity(found.len());
        for ((f, c), exposed) in found.iter().zip(&candidates).zip(exposed) {
            if let Some(why) = name_problem(&exposed) {
                problems.push(format!(
                    "upstream `{}` tool `{}`: exposed name `{exposed}` {why}; some LLM clients reject such names",
                    c.upstream, c.original
                ));
            }
            let up = &upstreams[f.upstream];
            let mode = up.config.mode;
            let tool_concerns = up.config.tools.get(c.original).map(|o| &o.concerns);
            let layers: Vec<&ConcernValues> = tool_concerns.into_iter().chain([&up.config.concerns]).collect();
            let mapping = concerns.resolve(&layers, f.tool.get("_meta"));
            let (mut full, minimal) = match mode {
                Mode::Progressive => {
                    let config = up.config.tools.get(c.original);
                    let full = forms::full_form(f.tool, &exposed, config, up.extras.get(c.original));
                    let override_desc = config.and_then(|o| o.description.as_deref());
                    let minimal =
                        forms::minimal_form(f.tool, &exposed, override_desc, disclosure.description_max_chars);
                    (full, minimal)
                }
                Mode::Passthrough => {
                    let full = forms::renamed(f.tool, &exposed);
                    (full.clone(), full)
                }
            };
            if let Some(values) = concerns.values_of(&mapping) {
                forms::set_meta(&mut full, crate::concerns::META_KEY, Value::Object(values));
            }
            let minimal = match mode {
                // A passthrough tool is listed as its full form.
                Mode::Passthrough => full.clone(),
                Mode::Progressive => minimal,
            };
            entries.push(Arc::new(ToolEntry {
                upstream: ids.and_then(|ids| ids.get(f.upstream).copied()).unwrap_or(f.upstream),
                original: c.original.to_owned(),
                natural: c.natural.clone(),
                exposed,
                mode,
                fingerprint: forms::fingerprint(&full),
                digest: Arc::from(crate::lock::digest(f.tool)),
                full,
                minimal,
                concerns: mapping,
                validate_arguments: up.config.validates_arguments(c.original),
                compiled: Default::default(),
            }));
        }
        Catalog::assemble(entries, problems, has_progressive, describe_tool, FetchLimits::from(disclosure))
    }

    /// The tool exposed under `exposed` (never the describe tool).
    pub fn get(&self, exposed: &str) -> Option<&Arc<ToolEntry>> {
        self.index.get(exposed).map(|&i| &self.entries[i])
    }

    /// Every tool, in listing order (the describe tool is not a [`ToolEntry`]).
    pub fn tools(&self) -> impl ExactSizeIterator<Item = &Arc<ToolEntry>> {
        self.entries.iter()
    }

    /// Every exposed tool name, in listing order, without the describe tool.
    pub fn names(&self) -> Vec<&str> {
        self.entries.iter().map(|e| e.exposed.as_str()).collect()
    }

    /// Number of tools (without the describe tool).
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the catalog has no tools.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The `tools/list` result served downstream: `{"tools": [...]}` with the
    /// minimal forms of progressive tools, the renamed upstream objects of
    /// passthrough tools, then the describe tool when it is offered.
    pub fn list_result(&self) -> &Value {
        &self.list_result
    }

    /// [`Catalog::list_result`] already serialized, for serving without a
    /// per-request clone or serialization (for 1,000 tools, cloning the
    /// [`Value`] costs about 0.7 ms and serializing it 0.16 ms in release builds).
    pub fn list_result_raw(&self) -> &Arc<RawValue> {
        &self.list_result_raw
    }

    /// The `tools/list` result of a transparent forwarder: every tool in its
    /// full form, under its exposed name. Without progressive upstreams (the
    /// only case a gateway serves it) it is [`Catalog::list_result_raw`] itself.
    pub fn forwarded_list_raw(&self) -> &Arc<RawValue> {
        if !self.has_progressive {
            return &self.list_result_raw;
        }
        self.forwarded.get_or_init(|| {
            let tools: Vec<Value> = self
                .entries
                .iter()
                .map(|e| match e.mode {
                    Mode::Passthrough => e.minimal.clone(),
                    Mode::Progressive => e.full.clone(),
                })
                .collect();
            raw(&json!({ "tools": tools }))
        })
    }

    /// Human-readable problems found while building (collisions, unusable
    /// names, skipped tools, overrides for unknown tools).
    pub fn problems(&self) -> &[String] {
        &self.problems
    }

    /// Whether disclosure is active: an upstream is in progressive mode, or
    /// the search listing may be shown (it needs the describe tool and the
    /// descriptions resource for every tool).
    pub fn has_progressive(&self) -> bool {
        self.has_progressive
    }

    /// The describe tool's name, when it is enabled and any upstream is
    /// progressive.
    pub fn describe_tool_name(&self) -> Option<&str> {
        self.describe_tool.as_deref()
    }

    /// The bounds on a description fetch (`disclosure.max_tools_per_fetch`,
    /// `disclosure.max_answer_bytes`).
    pub fn fetch_limits(&self) -> &FetchLimits {
        &self.fetch_limits
    }
}

/// `value` serialized once.
fn raw(value: &Value) -> Arc<RawValue> {
    // Serializing a `Value` cannot fail (its keys are strings); `null` is a
    // harmless stand-in that is never reached.
    Arc::from(serde_json::value::to_raw_value(value).unwrap_or_else(|_| RawValue::NULL.to_owned()))
}

/// The describe tool's name if it is offered.
fn describe_tool_name(
    disclosure: &DisclosureConfig,
    has_progressive: bool,
    problems: &mut Vec<String>,
) -> Option<String> {
    if !(disclosure.describe_tool && has_progressive) {
        return None;
    }
    let name = disclosure.describe_tool_name.trim();
    if name.is_empty() {
        problems.push("disclosure.describe_tool_name is empty; the describe tool is not offered".to_owned());
        return None;
    }
    Some(name.to_owned())
}

/// Reports overrides and extras that name no tool of the upstream (likely
/// typos). Skipped while the upstream lists no tools (it may still be starting).
fn report_unknown_names(up: &UpstreamTools<'_>, problems: &mut Vec<String>) {
    if up.tools.is_empty() {
        return;
    }
    let names: HashSet<&str> = up.tools.iter().filter_map(|t| t.get("name").and_then(Value::as_str)).collect();
    let known = |name: &str| names.contains(name);
    let uname = &up.config.name;
    for name in up.config.tools.keys().filter(|n| !known(n)) {
        problems.push(format!("upstream `{uname}`: [upstream.tools.{name}] names no tool of this upstream"));
    }
    let mut orphans: Vec<&String> = up.extras.keys().filter(|n| !known(n)).collect();
    orphans.sort();
    for name in orphans {
        problems
            .push(format!("upstream `{uname}`: descriptions_dir file `{name}.json` names no tool of this upstream"));
    }
}

/// The synthesized describe tool, for clients that cannot read resources.
///
/// It is listed in every `tools/list`, so it is as short as a minimal form:
/// what it does and that it is required (the description), how to call it
/// (the schema: a required array of names). The `initialize` instructions,
/// the resource entries and every refusal's hint tell the rest of the
/// workflow. No `title` (clients show the name), and of the annotations only
/// `readOnlyHint`, which clients use to run a tool without asking
/// (`idempotentHint` means nothing for a read-only tool).
pub fn describe_tool_definition(name: &str) -> Value {
    json!({
        "name": name,
        "description": "Get the parameters of tools you picked from tools/list; required before calling them.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "tools": {"type": "array", "items": {"type": "string"}, "description": "Exact tool names"}
            },
            "required": ["tools"]
        },
        "annotations": {"readOnlyHint": true}
    })
}
