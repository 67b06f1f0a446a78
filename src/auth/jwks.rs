//! The issuer's public keys (a JWK Set, RFC 7517): from `jwks_file`, or
//! fetched from `jwks_url` and cached.
//!
//! Fetching is bounded in every direction: a timeout, a body size cap, no
//! redirects, and at most one fetch per [`JwksSettings::min_refresh_interval`]
//! however many tokens name an unknown `kid` (so forged tokens cannot make
//! toolgate hammer the identity provider). Concurrent lookups share one
//! fetch. A failing refresh keeps the keys already loaded. Keys older than
//! [`JwksSettings::max_age`] are refreshed on next use, so a key the issuer
//! withdrew stops being accepted.
//!
//! Only signing keys toolgate accepts are kept: RSA (RS256), EC P-256
//! (ES256) and OKP Ed25519 (EdDSA), whose `use` is `sig` or absent and whose
//! `alg`, when present, agrees with the key type.

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use jsonwebtoken::jwk::{AlgorithmParameters, EllipticCurve, Jwk, KeyAlgorithm, KeyOperations, PublicKeyUse};
use jsonwebtoken::{Algorithm, DecodingKey};
use parking_lot::RwLock;

/// Signature algorithms accepted for tokens.
pub const ALGORITHMS: [Algorithm; 3] = [Algorithm::RS256, Algorithm::ES256, Algorithm::EdDSA];

/// Most keys kept from one JWK Set; real sets hold a handful.
const MAX_KEYS: usize = 100;

/// How keys are fetched and cached.
#[derive(Debug, Clone)]
pub struct JwksSettings {
    /// Least time between two fetches (after an unknown `kid`, a stale set,
    /// or a failure). Default 30 s.
    pub min_refresh_interval: Duration,
    /// Keys older than this are refreshed when next used. Default 1 h.
    pub max_age: Duration,
    /// Time allowed for one fetch, body included. Default 10 s.
    pub fetch_timeout: Duration,
    /// Largest JWKS body accepted. Default 1 MiB.
    pub max_bytes: usize,
}

impl Default for JwksSettings {
    fn default() -> Self {
        Self {
            min_refresh_interval: Duration::from_secs(30),
            max_age: Duration::from_secs(3600),
            fetch_timeout: Duration::from_secs(10),
            max_bytes: 1024 * 1024,
        }
    }
}

/// Why keys could not be loaded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum JwksError {
    /// The file could not be read.
    #[error("cannot read the JWKS file {path}: {message}")]
    File {
        /// The file.
        path: String,
        /// The I/O error.
        message: String,
    },
    /// The request failed (connection, TLS, timeout).
    #[error("fetching the JWKS from {url} failed: {message}")]
    Fetch {
        /// The URL without its query.
        url: String,
        /// The error, without the URL.
        message: String,
    },
    /// The server answered with an error status.
    #[error("fetching the JWKS from {url} failed: HTTP {status}")]
    Status {
        /// The URL without its query.
        url: String,
        /// The status code.
        status: u16,
    },
    /// The body is larger than [`JwksSettings::max_bytes`].
    #[error("the JWKS is larger than {limit} bytes")]
    TooLarge {
        /// The limit.
        limit: usize,
    },
    /// The document is not a JWK Set.
    #[error("not a JWK Set: {0}")]
    Parse(String),
    /// The set holds no key toolgate can use.
    #[error("the JWK Set has no usable signing key (RSA for RS256, EC P-256 for ES256, Ed25519 for EdDSA)")]
    NoUsableKey,
}

/// One usable public key.
pub(crate) struct VerifyKey {
    pub(crate) kid: Option<String>,
    pub(crate) alg: Algorithm,
    pub(crate) key: DecodingKey,
}

impl fmt::Debug for VerifyKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("VerifyKey").field("kid", &self.kid).field("alg", &self.alg).finish_non_exhaustive()
    }
}

/// Parses a JWK Set, keeping the usable signing keys (unusable ones, e.g.
/// encryption keys or other curves, are skipped).
pub(crate) fn parse_jwks(bytes: &[u8]) -> Result<Vec<Arc<VerifyKey>>, JwksError> {
    let doc: serde_json::Value = serde_json::from_slice(bytes).map_err(|e| JwksError::Parse(e.to_string()))?;
    let Some(keys) = doc.get("keys").and_then(|k| k.as_array()) else {
        return Err(JwksError::Parse("expected an object with a `keys` array".into()));
    };
    let usable: Vec<Arc<VerifyKey>> = keys
        .iter()
        .filter_map(|value| serde_json::from_value::<Jwk>(value.clone()).ok())
        .filter_map(|jwk| {
            let alg = usable_algorithm(&jwk)?;
            let key = DecodingKey::from_jwk(&jwk).ok()?;
            Some(Arc::new(VerifyKey { kid: jwk.common.key_id.clone(), alg, key }))
        })
        .take(MAX_KEYS)
        .collect();
    if usable.is_empty() { Err(JwksError::NoUsableKey) } else { Ok(usable) }
}

/// The algorithm a JWK verifies, if toolgate accepts it.
fn usable_algorithm(jwk: &Jwk) -> Option<Algorithm> {
    if jwk.common.public_key_use.as_ref().is_some_and(|u| *u != PublicKeyUse::Signature) {
        return None;
    }
    if jwk.common.key_operations.as_ref().is_some_and(|ops| !ops.contains(&KeyOperations::Verify)) {
        return None;
    }
    let alg = match &jwk.algorithm {
        AlgorithmParameters::RSA(_) => Algorithm::RS256,
        AlgorithmParameters::EllipticCurve(p) if p.curve == EllipticCurve::P256 => Algorithm::ES256,
        AlgorithmParameters::OctetKeyPair(p) if p.curve == EllipticCurve::Ed25519 => Algorithm::EdDSA,
        _ => return None,
    };
    match jwk.common.key_algorithm {
        None => Some(alg),
        Some(declared) if declared == KeyAlgorithm::from(alg) => Some(alg),
        Some(_) => None,
    }
}

/// The loaded keys.
struct KeySet {
    keys: Vec<Arc<VerifyKey>>,
    /// When the keys were loaded; `None` until the first successful fetch.
    loaded_at: Option<Instant>,
    /// Bumped on every successful load.
    generation: u64,
}

impl KeySet {
    /// Keys for a token with `kid` and `alg`: the key with that id, or,
    /// for a token without `kid`, every key of that algorithm.
    fn matching(&self, kid: Option<&str>, alg: Algorithm) -> Vec<Arc<VerifyKey>> {
        self.keys
            .iter()
            .filter(|k| k.alg == alg && kid.is_none_or(|kid| k.kid.as_deref() == Some(kid)))
            .cloned()
            .collect()
    }
}

/// Where keys come from when they are refreshed.
struct Remote {
    url: url::Url,
    client: reqwest::Client,
    settings: JwksSettings,
    /// When the last fetch started; held while fetching, so concurrent
    /// lookups wait for one fetch instead of starting their own.
    last_attempt: tokio::sync::Mutex<Option<Instant>>,
}

/// Why no key was found for a token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum KeyLookupError {
    /// Keys are loaded but none matches.
    UnknownKey,
    /// No key was ever loaded (the issuer's JWKS is unreachable).
    Unavailable,
}

/// The issuer's keys, cached.
pub(crate) struct KeyStore {
    set: RwLock<Arc<KeySet>>,
    remote: Option<Remote>,
}

impl KeyStore {
    /// Fixed keys (from `jwks_file`).
    pub(crate) fn fixed(keys: Vec<Arc<VerifyKey>>) -> Self {
        let set = KeySet { keys, loaded_at: Some(Instant::now()), generation: 1 };
        Self { set: RwLock::new(Arc::new(set)), remote: None }
    }

    /// Keys from a JWKS file.
    pub(crate) fn from_file(path: &std::path::Path) -> Result<Self, JwksError> {
        let bytes = std::fs::read(path)
            .map_err(|e| JwksError::File { path: path.display().to_string(), message: e.to_string() })?;
        Ok(Self::fixed(parse_jwks(&bytes)?))
    }

    /// Keys fetched from `url` on first use (or [`KeyStore::refresh_now`]).
    pub(crate) fn remote(url: url::Url, client: reqwest::Client, settings: JwksSettings) -> Self {
        let set = KeySet { keys: Vec::new(), loaded_at: None, generation: 0 };
        Self {
            set: RwLock::new(Arc::new(set)),
            remote: Some(Remote { url, client, settings, last_attempt: tokio::sync::Mutex::new(None) }),
        }
    }

    fn current(&self) -> Arc<KeySet> {
        self.set.read().clone()
    }

    /// How many keys are loaded.
    pub(crate) fn len(&self) -> usize {
        self.current().keys.len()
    }

    /// The keys that may have signed a token with `kid` and `alg`, fetching
    /// (within the rate bound) when none is known or the set is stale.
    pub(crate) async fn find(&self, kid: Option<&str>, alg: Algorithm) -> Result<Vec<Arc<VerifyKey>>, KeyLookupError> {
        let set = self.current();
        let found = set.matching(kid, alg);
        let Some(remote) = &self.remote else {
            return if found.is_empty() { Err(KeyLookupError::UnknownKey) } else { Ok(found) };
        };
        let stale = set.loaded_at.is_none_or(|at| at.elapsed() >= remote.settings.max_age);
        if !found.is_empty() && !stale {
            return Ok(found);
        }
        if found.is_empty() {
            self.refresh_bounded(remote, set.generation).await;
        } else if let Ok(guard) = remote.last_attempt.try_lock() {
            // Stale but usable: refresh only if nobody else is, and answer
            // with the old keys if that fails.
            self.refresh_locked(remote, guard, set.generation).await;
        }
        let set = self.current();
        let found = set.matching(kid, alg);
        match (found.is_empty(), set.loaded_at) {
            (false, _) => Ok(found),
            (true, None) => Err(KeyLookupError::Unavailable),
            (true, Some(_)) => Err(KeyLookupError::UnknownKey),
        }
    }

    /// Refreshes unless another lookup did while this one waited, or the
    /// last attempt is more recent than the minimum interval.
    async fn refresh_bounded(&self, remote: &Remote, seen_generation: u64) {
        let guard = remote.last_attempt.lock().await;
        self.refresh_locked(remote, guard, seen_generation).await;
    }

    async fn refresh_locked(
        &self,
        remote: &Remote,
        mut last_attempt: tokio::sync::MutexGuard<'_, Option<Instant>>,
        seen_generation: u64,
    ) {
        if self.current().generation != seen_generation {
            return;
        }
        if last_attempt.is_some_and(|at| at.elapsed() < remote.settings.min_refresh_interval) {
            return;
        }
        *last_attempt = Some(Instant::now());
        if let Err(e) = self.fetch_and_store(remote).await {
            tracing::warn!(error = %e, "JWKS refresh failed; keeping the keys already loaded");
        }
    }

    /// Fetches now, whatever the rate bound (for startup). Returns the
    /// number of keys loaded.
    pub(crate) async fn refresh_now(&self) -> Result<usize, JwksError> {
        let Some(remote) = &self.remote else { return Ok(self.len()) };
        let mut last_attempt = remote.last_attempt.lock().await;
        *last_attempt = Some(Instant::now());
        self.fetch_and_store(remote).await
    }

    async fn fetch_and_store(&self, remote: &Remote) -> Result<usize, JwksError> {
        let keys = fetch(remote).await?;
        let count = keys.len();
        let mut set = self.set.write();
        let generation = set.generation + 1;
        *set = Arc::new(KeySet { keys, loaded_at: Some(Instant::now()), generation });
        tracing::debug!(keys = count, url = %shown_url(&remote.url), "JWKS loaded");
        Ok(count)
    }
}

impl fmt::Debug for KeyStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeyStore")
            .field("keys", &self.current().keys)
            .field("url", &self.remote.as_ref().map(|r| shown_url(&r.url)))
            .finish()
    }
}

async fn fetch(remote: &Remote) -> Result<Vec<Arc<VerifyKey>>, JwksError> {
    let url = shown_url(&remote.url);
    let timeout = remote.settings.fetch_timeout;
    let fail = |e: reqwest::Error| JwksError::Fetch { url: url.clone(), message: describe(e, timeout) };
    let limit = remote.settings.max_bytes;
    let request = remote
        .client
        .get(remote.url.clone())
        .header(http::header::ACCEPT, "application/jwk-set+json, application/json")
        .timeout(remote.settings.fetch_timeout)
        .send();
    let body = async {
        let mut response = request.await.map_err(fail)?;
        let status = response.status();
        if !status.is_success() {
            return Err(JwksError::Status { url: url.clone(), status: status.as_u16() });
        }
        if response.content_length().is_some_and(|n| n > limit as u64) {
            return Err(JwksError::TooLarge { limit });
        }
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(fail)? {
            if body.len() + chunk.len() > limit {
                return Err(JwksError::TooLarge { limit });
            }
            body.extend_from_slice(&chunk);
        }
        Ok(body)
    };
    // The request timeout covers the body too; this also bounds a client
    // that was built without one.
    let body = tokio::time::timeout(remote.settings.fetch_timeout, body)
        .await
        .map_err(|_| JwksError::Fetch { url: url.clone(), message: format!("timed out after {timeout:?}") })??;
    parse_jwks(&body)
}

/// A reqwest error with its causes ("error sending request" alone says
/// little), without the URL.
fn describe(error: reqwest::Error, timeout: Duration) -> String {
    if error.is_timeout() {
        return format!("timed out after {timeout:?}");
    }
    let error = error.without_url();
    let mut message = error.to_string();
    let mut source = std::error::Error::source(&error);
    while let Some(cause) = source {
        message.push_str(": ");
        message.push_str(&cause.to_string());
        source = cause.source();
    }
    message
}

/// The URL without query or fragment, for messages (a query may hold a
/// secret).
pub(crate) fn shown_url(url: &url::Url) -> String {
    let mut shown = url.clone();
    shown.set_query(None);
    shown.set_fragment(None);
    let _ = shown.set_password(None);
    let _ = shown.set_username("");
    shown.to_string()
}

#[cfg(test)]
mod tests;
