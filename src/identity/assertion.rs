//! Signed identity assertions (`mode = "assertion"`): a JWT with `iss`,
//! `sub` (the client), `aud` (the upstream), `iat`, `exp`, `jti` and the
//! configured claims, reused per client and upstream until a fifth of its
//! lifetime is left, so signing happens about once per client, upstream and
//! four minutes, not per call.

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use http::HeaderMap;
use indexmap::IndexMap;
use serde_json::{Map, Value};
use toolgate_mcp::client::{Cause, CredentialSource};

use super::keys::{SigningKey, jwks};
use super::{Carrier, Inner, fingerprint, now_secs};
use crate::auth::PrincipalId;
use crate::config::{IdentityConfig, UpstreamConfig, UpstreamIdentity};

/// The issuer: its keys (the first signs) and the published set.
pub(super) struct Signer {
    issuer: String,
    keys: Vec<SigningKey>,
    jwks: bytes::Bytes,
    lifetime: Duration,
    /// Minted assertions, by client, upstream and settings.
    minted: moka::sync::Cache<(PrincipalId, String), Arc<Minted>>,
}

/// One assertion's headers and when to mint the next.
struct Minted {
    headers: HeaderMap,
    renew_at: Instant,
}

impl Signer {
    pub(super) fn new(issuer: String, keys: Vec<SigningKey>, config: &IdentityConfig) -> Self {
        let jwks = bytes::Bytes::from(serde_json::to_vec(&jwks(&keys)).unwrap_or_default());
        let lifetime = config.lifetime;
        let minted = moka::sync::Cache::builder().max_capacity(config.cache_entries).time_to_live(lifetime).build();
        Self { issuer, keys, jwks, lifetime, minted }
    }

    /// The JWK Set, serialized.
    pub(super) fn jwks(&self) -> bytes::Bytes {
        self.jwks.clone()
    }

    /// A client assertion for `client_id` at the token endpoint `audience`
    /// (RFC 7523 client authentication, `private_key_jwt`), valid a minute.
    pub(super) fn client_assertion(&self, client_id: &str, audience: &str) -> Result<String, Cause> {
        let now = now_secs();
        let claims = serde_json::json!({
            "iss": client_id, "sub": client_id, "aud": audience,
            "iat": now, "exp": now + 60, "jti": uuid::Uuid::new_v4().to_string(),
        });
        self.keys[0].sign(&claims).map_err(|e| Cause::msg(format!("signing the client assertion failed: {e}")))
    }

    fn mint(&self, subject: &str, audience: &str, claims: &Map<String, Value>) -> Result<String, Cause> {
        let now = now_secs();
        let mut all = claims.clone();
        for (name, value) in [
            ("iss", Value::from(self.issuer.as_str())),
            ("sub", Value::from(subject)),
            ("aud", Value::from(audience)),
            ("iat", Value::from(now)),
            ("exp", Value::from(now + self.lifetime.as_secs())),
            ("jti", Value::from(uuid::Uuid::new_v4().to_string())),
        ] {
            all.insert(name.into(), value);
        }
        self.keys[0].sign(&all).map_err(|e| Cause::msg(format!("signing the identity assertion failed: {e}")))
    }
}

/// A connection's assertions for one client.
pub(super) struct Source {
    inner: Arc<Inner>,
    key: (PrincipalId, String),
    subject: Arc<str>,
    audience: String,
    claims: Map<String, Value>,
    carrier: Carrier,
}

impl Source {
    /// Assertions naming `subject` (client `client`) for upstream `up`;
    /// `client_claims` win over the upstream's `claims`.
    pub(super) fn new(
        inner: Arc<Inner>,
        up: &UpstreamConfig,
        config: &UpstreamIdentity,
        client: PrincipalId,
        subject: Arc<str>,
        client_claims: IndexMap<String, Value>,
        carrier: Carrier,
    ) -> Self {
        let audience = config.audience.clone().or_else(|| up.url.clone()).unwrap_or_default();
        let mut claims: Map<String, Value> = config.claims.clone().into_iter().collect();
        claims.extend(client_claims);
        Self { inner, key: (client, fingerprint(&up.name, config)), subject, audience, claims, carrier }
    }

    fn current(&self) -> Result<HeaderMap, Cause> {
        let Some(signer) = &self.inner.signer else {
            return Err(Cause::msg("toolgate has no [identity] signing key"));
        };
        if let Some(minted) = signer.minted.get(&self.key).filter(|m| Instant::now() < m.renew_at) {
            return Ok(minted.headers.clone());
        }
        let token = signer.mint(&self.subject, &self.audience, &self.claims)?;
        let headers = self.carrier.headers(&token)?;
        let renew_at = Instant::now() + signer.lifetime * 4 / 5;
        signer.minted.insert(self.key.clone(), Arc::new(Minted { headers: headers.clone(), renew_at }));
        Ok(headers)
    }
}

impl CredentialSource for Source {
    fn headers(&self) -> BoxFuture<'_, Result<HeaderMap, Cause>> {
        let headers = self.current();
        Box::pin(async move { headers })
    }
}
