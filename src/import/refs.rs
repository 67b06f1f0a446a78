//! Values as toolgate will read them: literal text and `${VAR}` references,
//! translated from the source clients' variable syntaxes.
//!
//! | source | becomes |
//! |---|---|
//! | `${input:id}` (VS Code) | `${ID}`, listed with the input's description |
//! | `${env:NAME}` (VS Code, Cursor) | `${NAME}` |
//! | `${NAME}`, `${NAME:-default}` (Claude Code) | the same (toolgate's syntax) |
//! | `${userHome}` | `${HOME}` |
//! | `${workspaceFolder}`, `${workspaceFolderBasename}` | `${WORKSPACE_FOLDER}`, `${WORKSPACE_FOLDER_BASENAME}` |
//! | `${pathSeparator}`, `${/}` | `/` |
//! | anything else in `${...}` | kept as literal text (`$${...}`), with a note |

use std::collections::HashMap;

use super::vars::{Registry, env_name};

/// One part of a value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Piece {
    Text(String),
    Var { name: String, default: Option<String> },
}

/// A value made of literal text and variable references.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Text(pub Vec<Piece>);

impl Text {
    pub fn literal(s: &str) -> Self {
        let mut t = Self::default();
        t.push_text(s);
        t
    }

    pub fn var(name: &str) -> Self {
        Self(vec![Piece::Var { name: name.to_owned(), default: None }])
    }

    /// The text, when the value has no reference.
    pub fn as_literal(&self) -> Option<&str> {
        match self.0.as_slice() {
            [] => Some(""),
            [Piece::Text(s)] => Some(s),
            _ => None,
        }
    }

    pub fn push_text(&mut self, s: &str) {
        if s.is_empty() {
            return;
        }
        match self.0.last_mut() {
            Some(Piece::Text(t)) => t.push_str(s),
            _ => self.0.push(Piece::Text(s.to_owned())),
        }
    }

    pub fn push_var(&mut self, name: &str, default: Option<String>) {
        self.0.push(Piece::Var { name: name.to_owned(), default });
    }

    pub fn append(&mut self, other: Text) {
        for piece in other.0 {
            match piece {
                Piece::Text(s) => self.push_text(&s),
                var => self.0.push(var),
            }
        }
    }

    /// In toolgate's syntax: references as `${NAME}` / `${NAME:-default}`,
    /// a literal `${` as `$${`.
    pub fn render(&self) -> String {
        let mut out = String::new();
        for piece in &self.0 {
            match piece {
                Piece::Text(s) => out.push_str(&s.replace("${", "$${")),
                Piece::Var { name, default: None } => out.push_str(&format!("${{{name}}}")),
                Piece::Var { name, default: Some(d) } => out.push_str(&format!("${{{name}:-{d}}}")),
            }
        }
        out
    }

    /// Literal text with `$NAME`, which some clients (Gemini CLI) expand.
    fn has_bare_dollar_name(&self) -> bool {
        self.0.iter().any(|p| match p {
            Piece::Text(t) => t
                .match_indices('$')
                .any(|(i, _)| t[i + 1..].chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')),
            Piece::Var { .. } => false,
        })
    }

    /// A literal `$` right before a reference cannot be written in
    /// toolgate's syntax (`$${` is the escape of `${`).
    fn has_dollar_before_var(&self) -> bool {
        self.0.windows(2).any(|w| matches!(w, [Piece::Text(t), Piece::Var { .. }] if t.ends_with('$')))
    }
}

/// What translation needs and reports into.
pub struct Ctx<'a> {
    /// VS Code inputs: id to description.
    pub inputs: &'a HashMap<String, String>,
    pub vars: &'a mut Registry,
    /// Notes for the upstream being converted.
    pub notes: &'a mut Vec<String>,
    /// The source key of the server being converted.
    pub server: &'a str,
}

/// Translates one source string; `used` says where it is (for the list of
/// variables).
pub fn translate(source: &str, used: &str, ctx: &mut Ctx<'_>) -> Text {
    let mut text = Text::default();
    let mut rest = source;
    while let Some(at) = rest.find("${") {
        text.push_text(&rest[..at]);
        let after = &rest[at + 2..];
        let Some(close) = after.find('}') else {
            text.push_text(&rest[at..]);
            rest = "";
            break;
        };
        let inner = &after[..close];
        rest = &after[close + 1..];
        reference(inner, used, ctx, &mut text);
    }
    text.push_text(rest);
    if text.has_bare_dollar_name() {
        ctx.notes
            .push(format!("{used}: toolgate does not expand `$NAME` (only `${{NAME}}`); the value is kept as it is"));
    }
    if text.has_dollar_before_var() {
        ctx.notes.push(format!(
            "{used}: a `$` directly before a variable reference cannot be written in toolgate's syntax; check the value"
        ));
    }
    text
}

fn reference(inner: &str, used: &str, ctx: &mut Ctx<'_>, text: &mut Text) {
    if let Some(id) = inner.strip_prefix("input:") {
        let name = env_name(id);
        let about = match ctx.inputs.get(id) {
            Some(d) if !d.is_empty() => format!("VS Code input {d:?}"),
            Some(_) => format!("VS Code input `{id}`"),
            None => {
                ctx.notes.push(format!("{used}: `${{input:{id}}}` names no entry of `inputs`"));
                format!("VS Code input `{id}` (not defined in the file)")
            }
        };
        ctx.vars.reference(&name, false, &about, used);
        text.push_var(&name, None);
        return;
    }
    if let Some(var) = inner.strip_prefix("env:") {
        let name = if is_var_name(var) { var.to_owned() } else { env_name(var) };
        ctx.vars.reference(&name, false, &format!("read by the source as `${{env:{var}}}`"), used);
        text.push_var(&name, None);
        return;
    }
    match inner {
        "userHome" => text.push_var("HOME", None),
        "workspaceFolder" | "workspaceFolderBasename" => {
            let name = if inner == "workspaceFolder" { "WORKSPACE_FOLDER" } else { "WORKSPACE_FOLDER_BASENAME" };
            ctx.vars.reference(name, false, &format!("the editor's `${{{inner}}}`"), used);
            text.push_var(name, None);
        }
        "pathSeparator" | "/" => text.push_text("/"),
        _ => {
            let (name, default) = match inner.split_once(":-") {
                Some((n, d)) => (n, Some(d)),
                None => (inner, None),
            };
            if is_var_name(name) && !default.is_some_and(|d| d.contains("${")) {
                let about = "an environment variable the source refers to";
                ctx.vars.reference(name, default.is_some(), about, used);
                text.push_var(name, default.map(str::to_owned));
            } else {
                ctx.notes.push(format!(
                    "{used}: `${{{inner}}}` is a variable of the source client that toolgate cannot fill; \
                     it is kept as literal text"
                ));
                text.push_text(&format!("${{{inner}}}"));
            }
        }
    }
}

/// The variable names the references in `source` translate to, so that
/// secrets can be kept off them before any value is converted.
pub fn referenced_names(source: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut rest = source;
    while let Some(at) = rest.find("${") {
        let after = &rest[at + 2..];
        let Some(close) = after.find('}') else { break };
        let inner = &after[..close];
        rest = &after[close + 1..];
        let name = if let Some(id) = inner.strip_prefix("input:") {
            env_name(id)
        } else if let Some(var) = inner.strip_prefix("env:") {
            if is_var_name(var) { var.to_owned() } else { env_name(var) }
        } else if inner == "workspaceFolder" {
            "WORKSPACE_FOLDER".into()
        } else if inner == "workspaceFolderBasename" {
            "WORKSPACE_FOLDER_BASENAME".into()
        } else {
            inner.split_once(":-").map_or(inner, |(n, _)| n).to_owned()
        };
        if is_var_name(&name) {
            names.push(name);
        }
    }
    names
}

/// `[A-Za-z_][A-Za-z0-9_]*`, what toolgate's `${NAME}` accepts.
pub fn is_var_name(name: &str) -> bool {
    let mut bytes = name.bytes();
    matches!(bytes.next(), Some(b) if b.is_ascii_alphabetic() || b == b'_')
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_')
}
