//! `[state]`: where toolgate keeps state that replicas share (today: the
//! disclosure grants of sessionless clients), and the checks of that section.

use serde::{Deserialize, Serialize};

use super::Secret;
use super::path::TomlPath;
use super::validate::Problem;

/// The Redis key prefix of grants unless `[state] key_prefix` says otherwise.
pub const DEFAULT_KEY_PREFIX: &str = "toolgate:grant:";

/// `[state]`: shared state. Without `redis_url`, grants are kept in memory,
/// per process.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct StateConfig {
    /// The Redis server that keeps sessionless clients' description grants,
    /// so that every replica pointed at it honours them, e.g.
    /// `redis://127.0.0.1:6379/0` (a password as `redis://:${PASS}@host/0`).
    /// Default: unset, grants are kept in this process's memory.
    /// Overridable as `TOOLGATE_STATE__REDIS_URL`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub redis_url: Option<Secret>,
    /// Prefix of the Redis keys (one key per client and tool). Replicas that
    /// must share grants use the same prefix. Default `toolgate:grant:`.
    pub key_prefix: String,
}

impl Default for StateConfig {
    fn default() -> Self {
        Self { redis_url: None, key_prefix: DEFAULT_KEY_PREFIX.into() }
    }
}

/// The problems of `[state]`.
pub(super) fn check(state: &StateConfig) -> Vec<Problem> {
    let mut out = Vec::new();
    let root = TomlPath::root().key("state");
    let mut push = |path: TomlPath, message: String| out.push(Problem { path: path.to_string(), message });
    if let Some(url) = &state.redis_url {
        let url = url.expose();
        if !(url.starts_with("redis://") || url.starts_with("redis+unix://") || url.starts_with("unix://")) {
            // Never echo the value: it may carry a password.
            push(
                root.key("redis_url"),
                "must be a `redis://host:port/db` URL (or `redis+unix://` for a socket); TLS (`rediss://`) is not supported"
                    .into(),
            );
        } else if let Err(e) = redis::Client::open(url) {
            push(root.key("redis_url"), format!("is not a usable Redis URL: {}", e.detail().unwrap_or(e.category())));
        }
    }
    if state.key_prefix.is_empty() || state.key_prefix.chars().any(|c| c.is_whitespace() || c.is_control()) {
        push(root.key("key_prefix"), "must not be empty or contain spaces or control characters".into());
    }
    out
}

#[cfg(test)]
mod tests;
