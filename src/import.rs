//! `toolgate import`: turns the MCP server list of another client's
//! configuration (Claude Desktop, Claude Code, Cursor, Windsurf, Cline,
//! Gemini CLI: `mcpServers`; VS Code: `servers` with `inputs`) into an
//! equivalent, commented toolgate TOML.
//!
//! What it guarantees:
//! - every imported server becomes one `[[upstream]]` whose name follows
//!   toolgate's rule (`[a-z0-9_-]+`, unique); renamed ones are listed;
//! - no secret is copied: literal credentials (env and header values that
//!   look like tokens or sit under credential-like names, secret command-line
//!   flags, passwords in URLs) become `${VAR}` references, and every variable
//!   the file needs is listed at its top;
//! - the clients' own variable syntaxes become toolgate's: VS Code's
//!   `${input:id}` and `${env:NAME}`, Cursor's `${env:NAME}` and
//!   `${userHome}`, Claude Code's `${NAME}` / `${NAME:-default}`; a literal
//!   `${` is escaped as `$${`;
//! - what has no toolgate equivalent (OAuth, `envFile`, per-tool approval
//!   lists, timeouts in the clients' units) is named in a comment, never
//!   dropped silently.
//!
//! The output loads with [`crate::config::load_str`] once the listed
//! variables are set.

pub mod cli;
mod refs;
mod render;
mod secrets;
mod server;
mod source;
mod vars;

pub use source::Format;
pub use vars::Variable;

/// Why a file could not be imported.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    /// Not JSON (JSON with comments and trailing commas is accepted).
    #[error("not valid JSON: {0}")]
    Parse(String),
    /// JSON, but no server list where any supported client keeps it.
    #[error(
        "no MCP servers found: expected an object with `mcpServers` (Claude Desktop, Claude Code, Cursor, \
         Windsurf, Cline, Gemini CLI), `servers` (VS Code mcp.json) or `mcp.servers` (VS Code settings.json)"
    )]
    NoServers,
}

/// The result of an import.
#[derive(Debug, Clone)]
pub struct Imported {
    /// Which client's shape the file had.
    pub format: Format,
    /// The toolgate configuration, as commented TOML.
    pub toml: String,
    /// The environment variables the configuration refers to, in order of
    /// first use.
    pub variables: Vec<Variable>,
    /// Servers turned into upstreams.
    pub upstreams: usize,
    /// Servers left out (disabled, or neither `command` nor `url`), each
    /// with the reason.
    pub skipped: Vec<String>,
}

impl Imported {
    /// The literal secrets that were taken out of the source, as
    /// `(variable, value)`: what the user has to put into toolgate's
    /// environment.
    pub fn secrets(&self) -> impl Iterator<Item = (&str, &str)> {
        self.variables.iter().filter_map(|v| v.secret.as_deref().map(|s| (v.name.as_str(), s)))
    }
}

/// Imports the client configuration `text`. `label` names the source in the
/// output's header comment (a file name, or "standard input").
pub fn import(text: &str, label: &str) -> Result<Imported, ImportError> {
    let source = source::parse(text)?;
    let mut vars = vars::Registry::default();
    for (key, entry) in &source.servers {
        for_each_string(entry, &mut |s| refs::referenced_names(s).into_iter().for_each(|n| vars.reserve(n, key)));
    }
    let mut names = server::Names::default();
    let mut upstreams = Vec::new();
    let mut skipped = Vec::new();
    for (key, entry) in &source.servers {
        match server::convert(key, entry, &source, &mut names, &mut vars) {
            Ok(upstream) => upstreams.push(upstream),
            Err(reason) => skipped.push(format!("{key:?}: {reason}")),
        }
    }
    let toml = render::document(label, &source, &upstreams, &skipped, &vars);
    Ok(Imported { format: source.format, toml, variables: vars.into_list(), upstreams: upstreams.len(), skipped })
}

/// Calls `f` on every string in `value`.
fn for_each_string(value: &serde_json::Value, f: &mut impl FnMut(&str)) {
    match value {
        serde_json::Value::String(s) => f(s),
        serde_json::Value::Array(items) => items.iter().for_each(|v| for_each_string(v, f)),
        serde_json::Value::Object(map) => map.values().for_each(|v| for_each_string(v, f)),
        _ => {}
    }
}

#[cfg(test)]
mod tests;
