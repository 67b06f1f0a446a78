//! The connection to the Redis of `[state]`: one client (TLS with rustls
//! for `rediss://`, with the system's roots or `ca_file`; `username` and
//! `password` when the URL has none), one connection manager for commands,
//! made on first use and reconnecting by itself, and a dedicated connection
//! per pub/sub subscriber.
//!
//! Every command is bounded by [`STORE_TIMEOUT`]: when Redis cannot answer
//! in time, the request that needed it fails with [`Unavailable`] rather
//! than waiting.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use redis::IntoConnectionInfo as _;
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use tokio::sync::OnceCell;

use crate::config::StateConfig;
use crate::jsonrpc::{ErrorObject, codes};

/// The most a request waits on Redis before it fails with [`Unavailable`]:
/// an unreachable Redis must not hold requests up for long.
pub const STORE_TIMEOUT: Duration = Duration::from_secs(2);

/// How long one connection attempt may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(1);
/// How long Redis may take to answer one command on a live connection.
const RESPONSE_TIMEOUT: Duration = Duration::from_secs(1);

/// Redis could not be reached (down, or slower than [`STORE_TIMEOUT`]). The
/// request that needed it fails with [`codes::STATE_STORE_UNAVAILABLE`].
#[derive(Debug, thiserror::Error)]
#[error("the state store is unavailable: {reason}")]
pub struct Unavailable {
    reason: String,
}

impl Unavailable {
    /// Unavailable for `reason` (logged, never sent to clients).
    pub fn new(reason: impl Into<String>) -> Self {
        Self { reason: reason.into() }
    }

    /// The JSON-RPC error a client gets. It does not say why (the cause is
    /// logged): that would describe toolgate's infrastructure to clients.
    pub fn to_error(&self) -> ErrorObject {
        ErrorObject::new(codes::STATE_STORE_UNAVAILABLE, "state store unavailable; retry later")
    }
}

impl From<&redis::RedisError> for Unavailable {
    fn from(e: &redis::RedisError) -> Self {
        Self::new(format!("Redis: {e}"))
    }
}

/// The Redis of `[state]`.
pub struct Connection {
    client: redis::Client,
    /// Counts failed commands, once the metrics are attached.
    errors: std::sync::OnceLock<prometheus_client::metrics::counter::Counter>,
    /// Whether the last command failed.
    failing: AtomicBool,
    /// Made on first use (in the runtime, and without failing start-up
    /// when Redis is not up yet).
    manager: OnceCell<ConnectionManager>,
}

/// Why `[state]` names no usable Redis (the loader checks the URL; the CA
/// file may have gone since).
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// The URL, or the TLS settings, are refused by the client library.
    #[error("the Redis URL or its TLS settings are not usable")]
    Redis(#[from] redis::RedisError),
    /// `ca_file` cannot be read.
    #[error("cannot read the CA file {path}")]
    CaFile {
        path: String,
        #[source]
        source: std::io::Error,
    },
}

impl Connection {
    /// The Redis `url`, with the credentials and CA file of `state` (nothing
    /// connects until the first command).
    pub fn open(url: &str, state: &StateConfig) -> Result<Self, OpenError> {
        let mut info = url.into_connection_info()?;
        let mut settings = info.redis_settings().clone();
        if let Some(user) = &state.username {
            settings = settings.set_username(user.expose());
        }
        if let Some(password) = &state.password {
            settings = settings.set_password(password.expose());
        }
        info = info.set_redis_settings(settings);
        let client = match &state.ca_file {
            Some(path) => {
                let pem = std::fs::read(path)
                    .map_err(|source| OpenError::CaFile { path: path.display().to_string(), source })?;
                let certificates = redis::TlsCertificates { client_tls: None, root_cert: Some(pem) };
                redis::Client::build_with_tls(info, certificates)?
            }
            None => redis::Client::open(info)?,
        };
        Ok(Self { client, manager: OnceCell::new(), errors: Default::default(), failing: AtomicBool::new(false) })
    }

    /// Counts every failed command in `errors` (set once).
    pub fn count_errors(&self, errors: prometheus_client::metrics::counter::Counter) {
        let _ = self.errors.set(errors);
    }

    /// The command connection (made on first use).
    async fn manager(&self) -> Result<ConnectionManager, Unavailable> {
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
            Err(e) => Err(Unavailable::from(&e)),
        }
    }

    /// Runs `command` (a command, a pipeline or a script invocation) within
    /// [`STORE_TIMEOUT`].
    pub async fn query<T: redis::FromRedisValue + Send>(&self, command: impl Query) -> Result<T, Unavailable> {
        let run = async {
            let mut connection = self.manager().await?;
            Ok(command.run(&mut connection).await)
        };
        let result = match tokio::time::timeout(STORE_TIMEOUT, run).await {
            Ok(Ok(Ok(value))) => Ok(value),
            // Redis answered, about a key that does not hold what the
            // command expects: the command fails, but the store is up, so
            // nothing counts it as an outage (a client could otherwise make
            // one by naming such a key).
            Ok(Ok(Err(e))) if is_shape_error(&e) => {
                self.failing.store(false, Ordering::Relaxed);
                tracing::debug!(error = %e, "the shared state store refused a command about a key of another type");
                return Err(Unavailable::from(&e));
            }
            Ok(Ok(Err(e))) => Err(Unavailable::from(&e)),
            Ok(Err(unavailable)) => Err(unavailable),
            Err(_) => Err(Unavailable::new(format!("Redis did not answer within {STORE_TIMEOUT:?}"))),
        };
        self.failing.store(result.is_err(), Ordering::Relaxed);
        if let Err(e) = &result {
            if let Some(errors) = self.errors.get() {
                errors.inc();
            }
            tracing::debug!(error = %e, "a command to the shared state store failed");
        }
        result
    }

    /// Whether the last command failed (Redis unreachable, as far as this
    /// replica knows).
    pub fn is_failing(&self) -> bool {
        self.failing.load(Ordering::Relaxed)
    }

    /// Whether Redis answers (`PING`).
    pub async fn ping(&self) -> Result<(), Unavailable> {
        self.query::<()>(redis::cmd("PING")).await
    }

    /// A new connection for a pub/sub subscriber, within [`STORE_TIMEOUT`].
    pub async fn pubsub(&self) -> Result<redis::aio::PubSub, Unavailable> {
        match tokio::time::timeout(STORE_TIMEOUT, self.client.get_async_pubsub()).await {
            Ok(Ok(pubsub)) => Ok(pubsub),
            Ok(Err(e)) => Err(Unavailable::from(&e)),
            Err(_) => Err(Unavailable::new("Redis did not accept a subscriber connection in time")),
        }
    }
}

/// Whether Redis refused a command because a key holds another type than
/// the command expects (`WRONGTYPE`), or answered with a value of another
/// shape than the caller reads.
fn is_shape_error(e: &redis::RedisError) -> bool {
    e.code() == Some("WRONGTYPE") || e.kind() == redis::ErrorKind::UnexpectedReturnType
}

/// Something [`Connection::query`] runs: a command, a pipeline, a script.
pub trait Query: Send {
    /// Runs it on `connection`.
    fn run<T: redis::FromRedisValue + Send>(
        &self,
        connection: &mut ConnectionManager,
    ) -> impl Future<Output = redis::RedisResult<T>> + Send;
}

impl Query for redis::Cmd {
    fn run<T: redis::FromRedisValue + Send>(
        &self,
        connection: &mut ConnectionManager,
    ) -> impl Future<Output = redis::RedisResult<T>> + Send {
        self.query_async(connection)
    }
}

impl Query for redis::Pipeline {
    fn run<T: redis::FromRedisValue + Send>(
        &self,
        connection: &mut ConnectionManager,
    ) -> impl Future<Output = redis::RedisResult<T>> + Send {
        self.query_async(connection)
    }
}

impl Query for redis::ScriptInvocation<'_> {
    fn run<T: redis::FromRedisValue + Send>(
        &self,
        connection: &mut ConnectionManager,
    ) -> impl Future<Output = redis::RedisResult<T>> + Send {
        self.invoke_async(connection)
    }
}
