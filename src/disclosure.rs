//! Progressive disclosure: the `tool_descriptions` resource and the gate.
//!
//! Pure functions the gateway calls to speak the progressive-disclosure
//! extension: the `resources/list` and `resources/templates/list` entries,
//! parsing `resource:///tool_descriptions?tools=a,b`, the resource body with
//! full definitions, the spec's `MISSING_TOOL_SELECTION` and
//! `TOOL_DESCRIPTION_REQUIRED` objects, the `describe_tools` fallback tool for
//! clients that cannot read resources, the `initialize` instructions and
//! completions for the template's `tools` argument. Session state (which tools
//! a session may call) lives in the gateway, not here.

mod responses;
mod selection;
mod texts;

#[cfg(test)]
mod tests;

pub use crate::catalog::{FetchLimits, MAX_REQUESTED_NAME, describe_tool_definition, escaped_len};
pub use responses::{
    Described, complete_tool_names, describe, describe_args_error, describe_refused, describe_tool_result,
    describe_within, description_required, missing_selection, read_result,
};
pub use selection::{Selection, parse_describe_args, parse_selection, selection_uri};
pub use texts::{instructions, resource_entry, template_entry};

/// The base URI of the descriptions resource (listed in `resources/list`).
pub const RESOURCE_URI: &str = "resource:///tool_descriptions";

/// The URI template of the descriptions resource (`resources/templates/list`).
pub const TEMPLATE_URI: &str = "resource:///tool_descriptions?tools={tools}";

/// The template argument naming the tools.
pub const TOOLS_PARAM: &str = "tools";

/// MIME type of the resource body.
pub const MIME_TYPE: &str = "application/json";
