//! `${VAR}` expansion of string values, applied to the layered value tree
//! before it is turned into a [`Config`](super::Config).
//!
//! Syntax, in any string value:
//! - `${NAME}`: the value of environment variable `NAME` (`[A-Za-z_][A-Za-z0-9_]*`);
//!   a problem if it is not set.
//! - `${NAME:-default}`: `default` when `NAME` is unset or empty. The default is
//!   literal text and cannot contain `}` or another reference.
//! - `$${`: a literal `${`. A `$` not followed by `{` is kept as is.
//! - `${TOOLGATE_EXE}` falls back to the running executable's path when the
//!   environment does not set it, so configs can launch `toolgate demo-upstream`.
//!
//! Expansion works on the figment value tree, not on the TOML text, so that it
//! also applies to environment overrides and can never change the file's
//! structure (a value containing `"` or newlines stays one string).

use std::fmt;

use figment::value::Value;

use super::path::{Segment, TomlPath};
use super::validate::Problem;

/// The built-in variable that names the running toolgate executable.
pub(crate) const EXE_VAR: &str = "TOOLGATE_EXE";

/// Why one reference could not be expanded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ExpandError {
    /// `${NAME}` without a default, and `NAME` is not set.
    Unset(String),
    /// The variable is set but its value is not UTF-8.
    NotUnicode(String),
    /// `${` without a closing `}`.
    Unterminated,
    /// `${...}` whose content is neither `NAME` nor `NAME:-default`.
    BadReference(String),
    /// `${TOOLGATE_EXE}` was needed but the executable path is unknown.
    UnknownExe(String),
}

impl fmt::Display for ExpandError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Unset(name) => write!(f, "environment variable {name} is not set"),
            Self::NotUnicode(name) => write!(f, "environment variable {name} is not valid UTF-8"),
            Self::Unterminated => f.write_str("`${` without a closing `}` (write `$${` for a literal `${`)"),
            Self::BadReference(inner) => write!(
                f,
                "invalid reference `${{{inner}}}`: expected `${{NAME}}` or `${{NAME:-default}}` \
                 (write `$${{` for a literal `${{`)"
            ),
            Self::UnknownExe(err) => {
                write!(f, "cannot determine the toolgate executable path for ${{{EXE_VAR}}}: {err}")
            }
        }
    }
}

/// Looks a variable up: `Ok(None)` when it is not set.
pub(crate) type Lookup<'a> = dyn Fn(&str) -> Result<Option<String>, ExpandError> + 'a;

/// Looks a variable up in the process environment, with the
/// `TOOLGATE_EXE` built-in.
pub(crate) fn process_env(name: &str) -> Result<Option<String>, ExpandError> {
    match std::env::var(name) {
        Ok(value) => Ok(Some(value)),
        Err(std::env::VarError::NotUnicode(_)) => Err(ExpandError::NotUnicode(name.to_owned())),
        Err(std::env::VarError::NotPresent) if name == EXE_VAR => {
            let exe = std::env::current_exe().map_err(|e| ExpandError::UnknownExe(e.to_string()))?;
            match exe.into_os_string().into_string() {
                Ok(path) => Ok(Some(path)),
                Err(_) => Err(ExpandError::UnknownExe("the path is not valid UTF-8".into())),
            }
        }
        Err(std::env::VarError::NotPresent) => Ok(None),
    }
}

fn is_var_name(name: &str) -> bool {
    let mut bytes = name.bytes();
    matches!(bytes.next(), Some(b) if b.is_ascii_alphabetic() || b == b'_')
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// Expands every reference in `input`, reporting every failing reference.
pub(crate) fn expand_str(input: &str, lookup: &Lookup<'_>) -> Result<String, Vec<ExpandError>> {
    let mut out = String::with_capacity(input.len());
    let mut errors = Vec::new();
    let mut rest = input;
    while let Some(dollar) = rest.find('$') {
        out.push_str(&rest[..dollar]);
        rest = &rest[dollar..];
        if let Some(after) = rest.strip_prefix("$${") {
            out.push_str("${");
            rest = after;
        } else if let Some(after) = rest.strip_prefix("${") {
            let Some(close) = after.find('}') else {
                errors.push(ExpandError::Unterminated);
                rest = "";
                break;
            };
            let inner = &after[..close];
            rest = &after[close + 1..];
            match expand_reference(inner, lookup) {
                Ok(value) => out.push_str(&value),
                Err(e) => errors.push(e),
            }
        } else {
            out.push('$');
            rest = &rest[1..];
        }
    }
    out.push_str(rest);
    if errors.is_empty() { Ok(out) } else { Err(errors) }
}

/// Expands the content of one `${...}`.
fn expand_reference(inner: &str, lookup: &Lookup<'_>) -> Result<String, ExpandError> {
    let (name, default) = match inner.split_once(":-") {
        Some((name, default)) => (name, Some(default)),
        None => (inner, None),
    };
    // A nested `${` in the default would be cut at its first `}`; refuse it
    // rather than produce a surprising value.
    if !is_var_name(name) || default.is_some_and(|d| d.contains("${")) {
        return Err(ExpandError::BadReference(inner.to_owned()));
    }
    match (lookup(name)?, default) {
        (Some(value), Some(default)) if value.is_empty() => Ok(default.to_owned()),
        (Some(value), _) => Ok(value),
        (None, Some(default)) => Ok(default.to_owned()),
        (None, None) => Err(ExpandError::Unset(name.to_owned())),
    }
}

/// Expands every string in `value` in place; each failure becomes a
/// [`Problem`] at the string's TOML path.
pub(crate) fn expand_tree(value: &mut Value, lookup: &Lookup<'_>) -> Vec<Problem> {
    let mut problems = Vec::new();
    walk(value, &mut TomlPath::root(), lookup, &mut problems);
    problems
}

fn walk(value: &mut Value, path: &mut TomlPath, lookup: &Lookup<'_>, problems: &mut Vec<Problem>) {
    match value {
        Value::String(_, s) => {
            if s.contains('$') {
                match expand_str(s, lookup) {
                    Ok(expanded) => *s = expanded,
                    Err(errors) => problems
                        .extend(errors.into_iter().map(|e| Problem { path: path.to_string(), message: e.to_string() })),
                }
            }
        }
        Value::Dict(_, dict) => {
            for (key, child) in dict.iter_mut() {
                path.push(Segment::Key(key.clone()));
                walk(child, path, lookup, problems);
                path.pop();
            }
        }
        Value::Array(_, items) => {
            for (i, child) in items.iter_mut().enumerate() {
                path.push(Segment::Index(i));
                walk(child, path, lookup, problems);
                path.pop();
            }
        }
        Value::Char(..) | Value::Bool(..) | Value::Num(..) | Value::Empty(..) => {}
    }
}

#[cfg(test)]
mod tests;
