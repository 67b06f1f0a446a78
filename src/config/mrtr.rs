//! `[mrtr]`: how toolgate holds an upstream call while a 2026-07-28 client
//! answers the input it needs (multi-round-trip translation in front of a
//! handshake-era upstream), and the checks of that section.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::path::TomlPath;
use super::validate::Problem;

/// `[mrtr]`: held upstream calls of 2026-07-28 clients. A handshake-era
/// upstream that asks for elicitation, sampling or roots mid-call keeps its
/// call open while the client gets an `InputRequiredResult`; these bound how
/// long and how many.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct MrtrConfig {
    /// How long a held call waits for the client's retry with the answers
    /// (each round starts it again). After it, the upstream's questions are
    /// answered as cancelled, its call is cancelled, and a late retry gets
    /// `-32602`. Default `600s` (the SDKs' `requestState` lifetime); must be > 0.
    #[serde(with = "humantime_serde")]
    pub hold_timeout: Duration,
    /// Most calls one client (by credential; every anonymous client counts as
    /// one) may have held at once; one more is answered with `-32014`.
    /// Default 16; at least 1.
    pub max_held_per_client: usize,
    /// Most calls held at once for every client together. Default 1000; at
    /// least 1.
    pub max_held: usize,
}

impl Default for MrtrConfig {
    fn default() -> Self {
        Self { hold_timeout: Duration::from_secs(600), max_held_per_client: 16, max_held: 1000 }
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
    out
}

#[cfg(test)]
mod tests;
