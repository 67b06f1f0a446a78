//! Upstream identity: what a connection made for one client presents to an
//! upstream beyond its configured headers (`[upstream.identity]`).
//!
//! - [`assertion`]: a short-lived JWT toolgate signs with `[identity]`'s
//!   keys ([`keys`]), naming the client; the keys are published as a JWK
//!   Set.
//! - [`exchange`]: the client's own access token traded at its identity
//!   provider for one meant for the upstream (RFC 8693 token exchange, or
//!   the RFC 7523 JWT bearer grant), cached per client and upstream, and
//!   with `[state] encryption_keys` shared sealed ([`sealed`]) in Redis.
//!
//! Both are a [`Credentials`] the upstream connection asks for its headers
//! on each request, so a long-lived upstream session keeps presenting a
//! fresh token. Static per-client credentials (`upstream_headers`,
//! `upstream_env`) need none of this: they are merged into the connection's
//! target ([`crate::gateway`]'s `UpstreamHandle::target_for`). No token
//! appears in a log, a metric, an error or a Redis value in the clear.

mod assertion;
mod exchange;
mod keys;
pub mod sealed;

use std::sync::Arc;

use http::{HeaderMap, HeaderName, HeaderValue};
use toolgate_mcp::client::{Cause, Credentials, HttpTarget, StdioTarget, Target};

use crate::auth::{Bearer, Principal, PrincipalId, PrincipalKind};
use crate::config::{Config, IdentityMode, UpstreamAuth, UpstreamConfig, UpstreamIdentity};
use crate::shared::Connection;

pub use keys::{KeyFileError, SigningKey};

/// Why the identity service cannot start.
#[derive(Debug, thiserror::Error)]
pub enum IdentityError {
    #[error("identity.signing_keys: {0}")]
    Key(#[from] KeyFileError),
    #[error("state.encryption_keys: {0}")]
    Sealing(#[from] sealed::KeyError),
}

/// The identity service of a gateway: signing keys, the caches of
/// assertions and exchanged tokens, and the OAuth client of protected
/// upstreams (users' own tokens).
pub struct Identity {
    inner: Arc<Inner>,
    oauth: crate::oauth::OAuth,
}

struct Inner {
    signer: Option<assertion::Signer>,
    exchanger: exchange::Exchanger,
    subjects: Subjects,
    /// Whether any upstream trades clients' tokens (else nothing is kept).
    exchanges: bool,
}

/// The newest access token each JWT client presented (what an exchange
/// trades), kept no longer than the token lives. Cheap to clone (shared).
#[derive(Clone)]
pub struct Subjects(moka::sync::Cache<PrincipalId, Arc<Bearer>>);

impl Subjects {
    /// Keeps the access token `principal` authenticated with, if it is newer.
    pub fn note(&self, principal: &Principal) {
        let Some(bearer) = principal.bearer() else { return };
        if self.0.get(principal.id()).is_none_or(|old| old.token() != bearer.token()) {
            self.0.insert(principal.id().clone(), bearer.clone());
        }
    }

    fn get(&self, client: &PrincipalId) -> Option<Arc<Bearer>> {
        self.0.get(client)
    }
}

impl Identity {
    /// The service `config` describes. `http` makes the token requests;
    /// `store` is `[state]`'s Redis, where exchanged tokens are shared when
    /// `encryption_keys` are set.
    pub fn new(config: &Config, http: reqwest::Client, store: Option<Arc<Connection>>) -> Result<Self, IdentityError> {
        let identity = &config.identity;
        let keys = identity.signing_keys.iter().map(|p| SigningKey::load(p)).collect::<Result<Vec<_>, _>>()?;
        // Validation makes sure an issuer is set wherever assertions are made.
        let issuer = identity.issuer.clone().unwrap_or_default();
        let signer = (!keys.is_empty()).then(|| assertion::Signer::new(issuer, keys, identity));
        let ring = sealed::KeyRing::new(config.state.encryption_keys.iter().map(|k| k.expose()))?;
        let shared = match (store.clone(), ring) {
            (Some(connection), Some(ring)) => Some(exchange::Shared::new(connection, ring, &config.state.key_prefix)),
            _ => None,
        };
        let exchanger = exchange::Exchanger::new(http.clone(), identity.cache_entries, shared);
        let subjects = Subjects(
            moka::sync::Cache::builder().max_capacity(identity.cache_entries).expire_after(UntilExpiry).build(),
        );
        let exchanges = config.upstreams.iter().any(|u| u.identity.as_ref().is_some_and(UpstreamIdentity::exchanges));
        let oauth = crate::oauth::OAuth::new(config, http, store, config.server.listen)?;
        Ok(Self { inner: Arc::new(Inner { signer, exchanger, subjects, exchanges }), oauth })
    }

    /// The OAuth client of protected upstreams (`auth = "oauth"`).
    pub fn oauth(&self) -> &crate::oauth::OAuth {
        &self.oauth
    }

    /// The JWK Set of the signing keys (`None` without `[identity]` keys).
    pub fn jwks(&self) -> Option<bytes::Bytes> {
        self.inner.signer.as_ref().map(assertion::Signer::jwks)
    }

    /// Where the admission hook keeps clients' access tokens, when an
    /// upstream trades them (else none is kept).
    pub fn subjects(&self) -> Option<Subjects> {
        self.inner.exchanges.then(|| self.inner.subjects.clone())
    }

    /// What a connection of upstream `up` made for `principal` presents on
    /// each request, if `up` has an identity and the client is known.
    pub fn for_client(&self, up: &UpstreamConfig, principal: &Principal) -> Option<Credentials> {
        let config = up.identity.as_ref()?;
        let client = principal.id();
        if client.kind() == PrincipalKind::Anonymous {
            return None;
        }
        let carrier = Carrier::of(config);
        let source: Arc<dyn toolgate_mcp::client::CredentialSource> = match config.mode {
            IdentityMode::Assertion => {
                let subject = principal.bearer().map_or_else(|| Arc::from(client.name()), |b| b.subject().clone());
                let claims = principal.policy().identity_claims.clone();
                Arc::new(assertion::Source::new(
                    self.inner.clone(),
                    up,
                    config,
                    client.clone(),
                    subject,
                    claims,
                    carrier,
                ))
            }
            IdentityMode::TokenExchange | IdentityMode::JwtBearer => {
                Arc::new(exchange::Source::new(self.inner.clone(), up, config, client.clone(), carrier))
            }
        };
        Some(Credentials::new(source))
    }

    /// What toolgate's own connection to `up` (its lists) presents: an
    /// assertion for `[identity] service_subject` under `mode =
    /// "assertion"`; otherwise nothing beyond `headers`.
    pub fn for_service(&self, up: &UpstreamConfig, service_subject: &str) -> Option<Credentials> {
        let config = up.identity.as_ref().filter(|c| c.mode == IdentityMode::Assertion)?;
        let service = PrincipalId::new(PrincipalKind::Anonymous, format!("service:{service_subject}"));
        let source = assertion::Source::new(
            self.inner.clone(),
            up,
            config,
            service,
            Arc::from(service_subject),
            Default::default(),
            Carrier::of(config),
        );
        Some(Credentials::new(Arc::new(source)))
    }
}

impl Identity {
    /// `target` (upstream `up`'s) as toolgate's own connection reaches it:
    /// with the service's assertion under `mode = "assertion"`, and an OAuth
    /// upstream's catalog credential (`[upstream.oauth] catalog`).
    pub fn service_target(&self, up: &UpstreamConfig, target: Target, service_subject: &str) -> Target {
        let credentials = match up.auth {
            UpstreamAuth::Oauth => self.oauth.catalog_source(up),
            UpstreamAuth::None => self.for_service(up, service_subject),
        };
        match (&target, credentials) {
            (Target::StreamableHttp(http), Some(credentials)) => {
                Target::StreamableHttp(Arc::new(HttpTarget { credentials: Some(credentials), ..(**http).clone() }))
            }
            (Target::Sse(http), Some(credentials)) => {
                Target::Sse(Arc::new(HttpTarget { credentials: Some(credentials), ..(**http).clone() }))
            }
            _ => target,
        }
    }

    /// Whether `principal` reaches upstream `up` with credentials of its
    /// own (its `upstream_headers`/`upstream_env`, or `up`'s identity), so
    /// it needs upstream sessions no other client shares.
    pub fn is_personal(up: &UpstreamConfig, principal: &Principal) -> bool {
        principal.kind() != PrincipalKind::Anonymous
            && (up.identity.is_some() || up.auth == UpstreamAuth::Oauth || principal.policy().upstream.has(&up.name))
    }

    /// `target` (upstream `up`'s) as a connection made for `principal`
    /// reaches it: the client's headers over the configured ones, its
    /// environment over the upstream's, and its identity.
    pub fn personal_target(&self, up: &UpstreamConfig, target: &Target, principal: &Principal) -> Target {
        let own = &principal.policy().upstream;
        match target {
            Target::Stdio(stdio) => match own.env.get(&up.name) {
                Some(env) => {
                    let mut merged = stdio.env.clone();
                    merged.extend(env.iter().map(|(k, v)| (k.clone(), v.clone())));
                    Target::Stdio(Arc::new(StdioTarget { env: merged, ..(**stdio).clone() }))
                }
                None => target.clone(),
            },
            Target::StreamableHttp(http) => Target::StreamableHttp(self.personal_http(up, http, principal)),
            Target::Sse(http) => Target::Sse(self.personal_http(up, http, principal)),
            // An upstream in this process (tests) has no credentials.
            #[allow(unreachable_patterns)]
            _ => target.clone(),
        }
    }

    fn personal_http(&self, up: &UpstreamConfig, http: &Arc<HttpTarget>, principal: &Principal) -> Arc<HttpTarget> {
        let mut headers = http.headers.clone();
        if let Some(own) = principal.policy().upstream.headers.get(&up.name) {
            for name in own.keys() {
                headers.remove(name);
            }
            headers.extend(own.clone());
        }
        let credentials = match up.auth {
            // The user's own token replaces the service credential.
            UpstreamAuth::Oauth => {
                headers.remove(http::header::AUTHORIZATION);
                Some(self.oauth.source(up, principal))
            }
            UpstreamAuth::None => self.for_client(up, principal),
        };
        Arc::new(HttpTarget { headers, credentials, ..(**http).clone() })
    }
}

/// Where a token goes: `Authorization: Bearer <token>`, or another header
/// holding the bare token.
#[derive(Clone)]
struct Carrier(Option<HeaderName>);

impl Carrier {
    fn of(config: &UpstreamIdentity) -> Self {
        Self(config.header.as_deref().and_then(|h| HeaderName::from_bytes(h.as_bytes()).ok()))
    }

    /// The headers that present `token` (marked sensitive).
    fn headers(&self, token: &str) -> Result<HeaderMap, Cause> {
        match &self.0 {
            None => bearer(token),
            Some(name) => sensitive(name.clone(), token),
        }
    }
}

/// `Authorization: Bearer <token>`, marked sensitive.
pub(crate) fn bearer(token: &str) -> Result<HeaderMap, Cause> {
    sensitive(http::header::AUTHORIZATION, &format!("Bearer {token}"))
}

/// The header `name: text`, marked sensitive (it holds a credential).
fn sensitive(name: HeaderName, text: &str) -> Result<HeaderMap, Cause> {
    let mut value = HeaderValue::from_str(text).map_err(|_| Cause::msg("the token is not a valid header value"))?;
    value.set_sensitive(true);
    let mut headers = HeaderMap::with_capacity(1);
    headers.insert(name, value);
    Ok(headers)
}

/// `request` with HTTP Basic client authentication: id and secret are
/// form-encoded first (RFC 6749 §2.3.1).
pub(crate) fn basic_auth(request: reqwest::RequestBuilder, id: &str, secret: &str) -> reqwest::RequestBuilder {
    let encode = |s: &str| url::form_urlencoded::byte_serialize(s.as_bytes()).collect::<String>();
    request.basic_auth(encode(id), Some(encode(secret)))
}

/// A kept access token expires with the token itself.
struct UntilExpiry;

impl moka::Expiry<PrincipalId, Arc<Bearer>> for UntilExpiry {
    fn expire_after_create(
        &self,
        _: &PrincipalId,
        bearer: &Arc<Bearer>,
        _: std::time::Instant,
    ) -> Option<std::time::Duration> {
        Some(bearer.remaining())
    }
}

/// A short text that tells `config`'s identity settings apart (keys of
/// caches shared by replicas that run the same configuration). Secrets are
/// redacted by their own serialization.
fn fingerprint(upstream: &str, config: &UpstreamIdentity) -> String {
    let text = format!("{upstream}\n{}", serde_json::to_string(config).unwrap_or_default());
    let digest = aws_lc_rs::digest::digest(&aws_lc_rs::digest::SHA256, text.as_bytes());
    hex::encode(&digest.as_ref()[..8])
}

/// Seconds since the Unix epoch.
pub(crate) fn now_secs() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs())
}
