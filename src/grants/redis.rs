//! The Redis grant store (`[state] redis_url`): grants that every replica
//! pointed at the same Redis (and key prefix) honours.
//!
//! One key per grant, `<prefix><scope>:<tool>` (the tool name
//! percent-encoded), holding the definition's fingerprint, with the grant's
//! time to live set in Redis (`SET … PX`): Redis forgets expired grants by
//! itself, and a use (`GETEX … PX`) starts the time over in the same round
//! trip. Hash-field expiry would need Redis 7.4; one key per grant works on
//! every Redis since 6.2.
//!
//! The connection is redis-rs's connection manager, created on first use
//! and reconnecting by itself after Redis went away. Every command is bounded
//! by [`STORE_TIMEOUT`]: when Redis cannot answer in time, the request that
//! needed it fails with [`Unavailable`] rather than waiting.

use std::time::Duration;

use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use tokio::sync::OnceCell;

use super::{STORE_TIMEOUT, Scope, Unavailable, key_part};

/// How long one connection attempt may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(1);
/// How long Redis may take to answer one command on a live connection.
const RESPONSE_TIMEOUT: Duration = Duration::from_secs(1);

/// Grants in Redis, each key expiring `ttl` after its grant or last use.
pub struct RedisStore {
    client: redis::Client,
    prefix: String,
    ttl_ms: u64,
    /// Made on first use (in the runtime, and without failing start-up
    /// when Redis is not up yet).
    manager: OnceCell<ConnectionManager>,
}

impl RedisStore {
    /// A store on the Redis at `url` (validated here; nothing connects
    /// until the first request needs it).
    pub fn new(url: &str, prefix: &str, ttl: Duration) -> redis::RedisResult<Self> {
        Ok(Self {
            client: redis::Client::open(url)?,
            prefix: prefix.to_owned(),
            // Redis refuses `PX 0`; validation refuses a zero TTL anyway.
            ttl_ms: u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX).max(1),
            manager: OnceCell::new(),
        })
    }

    /// The key of `scope`'s grant for `tool`.
    pub fn key(&self, scope: &Scope, tool: &str) -> String {
        format!("{}{}:{}", self.prefix, scope.as_str(), key_part(tool))
    }

    /// The time to live of a grant, in milliseconds.
    pub fn ttl_ms(&self) -> u64 {
        self.ttl_ms
    }

    async fn connection(&self) -> Result<ConnectionManager, Unavailable> {
        let manager = self.manager.get_or_try_init(|| async {
            // One retry at most inside a request: the request's own bound
            // is short, and the next request tries again.
            let config = ConnectionManagerConfig::new()
                .set_connection_timeout(Some(CONNECT_TIMEOUT))
                .set_response_timeout(Some(RESPONSE_TIMEOUT))
                .set_number_of_retries(1)
                .set_min_delay(Duration::from_millis(50))
                .set_max_delay(Duration::from_millis(200));
            ConnectionManager::new_lazy_with_config(self.client.clone(), config)
        });
        match manager.await {
            Ok(m) => Ok(m.clone()),
            Err(e) => Err(unavailable(&e)),
        }
    }

    /// Runs `command` within [`STORE_TIMEOUT`].
    async fn query<T: redis::FromRedisValue>(&self, command: impl Query) -> Result<T, Unavailable> {
        let run = async {
            let mut connection = self.connection().await?;
            command.run(&mut connection).await.map_err(|e| unavailable(&e))
        };
        match tokio::time::timeout(STORE_TIMEOUT, run).await {
            Ok(result) => result,
            Err(_) => Err(Unavailable::new(format!("Redis did not answer within {STORE_TIMEOUT:?}"))),
        }
    }

    /// Whether Redis answers (`PING`), for the start-up log.
    pub async fn ping(&self) -> Result<(), Unavailable> {
        self.query::<()>(redis::cmd("PING")).await
    }

    /// Whether `scope` holds a grant for this definition of `tool`; reading
    /// it starts its time over.
    pub async fn allows(&self, scope: &Scope, tool: &str, fingerprint: u64) -> Result<bool, Unavailable> {
        let mut cmd = redis::cmd("GETEX");
        cmd.arg(self.key(scope, tool)).arg("PX").arg(self.ttl_ms);
        let held: Option<String> = self.query(cmd).await?;
        // A grant for an older definition is refreshed too, which is harmless:
        // it allows nothing, and a fetch of the current one overwrites it.
        Ok(held.is_some_and(|f| f.parse() == Ok(fingerprint)))
    }

    /// Grants `scope` these definitions, each for the TTL from now.
    pub async fn grant(&self, scope: &Scope, tools: &[(String, u64)]) -> Result<(), Unavailable> {
        let mut pipe = redis::pipe();
        for (tool, fingerprint) in tools {
            pipe.cmd("SET").arg(self.key(scope, tool)).arg(fingerprint.to_string()).arg("PX").arg(self.ttl_ms).ignore();
        }
        self.query::<()>(pipe).await
    }
}

/// A command or a pipeline.
trait Query: Send {
    fn run<T: redis::FromRedisValue>(
        &self,
        connection: &mut ConnectionManager,
    ) -> impl Future<Output = redis::RedisResult<T>> + Send;
}

impl Query for redis::Cmd {
    fn run<T: redis::FromRedisValue>(
        &self,
        connection: &mut ConnectionManager,
    ) -> impl Future<Output = redis::RedisResult<T>> + Send {
        self.query_async(connection)
    }
}

impl Query for redis::Pipeline {
    fn run<T: redis::FromRedisValue>(
        &self,
        connection: &mut ConnectionManager,
    ) -> impl Future<Output = redis::RedisResult<T>> + Send {
        self.query_async(connection)
    }
}

fn unavailable(e: &redis::RedisError) -> Unavailable {
    Unavailable::new(format!("Redis: {e}"))
}
