//! `[mrtr]`: how toolgate holds an upstream call while a 2026-07-28 client
//! answers the input it needs (multi-round-trip translation in front of a
//! handshake-era upstream), and the checks of that section.

use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::Secret;
use super::path::TomlPath;
use super::validate::Problem;

/// `[mrtr]`: held upstream calls of 2026-07-28 clients. A handshake-era upstream that asks for
/// elicitation, sampling or roots mid-call keeps its call open while the client gets an
/// `InputRequiredResult`; these bound how long and how many. Needs a restart to change.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct MrtrConfig {
    /// How long a held call waits for the client's retry with its answers (each round starts it
    /// again). Then the upstream's call is cancelled, its open requests are answered (elicitation
    /// `{"action": "cancel"}`, others an error), and a late retry gets `-32602`. Must be > 0.
    #[serde(with = "humantime_serde")]
    #[schemars(with = "super::schema::DurationText")]
    pub hold_timeout: Duration,
    /// Most calls held at once for one client (every anonymous client counts as one). One more gets
    /// `-32014` and its upstream call is cancelled. At least `1`.
    #[schemars(range(min = 1))]
    pub max_held_per_client: usize,
    /// Most calls held at once for all clients together; as above. At least `1`.
    #[schemars(range(min = 1))]
    pub max_held: usize,
    /// The secret that signs and verifies `requestState`s, shared by every replica (at least 32
    /// bytes; usually `"${TOOLGATE_MRTR_KEY}"`). With it and shared sessions (`[state]`), a retry
    /// that reaches another replica than the one holding its call is passed to that one over Redis.
    /// Without it each process signs with a random key of its own: a retry is only good on the
    /// replica (and process) that issued its state, elsewhere it gets `-32602`. Never printed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key: Option<Secret>,
}

/// The shortest accepted `[mrtr] key`, in bytes (what HMAC-SHA256 needs to
/// be as strong as its output).
pub const MIN_KEY_BYTES: usize = 32;

impl Default for MrtrConfig {
    fn default() -> Self {
        Self { hold_timeout: Duration::from_secs(600), max_held_per_client: 16, max_held: 1000, key: None }
    }
}

/// The problems of `[mrtr]`.
pub(super) fn check(mrtr: &MrtrConfig) -> Vec<Problem> {
    let mut out = Vec::new();
    let root = TomlPath::root().key("mrtr");
    let mut push = |path: TomlPath, message: String| out.push(Problem { path: path.to_string(), message });
    if mrtr.hold_timeout.is_zero() {
        push(root.key("hold_timeout"), "must be greater than zero".into());
    }
    for (key, value) in [("max_held_per_client", mrtr.max_held_per_client), ("max_held", mrtr.max_held)] {
        if value < 1 {
            push(root.key(key), format!("must be at least 1 (found {value})"));
        }
    }
    if let Some(key) = &mrtr.key {
        let len = key.expose().len();
        if len < MIN_KEY_BYTES {
            // The length only: never the key.
            push(root.key("key"), format!("must be at least {MIN_KEY_BYTES} bytes (found {len})"));
        }
    }
    out
}

#[cfg(test)]
mod tests;
