//! `[audit]`: the audit trail of what clients read and called (see
//! [`crate::audit`]), and its checks.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::path::TomlPath;
use super::validate::Problem;

/// `[audit]`: one JSON object per line for every description fetch, call, refusal, search, drift
/// and change of a session's concerns, written off the call path.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct AuditConfig {
    /// Write the audit trail.
    pub enabled: bool,
    /// Where: a file (appended to; reopened on SIGHUP, for external rotation), or `"-"` for
    /// standard output.
    pub path: String,
    /// What a call event keeps of its arguments: `"none"`, `"redacted"` (the default: values under
    /// properties the tool's schema marks `writeOnly` or `format: "password"`, or whose names
    /// contain one of `redact`, are replaced by `redacted:` and a hash prefix) or `"full"`.
    pub arguments: AuditArguments,
    /// Property names whose values are redacted (matched case-insensitively as parts of a name:
    /// `api_key` matches `key`).
    pub redact: Vec<String>,
    /// Largest event, in bytes; a call's arguments are left out of a larger one (`"truncated":
    /// true`). At least `1024`.
    #[schemars(range(min = 1024))]
    pub max_bytes: usize,
    /// Events waiting to be written; past it, events are dropped (counted in
    /// `toolgate_audit_dropped_total`) rather than delaying a call. At least `1`.
    #[schemars(range(min = 1))]
    pub queue: usize,
}

/// What call events keep of arguments.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum AuditArguments {
    /// Only their digest.
    None,
    /// Their digest and the arguments, secrets replaced by a hash prefix.
    #[default]
    Redacted,
    /// Their digest and the arguments as sent.
    Full,
}

impl Default for AuditConfig {
    fn default() -> Self {
        Self {
            enabled: false,
            path: "-".into(),
            arguments: AuditArguments::Redacted,
            redact: ["password", "token", "secret", "key", "authorization"].map(str::to_owned).to_vec(),
            max_bytes: 16 * 1024,
            queue: 4096,
        }
    }
}

pub(super) fn check(audit: &AuditConfig) -> Vec<Problem> {
    let mut out = Vec::new();
    let root = TomlPath::root().key("audit");
    let mut push =
        |key: &str, message: &str| out.push(Problem { path: root.key(key).to_string(), message: message.into() });
    if audit.path.trim().is_empty() {
        push("path", "must name a file, or \"-\" for standard output");
    }
    if audit.max_bytes < 1024 {
        push("max_bytes", "must be at least 1024");
    }
    if audit.queue == 0 {
        push("queue", "must be at least 1");
    }
    out
}
