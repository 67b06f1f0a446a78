//! Disclosure grants: the tools a client may call because it fetched their
//! current descriptions, and where they are kept.
//!
//! A session-based client keeps its grants in its session
//! ([`Grants::session`]); they end with it. A sessionless request (MCP
//! 2026-07-28) has no session to keep them in, so its grants live in the
//! gateway's [`GrantStore`], under the client's [`Scope`]: one per
//! authenticated client, and one that every anonymous client shares. Each such
//! grant expires `disclosure.grant_ttl` after it was given or last used. The
//! store is in this process's memory ([`memory`]) unless `[state] redis_url`
//! names a Redis server ([`redis`]), through which replicas share grants.
//!
//! A grant names the fingerprint of the definition it was given for: once the
//! upstream changes the definition, the client must fetch it again.

pub mod memory;
pub mod redis;

#[cfg(test)]
pub(crate) mod test_redis;
#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};

use crate::auth::{Principal, PrincipalKind};
use crate::config::{DisclosureConfig, StateConfig};
use crate::jsonrpc::{ErrorObject, codes};

/// The most a request waits on the grant store before it fails with
/// [`Unavailable`]: an unreachable Redis must not hold calls up for long.
pub const STORE_TIMEOUT: Duration = Duration::from_secs(2);

/// Characters kept as they are in a scope or a Redis key; everything else is
/// percent-encoded, so that no client or tool name can reach into another's
/// key (`:` separates the parts).
const KEY_SAFE: &AsciiSet = &NON_ALPHANUMERIC.remove(b'-').remove(b'_').remove(b'.');

/// Whose grants: one authenticated client, or every anonymous one.
///
/// The kind of credential is part of it (`key.alice` is not `jwt.alice`), as
/// it is of [`PrincipalId`](crate::auth::PrincipalId).
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Scope(Arc<str>);

impl Scope {
    /// The scope of `principal`'s sessionless requests.
    pub fn of(principal: &Principal) -> Self {
        let name = utf8_percent_encode(principal.name(), KEY_SAFE);
        Self(Arc::from(match principal.kind() {
            PrincipalKind::Anonymous => "anonymous".to_owned(),
            PrincipalKind::ApiKey => format!("key.{name}"),
            PrincipalKind::Jwt => format!("jwt.{name}"),
        }))
    }

    /// The scope as a key part: `[A-Za-z0-9._%-]+`.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Scope({})", self.0)
    }
}

/// A tool name as a key part (percent-encoded, see [`KEY_SAFE`]).
fn key_part(tool: &str) -> impl fmt::Display + '_ {
    utf8_percent_encode(tool, KEY_SAFE)
}

/// The grant store could not be reached (Redis down, or slower than
/// [`STORE_TIMEOUT`]). The request that needed it fails with
/// [`codes::GRANT_STORE_UNAVAILABLE`]; nothing is granted or allowed.
#[derive(Debug, thiserror::Error)]
#[error("the grant store is unavailable: {reason}")]
pub struct Unavailable {
    reason: String,
}

impl Unavailable {
    fn new(reason: impl Into<String>) -> Self {
        Self { reason: reason.into() }
    }

    /// The JSON-RPC error a client gets. It does not say why (the cause is
    /// logged): that would describe toolgate's infrastructure to clients.
    pub fn to_error(&self) -> ErrorObject {
        ErrorObject::new(codes::GRANT_STORE_UNAVAILABLE, "grant store unavailable; retry later")
    }
}

/// Where sessionless clients' grants are kept.
pub enum GrantStore {
    /// In this process, bounded, lost on restart.
    Memory(memory::MemoryStore),
    /// In Redis, shared by every replica that uses it.
    Redis(redis::RedisStore),
}

impl GrantStore {
    /// The store `[state]` configures, whose grants last `disclosure.grant_ttl`.
    pub fn from_config(disclosure: &DisclosureConfig, state: &StateConfig) -> Result<Self, ::redis::RedisError> {
        Ok(match &state.redis_url {
            Some(url) => Self::Redis(redis::RedisStore::new(url.expose(), &state.key_prefix, disclosure.grant_ttl)?),
            None => Self::Memory(memory::MemoryStore::new(disclosure.grant_ttl)),
        })
    }

    /// Whether `scope` may call `tool` with the definition `fingerprint`;
    /// if so, its grant starts over.
    pub async fn allows(&self, scope: &Scope, tool: &str, fingerprint: u64) -> Result<bool, Unavailable> {
        match self {
            Self::Memory(m) => Ok(m.allows(scope, tool, fingerprint)),
            Self::Redis(r) => r.allows(scope, tool, fingerprint).await,
        }
    }

    /// Records that `scope` fetched these definitions (anew, if it had).
    pub async fn grant(&self, scope: &Scope, tools: &[(String, u64)]) -> Result<(), Unavailable> {
        if tools.is_empty() {
            return Ok(());
        }
        match self {
            Self::Memory(m) => {
                m.grant(scope, tools);
                Ok(())
            }
            Self::Redis(r) => r.grant(scope, tools).await,
        }
    }

    /// Whether the store answers (always, in memory). Toolgate starts
    /// either way; this only tells the log early.
    pub async fn ping(&self) -> Result<(), Unavailable> {
        match self {
            Self::Memory(_) => Ok(()),
            Self::Redis(r) => r.ping().await,
        }
    }

    /// Which kind of store this is, for logs: `memory` or `redis`.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Memory(_) => "memory",
            Self::Redis(_) => "redis",
        }
    }
}

/// The grants a request's gate consults: its session's own, or its client's
/// in the shared store.
pub enum Grants {
    /// A session-based client's: tool name → fingerprint, for as long as
    /// the session lives.
    Session(Mutex<HashMap<String, u64>>),
    /// A sessionless client's: its scope in the gateway's store.
    Shared {
        /// The gateway's store.
        store: Arc<GrantStore>,
        /// The client's part of it.
        scope: Scope,
    },
}

impl Default for Grants {
    fn default() -> Self {
        Self::session()
    }
}

impl Grants {
    /// Empty grants of a session.
    pub fn session() -> Self {
        Self::Session(Mutex::new(HashMap::new()))
    }

    /// `scope`'s grants in `store`.
    pub fn shared(store: Arc<GrantStore>, scope: Scope) -> Self {
        Self::Shared { store, scope }
    }

    /// Records that the client fetched these definitions.
    pub async fn grant(&self, tools: &[(String, u64)]) -> Result<(), Unavailable> {
        match self {
            Self::Session(map) => {
                map.lock().extend(tools.iter().cloned());
                Ok(())
            }
            Self::Shared { store, scope } => store.grant(scope, tools).await,
        }
    }

    /// Whether the client fetched the current definition of `tool` (a
    /// shared grant that allows starts its time over).
    pub async fn allows(&self, tool: &str, fingerprint: u64) -> Result<bool, Unavailable> {
        match self {
            Self::Session(map) => Ok(map.lock().get(tool) == Some(&fingerprint)),
            Self::Shared { store, scope } => store.allows(scope, tool, fingerprint).await,
        }
    }
}
