//! Reading a client's configuration file and finding its server list.
//!
//! The clients keep the list in different places: `mcpServers` (Claude
//! Desktop, Claude Code's `.mcp.json`, Cursor, Windsurf, Cline, Gemini CLI),
//! `servers` beside `inputs` (VS Code's `mcp.json`), or `mcp.servers` in VS
//! Code's `settings.json`. VS Code files are JSON with comments and trailing
//! commas, so the parser accepts those everywhere.

use std::collections::HashMap;

use serde_json::{Map, Value};

use super::ImportError;

/// Which client's shape the file had.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// A top-level `mcpServers` object.
    McpServers,
    /// VS Code's `mcp.json`: `servers` and optional `inputs`.
    VsCode,
    /// VS Code's `settings.json`: `mcp.servers` and `mcp.inputs`.
    VsCodeSettings,
}

impl Format {
    /// How the output's header describes it.
    pub fn describe(self) -> &'static str {
        match self {
            Self::McpServers => {
                "an `mcpServers` file (Claude Desktop, Claude Code, Cursor, Windsurf, Cline, Gemini CLI)"
            }
            Self::VsCode => "a VS Code `mcp.json` (`servers` and `inputs`)",
            Self::VsCodeSettings => "a VS Code `settings.json` (`mcp.servers` and `mcp.inputs`)",
        }
    }
}

/// The parts of the file an import uses.
#[derive(Debug)]
pub struct Source {
    pub format: Format,
    /// Server entries by their key, in file order.
    pub servers: Vec<(String, Value)>,
    /// VS Code input variables: id to description.
    pub inputs: HashMap<String, String>,
}

pub fn parse(text: &str) -> Result<Source, ImportError> {
    let options = jsonc_parser::ParseOptions::default();
    let root: Value =
        jsonc_parser::parse_to_serde_value(text, &options).map_err(|e| ImportError::Parse(e.to_string()))?;
    let Value::Object(root) = root else {
        return Err(ImportError::NoServers);
    };
    let (format, holder) = if root.get("mcpServers").is_some_and(Value::is_object) {
        (Format::McpServers, &root)
    } else if root.get("servers").is_some_and(Value::is_object) {
        (Format::VsCode, &root)
    } else if let Some(mcp) = root.get("mcp").and_then(Value::as_object).filter(|m| m.get("servers").is_some()) {
        (Format::VsCodeSettings, mcp)
    } else {
        return Err(ImportError::NoServers);
    };
    let key = if format == Format::McpServers { "mcpServers" } else { "servers" };
    let servers = match holder.get(key) {
        Some(Value::Object(map)) => map.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
        _ => return Err(ImportError::NoServers),
    };
    Ok(Source { format, servers, inputs: inputs(holder) })
}

/// `inputs: [{"type": "promptString", "id": "...", "description": "..."}]`.
fn inputs(holder: &Map<String, Value>) -> HashMap<String, String> {
    let Some(Value::Array(list)) = holder.get("inputs") else {
        return HashMap::new();
    };
    list.iter()
        .filter_map(|input| {
            let id = input.get("id")?.as_str()?;
            let description = input.get("description").and_then(Value::as_str).unwrap_or_default();
            Some((id.to_owned(), description.to_owned()))
        })
        .collect()
}
