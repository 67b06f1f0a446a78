//! Exposed tool names: upstream prefixes, collision suffixes and the checks
//! that flag names LLM clients reject.

use std::collections::{HashMap, HashSet};

use crate::config::UpstreamConfig;

#[cfg(test)]
mod tests;

/// Longest tool name common LLM clients accept.
pub const MAX_NAME_CHARS: usize = 64;

/// One upstream tool waiting for its exposed name.
#[derive(Debug, Clone)]
pub(crate) struct Candidate<'a> {
    /// Name of the upstream that lists the tool.
    pub upstream: &'a str,
    /// The upstream's own tool name.
    pub original: &'a str,
    /// The name it gets before collisions are resolved.
    pub natural: String,
}

/// The name a tool gets before collisions: with one upstream and no explicit
/// `prefix`, the tool's own name; otherwise `<prefix>__<tool>`, where the prefix
/// defaults to the upstream name and `""` means no prefix.
pub fn natural_name(config: &UpstreamConfig, upstream_count: usize, tool: &str) -> String {
    let prefix = match (&config.prefix, upstream_count) {
        (Some(prefix), _) => prefix.as_str(),
        (None, 0 | 1) => "",
        (None, _) => config.name.as_str(),
    };
    if prefix.is_empty() { tool.to_owned() } else { format!("{prefix}__{tool}") }
}

/// A name toolgate's own tools take, and which tool it is (for problems).
pub(crate) struct Reserved<'a> {
    pub name: &'a str,
    /// E.g. "toolgate's describe tool (disclosure.describe_tool_name)".
    pub what: &'a str,
}

/// Assigns unique exposed names in order. The first tool with a natural name
/// keeps it; later ones get the smallest `_<n>` suffix (n ≥ 2) that clashes
/// with no other tool's natural name, no assigned name and no reserved name.
/// `reserved` names (toolgate's own tools) are never given to an upstream
/// tool. Every rename adds a problem line naming both sources.
pub(crate) fn assign(
    candidates: &[Candidate<'_>],
    reserved: &[Reserved<'_>],
    problems: &mut Vec<String>,
) -> Vec<String> {
    let natural: HashSet<&str> =
        candidates.iter().map(|c| c.natural.as_str()).chain(reserved.iter().map(|r| r.name)).collect();
    // Who holds each assigned name: `Err` for a reserved one.
    let mut taken: HashMap<String, Result<usize, usize>> = HashMap::with_capacity(candidates.len() + reserved.len());
    for (i, r) in reserved.iter().enumerate() {
        taken.insert(r.name.to_owned(), Err(i));
    }
    let mut exposed = Vec::with_capacity(candidates.len());
    for (i, c) in candidates.iter().enumerate() {
        let Some(holder) = taken.get(&c.natural).copied() else {
            taken.insert(c.natural.clone(), Ok(i));
            exposed.push(c.natural.clone());
            continue;
        };
        let renamed = (2u64..)
            .map(|n| format!("{}_{n}", c.natural))
            .find(|name| !taken.contains_key(name) && !natural.contains(name.as_str()))
            .unwrap_or_else(|| c.natural.clone());
        problems.push(match holder {
            Ok(first) => {
                let f = &candidates[first];
                format!(
                    "tool name collision on `{}`: upstream `{}` tool `{}` keeps it; upstream `{}` tool `{}` is exposed as `{renamed}`",
                    c.natural, f.upstream, f.original, c.upstream, c.original
                )
            }
            Err(r) => format!(
                "upstream `{}` tool `{}` would be exposed as `{}`, the name of {}; it is exposed as `{renamed}`",
                c.upstream, c.original, c.natural, reserved[r].what
            ),
        });
        taken.insert(renamed.clone(), Ok(i));
        exposed.push(renamed);
    }
    exposed
}

/// Why LLM clients would reject this tool name, if they would.
pub fn name_problem(name: &str) -> Option<String> {
    let bad: Vec<char> =
        name.chars().filter(|c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'))).collect();
    let len = name.chars().count();
    match (len > MAX_NAME_CHARS, bad.is_empty()) {
        (false, true) => None,
        (true, true) => Some(format!("is {len} characters long (over {MAX_NAME_CHARS})")),
        (long, false) => {
            let mut shown: Vec<String> = Vec::new();
            for c in bad {
                let s = format!("{c:?}");
                if !shown.contains(&s) {
                    shown.push(s);
                }
            }
            let chars = format!("has characters outside [A-Za-z0-9_.-] ({})", shown.join(", "));
            Some(if long { format!("is {len} characters long (over {MAX_NAME_CHARS}) and {chars}") } else { chars })
        }
    }
}
