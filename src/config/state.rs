//! `[state]`: where toolgate keeps state that replicas share (today: the
//! disclosure grants of sessionless clients), and the checks of that section.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::Secret;
use super::path::TomlPath;
use super::validate::Problem;

/// The Redis key prefix of grants unless `[state] key_prefix` says otherwise.
pub const DEFAULT_KEY_PREFIX: &str = "toolgate:grant:";

/// `[state]`: where sessionless clients' description grants are kept. Without `redis_url`: in
/// toolgate's memory, per process (a restart forgets them, and replicas do not share them).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct StateConfig {
    /// A Redis server (6.2 or newer) that keeps the grants, so that every replica pointed at it
    /// honours them, e.g. `"redis://127.0.0.1:6379/0"`, or
    /// `"redis://:${REDIS_PASSWORD}@redis:6379/0"`; `redis+unix:///run/redis.sock` for a socket.
    /// TLS (`rediss://`) is not supported. `check-config` prints it redacted, and validation errors
    /// never echo it. toolgate starts without Redis reachable; requests that need a grant fail with
    /// `-32019` until it is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub redis_url: Option<Secret>,
    /// Prefix of the keys (one per client and tool). Replicas that share grants use the same one;
    /// no spaces.
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
