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
//!
//! The store also keeps which sessionless client created which upstream
//! task ([`GrantStore::note_task`]), for as long as a grant lasts from the
//! task's creation or last use: a task's `tasks/*` requests are served for
//! the client that created it only.

pub mod memory;
pub mod redis;

#[cfg(test)]
mod tests;

// foldhash: a session's grants are looked up on every call it makes.
use foldhash::{HashMap, HashMapExt as _};
use std::fmt;
use std::sync::Arc;

use parking_lot::Mutex;
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};

use crate::auth::{Principal, PrincipalKind};
use crate::config::{DisclosureConfig, StateConfig};
use crate::shared::{Connection, SessionLink, record};
pub use crate::shared::{STORE_TIMEOUT, Unavailable};

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
        // Every anonymous request's, made once.
        static ANONYMOUS: std::sync::LazyLock<Scope> = std::sync::LazyLock::new(|| Scope(Arc::from("anonymous")));
        let name = utf8_percent_encode(principal.name(), KEY_SAFE);
        Self(Arc::from(match principal.kind() {
            PrincipalKind::Anonymous => return ANONYMOUS.clone(),
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

/// Most tasks one sessionless client's record holds at once (a session
/// remembers as many of its own).
pub const MAX_TASKS: usize = 1024;

/// A tool name as a key part (percent-encoded, see [`KEY_SAFE`]).
fn key_part(tool: &str) -> impl fmt::Display + '_ {
    utf8_percent_encode(tool, KEY_SAFE)
}

/// Where sessionless clients' grants are kept.
pub enum GrantStore {
    /// In this process, bounded, lost on restart.
    Memory(memory::MemoryStore),
    /// In Redis, shared by every replica that uses it.
    Redis(redis::RedisStore),
}

impl GrantStore {
    /// The store `[state]` configures (on its Redis `connection`, if it
    /// names one), whose grants last `disclosure.grant_ttl`.
    pub fn from_config(
        disclosure: &DisclosureConfig,
        state: &StateConfig,
        connection: Option<Arc<Connection>>,
    ) -> Self {
        match connection {
            Some(connection) => {
                Self::Redis(redis::RedisStore::new(connection, &state.key_prefix, disclosure.grant_ttl))
            }
            None => Self::Memory(memory::MemoryStore::new(disclosure.grant_ttl)),
        }
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

    /// Records that `scope` created task `id` at upstream `upstream` (its
    /// `tasks/*` requests are served for `scope` alone).
    pub async fn note_task(&self, scope: &Scope, id: &str, upstream: &str) -> Result<(), Unavailable> {
        match self {
            Self::Memory(m) => {
                m.note_task(scope, id, upstream);
                Ok(())
            }
            Self::Redis(r) => r.note_task(scope, id, upstream).await,
        }
    }

    /// For each of `ids`, the upstream where `scope` created that task, if
    /// it did.
    pub async fn task_upstreams(&self, scope: &Scope, ids: &[&str]) -> Result<Vec<Option<Arc<str>>>, Unavailable> {
        match self {
            Self::Memory(m) => Ok(ids.iter().map(|id| m.task_upstream(scope, id)).collect()),
            Self::Redis(r) => Ok(r.task_upstreams(scope, ids).await?.into_iter().map(|u| u.map(Arc::from)).collect()),
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
    /// A shared session's (`[state] sessions = "shared"`): the grants this
    /// replica knows, and in its record those every replica recorded.
    Replicated {
        /// What this replica knows: tool name → fingerprint.
        local: Mutex<HashMap<String, u64>>,
        /// The session's record.
        link: Arc<SessionLink>,
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

    /// The grants of a shared session, starting with `known` (what its
    /// record held when this replica adopted it).
    pub fn replicated(link: Arc<SessionLink>, known: &std::collections::HashMap<String, u64>) -> Self {
        let known = known.iter().map(|(tool, fingerprint)| (tool.clone(), *fingerprint)).collect();
        Self::Replicated { local: Mutex::new(known), link }
    }

    /// What this replica knows of a session's grants (to write its record
    /// back); empty for a sessionless client's.
    pub fn known(&self) -> std::collections::HashMap<String, u64> {
        match self {
            Self::Session(map) | Self::Replicated { local: map, .. } => {
                map.lock().iter().map(|(tool, fingerprint)| (tool.clone(), *fingerprint)).collect()
            }
            Self::Shared { .. } => std::collections::HashMap::new(),
        }
    }

    /// The store and scope of a sessionless client's grants.
    pub fn scope(&self) -> Option<(&Arc<GrantStore>, &Scope)> {
        match self {
            Self::Shared { store, scope } => Some((store, scope)),
            _ => None,
        }
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
            // Recorded before the description is answered, so that the
            // client's next call may reach any replica. When Redis cannot
            // take it, this replica still honours it, and writes the record
            // back once Redis answers again.
            Self::Replicated { local, link } => {
                local.lock().extend(tools.iter().cloned());
                let fields: Vec<_> = tools.iter().map(|(t, f)| (record::grant_field(t), f.to_string())).collect();
                link.settle(link.sessions.update(&link.id, &fields).await);
                Ok(())
            }
        }
    }

    /// Whether the client fetched the current definition of `tool` (a
    /// shared grant that allows starts its time over).
    pub async fn allows(&self, tool: &str, fingerprint: u64) -> Result<bool, Unavailable> {
        match self {
            Self::Session(map) => Ok(map.lock().get(tool) == Some(&fingerprint)),
            Self::Shared { store, scope } => store.allows(scope, tool, fingerprint).await,
            // Another replica may have recorded it: asked only when this
            // one does not know it.
            Self::Replicated { local, link } => {
                if local.lock().get(tool) == Some(&fingerprint) {
                    return Ok(true);
                }
                let held = link.sessions.grant_of(&link.id, tool).await?;
                if held == Some(fingerprint) {
                    local.lock().insert(tool.to_owned(), fingerprint);
                }
                Ok(held == Some(fingerprint))
            }
        }
    }
}
