//! The model projection: the part of a tool definition a model actually reads.
//!
//! MCP clients do not hand a model the `tools/list` JSON. They turn each tool
//! into their model API's tool format, which carries the tool's name, its
//! description and its input schema (Anthropic: `name`, `description`,
//! `input_schema`; OpenAI: `function.name`, `function.description`,
//! `function.parameters`). `title`, `annotations`, `outputSchema`, `icons` and
//! `_meta` are for the client, not the model. So the projection of one tool is
//! the compact JSON object
//!
//! ```json
//! {"name":"…","description":"…","input_schema":{…}}
//! ```
//!
//! with the keys in that order, the values copied verbatim (the schema keeps
//! its key order), and a key left out when the tool lacks that field. The
//! projection of a list is the sum over its tools; the wrapping array and the
//! per-API envelope (`"type":"function"` and so on) are the same with or
//! without toolgate, so they are not counted.

use serde_json::{Map, Value, json};

use super::count::count_json;

/// A one-line statement of what is counted, for reports.
pub const PROJECTION: &str = "per tool, the compact JSON {\"name\",\"description\",\"input_schema\"} \
                              (name, description and inputSchema, as clients hand tools to a model)";

/// The projection of one tool object (see the module documentation). A value
/// that is not an object projects to `{}`.
pub fn model_projection(tool: &Value) -> Value {
    let mut out = Map::new();
    for (from, to) in [("name", "name"), ("description", "description"), ("inputSchema", "input_schema")] {
        if let Some(v) = tool.get(from) {
            out.insert(to.to_owned(), v.clone());
        }
    }
    Value::Object(out)
}

/// The tokens of one tool's projection.
pub fn projection_tokens(tool: &Value) -> usize {
    count_json(&model_projection(tool))
}

/// The tokens of a whole `tools/list` result, `{"tools":[…]}`, in compact
/// JSON, for reference: it includes what the model never sees.
pub fn list_json_tokens<'a>(tools: impl IntoIterator<Item = &'a Value>) -> usize {
    let tools: Vec<&Value> = tools.into_iter().collect();
    count_json(&json!({ "tools": tools }))
}
