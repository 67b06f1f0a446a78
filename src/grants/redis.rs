//! The Redis grant store (`[state] redis_url`): grants that every replica
//! pointed at the same Redis (and key prefix) honours.
//!
//! The tasks a scope created are one hash, `<prefix>tasks:<scope>` (task id
//! → upstream), whose time to live starts over with each task.
//!
//! One key per grant, `<prefix><scope>:<tool>` (the tool name
//! percent-encoded), holding the definition's fingerprint, with the grant's
//! time to live set in Redis (`SET … PX`): Redis forgets expired grants by
//! itself, and a use (`GETEX … PX`) starts the time over in the same round
//! trip. Hash-field expiry would need Redis 7.4; one key per grant works on
//! every Redis since 6.2.
//!
//! The connection is `[state]`'s ([`crate::shared::Connection`]): every
//! command is bounded, and an unreachable Redis fails the request that
//! needed it with [`Unavailable`] rather than holding it up.

use std::sync::Arc;
use std::time::Duration;

use super::{Scope, Unavailable, key_part};
use crate::shared::Connection;

/// Grants in Redis, each key expiring `ttl` after its grant or last use.
pub struct RedisStore {
    connection: Arc<Connection>,
    prefix: String,
    ttl_ms: u64,
    note_task: redis::Script,
}

/// Records a task in a scope's task hash, within a bound.
///
/// KEYS: the hash. ARGV: the TTL in ms, the most fields, the task id, the
/// upstream. Answers 1 (recorded) or 0 (full).
const NOTE_TASK: &str = r"
if redis.call('HEXISTS', KEYS[1], ARGV[3]) == 0 and redis.call('HLEN', KEYS[1]) >= tonumber(ARGV[2]) then
  return 0
end
redis.call('HSET', KEYS[1], ARGV[3], ARGV[4])
redis.call('PEXPIRE', KEYS[1], ARGV[1])
return 1
";

impl RedisStore {
    /// A store on `connection` (nothing connects until the first request
    /// needs it).
    pub fn new(connection: Arc<Connection>, prefix: &str, ttl: Duration) -> Self {
        Self {
            connection,
            prefix: prefix.to_owned(),
            // Redis refuses `PX 0`; validation refuses a zero TTL anyway.
            ttl_ms: u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX).max(1),
            note_task: redis::Script::new(NOTE_TASK),
        }
    }

    /// The key of `scope`'s grant for `tool`.
    pub fn key(&self, scope: &Scope, tool: &str) -> String {
        format!("{}{}:{}", self.prefix, scope.as_str(), key_part(tool))
    }

    /// The time to live of a grant, in milliseconds.
    pub fn ttl_ms(&self) -> u64 {
        self.ttl_ms
    }

    /// Whether Redis answers (`PING`), for the start-up log.
    pub async fn ping(&self) -> Result<(), Unavailable> {
        self.connection.ping().await
    }

    /// Whether `scope` holds a grant for this definition of `tool`; reading
    /// it starts its time over.
    pub async fn allows(&self, scope: &Scope, tool: &str, fingerprint: u64) -> Result<bool, Unavailable> {
        let mut cmd = redis::cmd("GETEX");
        cmd.arg(self.key(scope, tool)).arg("PX").arg(self.ttl_ms);
        let held: Option<String> = self.connection.query(cmd).await?;
        // A grant for an older definition is refreshed too, which is harmless:
        // it allows nothing, and a fetch of the current one overwrites it.
        Ok(held.is_some_and(|f| f.parse() == Ok(fingerprint)))
    }

    /// The key of the tasks `scope` created: one hash, task id → upstream.
    fn tasks_key(&self, scope: &Scope) -> String {
        format!("{}tasks:{}", self.prefix, scope.as_str())
    }

    /// Records that `scope` created task `id` at `upstream`: one field of
    /// the scope's task hash, whose time starts over. A scope holding
    /// [`super::MAX_TASKS`] tasks records no more until some expire with
    /// the hash.
    pub async fn note_task(&self, scope: &Scope, id: &str, upstream: &str) -> Result<(), Unavailable> {
        let mut invocation = self.note_task.key(self.tasks_key(scope));
        invocation.arg(self.ttl_ms).arg(super::MAX_TASKS).arg(id).arg(upstream);
        self.connection.query::<i64>(invocation).await.map(drop)
    }

    /// The upstreams holding the tasks `ids` of `scope`, where it created them.
    pub async fn task_upstreams(&self, scope: &Scope, ids: &[&str]) -> Result<Vec<Option<String>>, Unavailable> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let mut cmd = redis::cmd("HMGET");
        cmd.arg(self.tasks_key(scope)).arg(ids);
        self.connection.query(cmd).await
    }

    /// Grants `scope` these definitions, each for the TTL from now.
    pub async fn grant(&self, scope: &Scope, tools: &[(String, u64)]) -> Result<(), Unavailable> {
        let mut pipe = redis::pipe();
        for (tool, fingerprint) in tools {
            pipe.cmd("SET").arg(self.key(scope, tool)).arg(fingerprint.to_string()).arg("PX").arg(self.ttl_ms).ignore();
        }
        self.connection.query::<()>(pipe).await
    }
}
