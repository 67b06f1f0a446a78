//! Where OAuth state is kept: in this process, or with `[state] redis_url`
//! in Redis, sealed under `[state] encryption_keys` (validation makes sure
//! keys are set), so every replica sees it. Values are JSON; each has its
//! own lifetime. `take` removes what it returns in one step (`GETDEL`), so
//! a single-use value (a consent flow) is used once even across replicas.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::identity::sealed::KeyRing;
use crate::shared::Connection;

/// Why a value could not be kept or read (Redis down).
#[derive(Debug, Clone, thiserror::Error)]
#[error("the shared state store (Redis) is unavailable")]
pub struct Unavailable;

/// A key-value store of JSON values with lifetimes.
pub(super) enum Vault {
    Memory(moka::sync::Cache<String, (Instant, Arc<[u8]>)>),
    Redis { connection: Arc<Connection>, ring: KeyRing, prefix: String },
}

impl Vault {
    /// A store in this process, of at most `entries` values.
    pub(super) fn memory(entries: u64) -> Self {
        Vault::Memory(moka::sync::Cache::builder().max_capacity(entries).build())
    }

    /// A store in Redis under `prefix`, sealed with `ring`.
    pub(super) fn redis(connection: Arc<Connection>, ring: KeyRing, prefix: String) -> Self {
        Vault::Redis { connection, ring, prefix }
    }

    /// Whether every replica sees this store.
    pub(super) fn is_shared(&self) -> bool {
        matches!(self, Vault::Redis { .. })
    }

    /// The Redis key of `key` (a digest of it, so no key names a user).
    fn place(prefix: &str, key: &str) -> String {
        let digest = aws_lc_rs::digest::digest(&aws_lc_rs::digest::SHA256, key.as_bytes());
        format!("{prefix}{}", hex::encode(&digest.as_ref()[..16]))
    }

    /// Keeps `value` under `key` for `ttl`.
    pub(super) async fn put<T: Serialize>(&self, key: &str, value: &T, ttl: Duration) -> Result<(), Unavailable> {
        let plain = serde_json::to_vec(value).map_err(|_| Unavailable)?;
        match self {
            Vault::Memory(cache) => {
                cache.insert(key.to_owned(), (Instant::now() + ttl, plain.into()));
                Ok(())
            }
            Vault::Redis { connection, ring, prefix } => {
                let place = Self::place(prefix, key);
                let sealed = ring.seal(&place, &plain);
                let millis = ttl.as_millis().max(1) as u64;
                let set = redis::cmd("SET").arg(&place).arg(sealed).arg("PX").arg(millis).clone();
                connection.query::<()>(set).await.map_err(|_| Unavailable)
            }
        }
    }

    /// The value under `key`, if any (and it opens).
    pub(super) async fn get<T: DeserializeOwned>(&self, key: &str) -> Result<Option<T>, Unavailable> {
        self.read(key, "GET").await
    }

    /// The value under `key`, removed.
    pub(super) async fn take<T: DeserializeOwned>(&self, key: &str) -> Result<Option<T>, Unavailable> {
        self.read(key, "GETDEL").await
    }

    async fn read<T: DeserializeOwned>(&self, key: &str, command: &str) -> Result<Option<T>, Unavailable> {
        match self {
            Vault::Memory(cache) => {
                let found = if command == "GETDEL" { cache.remove(key) } else { cache.get(key) };
                Ok(found
                    .filter(|(until, _)| *until > Instant::now())
                    .and_then(|(_, plain)| serde_json::from_slice(&plain).ok()))
            }
            Vault::Redis { connection, ring, prefix } => {
                let place = Self::place(prefix, key);
                let sealed: Option<String> =
                    connection.query(redis::cmd(command).arg(&place).clone()).await.map_err(|_| Unavailable)?;
                Ok(sealed.and_then(|s| ring.open(&place, &s)).and_then(|plain| serde_json::from_slice(&plain).ok()))
            }
        }
    }

    /// Removes `key`.
    pub(super) async fn delete(&self, key: &str) -> Result<(), Unavailable> {
        match self {
            Vault::Memory(cache) => {
                cache.invalidate(key);
                Ok(())
            }
            Vault::Redis { connection, prefix, .. } => {
                let place = Self::place(prefix, key);
                connection.query::<()>(redis::cmd("DEL").arg(place).clone()).await.map_err(|_| Unavailable)
            }
        }
    }

    /// Takes the lock `key` for at most `ttl`: `true` when this caller holds
    /// it. In memory there is one process, whose single flight is the
    /// caller's own: always `true`.
    pub(super) async fn lock(&self, key: &str, ttl: Duration) -> bool {
        match self {
            Vault::Memory(_) => true,
            Vault::Redis { connection, prefix, .. } => {
                let place = format!("{}:lock", Self::place(prefix, key));
                let set = redis::cmd("SET").arg(place).arg(1).arg("NX").arg("PX").arg(ttl.as_millis() as u64).clone();
                // Redis down: no lock, and nothing to wait for either.
                matches!(connection.query::<Option<String>>(set).await, Ok(Some(_)) | Err(_))
            }
        }
    }

    /// Lets go of the lock `key`.
    pub(super) async fn unlock(&self, key: &str) {
        if let Vault::Redis { connection, prefix, .. } = self {
            let place = format!("{}:lock", Self::place(prefix, key));
            let _: Result<(), _> = connection.query(redis::cmd("DEL").arg(place).clone()).await;
        }
    }

    /// Every `(field, value)` of the index `name` (plain JSON: names only,
    /// never a secret), and in memory nothing (no index is kept there).
    pub(super) async fn index(&self, name: &str) -> Result<Vec<(String, String)>, Unavailable> {
        match self {
            Vault::Memory(_) => Ok(Vec::new()),
            Vault::Redis { connection, prefix, .. } => {
                let key = format!("{prefix}{name}");
                connection.query(redis::cmd("HGETALL").arg(key).clone()).await.map_err(|_| Unavailable)
            }
        }
    }

    /// Sets (`Some`) or removes (`None`) `field` of the index `name`.
    pub(super) async fn set_index(&self, name: &str, field: &str, value: Option<&str>) {
        if let Vault::Redis { connection, prefix, .. } = self {
            let key = format!("{prefix}{name}");
            let command = match value {
                Some(value) => redis::cmd("HSET").arg(key).arg(field).arg(value).clone(),
                None => redis::cmd("HDEL").arg(key).arg(field).clone(),
            };
            let _: Result<(), _> = connection.query(command).await;
        }
    }
}
