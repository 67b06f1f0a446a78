//! What the index knows about one tool, and the texts it derives from it: the
//! five BM25F fields and the natural text of the static embedding
//! (`tool_fields` and `rich_text` in `benches/search/eval.py`).

use crate::analysis::words;
use serde_json::Value;

/// One top-level input parameter of a tool.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Param {
    /// The property's name in `inputSchema.properties`.
    pub name: String,
    /// Its `description` (whitespace runs squashed), or empty.
    pub description: String,
    /// Its allowed values: `enum`, or else `items.enum`, as text.
    pub values: Vec<String>,
}

/// One tool as the search indexes it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Document {
    /// The name clients call, e.g. `github__create_issue`. Results tie-break on
    /// it, and the exact-name rule matches it as well as [`name`](Self::name).
    pub exposed: String,
    /// The upstream's own tool name, e.g. `create_issue`.
    pub name: String,
    /// The upstream's name or prefix, e.g. `github`. Indexed in the BM25F
    /// `server` field and written into the embedded text as `name (server)`.
    /// A caller that does not keep [`server_info`](Self::server_info) apart
    /// may put it here too; that only changes the embedded text.
    pub server: String,
    /// What else the upstream says about itself: its `serverInfo` title and
    /// description and its `instructions`. Indexed in the BM25F `server`
    /// field only (the evaluated design leaves it out of the embedded text).
    pub server_info: String,
    /// The tool's `title`, or else `annotations.title`, or empty.
    pub title: String,
    /// The tool's `description`, or empty.
    pub description: String,
    /// The top-level properties of its `inputSchema`, in schema order.
    pub params: Vec<Param>,
}

impl Document {
    /// The document of one `tools/list` entry, exposed to clients as `exposed`,
    /// from the upstream `server`. Reads `name`, `title` (else
    /// `annotations.title`), `description` and each top-level
    /// `inputSchema.properties` entry's name, description and `enum` (else
    /// `items.enum`). Missing or mistyped members read as empty.
    pub fn from_tool(exposed: &str, server: &str, tool: &Value) -> Document {
        let title = [tool.get("title"), tool.pointer("/annotations/title")]
            .into_iter()
            .map(|v| v.map(text).unwrap_or_default())
            .find(|t| !t.is_empty())
            .unwrap_or_default();
        let params = match tool.pointer("/inputSchema/properties") {
            Some(Value::Object(props)) => props.iter().map(|(name, schema)| param(name, schema)).collect(),
            _ => Vec::new(),
        };
        Document {
            exposed: exposed.to_owned(),
            name: tool.get("name").map(text).unwrap_or_default(),
            server: server.to_owned(),
            server_info: String::new(),
            title,
            description: tool.get("description").map(text).unwrap_or_default(),
            params,
        }
    }

    /// This document with `info` (the upstream's `serverInfo` title and
    /// description, its instructions) as [`server_info`](Self::server_info).
    pub fn with_server_info(mut self, info: &str) -> Document {
        self.server_info = squash(info);
        self
    }

    /// The texts of the five BM25F fields, in [`crate::bm25f::FIELDS`] order:
    /// name, server (with its info), title, description, params (each
    /// parameter's name, description and values).
    pub(crate) fn fields(&self) -> [String; 5] {
        let params: Vec<String> =
            self.params.iter().map(|p| [p.name.as_str(), &p.description, &p.values.join(" ")].join(" ")).collect();
        [
            self.name.clone(),
            [self.server.as_str(), &self.server_info].join(" "),
            self.title.clone(),
            self.description.clone(),
            params.join(" "),
        ]
    }

    /// The natural text the static embedding reads:
    /// `{split name} ({split server}) {title}: {description} Parameters:
    /// {split p1}: {p1 description}; ...` (no title when empty, no
    /// `Parameters:` without parameters).
    pub(crate) fn rich_text(&self) -> String {
        let mut text = format!("{} ({})", words(&self.name).join(" "), words(&self.server).join(" "));
        if !self.title.is_empty() {
            text.push(' ');
            text.push_str(&self.title);
        }
        text.push_str(": ");
        text.push_str(&self.description);
        if !self.params.is_empty() {
            let params: Vec<String> = self
                .params
                .iter()
                .map(|p| {
                    let name = words(&p.name).join(" ");
                    if p.description.is_empty() { name } else { format!("{name}: {}", p.description) }
                })
                .collect();
            text.push_str(" Parameters: ");
            text.push_str(&params.join("; "));
        }
        text
    }
}

fn param(name: &str, schema: &Value) -> Param {
    let listed = |v: Option<&Value>| match v {
        Some(Value::Array(values)) if !values.is_empty() => Some(values.iter().map(text).collect()),
        _ => None,
    };
    let values = listed(schema.get("enum")).or_else(|| listed(schema.pointer("/items/enum"))).unwrap_or_default();
    Param { name: name.to_owned(), description: schema.get("description").map(text).unwrap_or_default(), values }
}

/// A JSON value as text: a string as itself (whitespace squashed), `null` as
/// empty, anything else as its JSON.
fn text(value: &Value) -> String {
    match value {
        Value::String(s) => squash(s),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// Whitespace runs (newlines, indentation) as one space, trimmed.
fn squash(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests;
