//! Client authentication and per-client policy for the HTTP transports
//! (`[auth]`).
//!
//! The pieces, each usable on its own:
//! - [`Authenticator`]: the `Authorization` header of a request in, a
//!   [`Principal`] (client identity and [`ClientPolicy`]) or an [`AuthError`]
//!   out, plus the `WWW-Authenticate` value of the 401.
//! - [`ToolPolicy`]: which upstreams and tools a principal may see and call.
//! - [`CallLimiter`] and [`SessionLimiter`]: `calls_per_minute` and
//!   `max_sessions`.
//! - [`protected_resource_metadata`]: the RFC 9728 document for
//!   `/.well-known/oauth-protected-resource`.
//!
//! Credentials are API keys (compared as SHA-256 digests in constant time)
//! and JWT access tokens (RS256, ES256, EdDSA, checked against the issuer's
//! JWKS). Nothing here logs a credential or keeps one after the check;
//! `Debug` output never shows one. `toolgate stdio` serves the local user who
//! launched it and uses [`Principal::anonymous`].

mod api_key;
mod bearer;
mod error;
mod jwks;
mod jwt;
mod limits;
mod metadata;
mod policy;
mod principal;

#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Once};

pub use crate::config::sha256;
pub use bearer::{MAX_TOKEN_BYTES, bearer_token, challenge, parse_authorization};
pub use error::{AuthError, TokenError};
pub use jwks::{ALGORITHMS, JwksError, JwksSettings};
pub use jwt::CLOCK_SKEW;
pub use limits::{CallLimiter, RetryAfter, SessionGuard, SessionLimiter, TooManySessions};
pub use metadata::{WELL_KNOWN, protected_resource_metadata, resource_metadata_url, well_known_paths};
pub use policy::{PolicyError, ToolPolicy};
pub use principal::{ANONYMOUS, Bearer, ClientPolicy, Principal, PrincipalId, PrincipalKind, UpstreamCredentials};

use crate::config::{AuthConfig, DEFAULT_CLIENT};
use api_key::ApiKeys;
use jwks::KeyStore;
use jwt::JwtVerifier;

/// Why an [`Authenticator`] could not be built (configuration that passed
/// validation does not fail here, except for an unreadable JWKS file).
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    /// A client's `tools` or `deny_tools` pattern does not compile.
    #[error("auth.clients `{client}`: {error}")]
    Policy {
        /// The client entry.
        client: String,
        /// The pattern problem.
        error: PolicyError,
    },
    /// A client has a malformed `api_key_sha256`.
    #[error("auth.clients `{0}`: api_key_sha256 must be 64 hexadecimal digits")]
    BadDigest(String),
    /// `jwks_url` is not a URL.
    #[error("auth.jwt.jwks_url: {0}")]
    BadUrl(String),
    /// `[auth.jwt]` has neither `jwks_url` nor `jwks_file`.
    #[error("auth.jwt needs jwks_url or jwks_file")]
    NoKeySource,
    /// The JWKS file could not be loaded.
    #[error("auth.jwt.jwks_file: {0}")]
    Jwks(#[from] JwksError),
    /// The HTTP client for fetching keys could not be built.
    #[error("cannot build the HTTP client for the JWKS: {0}")]
    HttpClient(String),
}

/// Options beyond the configuration, for embedding and tests.
#[derive(Debug, Clone, Default)]
pub struct AuthOptions {
    /// How the JWKS is fetched and cached.
    pub jwks: JwksSettings,
    /// The HTTP client for `jwks_url`; default: a new one that follows no
    /// redirects.
    pub http: Option<reqwest::Client>,
}

/// Checks the credentials of requests against `[auth]`.
#[derive(Debug)]
pub struct Authenticator {
    /// Whether any credential is configured; when not, everyone is
    /// [`Principal::anonymous`].
    enabled: bool,
    api_keys: ApiKeys,
    jwt: Option<JwtVerifier>,
    /// Policies of entries without a key (for JWT clients), by name.
    jwt_policies: HashMap<String, Arc<ClientPolicy>>,
    /// The policy of JWT clients without an entry: `default`, or everything.
    jwt_default: Arc<ClientPolicy>,
    /// `resource_metadata` and `scope` of challenges.
    resource_metadata: Option<String>,
    scopes: Vec<String>,
    /// Unique to this authenticator (never 0): its policies carry it.
    generation: u64,
}

/// Where authenticators' generations come from (0 is no authenticator's).
static GENERATIONS: AtomicU64 = AtomicU64::new(1);

impl Authenticator {
    /// Builds the authenticator of a validated `[auth]` section. JWT keys
    /// from `jwks_url` are fetched on first use; call
    /// [`Authenticator::prefetch_keys`] at startup to load them early.
    pub fn new(config: &AuthConfig) -> Result<Self, BuildError> {
        Self::with_options(config, AuthOptions::default())
    }

    /// As [`Authenticator::new`], with fetch settings and an HTTP client.
    pub fn with_options(config: &AuthConfig, options: AuthOptions) -> Result<Self, BuildError> {
        install_crypto_provider();
        let generation = GENERATIONS.fetch_add(1, Ordering::Relaxed);
        let mut api_keys = ApiKeys::default();
        let mut jwt_policies = HashMap::new();
        for client in &config.clients {
            let policy = ClientPolicy::from_config(client)
                .map_err(|error| BuildError::Policy { client: client.name.clone(), error })?;
            let policy = Arc::new(policy.of_generation(generation));
            if client.has_key() {
                let digest = client.key_digest().ok_or_else(|| BuildError::BadDigest(client.name.clone()))?;
                api_keys.insert(digest, &client.name, policy);
            } else {
                jwt_policies.insert(client.name.clone(), policy);
            }
        }
        let jwt_default = jwt_policies
            .get(DEFAULT_CLIENT)
            .cloned()
            .unwrap_or_else(|| Arc::new(ClientPolicy::unrestricted().of_generation(generation)));

        let jwt = match &config.jwt {
            None => None,
            Some(jwt) => {
                let keys = match (&jwt.jwks_url, &jwt.jwks_file) {
                    (Some(url), _) => {
                        let url = url::Url::parse(url).map_err(|e| BuildError::BadUrl(e.to_string()))?;
                        let client = match options.http {
                            Some(client) => client,
                            None => reqwest::Client::builder()
                                .redirect(reqwest::redirect::Policy::none())
                                .connect_timeout(options.jwks.fetch_timeout)
                                .build()
                                .map_err(|e| BuildError::HttpClient(e.to_string()))?,
                        };
                        KeyStore::remote(url, client, options.jwks.clone())
                    }
                    (None, Some(file)) => KeyStore::from_file(file)?,
                    (None, None) => return Err(BuildError::NoKeySource),
                };
                Some(JwtVerifier::new(jwt, keys))
            }
        };
        let resource_metadata = config.jwt.as_ref().and_then(|j| j.resource()).and_then(resource_metadata_url);
        let scopes = config.jwt.as_ref().map(|j| j.scopes_supported.clone()).unwrap_or_default();
        Ok(Self {
            enabled: config.is_enabled(),
            api_keys,
            jwt,
            jwt_policies,
            jwt_default,
            resource_metadata,
            scopes,
            generation,
        })
    }

    /// An authenticator that lets everyone in as [`Principal::anonymous`].
    pub fn disabled() -> Self {
        Self {
            enabled: false,
            api_keys: ApiKeys::default(),
            jwt: None,
            jwt_policies: HashMap::new(),
            jwt_default: Arc::new(ClientPolicy::unrestricted()),
            resource_metadata: None,
            scopes: Vec::new(),
            generation: GENERATIONS.fetch_add(1, Ordering::Relaxed),
        }
    }

    /// What this authenticator's policies carry in
    /// [`ClientPolicy::generation`].
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// Whether `principal` was resolved by this authenticator (else it was
    /// admitted before a reload replaced the clients: see
    /// [`Authenticator::refreshed`]).
    pub fn resolved(&self, principal: &Principal) -> bool {
        !self.enabled || principal.policy().generation == self.generation
    }

    /// Whether requests need credentials.
    pub fn is_enabled(&self) -> bool {
        self.enabled
    }

    /// Whether JWTs are accepted (then the metadata document is served).
    pub fn has_jwt(&self) -> bool {
        self.jwt.is_some()
    }

    /// Authenticates a request by its headers: exactly one `Authorization:
    /// Bearer <token>` when authentication is on; anything (ignored) when it
    /// is off.
    pub async fn authenticate_headers(&self, headers: &http::HeaderMap) -> Result<Principal, AuthError> {
        if !self.enabled {
            return Ok(Principal::anonymous());
        }
        match bearer_token(headers)? {
            None => Err(AuthError::Missing),
            Some(token) => self.authenticate_token(token).await,
        }
    }

    /// Authenticates by the value of the `Authorization` header (`None`
    /// when absent).
    pub async fn authenticate(&self, authorization: Option<&http::HeaderValue>) -> Result<Principal, AuthError> {
        if !self.enabled {
            return Ok(Principal::anonymous());
        }
        let Some(value) = authorization else { return Err(AuthError::Missing) };
        let token = parse_authorization(value.as_bytes())?;
        self.authenticate_token(token).await
    }

    /// Authenticates a bearer token: an API key, else a JWT (when
    /// `[auth.jwt]` is set).
    pub async fn authenticate_token(&self, token: &str) -> Result<Principal, AuthError> {
        if !self.enabled {
            return Ok(Principal::anonymous());
        }
        if let Some((name, policy)) = self.api_keys.find(token) {
            return Ok(Principal::new(PrincipalId::new(PrincipalKind::ApiKey, name), policy));
        }
        let Some(jwt) = &self.jwt else { return Err(AuthError::InvalidToken(TokenError::Unknown)) };
        // An API key that is not a JWT should read as "unknown token", not
        // "malformed token".
        if token.bytes().filter(|b| *b == b'.').count() != 2 {
            return Err(AuthError::InvalidToken(TokenError::Unknown));
        }
        let verified = jwt.verify(token).await?;
        let policy = self.jwt_policies.get(&verified.name).unwrap_or(&self.jwt_default).clone();
        let bearer = Bearer::new(token, verified.subject, verified.expires_at);
        Ok(Principal::new(PrincipalId::new(PrincipalKind::Jwt, verified.name), policy).with_bearer(bearer))
    }

    /// `principal` with the policy its client has under this
    /// authenticator's configuration (a reload changed `[[auth.clients]]`),
    /// or `None` when its client is gone (its API key entry was removed).
    pub fn refreshed(&self, principal: &Principal) -> Option<Principal> {
        let policy = match principal.kind() {
            PrincipalKind::Anonymous => return (!self.enabled).then(|| principal.clone()),
            PrincipalKind::ApiKey => self.api_keys.policy_of(principal.name())?,
            PrincipalKind::Jwt => {
                self.jwt.as_ref()?;
                self.jwt_policies.get(principal.name()).unwrap_or(&self.jwt_default).clone()
            }
        };
        Some(principal.with_policy(policy))
    }

    /// The `WWW-Authenticate` value to send with `error`'s 401.
    pub fn challenge(&self, error: &AuthError) -> String {
        challenge(self.resource_metadata.as_deref(), &self.scopes, Some(error))
    }

    /// The `resource_metadata` URL named in challenges (with `[auth.jwt]`).
    pub fn resource_metadata_url(&self) -> Option<&str> {
        self.resource_metadata.as_deref()
    }

    /// Loads the JWT keys now (from `jwks_url`), whatever the refresh rate
    /// bound; a no-op without `[auth.jwt]` or with `jwks_file`. Returns the
    /// number of usable keys. On failure, keys are fetched again on use.
    pub async fn prefetch_keys(&self) -> Result<usize, JwksError> {
        match &self.jwt {
            Some(jwt) => jwt.keys().refresh_now().await,
            None => Ok(0),
        }
    }
}

/// jsonwebtoken picks its crypto backend from its cargo features; install
/// aws-lc-rs explicitly so that a second backend enabled by some other crate
/// in the build cannot leave it without one (it would panic on first use).
fn install_crypto_provider() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // Err means one is installed already, which is all that matters.
        let _ = jsonwebtoken::crypto::CryptoProvider::install_default(&jsonwebtoken::crypto::aws_lc::DEFAULT_PROVIDER);
    });
}
