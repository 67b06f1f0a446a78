//! `[[limits]]`: per-tool budgets for every client (and, in the same form,
//! under each `[[auth.clients]]` entry for that client), the default for
//! write tools, and the identical-call breaker; and their checks.
//!
//! ```toml
//! [[limits]]
//! tools = "github__create_*"
//! per_minute = 10
//! per_day = 200
//! [limits.defaults]
//! write_per_minute = 30
//! identical_calls = { max = 5, window = "60s" }
//! ```
//!
//! In TOML, `[limits.defaults]` after `[[limits]]` is a table of the last
//! entry; toolgate reads `defaults` as gateway-wide wherever it stands (in
//! one entry at most), so the form above means what it says.

use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::path::TomlPath;
use super::validate::Problem;

/// One per-tool budget: each tool its glob matches has its own, per client.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolLimit {
    /// Glob over exposed tool names, as in tool policy (`*`, `?`, `[abc]`, `{a,b}`). Default `*`:
    /// every tool.
    #[serde(default = "every_tool")]
    #[schemars(with = "super::schema::Glob")]
    pub tools: String,
    /// Calls of each matching tool per client per minute: a burst of this many, refilled evenly
    /// over the minute. At least `1`; unset: none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub per_minute: Option<u32>,
    /// Calls of each matching tool per client per UTC day (the count restarts at 00:00 UTC). At
    /// least `1`; unset: none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub per_day: Option<u32>,
    /// Budgets for every tool and every client (gateway-wide, in one entry at most; see the book).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub defaults: Option<LimitDefaults>,
}

fn every_tool() -> String {
    "*".into()
}

/// `[limits.defaults]`: budgets every tool has, per client.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LimitDefaults {
    /// Calls per client per minute of each tool not annotated `readOnlyHint: true` (a write, as far
    /// as anyone can tell). At least `1`; unset: none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub write_per_minute: Option<u32>,
    /// The identical-call breaker: at most `max` calls of one tool with the same arguments (compared
    /// as canonical JSON) per client within `window`. Unset: off.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub identical_calls: Option<IdenticalCalls>,
}

/// The identical-call breaker's numbers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct IdenticalCalls {
    /// Most identical calls within the window. At least `1`.
    #[schemars(range(min = 1))]
    pub max: u32,
    /// The window, from the first of them (e.g. `"60s"`). Between 1 s and 1 day.
    #[serde(with = "humantime_serde")]
    #[schemars(with = "super::schema::DurationText")]
    pub window: Duration,
}

/// The defaults of `limits` (the one entry that carries them).
pub fn defaults_of(limits: &[ToolLimit]) -> Option<&LimitDefaults> {
    limits.iter().find_map(|l| l.defaults.as_ref())
}

/// The problems of one list of limits at `root` (`limits`, or
/// `auth.clients[i].limits`, where defaults are not allowed).
pub(super) fn check(limits: &[ToolLimit], root: &TomlPath, defaults_allowed: bool) -> Vec<Problem> {
    let mut out = Vec::new();
    let mut push =
        |path: TomlPath, message: &str| out.push(Problem { path: path.to_string(), message: message.into() });
    let mut seen_defaults = false;
    for (i, limit) in limits.iter().enumerate() {
        let path = root.index(i);
        if globset::Glob::new(&limit.tools).is_err() {
            push(path.key("tools"), "is not a valid glob");
        }
        for (key, value) in [("per_minute", limit.per_minute), ("per_day", limit.per_day)] {
            if value == Some(0) {
                push(path.key(key), "must be at least 1");
            }
        }
        if limit.per_minute.is_none() && limit.per_day.is_none() && limit.defaults.is_none() {
            push(path.clone(), "sets no budget: give `per_minute`, `per_day`, or both");
        }
        let Some(defaults) = &limit.defaults else { continue };
        if !defaults_allowed {
            push(path.key("defaults"), "defaults are gateway-wide: set them under the top-level [[limits]]");
        } else if seen_defaults {
            push(path.key("defaults"), "defaults are already set by an earlier [[limits]] entry");
        }
        seen_defaults = true;
        let path = path.key("defaults");
        if defaults.write_per_minute == Some(0) {
            push(path.key("write_per_minute"), "must be at least 1");
        }
        if let Some(identical) = &defaults.identical_calls {
            if identical.max == 0 {
                push(path.key("identical_calls").key("max"), "must be at least 1");
            }
            if identical.window < Duration::from_secs(1) || identical.window > Duration::from_secs(86_400) {
                push(path.key("identical_calls").key("window"), "must be between 1s and 1d");
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Deserialize)]
    struct Doc {
        limits: Vec<ToolLimit>,
    }

    #[test]
    fn the_documented_form_reads_defaults_as_gateway_wide_and_checks_each_number() {
        let doc: Doc = toml::from_str(
            r#"
[[limits]]
tools = "github__create_*"
per_minute = 10
per_day = 200
[limits.defaults]
write_per_minute = 30
identical_calls = { max = 5, window = "60s" }

[[limits]]
tools = "x_*"
per_day = 0
"#,
        )
        .unwrap();
        let defaults = defaults_of(&doc.limits).unwrap();
        assert_eq!(defaults.write_per_minute, Some(30));
        assert_eq!(defaults.identical_calls.as_ref().unwrap().window, Duration::from_secs(60));
        let problems = check(&doc.limits, &TomlPath::root().key("limits"), true);
        let paths: Vec<_> = problems.iter().map(|p| p.path.as_str()).collect();
        assert_eq!(paths, ["limits[1].per_day"]);
        let problems = check(&doc.limits, &TomlPath::root().key("auth").key("clients").index(0).key("limits"), false);
        assert_eq!(problems[0].path, "auth.clients[0].limits[0].defaults");
    }
}
