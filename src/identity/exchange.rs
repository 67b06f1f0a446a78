//! Tokens for an upstream, traded for the client's own access token at its
//! identity provider: RFC 8693 token exchange (`mode = "token_exchange"`)
//! or the RFC 7523 JWT bearer grant (`mode = "jwt_bearer"`).
//!
//! A token is cached per client, upstream and settings until shortly before
//! it expires (bounded in entries). Concurrent calls that find none wait
//! for one exchange (the cache's single flight). With `[state]
//! encryption_keys` the token is also kept in Redis, sealed, and a replica
//! that finds none there takes a short lock before it exchanges, so two
//! replicas make one exchange. A refused or failed exchange sends nothing
//! upstream: the call fails naming the provider's `error` code, never a
//! token.

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use http::HeaderMap;
use serde::{Deserialize, Serialize};
use toolgate_mcp::client::{Cause, CredentialSource};

use super::assertion::Signer;
use super::sealed::KeyRing;
use super::{Carrier, Inner, fingerprint, now_secs};
use crate::auth::PrincipalId;
use crate::config::{ClientAuth, IdentityMode, UpstreamConfig, UpstreamIdentity};
use crate::shared::Connection;

/// How long a token request may take.
const EXCHANGE_TIMEOUT: Duration = Duration::from_secs(10);
/// A token is renewed this long before it expires (or at a fifth of its
/// life, for shorter ones).
const RENEW_BEFORE: Duration = Duration::from_secs(30);
/// How long another replica's exchange is waited for.
const LOCK_WAIT: Duration = Duration::from_secs(5);
/// How long a replica's exchange lock holds at most.
const LOCK_TTL: Duration = Duration::from_secs(15);
/// The lifetime assumed when the provider names none.
const DEFAULT_LIFETIME: u64 = 60;
/// Most characters of a provider's `error` code shown.
const ERROR_CHARS: usize = 64;

const TOKEN_EXCHANGE: &str = "urn:ietf:params:oauth:grant-type:token-exchange";
const JWT_BEARER: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";
const ACCESS_TOKEN_TYPE: &str = "urn:ietf:params:oauth:token-type:access_token";
const CLIENT_ASSERTION_TYPE: &str = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";

/// One exchanged token.
#[derive(Serialize, Deserialize)]
struct Exchanged {
    token: String,
    /// Unix seconds.
    expires_at: u64,
}

impl Exchanged {
    /// How long it may still be used before a new one is asked for.
    fn usable_for(&self) -> Duration {
        let left = Duration::from_secs(self.expires_at.saturating_sub(now_secs()));
        left.saturating_sub(RENEW_BEFORE.min(left / 5))
    }
}

type Key = (PrincipalId, String);

/// The token requests, and the tokens kept.
pub(super) struct Exchanger {
    http: reqwest::Client,
    tokens: moka::future::Cache<Key, Arc<Exchanged>>,
    shared: Option<Shared>,
}

impl Exchanger {
    pub(super) fn new(http: reqwest::Client, entries: u64, shared: Option<Shared>) -> Self {
        let tokens = moka::future::Cache::builder().max_capacity(entries).expire_after(UsableFor).build();
        Self { http, tokens, shared }
    }

    /// A token for `key`, traded for `subject_token` under `config` when none is kept.
    async fn token(
        &self,
        key: &Key,
        subject_token: &str,
        config: &UpstreamIdentity,
        signer: Option<&Signer>,
    ) -> Result<Arc<Exchanged>, Cause> {
        let fetch = async {
            let Some(shared) = &self.shared else {
                return self.request(subject_token, config, signer).await.map(Arc::new);
            };
            let place = shared.place(key);
            if let Some(kept) = shared.get(&place).await {
                return Ok(Arc::new(kept));
            }
            let locked = shared.lock(&place).await;
            if !locked {
                // Another replica is exchanging: its token is awaited.
                let deadline = Instant::now() + LOCK_WAIT;
                while Instant::now() < deadline {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    if let Some(kept) = shared.get(&place).await {
                        return Ok(Arc::new(kept));
                    }
                }
            }
            let fresh = self.request(subject_token, config, signer).await;
            if let Ok(token) = &fresh {
                shared.put(&place, token).await;
            }
            if locked {
                shared.unlock(&place).await;
            }
            fresh.map(Arc::new)
        };
        let token = self.tokens.try_get_with_by_ref(key, fetch).await.map_err(|e| (*e).clone())?;
        if token.usable_for().is_zero() {
            // Kept past its use (another replica's, nearly expired): asked again.
            self.tokens.invalidate(key).await;
            return self.request(subject_token, config, signer).await.map(Arc::new);
        }
        Ok(token)
    }

    /// One token request.
    async fn request(
        &self,
        subject_token: &str,
        config: &UpstreamIdentity,
        signer: Option<&Signer>,
    ) -> Result<Exchanged, Cause> {
        let endpoint = config.token_endpoint.as_deref().unwrap_or_default();
        let mut form: Vec<(&str, &str)> = match config.mode {
            IdentityMode::JwtBearer => vec![("grant_type", JWT_BEARER), ("assertion", subject_token)],
            _ => vec![
                ("grant_type", TOKEN_EXCHANGE),
                ("subject_token", subject_token),
                ("subject_token_type", ACCESS_TOKEN_TYPE),
                ("requested_token_type", ACCESS_TOKEN_TYPE),
            ],
        };
        for (name, value) in [("audience", &config.audience), ("resource", &config.resource), ("scope", &config.scope)]
        {
            if let Some(value) = value {
                form.push((name, value));
            }
        }
        form.extend(config.parameters.iter().map(|(k, v)| (k.as_str(), v.as_str())));
        let client_id = config.client_id.as_deref().unwrap_or_default();
        let secret = config.client_secret.as_ref().map(|s| s.expose()).unwrap_or_default();
        let mut request = self.http.post(endpoint).timeout(EXCHANGE_TIMEOUT);
        let client_assertion = match (config.client_auth, signer) {
            (ClientAuth::PrivateKeyJwt, Some(signer)) => signer.client_assertion(client_id, endpoint)?,
            (ClientAuth::PrivateKeyJwt, None) => return Err(Cause::msg("toolgate has no [identity] signing key")),
            _ => String::new(),
        };
        match config.client_auth {
            ClientAuth::PrivateKeyJwt => {
                form.push(("client_id", client_id));
                form.push(("client_assertion_type", CLIENT_ASSERTION_TYPE));
                form.push(("client_assertion", &client_assertion));
            }
            ClientAuth::ClientSecretBasic => request = super::basic_auth(request, client_id, secret),
            ClientAuth::ClientSecretPost => {
                form.push(("client_id", client_id));
                form.push(("client_secret", secret));
            }
        }
        let what = match config.mode {
            IdentityMode::JwtBearer => "JWT bearer grant",
            _ => "token exchange",
        };
        let body = url::form_urlencoded::Serializer::new(String::new()).extend_pairs(&form).finish();
        let request = request.header(http::header::CONTENT_TYPE, "application/x-www-form-urlencoded").body(body);
        let response = request.send().await.map_err(|e| {
            Cause::msg(format!(
                "the identity provider did not answer the {what}: {}",
                crate::upstream::report(&e.without_url())
            ))
        })?;
        let status = response.status();
        let body: serde_json::Value = response.json().await.unwrap_or_default();
        if !status.is_success() {
            let code: String = body
                .get("error")
                .and_then(|e| e.as_str())
                .unwrap_or("no error code")
                .chars()
                .filter(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == ' ')
                .take(ERROR_CHARS)
                .collect();
            return Err(Cause::msg(format!("the identity provider refused the {what} (HTTP {status}): {code}")));
        }
        let Some(token) = body.get("access_token").and_then(|t| t.as_str()) else {
            return Err(Cause::msg(format!("the identity provider's answer to the {what} holds no access_token")));
        };
        let lifetime = body.get("expires_in").and_then(serde_json::Value::as_u64).unwrap_or(DEFAULT_LIFETIME);
        tracing::debug!(lifetime, "exchanged a client's token for an upstream");
        Ok(Exchanged { token: token.to_owned(), expires_at: now_secs() + lifetime })
    }
}

/// Cached tokens leave the cache when they are due for renewal.
struct UsableFor;

impl moka::Expiry<Key, Arc<Exchanged>> for UsableFor {
    fn expire_after_create(&self, _: &Key, token: &Arc<Exchanged>, _: std::time::Instant) -> Option<Duration> {
        Some(token.usable_for())
    }
}

/// Exchanged tokens in Redis, sealed under the key ring.
pub(super) struct Shared {
    connection: Arc<Connection>,
    ring: KeyRing,
    prefix: String,
}

impl Shared {
    pub(super) fn new(connection: Arc<Connection>, ring: KeyRing, key_prefix: &str) -> Self {
        Self { connection, ring, prefix: format!("{key_prefix}identity:") }
    }

    /// The Redis key of `key`'s token: a digest, so the key names no client.
    fn place(&self, (client, settings): &Key) -> String {
        let text = format!("{client}\n{settings}");
        let digest = aws_lc_rs::digest::digest(&aws_lc_rs::digest::SHA256, text.as_bytes());
        format!("{}{}", self.prefix, hex::encode(&digest.as_ref()[..16]))
    }

    async fn get(&self, place: &str) -> Option<Exchanged> {
        let sealed: Option<String> = self.connection.query(redis::cmd("GET").arg(place).clone()).await.ok()?;
        let plain = self.ring.open(place, &sealed?)?;
        let kept: Exchanged = serde_json::from_slice(&plain).ok()?;
        (!kept.usable_for().is_zero()).then_some(kept)
    }

    async fn put(&self, place: &str, token: &Exchanged) {
        let ttl = token.expires_at.saturating_sub(now_secs()).max(1);
        let Ok(plain) = serde_json::to_vec(token) else { return };
        let sealed = self.ring.seal(place, &plain);
        let _: Result<(), _> =
            self.connection.query(redis::cmd("SET").arg(place).arg(sealed).arg("EX").arg(ttl).clone()).await;
    }

    async fn lock(&self, place: &str) -> bool {
        let set = redis::cmd("SET")
            .arg(format!("{place}:lock"))
            .arg(1)
            .arg("NX")
            .arg("PX")
            .arg(LOCK_TTL.as_millis() as u64)
            .clone();
        // Redis down: no lock, and nothing to wait for either.
        matches!(self.connection.query::<Option<String>>(set).await, Ok(Some(_)) | Err(_))
    }

    async fn unlock(&self, place: &str) {
        let _: Result<(), _> = self.connection.query(redis::cmd("DEL").arg(format!("{place}:lock")).clone()).await;
    }
}

/// A connection's exchanged tokens for one client.
pub(super) struct Source {
    inner: Arc<Inner>,
    key: Key,
    upstream: Arc<str>,
    config: UpstreamIdentity,
    carrier: Carrier,
}

impl Source {
    pub(super) fn new(
        inner: Arc<Inner>,
        up: &UpstreamConfig,
        config: &UpstreamIdentity,
        client: PrincipalId,
        carrier: Carrier,
    ) -> Self {
        let key = (client, fingerprint(&up.name, config));
        Self { inner, key, upstream: Arc::from(up.name.as_str()), config: config.clone(), carrier }
    }

    async fn current(&self) -> Result<HeaderMap, Cause> {
        let Some(subject) = self.inner.subjects.get(&self.key.0) else {
            return Err(Cause::msg(format!(
                "no valid access token of this client to exchange for upstream `{}` (it may have expired)",
                self.upstream
            )));
        };
        let signer = self.inner.signer.as_ref();
        let token = self.inner.exchanger.token(&self.key, subject.token(), &self.config, signer).await?;
        self.carrier.headers(&token.token)
    }
}

impl CredentialSource for Source {
    fn headers(&self) -> BoxFuture<'_, Result<HeaderMap, Cause>> {
        Box::pin(self.current())
    }
}
