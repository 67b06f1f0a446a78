//! [`ToolPolicy`]: which upstreams and tools one client may see and call.
//!
//! Matching is over *exposed* tool names (after prefixing, e.g.
//! `github__get_issue`), with glob patterns:
//! - `*` matches any run of characters, including none and including `_`,
//!   `-`, `.` and `/` (tool names have no path separators, so nothing is
//!   special about them);
//! - `?` matches exactly one character;
//! - `[abc]`, `[a-z]` and `[!abc]` match one character of (or not of) a class;
//! - `{a,b}` matches either alternative;
//! - `\` escapes the next character (`\*` is a literal `*`).
//!
//! Matching is case-sensitive and anchored: a pattern matches the whole name.
//! A tool is allowed when its upstream is allowed, some `tools` pattern
//! matches and no `deny_tools` pattern does.
//!
//! A tool has two names a pattern may have been written against: the one it
//! is exposed under, and its *natural* name (`<prefix>__<tool>`, what it is
//! exposed as unless a collision renamed it `<natural>_2`). Names are given
//! out before policy, and a client able to add tools (a per-session toolset)
//! can push another upstream's tool to a suffixed name. So a `tools` pattern
//! must allow both names, and a `deny_tools` pattern that matches either
//! hides the tool: a rename never reveals what the policy meant to hide.

use std::collections::HashSet;
use std::fmt;

use globset::{GlobSet, GlobSetBuilder};

use crate::config::compile_glob;

/// Why a policy could not be built: a pattern that does not compile.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct PolicyError(pub String);

/// One client's view of the catalog: an upstream allowlist and tool globs.
#[derive(Clone)]
pub struct ToolPolicy {
    /// `None`: every upstream.
    upstreams: Option<HashSet<String>>,
    allow: GlobSet,
    deny: GlobSet,
    /// The patterns as written, for `Debug`.
    allow_patterns: Vec<String>,
    deny_patterns: Vec<String>,
    /// No restriction at all: skip matching.
    unrestricted: bool,
}

impl ToolPolicy {
    /// A policy that allows every upstream and every tool.
    pub fn allow_all() -> Self {
        Self {
            upstreams: None,
            allow: GlobSet::empty(),
            deny: GlobSet::empty(),
            allow_patterns: vec!["*".to_owned()],
            deny_patterns: Vec::new(),
            unrestricted: true,
        }
    }

    /// A policy from a client's `upstreams` (`None`: all), `tools` and
    /// `deny_tools`.
    pub fn new(upstreams: Option<&[String]>, tools: &[String], deny_tools: &[String]) -> Result<Self, PolicyError> {
        let unrestricted = upstreams.is_none() && deny_tools.is_empty() && tools.iter().any(|t| t == "*");
        Ok(Self {
            upstreams: upstreams.map(|names| names.iter().cloned().collect()),
            allow: build_set(tools)?,
            deny: build_set(deny_tools)?,
            allow_patterns: tools.to_vec(),
            deny_patterns: deny_tools.to_vec(),
            unrestricted,
        })
    }

    /// Whether nothing is restricted (every upstream, every tool).
    pub fn is_unrestricted(&self) -> bool {
        self.unrestricted
    }

    /// Whether the client may use upstream `name` at all (its tools,
    /// resources, templates, prompts and completions).
    pub fn allows_upstream(&self, name: &str) -> bool {
        self.upstreams.as_ref().is_none_or(|allowed| allowed.contains(name))
    }

    /// Whether the client may see and call the tool exposed as `exposed_name`,
    /// whose natural name is `natural_name`, of upstream `upstream_name` (see
    /// the [module](self) documentation: both names must be allowed).
    pub fn allows_tool(&self, exposed_name: &str, natural_name: &str, upstream_name: &str) -> bool {
        self.allows_upstream(upstream_name) && self.allows_name(exposed_name) && self.allows_name(natural_name)
    }

    /// Whether the tool globs alone allow `exposed_name` (for a tool that
    /// belongs to no upstream).
    pub fn allows_name(&self, exposed_name: &str) -> bool {
        self.unrestricted || (self.allow.is_match(exposed_name) && !self.deny.is_match(exposed_name))
    }
}

fn build_set(patterns: &[String]) -> Result<GlobSet, PolicyError> {
    let mut set = GlobSetBuilder::new();
    for pattern in patterns {
        set.add(compile_glob(pattern).map_err(PolicyError)?);
    }
    set.build().map_err(|e| PolicyError(e.to_string()))
}

impl fmt::Debug for ToolPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut upstreams: Option<Vec<&String>> = self.upstreams.as_ref().map(|set| set.iter().collect());
        if let Some(list) = upstreams.as_mut() {
            list.sort();
        }
        f.debug_struct("ToolPolicy")
            .field("upstreams", &upstreams)
            .field("tools", &self.allow_patterns)
            .field("deny_tools", &self.deny_patterns)
            .finish()
    }
}

#[cfg(test)]
mod tests;
