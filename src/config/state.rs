//! `[state]`: where toolgate keeps state that replicas share (the
//! disclosure grants of sessionless clients, and client sessions), how it
//! reaches that Redis, and the checks of that section.

use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::Secret;
use super::path::TomlPath;
use super::validate::Problem;

/// The Redis key prefix of grants unless `[state] key_prefix` says otherwise.
pub const DEFAULT_KEY_PREFIX: &str = "toolgate:grant:";

/// The Redis key prefix of shared sessions (and the prefix of the pub/sub
/// channels replicas talk on) unless `[state] session_prefix` says otherwise.
pub const DEFAULT_SESSION_PREFIX: &str = "toolgate:session:";

/// `[state]`: where state that replicas share is kept: sessionless clients' description grants
/// and, unless `sessions = "local"`, client sessions. Without `redis_url`: in toolgate's memory,
/// per process (a restart forgets them, and replicas do not share them).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct StateConfig {
    /// A Redis server (6.2 or newer) that keeps the grants and the shared sessions, so that every
    /// replica pointed at it honours them, e.g. `"redis://127.0.0.1:6379/0"`, or
    /// `"redis://:${REDIS_PASSWORD}@redis:6379/0"`; `rediss://` for TLS (rustls, with the system's
    /// roots or `ca_file`); `redis+unix:///run/redis.sock` for a socket. `check-config` prints it
    /// redacted, and validation errors never echo it. toolgate starts without Redis reachable;
    /// requests that need it fail with `-32019` (HTTP 503 with `Retry-After` where a session is
    /// created or adopted) until it is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub redis_url: Option<Secret>,
    /// Where client sessions (`Mcp-Session-Id`) live: `shared` (in Redis, so that any replica
    /// serves any session, and a restart loses none) or `local` (in this process). Default:
    /// `shared` with `redis_url`, else `local`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sessions: Option<SessionSharing>,
    /// Prefix of the grant keys (one per client and tool). Replicas that share grants use the same
    /// one; no spaces.
    pub key_prefix: String,
    /// Prefix of the shared session keys (one hash per session) and of the pub/sub channels the
    /// replicas talk on. Replicas that share sessions use the same one; it must differ from
    /// `key_prefix`; no spaces.
    pub session_prefix: String,
    /// The user Redis ACLs know toolgate as (`AUTH user password`), if the URL names none.
    /// Usually `"${REDIS_USERNAME}"`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub username: Option<Secret>,
    /// The Redis password, if the URL holds none. Usually `"${REDIS_PASSWORD}"`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub password: Option<Secret>,
    /// With `rediss://`: a PEM file of the CA certificates that sign the server's certificate,
    /// instead of the system's roots (a private CA).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ca_file: Option<PathBuf>,
    /// AES-256-GCM keys (each 32 bytes, base64) for secrets kept in Redis (exchanged upstream
    /// tokens): the first encrypts, all decrypt, so a key can be rotated in. Without one, nothing
    /// secret is written to Redis and such caches stay per process. Usually `["${KEY}"]`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("default" = []))]
    pub encryption_keys: Vec<Secret>,
}

/// Where client sessions live (`[state] sessions`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SessionSharing {
    /// In Redis: every replica serves every session, and a restarted replica adopts them.
    Shared,
    /// In this process only: a restart ends them, and another replica answers 404.
    Local,
}

impl Default for StateConfig {
    fn default() -> Self {
        Self {
            redis_url: None,
            sessions: None,
            key_prefix: DEFAULT_KEY_PREFIX.into(),
            session_prefix: DEFAULT_SESSION_PREFIX.into(),
            username: None,
            password: None,
            ca_file: None,
            encryption_keys: Vec::new(),
        }
    }
}

impl StateConfig {
    /// Whether client sessions are kept in Redis: `sessions`, or by default
    /// whenever `redis_url` is set.
    pub fn shares_sessions(&self) -> bool {
        self.redis_url.is_some() && self.sessions != Some(SessionSharing::Local)
    }
}

/// The URL schemes `redis_url` may have.
const SCHEMES: [&str; 4] = ["redis://", "rediss://", "redis+unix://", "unix://"];

/// The problems of `[state]`.
pub(super) fn check(state: &StateConfig) -> Vec<Problem> {
    let mut out = Vec::new();
    let root = TomlPath::root().key("state");
    let mut push = |path: TomlPath, message: String| out.push(Problem { path: path.to_string(), message });
    match &state.redis_url {
        Some(url) => {
            let url = url.expose();
            if !SCHEMES.iter().any(|s| url.starts_with(s)) {
                // Never echo the value: it may carry a password.
                push(
                    root.key("redis_url"),
                    "must be a `redis://host:port/db` URL (`rediss://` for TLS, `redis+unix://` for a socket)".into(),
                );
            } else if let Err(e) = redis::Client::open(url) {
                push(
                    root.key("redis_url"),
                    format!("is not a usable Redis URL: {}", e.detail().unwrap_or(e.category())),
                );
            }
            if state.ca_file.is_some() && !url.starts_with("rediss://") {
                push(root.key("ca_file"), "applies only to a TLS `rediss://` redis_url".into());
            }
        }
        None => {
            for (key, set) in [
                ("sessions", state.sessions == Some(SessionSharing::Shared)),
                ("username", state.username.is_some()),
                ("password", state.password.is_some()),
                ("ca_file", state.ca_file.is_some()),
            ] {
                if set {
                    push(root.key(key), "needs `redis_url`".into());
                }
            }
        }
    }
    if let Some(ca) = &state.ca_file
        && std::fs::metadata(ca).is_err()
    {
        push(root.key("ca_file"), format!("cannot read {}", ca.display()));
    }
    for (key, prefix) in [("key_prefix", &state.key_prefix), ("session_prefix", &state.session_prefix)] {
        if prefix.is_empty() || prefix.chars().any(|c| c.is_whitespace() || c.is_control()) {
            push(root.key(key), "must not be empty or contain spaces or control characters".into());
        }
    }
    if state.key_prefix == state.session_prefix {
        push(root.key("session_prefix"), "must differ from `key_prefix`".into());
    }
    for (i, key) in state.encryption_keys.iter().enumerate() {
        // The key is never echoed.
        if let Err(e) = crate::identity::sealed::Key::parse(key.expose()) {
            push(root.key("encryption_keys").index(i), e.to_string());
        }
    }
    if !state.encryption_keys.is_empty() && state.redis_url.is_none() {
        push(root.key("encryption_keys"), "needs `redis_url` (they encrypt what is kept there)".into());
    }
    out
}

#[cfg(test)]
mod tests;
