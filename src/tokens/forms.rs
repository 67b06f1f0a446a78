//! The forms toolgate serves, as a model reads them: for every tool of one
//! catalog, its exposed name and the [model projection](super::projection) of
//! its full definition and of the form `tools/list` serves, with their
//! tokens.
//!
//! `toolgate forms` prints them as JSON. The selection-fidelity evaluation
//! (`benches/fidelity/`) ranks tools by these texts, so the minimal forms it
//! scores are built by the same [`Catalog`] the gateway serves, with its
//! shortening, naming and overrides, never re-implemented.

use std::path::Path;

use serde::Serialize;
use serde_json::Value;

use super::capture::{CatalogFile, CatalogFileError};
use super::count::count_json;
use super::measure::UpstreamInput;
use super::projection::model_projection;
use crate::catalog::{Catalog, UpstreamTools};
use crate::config::{Config, DisclosureConfig, Mode};
use crate::disclosure;

/// One catalog's tools in both forms.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Forms {
    /// The upstream names, in catalog order.
    pub upstreams: Vec<String>,
    /// Every tool, in listing order (without the describe tool).
    pub tools: Vec<ToolForms>,
    /// The projection of the describe tool, when it is listed.
    pub describe_tool: Option<Value>,
    /// Its tokens (0 when it is not listed).
    pub describe_tool_tokens: usize,
    /// Problems the catalog build reported (collisions, skipped tools).
    pub problems: Vec<String>,
}

/// One tool in both forms.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolForms {
    /// The exposed name (prefixed when the catalog has several upstreams).
    pub name: String,
    /// The upstream that serves it.
    pub upstream: String,
    /// How it is presented.
    pub mode: Mode,
    /// Projection of the upstream's full definition, renamed as exposed.
    pub full: Value,
    /// Projection of what `tools/list` serves: the minimal form of a
    /// progressive tool, the full one of a passthrough tool.
    pub served: Value,
    /// Tokens of `full`.
    pub full_tokens: usize,
    /// Tokens of `served`.
    pub served_tokens: usize,
}

/// The forms of the catalog toolgate builds from `inputs` with `disclosure`.
pub fn forms(disclosure: &DisclosureConfig, inputs: &[UpstreamInput]) -> Forms {
    let views: Vec<UpstreamTools<'_>> = inputs
        .iter()
        .map(|i| UpstreamTools { config: &i.config, tools: i.tools.as_deref().unwrap_or(&[]), extras: &i.extras })
        .collect();
    let catalog = Catalog::build(&views, disclosure);
    let tools = catalog
        .tools()
        .map(|entry| {
            let full = model_projection(&entry.full);
            let served = model_projection(&entry.minimal);
            ToolForms {
                name: entry.exposed.clone(),
                upstream: inputs[entry.upstream].config.name.clone(),
                mode: entry.mode,
                full_tokens: count_json(&full),
                served_tokens: count_json(&served),
                full,
                served,
            }
        })
        .collect();
    let describe_tool =
        catalog.describe_tool_name().map(|n| model_projection(&disclosure::describe_tool_definition(n)));
    Forms {
        upstreams: inputs.iter().map(|i| i.config.name.clone()).collect(),
        tools,
        describe_tool_tokens: describe_tool.as_ref().map_or(0, count_json),
        describe_tool,
        problems: catalog.problems().to_vec(),
    }
}

/// The forms of one catalog whose upstreams are the stored catalog `files`,
/// in order. With `config`, its `[disclosure]` applies, and a file whose
/// server has the name of a configured upstream takes that upstream's
/// settings (mode, prefix, per-tool overrides).
pub fn forms_of_files(files: &[impl AsRef<Path>], config: Option<&Config>) -> Result<Forms, CatalogFileError> {
    let mut inputs = Vec::with_capacity(files.len());
    for path in files {
        let mut input = CatalogFile::read(path.as_ref())?.to_input();
        if let Some(configured) = config.and_then(|c| c.upstreams.iter().find(|u| u.name == input.config.name)) {
            input.config = configured.clone();
        }
        inputs.push(input);
    }
    let disclosure = config.map(|c| c.disclosure.clone()).unwrap_or_default();
    Ok(forms(&disclosure, &inputs))
}
