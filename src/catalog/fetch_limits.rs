//! Bounds on one description fetch (a `resources/read` of the descriptions
//! resource, or a `describe_tools` call), so that no request can make
//! toolgate render, cache or send an answer of any size: how many tools one
//! fetch may name, how long a requested name may be, and how large the
//! answer may grow. Each catalog carries the bounds of the configuration it
//! was built under; [`crate::disclosure`] applies them.

use serde_json::{Value, json};

use crate::config::DisclosureConfig;

/// Default most tool names per fetch.
pub const DEFAULT_MAX_TOOLS: usize = 64;
/// Default largest answer, in bytes.
pub const DEFAULT_MAX_ANSWER_BYTES: usize = 1024 * 1024;
/// Longest tool name a fetch may ask for, in bytes (MCP tool names have at
/// most 128 characters; anything longer names no tool).
pub const MAX_REQUESTED_NAME: usize = 128;
/// Room kept in the answer for what wraps the body (the JSON-RPC envelope,
/// `contents`, `mimeType`...).
const ENVELOPE: usize = 512;

/// The limits of one fetch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FetchLimits {
    /// Most tool names one fetch may name; more get [`selection_refused`].
    pub max_tools: usize,
    /// Largest answer, in bytes: definitions that do not fit are left out
    /// (and not authorized), with an entry saying to fetch them separately.
    pub max_answer_bytes: usize,
}

impl Default for FetchLimits {
    fn default() -> Self {
        Self { max_tools: DEFAULT_MAX_TOOLS, max_answer_bytes: DEFAULT_MAX_ANSWER_BYTES }
    }
}

impl From<&DisclosureConfig> for FetchLimits {
    fn from(config: &DisclosureConfig) -> Self {
        Self { max_tools: config.max_tools_per_fetch, max_answer_bytes: config.max_answer_bytes }
    }
}

impl FetchLimits {
    /// Why a selection of `names` is refused as a whole, if it is: too many
    /// names, or a name too long to be a tool's.
    pub fn refusal(&self, names: &[String]) -> Option<Value> {
        if names.len() > self.max_tools {
            let message = format!(
                "A fetch may name at most {} tools; this one names {}. Fetch them in several requests.",
                self.max_tools,
                names.len()
            );
            return Some(selection_refused("TOO_MANY_TOOLS", &message, self.max_tools));
        }
        if names.iter().any(|n| n.len() > MAX_REQUESTED_NAME) {
            let message = format!("Tool names are at most {MAX_REQUESTED_NAME} characters long.");
            return Some(selection_refused("TOOL_NAME_TOO_LONG", &message, self.max_tools));
        }
        None
    }

    /// The bytes the body of an answer may take, once `reserved` bytes
    /// (e.g. the echoed URI) and the envelope are set aside. The body is sent
    /// as a JSON string, so its size is counted escaped ([`escaped_len`]).
    pub fn body_budget(&self, reserved: usize) -> usize {
        self.max_answer_bytes.saturating_sub(ENVELOPE + reserved)
    }
}

/// The body refusing a whole selection: like the spec's
/// `MISSING_TOOL_SELECTION` object, with its own code.
fn selection_refused(code: &str, message: &str, max_tools: usize) -> Value {
    json!({"error": {"code": code, "message": message, "max_tools": max_tools}})
}

/// The length of `text` once written inside a JSON string (quotes and
/// backslashes escaped, control characters as `\u00XX`).
pub fn escaped_len(text: &str) -> usize {
    text.len()
        + text
            .bytes()
            .map(|b| match b {
                b'"' | b'\\' | b'\n' | b'\r' | b'\t' | 0x08 | 0x0c => 1,
                0..0x20 => 5,
                _ => 0,
            })
            .sum::<usize>()
}

#[cfg(test)]
mod tests;
