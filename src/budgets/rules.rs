//! Which budgets a call takes from: the gateway's `[[limits]]` and
//! defaults, and the client's own `limits`, matched against the tool's
//! exposed name.

use std::sync::Arc;
use std::time::Duration;

use globset::GlobMatcher;
use serde_json::Value;

use crate::auth::Principal;
use crate::catalog::ToolEntry;
use crate::config::{IdenticalCalls, ToolLimit, compile_glob, limit_defaults};

/// The kinds of limit, as they are named in refusals and metrics.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Limit {
    /// A rule's `per_minute`.
    PerMinute,
    /// A rule's `per_day`.
    PerDay,
    /// `defaults.write_per_minute`.
    WritePerMinute,
    /// `defaults.identical_calls`.
    IdenticalCalls,
}

impl Limit {
    /// The limit's key in the configuration, and its metric label.
    pub fn as_str(self) -> &'static str {
        match self {
            Limit::PerMinute => "per_minute",
            Limit::PerDay => "per_day",
            Limit::WritePerMinute => "write_per_minute",
            Limit::IdenticalCalls => "identical_calls",
        }
    }
}

/// How a budget is counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A burst of `max`, refilled evenly over a minute (GCRA).
    Minute,
    /// `max` per UTC day.
    Day,
    /// `max` within a window that starts with the first of them.
    Window(Duration),
}

/// One budget a call takes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Check {
    /// Names the budget: the client, the tool, the rule, the limit (and for
    /// the breaker, the arguments' digest).
    pub key: String,
    pub kind: Kind,
    pub limit: Limit,
    pub max: u32,
    /// The glob the limit was set for.
    pub tools: Arc<str>,
}

/// One `[[limits]]` entry, compiled.
#[derive(Debug)]
struct Rule {
    glob: GlobMatcher,
    tools: Arc<str>,
    per_minute: Option<u32>,
    per_day: Option<u32>,
}

/// A list of rules (the gateway's, with its defaults, or one client's).
#[derive(Debug, Default)]
pub struct Rules {
    rules: Vec<Rule>,
    write_per_minute: Option<u32>,
    identical: Option<IdenticalCalls>,
}

impl Rules {
    /// The top-level `[[limits]]`, defaults included.
    pub fn gateway(limits: &[ToolLimit]) -> Self {
        let defaults = limit_defaults(limits);
        Self {
            rules: compile(limits),
            write_per_minute: defaults.and_then(|d| d.write_per_minute).filter(|n| *n > 0),
            identical: defaults.and_then(|d| d.identical_calls.clone()).filter(|i| i.max > 0),
        }
    }

    /// One client's `limits` (defaults are the gateway's alone).
    pub fn client(limits: &[ToolLimit]) -> Self {
        Self { rules: compile(limits), ..Self::default() }
    }

    /// Whether no call can take from these.
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty() && self.write_per_minute.is_none() && self.identical.is_none()
    }

    /// The budgets a call of `entry` by `principal` with `arguments` takes
    /// from: these rules' and the client's own.
    pub fn checks(&self, principal: &Principal, entry: &ToolEntry, arguments: Option<&Value>) -> Vec<Check> {
        let client = &principal.policy().limits;
        if self.is_empty() && client.is_empty() {
            return Vec::new();
        }
        let who = principal.id().to_string();
        let tool = entry.exposed.as_str();
        let mut out = Vec::new();
        for (source, rules) in [("g", self), ("c", client)] {
            for (i, rule) in rules.rules.iter().enumerate().filter(|(_, r)| r.glob.is_match(tool)) {
                for (limit, kind, max) in
                    [(Limit::PerMinute, Kind::Minute, rule.per_minute), (Limit::PerDay, Kind::Day, rule.per_day)]
                {
                    let Some(max) = max.filter(|n| *n > 0) else { continue };
                    let key = format!("{who}:{tool}:{source}{i}:{}:{max}", limit.as_str());
                    out.push(Check { key, kind, limit, max, tools: rule.tools.clone() });
                }
            }
        }
        let every: Arc<str> = Arc::from("*");
        if let Some(max) = self.write_per_minute.filter(|_| !read_only(entry)) {
            let key = format!("{who}:{tool}:d:write_per_minute:{max}");
            out.push(Check { key, kind: Kind::Minute, limit: Limit::WritePerMinute, max, tools: every.clone() });
        }
        if let Some(identical) = &self.identical {
            let window = identical.window;
            let key = format!(
                "{who}:{tool}:d:identical_calls:{}:{}:{}",
                identical.max,
                window.as_millis(),
                digest(arguments)
            );
            let (limit, max) = (Limit::IdenticalCalls, identical.max);
            out.push(Check { key, kind: Kind::Window(window), limit, max, tools: every });
        }
        out
    }
}

fn compile(limits: &[ToolLimit]) -> Vec<Rule> {
    // Validation refused bad globs; one that slips through matches nothing.
    limits
        .iter()
        .filter(|l| l.per_minute.is_some() || l.per_day.is_some())
        .filter_map(|l| {
            let glob = compile_glob(&l.tools).ok()?.compile_matcher();
            Some(Rule { glob, tools: Arc::from(l.tools.as_str()), per_minute: l.per_minute, per_day: l.per_day })
        })
        .collect()
}

/// Whether the tool says it only reads (`annotations.readOnlyHint: true`).
fn read_only(entry: &ToolEntry) -> bool {
    entry.full.pointer("/annotations/readOnlyHint").and_then(Value::as_bool) == Some(true)
}

/// The digest of a call's arguments, as the lockfile digests a definition
/// ([`crate::lock::digest`]: their canonical JSON, RFC 8785), so that key
/// order and number spelling do not tell calls apart. No arguments and `{}`
/// are the same call.
pub fn digest(arguments: Option<&Value>) -> String {
    let empty = Value::Object(Default::default());
    crate::lock::digest(arguments.filter(|v| !v.is_null()).unwrap_or(&empty))
}
