//! `[[concerns]]` and the concern values of upstreams, tools and clients
//! (concern-based filtering, MCP discussion #1936), and their checks.
//!
//! A concern is a user-facing axis such as "security" or "cost" with a
//! closed set of values. toolgate declares the configured concerns to
//! clients, maps each primitive to values (its tool entry, else its
//! upstream's entry, else the upstream's own `_meta.concerns`), and shows a
//! client only what matches the values it configured (see
//! [`crate::concerns`]).

use indexmap::IndexMap;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::path::TomlPath;
use super::validate::Problem;
use super::{ClientConfig, UpstreamConfig};

/// `[[concerns]]`: one concern toolgate declares to its clients.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ConcernConfig {
    /// The concern's identifier, `[a-z0-9_-]+`, unique. Required.
    pub name: String,
    /// What it means, for people and models choosing a value. Required.
    pub description: String,
    /// Its possible values, each non-empty and unique, in the order clients
    /// are shown them. Required, at least one.
    pub values: Vec<String>,
    /// The value of a client that configured concerns but not this one;
    /// one of `values`. Unset: such a client is not filtered on this concern.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<String>,
}

/// Concern values, by concern name: a primitive's mapping (`concerns = {
/// security = "high" }` on an upstream, a tool or a client).
pub type ConcernValues = IndexMap<String, String>;

/// The problems of the declarations and of every mapping that names them.
pub(super) fn check(
    concerns: &[ConcernConfig],
    upstreams: &[UpstreamConfig],
    clients: &[ClientConfig],
) -> Vec<Problem> {
    let mut out = Vec::new();
    let mut push = |path: TomlPath, message: String| out.push(Problem { path: path.to_string(), message });
    let root = TomlPath::root().key("concerns");
    for (i, concern) in concerns.iter().enumerate() {
        let path = root.index(i);
        if !is_name(&concern.name) {
            push(path.key("name"), format!("`{}` must match [a-z0-9_-]+", concern.name));
        }
        if let Some(first) = concerns[..i].iter().position(|c| c.name == concern.name) {
            push(path.key("name"), format!("concern `{}` is already declared by concerns[{first}]", concern.name));
        }
        if concern.description.trim().is_empty() {
            push(path.key("description"), "must not be empty".into());
        }
        if concern.values.is_empty() {
            push(path.key("values"), "must list at least one value".into());
        }
        for (j, value) in concern.values.iter().enumerate() {
            if value.trim().is_empty() {
                push(path.key("values").index(j), "must not be empty".into());
            } else if concern.values[..j].contains(value) {
                push(path.key("values").index(j), format!("`{value}` is listed twice"));
            }
        }
        if let Some(default) = &concern.default
            && !concern.values.contains(default)
        {
            push(path.key("default"), format!("`{default}` is not one of this concern's values"));
        }
    }
    let mut mapping = |path: TomlPath, values: &ConcernValues| {
        for (name, value) in values {
            let at = path.key(name);
            match concerns.iter().find(|c| c.name == *name) {
                None => push(at, format!("concern `{name}` is not declared in [[concerns]]")),
                Some(c) if !c.values.contains(value) => {
                    push(at, format!("`{value}` is not a value of concern `{name}` (one of: {})", c.values.join(", ")))
                }
                Some(_) => {}
            }
        }
    };
    for (i, upstream) in upstreams.iter().enumerate() {
        let path = TomlPath::root().key("upstream").index(i);
        mapping(path.key("concerns"), &upstream.concerns);
        for (tool, o) in &upstream.tools {
            mapping(path.key("tools").key(tool).key("concerns"), &o.concerns);
        }
    }
    for (i, client) in clients.iter().enumerate() {
        mapping(TomlPath::root().key("auth").key("clients").index(i).key("concerns"), &client.concerns);
    }
    out
}

/// `[a-z0-9_-]+`.
fn is_name(name: &str) -> bool {
    !name.is_empty() && name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-')
}

#[cfg(test)]
mod tests;
