//! What toolgate tells clients and models about the workflow: the resource and
//! template entries, the describe tool's definition and the `initialize`
//! instructions. The wording follows the implementation guide's "Proven
//! Effective Pattern": numbered steps, WHICH (selection) versus HOW
//! (parameters), mandatory language, a concrete URI and what fails; it stays
//! short because models skim long descriptions.

use serde_json::{Value, json};

use super::{MIME_TYPE, RESOURCE_URI, TEMPLATE_URI};

/// The sentence pointing at the describe tool, if it is offered.
fn describe_alternative(describe_tool: Option<&str>) -> String {
    match describe_tool {
        Some(name) => format!(
            "\nIf you cannot read resources, call the `{name}` tool with {{\"tools\": [\"TOOL_NAME\"]}} instead; it does the same."
        ),
        None => String::new(),
    }
}

/// The `resources/list` entry of the descriptions resource.
pub fn resource_entry(describe_tool: Option<&str>) -> Value {
    let description = format!(
        "WORKFLOW:\n\
         Step 1: PICK which tool you need from tools/list based on its SHORT description.\n\
         Step 2: FETCH its full description: {RESOURCE_URI}?tools=TOOL_NAME (several: ?tools=TOOL1,TOOL2).\n\
         Step 3: CALL the tool with the parameters you learned.\n\
         IMPORTANT: You CANNOT call a tool until you fetch its description.\n\
         The SHORT descriptions tell you WHICH tool to use (sufficient for selection). \
         This resource tells you HOW to use it (parameters, examples) and authorizes it for this session.\n\
         MUST include ?tools=TOOL_NAME (the base URI without tools will error).{}",
        describe_alternative(describe_tool)
    );
    json!({
        "uri": RESOURCE_URI,
        "name": "Tool Descriptions - Required for tool use",
        "description": description,
        "mimeType": MIME_TYPE,
    })
}

/// The `resources/templates/list` entry of the descriptions resource.
pub fn template_entry(describe_tool: Option<&str>) -> Value {
    let description = format!(
        "Full definitions (parameters, examples) of the tools named in {{tools}}: exact names from tools/list, \
         comma-separated. Fetching a tool's description authorizes it for this session; \
         you CANNOT call a tool before.{}",
        describe_alternative(describe_tool)
    );
    json!({
        "uriTemplate": TEMPLATE_URI,
        "name": "Tool Descriptions by name",
        "description": description,
        "mimeType": MIME_TYPE,
    })
}

/// The `initialize` instructions explaining the two-stage workflow (spec
/// section 8). The gateway appends each upstream's own instructions.
pub fn instructions(describe_tool: Option<&str>) -> String {
    let fetch_alternative = match describe_tool {
        Some(name) => format!(", or call the `{name}` tool with {{\"tools\": [\"TOOL_NAME\"]}}"),
        None => String::new(),
    };
    format!(
        "This server uses progressive disclosure for tools. Workflow:\n\
         1. PICK the tool you need from tools/list. Its SHORT description is sufficient for choosing.\n\
         2. FETCH its full description (parameters, examples): read {RESOURCE_URI}?tools=TOOL_NAME \
         (comma-separate several names){fetch_alternative}.\n\
         3. CALL the tool with the parameters you learned.\n\
         You CANNOT call a tool before fetching its description in this session; the call fails with \
         TOOL_DESCRIPTION_REQUIRED. Never fetch {RESOURCE_URI} without naming tools."
    )
}
