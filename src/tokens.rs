//! Token measurement: what a tool catalog costs a model, in full and in the
//! minimal form toolgate serves.
//!
//! Counting uses a real tokenizer ([`ENCODING`], `o200k_base` from
//! `tiktoken-rs`, whose data is embedded, so it works offline). What is counted
//! is the [model projection](projection) of each tool (its name, description
//! and input schema, which is what clients hand a model), plus the whole
//! `tools/list` JSON for reference. [`measure`] builds the same
//! [`Catalog`](crate::catalog::Catalog) the gateway serves, so the minimal
//! numbers include per-tool overrides and the `describe_tools` tool. The
//! [`capture`] module connects to upstreams and stores their catalogs (the
//! corpus under `tests/corpus/`); [`forms`] gives the texts a model reads in
//! both forms (the input of the selection-fidelity evaluation).

pub mod capture;
mod count;
mod forms;
mod measure;
pub mod projection;
mod report;
mod table;

#[cfg(test)]
mod tests;

pub use count::{ENCODING, count_json, count_text};
pub use forms::{Forms, ToolForms, forms, forms_of_files};
pub use measure::{SESSION_FETCHES, UpstreamInput, measure};
pub use projection::{PROJECTION, list_json_tokens, model_projection, projection_tokens};
pub use report::{Added, Report, Section, SessionCost, ToolTokens, Totals, UpstreamReport, saving_percent};
