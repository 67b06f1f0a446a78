//! OAuth toward protected upstreams (`auth = "oauth"`): toolgate is the
//! OAuth client, and each authenticated client of toolgate (a principal)
//! authorizes it once per upstream, at the first call that needs it.
//!
//! - A call finds no usable token for (principal, upstream): [`OAuth::access`]
//!   opens a consent *flow* and answers with its link,
//!   `<public_url>/oauth/start/<opaque>` (the gateway turns it into a URL
//!   elicitation, an `InputRequiredResult`, or a tool error, by what the
//!   client supports).
//! - The user's browser follows the link ([`pages`]): toolgate discovers the
//!   authorization server ([`discovery`]), registers where it must
//!   ([`registration`]), and redirects with PKCE (S256), RFC 8707 `resource`
//!   and a `state` naming the flow; a cookie binds the flow to that browser.
//! - The server sends the browser back to `/oauth/callback`: the flow is
//!   taken (single use), `iss` (RFC 9207) and the browser checked, the code
//!   exchanged, and the tokens kept per (principal, upstream) in the
//!   [`vault`]: this process, or Redis sealed with AES-256-GCM so every
//!   replica, sessionless clients included, uses them.
//! - Calls then carry the principal's access token ([`Source`]), refreshed
//!   before it expires (once across replicas: a Redis lock); a 401 after a
//!   refresh drops the token, and the next call asks for consent again.
//!
//! No token, code, verifier or secret appears in a log, a metric, an error
//! or a page.

pub mod cli;
pub mod discovery;
pub mod pages;
pub mod registration;
mod vault;

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use futures::future::BoxFuture;
use http::HeaderMap;
use oauth2::basic::{BasicClient, BasicErrorResponseType};
use oauth2::{
    AuthType, AuthUrl, AuthorizationCode, ClientId, ClientSecret, CsrfToken, PkceCodeChallenge, PkceCodeVerifier,
    RedirectUrl, RefreshToken, RequestTokenError, Scope, TokenResponse, TokenUrl,
};
use serde::{Deserialize, Serialize};
use toolgate_mcp::client::{Cause, CredentialSource, Credentials};
use url::Url;

use crate::auth::{Principal, PrincipalKind};
use crate::config::{Config, UpstreamConfig};
use crate::identity::sealed::KeyRing;
use crate::identity::{basic_auth, bearer, now_secs};
use crate::shared::Connection;

pub use discovery::Server;
use registration::ClientAuth;
pub use registration::Registered;
pub use vault::Unavailable;

/// Where a consent link starts.
pub const START_PATH: &str = "/oauth/start";
/// Where authorization servers send users' browsers back.
pub const CALLBACK_PATH: &str = "/oauth/callback";
/// Where the Client ID Metadata Document is served.
pub const CLIENT_DOCUMENT_PATH: &str = "/oauth/client.json";

/// A token is refreshed this long before it expires.
const REFRESH_BEFORE: Duration = Duration::from_secs(60);
/// How long one replica's refresh may hold the lock.
const REFRESH_LOCK: Duration = Duration::from_secs(15);
/// How long another replica's refresh is waited for.
const REFRESH_WAIT: Duration = Duration::from_secs(5);
/// How long a token request may take.
const TOKEN_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a token read from Redis is used before it is read again.
const SHARED_READ_TTL: Duration = Duration::from_secs(5);
/// How long tokens without a refresh token and an expiry are kept.
const KEEP_UNDATED: Duration = Duration::from_secs(30 * 24 * 3600);
/// How long discovery and registration results are reused.
const DISCOVERY_TTL: Duration = Duration::from_secs(3600);

/// Why toolgate cannot get or use a token for an upstream. Never holds a
/// token or a secret.
#[derive(Debug, Clone, thiserror::Error)]
pub enum OAuthError {
    #[error("OAuth discovery failed: {0}")]
    Discovery(String),
    #[error("OAuth client registration failed: {0}")]
    Registration(String),
    #[error("the authorization server refused the token request: {0}")]
    Token(String),
    #[error(transparent)]
    Store(#[from] Unavailable),
}

/// A user's tokens for one upstream.
#[derive(Clone, Serialize, Deserialize)]
struct TokenSet {
    access_token: String,
    #[serde(default)]
    refresh_token: Option<String>,
    /// Unix seconds.
    #[serde(default)]
    expires_at: Option<u64>,
    /// The authorization server that issued them.
    issuer: String,
    /// Unix seconds.
    obtained_at: u64,
}

impl TokenSet {
    /// Whether it is due for a refresh (or, without a refresh token, past use).
    fn is_due(&self) -> bool {
        self.expires_at.is_some_and(|at| at <= now_secs() + REFRESH_BEFORE.as_secs())
    }

    fn is_expired(&self) -> bool {
        self.expires_at.is_some_and(|at| at <= now_secs())
    }

    /// How long it is kept: as long as it can be refreshed, or used.
    fn keep_for(&self) -> Duration {
        match (&self.refresh_token, self.expires_at) {
            (None, Some(at)) => Duration::from_secs(at.saturating_sub(now_secs()).max(1)),
            _ => KEEP_UNDATED,
        }
    }
}

/// An open consent flow, from the call that asked to the callback.
#[derive(Serialize, Deserialize)]
struct Flow {
    /// The principal, as logs name it (`alice`, `jwt:sub`).
    principal: String,
    upstream: String,
    /// The session to tell when consent is given (session-era clients).
    #[serde(default)]
    session: Option<String>,
    elicitation: String,
    /// Unix seconds.
    expires_at: u64,
    #[serde(default)]
    started: Option<Started>,
}

/// What the start of a flow chose, for the callback to check and use.
#[derive(Serialize, Deserialize)]
struct Started {
    /// The `state` sent is `<flow>.<nonce>`.
    nonce: String,
    /// Bound to the browser that started (a cookie).
    browser: String,
    verifier: String,
    issuer: String,
}

/// A consent the call must ask for: the link, and the id of the elicitation.
#[derive(Debug, Clone)]
pub struct Consent {
    pub upstream: String,
    pub url: String,
    pub elicitation_id: String,
}

impl Consent {
    /// The sentence a user (or a model that shows it) reads.
    pub fn message(&self) -> String {
        format!(
            "Authorization required: open {} in a browser to let toolgate use `{}` on your behalf, then try again.",
            self.url, self.upstream
        )
    }
}

/// Whether a call may go ahead.
pub enum Access {
    /// A usable token is kept.
    Ready,
    /// The user must authorize first.
    Consent(Consent),
}

/// What the callback completed, for the gateway to tell the session.
#[derive(Debug, Clone)]
pub struct Completed {
    pub principal: String,
    pub upstream: String,
    pub session: Option<String>,
    pub elicitation_id: String,
}

/// One kept authorization, as `toolgate oauth list` shows it (no secret).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Kept {
    pub principal: String,
    pub upstream: String,
    pub issuer: String,
    /// Unix seconds.
    pub obtained_at: u64,
}

/// What happens when consent completes (the gateway notifies the session),
/// and where events are counted.
pub trait Observer: Send + Sync + 'static {
    fn completed(&self, completed: &Completed);
    fn event(&self, upstream: &str, event: &'static str);
}

/// The OAuth client of a gateway.
#[derive(Clone)]
pub struct OAuth {
    inner: Arc<Inner>,
}

struct Inner {
    http: reqwest::Client,
    /// toolgate's public base URL (no trailing `/`).
    base: parking_lot::RwLock<String>,
    /// Whether `[oauth] public_url` set it (else the listener's address does).
    configured_base: bool,
    client_name: String,
    flow_lifetime: Duration,
    vault: vault::Vault,
    /// Discovered authorization servers, by issuer.
    servers: moka::future::Cache<String, Arc<Server>>,
    /// Issuers and scopes of upstreams, by upstream URL.
    resources: moka::future::Cache<String, Arc<(String, Vec<String>)>>,
    /// toolgate's registrations, by issuer.
    clients: moka::future::Cache<String, Arc<Registered>>,
    /// Tokens read, by principal and upstream (in memory the only copy; with
    /// Redis a short-lived one).
    tokens: moka::future::Cache<String, Arc<TokenSet>>,
    /// Open flows by principal, upstream and session: a call asked again
    /// before consent gets the same link.
    open: moka::sync::Cache<String, Consent>,
    /// Who holds a token for which upstream, as this process knows it (with
    /// Redis the shared index is the whole list).
    holders: moka::sync::Cache<String, Kept>,
    /// One refresh at a time per token in this process.
    refreshing: moka::sync::Cache<String, Arc<tokio::sync::Mutex<()>>>,
    observer: OnceLock<Arc<dyn Observer>>,
}

impl OAuth {
    /// The OAuth client of `config` (it costs nothing until an upstream
    /// has `auth = "oauth"`, which a reload may add). `listen` is the bound
    /// listener (the public URL's default); `store` is `[state]`'s Redis.
    pub fn new(
        config: &Config,
        http: reqwest::Client,
        store: Option<Arc<Connection>>,
        listen: std::net::SocketAddr,
    ) -> Result<Self, crate::identity::sealed::KeyError> {
        let oauth = &config.oauth;
        let base = match &oauth.public_url {
            Some(url) => url.trim_end_matches('/').to_owned(),
            None => format!("http://{listen}"),
        };
        let ring = KeyRing::new(config.state.encryption_keys.iter().map(|k| k.expose()))?;
        let vault = match (store, ring) {
            (Some(connection), Some(ring)) => {
                vault::Vault::redis(connection, ring, format!("{}oauth:", config.state.key_prefix))
            }
            _ => vault::Vault::memory(oauth.cache_entries.saturating_mul(2).max(1_000)),
        };
        let shared = vault.is_shared();
        let mut tokens = moka::future::Cache::builder().max_capacity(oauth.cache_entries);
        if shared {
            tokens = tokens.time_to_live(SHARED_READ_TTL);
        }
        fn cached<V: Clone + Send + Sync + 'static>() -> moka::future::Cache<String, V> {
            moka::future::Cache::builder().max_capacity(1_000).time_to_live(DISCOVERY_TTL).build()
        }
        let inner = Inner {
            http,
            base: parking_lot::RwLock::new(base),
            configured_base: oauth.public_url.is_some(),
            client_name: oauth.client_name.clone(),
            flow_lifetime: oauth.flow_lifetime,
            vault,
            servers: cached(),
            resources: cached(),
            clients: cached(),
            tokens: tokens.build(),
            open: moka::sync::Cache::builder().max_capacity(10_000).time_to_live(oauth.flow_lifetime).build(),
            holders: moka::sync::Cache::builder().max_capacity(oauth.cache_entries).build(),
            refreshing: moka::sync::Cache::builder().max_capacity(10_000).build(),
            observer: OnceLock::new(),
        };
        Ok(Self { inner: Arc::new(inner) })
    }

    /// Sets who hears completions and events (once).
    pub fn observe(&self, observer: Arc<dyn Observer>) {
        let _ = self.inner.observer.set(observer);
    }

    fn event(&self, upstream: &str, event: &'static str) {
        if let Some(o) = self.inner.observer.get() {
            o.event(upstream, event);
        }
    }

    /// Makes `http://<addr>` the public base URL, unless `[oauth]
    /// public_url` is set (`addr` is the listener's bound address).
    pub fn listening_on(&self, addr: std::net::SocketAddr) {
        if !self.inner.configured_base {
            *self.inner.base.write() = format!("http://{addr}");
        }
    }

    /// toolgate's public base URL.
    pub fn base(&self) -> String {
        self.inner.base.read().clone()
    }

    /// The redirect URI registered at authorization servers.
    pub fn redirect_uri(&self) -> String {
        format!("{}{CALLBACK_PATH}", self.base())
    }

    /// The Client ID Metadata Document, when toolgate's public URL can be
    /// a client id (`https://`).
    pub fn client_document(&self) -> Option<serde_json::Value> {
        let id = self.client_document_id()?;
        Some(registration::metadata_document(&id, &self.inner.client_name, &self.redirect_uri()))
    }

    fn client_document_id(&self) -> Option<String> {
        let base = self.base();
        base.starts_with("https://").then(|| format!("{base}{CLIENT_DOCUMENT_PATH}"))
    }

    /// Whether `principal` may hold tokens (an authenticated client).
    fn holder(principal: &Principal) -> bool {
        principal.kind() != PrincipalKind::Anonymous
    }

    fn token_key(principal: &str, upstream: &str) -> String {
        format!("t\n{principal}\n{upstream}")
    }

    /// Whether `principal`'s call to `up` may go ahead, or the consent it
    /// needs first. `session`: the session to tell when consent is given.
    pub async fn access(
        &self,
        up: &UpstreamConfig,
        principal: &Principal,
        session: Option<&str>,
    ) -> Result<Access, OAuthError> {
        if !Self::holder(principal) {
            return Err(OAuthError::Token("only an authenticated client can authorize an upstream".into()));
        }
        let who = principal.id().to_string();
        if self.usable(up, &who).await?.is_some() {
            return Ok(Access::Ready);
        }
        let open_key = format!("{who}\n{}\n{}", up.name, session.unwrap_or(""));
        if let Some(consent) = self.inner.open.get(&open_key) {
            return Ok(Access::Consent(consent));
        }
        // The server is found now, so a link is never handed out to a
        // server that cannot be reached.
        self.server_of(up).await?;
        let opaque = random_text(32);
        let elicitation = uuid::Uuid::new_v4().to_string();
        let flow = Flow {
            principal: who,
            upstream: up.name.clone(),
            session: session.map(str::to_owned),
            elicitation: elicitation.clone(),
            expires_at: now_secs() + self.inner.flow_lifetime.as_secs(),
            started: None,
        };
        self.inner.vault.put(&flow_key(&opaque), &flow, self.inner.flow_lifetime).await?;
        let consent = Consent {
            upstream: up.name.clone(),
            url: format!("{}{START_PATH}/{opaque}", self.base()),
            elicitation_id: elicitation,
        };
        self.inner.open.insert(open_key, consent.clone());
        tracing::info!(upstream = %up.name, principal = %flow.principal, "OAuth consent asked for");
        self.event(&up.name, "started");
        Ok(Access::Consent(consent))
    }

    /// The credentials of `principal`'s connections to `up`.
    pub fn source(&self, up: &UpstreamConfig, principal: &Principal) -> Credentials {
        Credentials::new(Arc::new(Source {
            oauth: self.clone(),
            up: Arc::new(up.clone()),
            principal: principal.id().to_string(),
        }))
    }

    /// What toolgate's own connection to `up` (its catalog) presents, per
    /// `[upstream.oauth] catalog`: nothing beyond `headers`, a token of its
    /// own (client credentials), or an authorized client's token.
    pub fn catalog_source(&self, up: &UpstreamConfig) -> Option<Credentials> {
        let how = up.oauth.as_ref().map(|o| o.catalog).unwrap_or_default();
        let kind = match how {
            crate::config::OAuthCatalog::Headers => return None,
            crate::config::OAuthCatalog::ClientCredentials => CatalogKind::Client(Default::default()),
            crate::config::OAuthCatalog::AuthorizedUser => CatalogKind::User,
        };
        Some(Credentials::new(Arc::new(Catalog { oauth: self.clone(), up: Arc::new(up.clone()), kind })))
    }

    /// A consent link for `principal` (as logs name it: `alice`,
    /// `jwt:<claim>`) to authorize toolgate for `up` ahead of any call
    /// (`toolgate oauth login`).
    pub async fn login(&self, up: &UpstreamConfig, principal: &str) -> Result<Consent, OAuthError> {
        let id = crate::auth::PrincipalId::from_logged(principal);
        let who = Principal::new(id, Arc::new(crate::auth::ClientPolicy::unrestricted()));
        match self.access(up, &who, None).await? {
            Access::Consent(consent) => Ok(consent),
            Access::Ready => Err(OAuthError::Token(format!("`{principal}` has authorized `{}` already", up.name))),
        }
    }

    /// A token for toolgate itself at `up`'s server (client credentials).
    async fn client_token(&self, up: &UpstreamConfig) -> Result<TokenSet, OAuthError> {
        let server = self.server_of(up).await?;
        let client = self.client_at(up, &server).await?;
        let oauth = oauth_client(&client, &server, &self.redirect_uri())?;
        let (_, named) = &*self.resource_of(up).await?;
        let mut request = oauth.exchange_client_credentials();
        for scope in scopes_for(up, named) {
            request = request.add_scope(Scope::new(scope));
        }
        if let Some(resource) = resource_of(up) {
            request = request.add_extra_param("resource", resource);
        }
        let http = self.http_fn();
        let answer = request.request_async(&http).await.map_err(|e| match token_refusal(e) {
            Refusal::Invalid(why) => OAuthError::Token(why),
            Refusal::Failed(e) => e,
        })?;
        Ok(token_set(&answer, &server.issuer))
    }

    /// A usable token of any client that authorized toolgate for `up`.
    async fn any_holder(&self, up: &UpstreamConfig) -> Result<Option<Arc<TokenSet>>, OAuthError> {
        let mut holders: Vec<Kept> = self.list().await?.into_iter().filter(|k| k.upstream == up.name).collect();
        // The newest first: the likeliest to work.
        holders.sort_by_key(|k| std::cmp::Reverse(k.obtained_at));
        for kept in holders {
            if let Some(token) = self.usable(up, &kept.principal).await? {
                return Ok(Some(token));
            }
        }
        Ok(None)
    }

    /// After `up` refused `principal`'s token (401): refreshes it once.
    /// `true` when a new token is kept (the call may be sent again); else
    /// the token is dropped, and the next call asks for consent.
    pub async fn refused(&self, up: &UpstreamConfig, principal: &Principal) -> bool {
        let who = principal.id().to_string();
        let key = Self::token_key(&who, &up.name);
        let kept = match self.read(&key).await {
            Ok(Some(kept)) => kept,
            _ => return false,
        };
        if kept.refresh_token.is_some()
            && let Ok(Some(_)) = self.refresh(up, &key, &kept, true).await
        {
            return true;
        }
        tracing::info!(upstream = %up.name, principal = %who, "the upstream refused the user's token: dropped");
        self.drop_token(&key, &who, &up.name).await;
        self.event(&up.name, "dropped");
        false
    }

    /// A usable token of `principal` (its logged name) for `up`, refreshed
    /// if due; `None` when there is none (or it can no longer be refreshed).
    async fn usable(&self, up: &UpstreamConfig, principal: &str) -> Result<Option<Arc<TokenSet>>, OAuthError> {
        let key = Self::token_key(principal, &up.name);
        let Some(kept) = self.read(&key).await? else { return Ok(None) };
        if !kept.is_due() {
            return Ok(Some(kept));
        }
        if kept.refresh_token.is_none() {
            return Ok((!kept.is_expired()).then_some(kept));
        }
        self.refresh(up, &key, &kept, false).await
    }

    async fn read(&self, key: &str) -> Result<Option<Arc<TokenSet>>, OAuthError> {
        if let Some(kept) = self.inner.tokens.get(key).await {
            return Ok(Some(kept));
        }
        let Some(kept) = self.inner.vault.get::<TokenSet>(key).await? else { return Ok(None) };
        let kept = Arc::new(kept);
        self.inner.tokens.insert(key.to_owned(), kept.clone()).await;
        Ok(Some(kept))
    }

    async fn keep(
        &self,
        key: &str,
        principal: &str,
        upstream: &str,
        set: TokenSet,
    ) -> Result<Arc<TokenSet>, OAuthError> {
        self.inner.vault.put(key, &set, set.keep_for()).await?;
        if self.inner.vault.is_shared() {
            let kept = Kept {
                principal: principal.into(),
                upstream: upstream.into(),
                issuer: set.issuer.clone(),
                obtained_at: set.obtained_at,
            };
            let text = serde_json::to_string(&kept).unwrap_or_default();
            self.inner.vault.set_index(INDEX, &index_field(principal, upstream), Some(&text)).await;
        }
        let set = Arc::new(set);
        self.inner.tokens.insert(key.to_owned(), set.clone()).await;
        Ok(set)
    }

    async fn drop_token(&self, key: &str, principal: &str, upstream: &str) {
        self.inner.holders.invalidate(&index_field(principal, upstream));
        self.inner.tokens.invalidate(key).await;
        let _ = self.inner.vault.delete(key).await;
        self.inner.vault.set_index(INDEX, &index_field(principal, upstream), None).await;
    }

    /// Refreshes `kept` (the token under `key`), once in this process and
    /// across replicas; `force` refreshes even a token not yet due (the
    /// upstream refused it). `None`: the refresh token no longer works, and
    /// the token is dropped.
    async fn refresh(
        &self,
        up: &UpstreamConfig,
        key: &str,
        kept: &Arc<TokenSet>,
        force: bool,
    ) -> Result<Option<Arc<TokenSet>>, OAuthError> {
        let (principal, upstream) = split_key(key);
        let gate = self.inner.refreshing.get_with(key.to_owned(), Default::default);
        let _one = gate.lock().await;
        // Another task (or replica) may have refreshed meanwhile.
        self.inner.tokens.invalidate(key).await;
        let current = match self.read(key).await? {
            Some(current) => current,
            None => return Ok(None),
        };
        let replaced = current.access_token != kept.access_token;
        if replaced && !current.is_due() {
            return Ok(Some(current));
        }
        if !force && !current.is_due() {
            return Ok(Some(current));
        }
        let locked = self.inner.vault.lock(key, REFRESH_LOCK).await;
        if !locked {
            let deadline = tokio::time::Instant::now() + REFRESH_WAIT;
            while tokio::time::Instant::now() < deadline {
                tokio::time::sleep(Duration::from_millis(100)).await;
                self.inner.tokens.invalidate(key).await;
                if let Some(fresh) = self.read(key).await?
                    && fresh.access_token != current.access_token
                {
                    return Ok(Some(fresh));
                }
            }
        }
        let result = self.refresh_now(up, &current).await;
        let out = match result {
            Ok(fresh) => {
                tracing::info!(upstream = %up.name, principal, "OAuth token refreshed");
                self.event(&up.name, "refreshed");
                Ok(Some(self.keep(key, principal, upstream, fresh).await?))
            }
            Err(Refusal::Invalid(why)) => {
                tracing::info!(upstream = %up.name, principal, %why, "OAuth refresh refused: consent will be asked again");
                self.event(&up.name, "refresh_failed");
                self.drop_token(key, principal, upstream).await;
                Ok(None)
            }
            Err(Refusal::Failed(e)) => {
                tracing::warn!(upstream = %up.name, principal, error = %e, "OAuth refresh failed");
                self.event(&up.name, "refresh_failed");
                Err(e)
            }
        };
        if locked {
            self.inner.vault.unlock(key).await;
        }
        out
    }

    async fn refresh_now(&self, up: &UpstreamConfig, current: &TokenSet) -> Result<TokenSet, Refusal> {
        let Some(refresh) = &current.refresh_token else { return Err(Refusal::Invalid("no refresh token".into())) };
        let server = self.server(&current.issuer).await.map_err(Refusal::Failed)?;
        let client = self.client_at(up, &server).await.map_err(Refusal::Failed)?;
        let oauth = oauth_client(&client, &server, &self.redirect_uri()).map_err(Refusal::Failed)?;
        let refresh = RefreshToken::new(refresh.clone());
        let mut request = oauth.exchange_refresh_token(&refresh);
        if let Some(resource) = resource_of(up) {
            request = request.add_extra_param("resource", resource);
        }
        let http = self.http_fn();
        let answer = request.request_async(&http).await.map_err(token_refusal)?;
        let mut fresh = token_set(&answer, &server.issuer);
        // A server that does not rotate refresh tokens keeps the old one valid.
        if fresh.refresh_token.is_none() {
            fresh.refresh_token = current.refresh_token.clone();
        }
        Ok(fresh)
    }

    /// The authorization server of `up`: configured, or from its
    /// protected-resource metadata.
    async fn server_of(&self, up: &UpstreamConfig) -> Result<Arc<Server>, OAuthError> {
        let (issuer, _) = &*self.resource_of(up).await?;
        self.server(issuer).await
    }

    /// `up`'s issuer and the scopes it names.
    async fn resource_of(&self, up: &UpstreamConfig) -> Result<Arc<(String, Vec<String>)>, OAuthError> {
        let url = up.url.clone().unwrap_or_default();
        let configured = up.oauth.as_ref().and_then(|o| o.authorization_server.clone());
        let http = self.inner.http.clone();
        self.inner
            .resources
            .try_get_with(url.clone(), async move {
                let parsed =
                    Url::parse(&url).map_err(|e| OAuthError::Discovery(format!("`{url}` is not a URL: {e}")))?;
                let metadata = discovery::resource(&http, &parsed).await?;
                let scopes = metadata.as_ref().map(|m| m.scopes_supported.clone()).unwrap_or_default();
                let issuer = match (configured, metadata.and_then(|m| m.authorization_servers.into_iter().next())) {
                    (Some(issuer), _) | (None, Some(issuer)) => issuer,
                    (None, None) => {
                        return Err(OAuthError::Discovery(format!(
                            "`{url}` serves no protected-resource metadata naming an authorization server; set \
                             [upstream.oauth] authorization_server"
                        )));
                    }
                };
                Ok(Arc::new((issuer, scopes)))
            })
            .await
            .map_err(|e: Arc<OAuthError>| (*e).clone())
    }

    async fn server(&self, issuer: &str) -> Result<Arc<Server>, OAuthError> {
        let http = self.inner.http.clone();
        let issuer_owned = issuer.to_owned();
        self.inner
            .servers
            .try_get_with(issuer.to_owned(), async move { discovery::server(&http, &issuer_owned).await.map(Arc::new) })
            .await
            .map_err(|e: Arc<OAuthError>| (*e).clone())
    }

    /// toolgate's client at `server` for `up`: configured, a metadata
    /// document, or registered (once, kept).
    async fn client_at(&self, up: &UpstreamConfig, server: &Server) -> Result<Arc<Registered>, OAuthError> {
        if let Some(settings) = &up.oauth
            && let Some(id) = &settings.client_id
        {
            let secret = settings.client_secret.as_ref().map(|s| s.expose().to_owned());
            let auth = if secret.is_some() { ClientAuth::Basic } else { ClientAuth::None };
            return Ok(Arc::new(Registered {
                client_id: id.clone(),
                client_secret: secret,
                auth,
                how: "configured".into(),
            }));
        }
        if server.client_id_metadata_document_supported
            && let Some(id) = self.client_document_id()
        {
            return Ok(Arc::new(Registered {
                client_id: id,
                client_secret: None,
                auth: ClientAuth::None,
                how: "metadata_document".into(),
            }));
        }
        let key = format!("c\n{}\n{}", server.issuer, self.redirect_uri());
        let this = self.clone();
        let server = server.clone();
        let scopes = scopes_for(up, &[]);
        self.inner
            .clients
            .try_get_with(key.clone(), async move {
                if let Some(kept) = this.inner.vault.get::<Registered>(&key).await? {
                    return Ok(Arc::new(kept));
                }
                let registered = registration::register(
                    &this.inner.http,
                    &server,
                    &this.inner.client_name,
                    &this.redirect_uri(),
                    &scopes,
                )
                .await?;
                this.inner.vault.put(&key, &registered, KEEP_UNDATED * 12).await?;
                Ok(Arc::new(registered))
            })
            .await
            .map_err(|e: Arc<OAuthError>| (*e).clone())
    }

    /// The start of flow `opaque`: the authorization URL to redirect to and
    /// the browser cookie's value.
    pub async fn start(&self, opaque: &str, upstreams: &[UpstreamConfig]) -> Result<(String, String), PageError> {
        let key = flow_key(opaque);
        let mut flow: Flow =
            self.inner.vault.get(&key).await.map_err(|_| PageError::Unavailable)?.ok_or(PageError::Unknown)?;
        if flow.expires_at <= now_secs() {
            return Err(PageError::Unknown);
        }
        let up = upstreams.iter().find(|u| u.name == flow.upstream).ok_or(PageError::Unknown)?;
        let server = self.server_of(up).await.map_err(|e| PageError::Server(e.to_string()))?;
        let client = self.client_at(up, &server).await.map_err(|e| PageError::Server(e.to_string()))?;
        let oauth =
            oauth_client(&client, &server, &self.redirect_uri()).map_err(|e| PageError::Server(e.to_string()))?;
        let (challenge, verifier) = PkceCodeChallenge::new_random_sha256();
        let started = Started {
            nonce: random_text(24),
            browser: random_text(24),
            verifier: verifier.secret().clone(),
            issuer: server.issuer.clone(),
        };
        let state = format!("{opaque}.{}", started.nonce);
        let (_, scopes) = &*self.resource_of(up).await.map_err(|e| PageError::Server(e.to_string()))?;
        let mut request = oauth.authorize_url(|| CsrfToken::new(state)).set_pkce_challenge(challenge);
        for scope in scopes_for(up, scopes) {
            request = request.add_scope(Scope::new(scope));
        }
        if let Some(resource) = resource_of(up) {
            request = request.add_extra_param("resource", resource);
        }
        let (url, _) = request.url();
        let browser = started.browser.clone();
        flow.started = Some(started);
        let left = Duration::from_secs(flow.expires_at.saturating_sub(now_secs()).max(1));
        self.inner.vault.put(&key, &flow, left).await.map_err(|_| PageError::Unavailable)?;
        Ok((url.to_string(), browser))
    }

    /// The return of a browser to `/oauth/callback` with `query`, carrying
    /// the cookie `browser`: the flow taken, checked and completed.
    pub async fn callback(
        &self,
        query: &CallbackQuery,
        browser: Option<&str>,
        upstreams: &[UpstreamConfig],
    ) -> Result<Completed, PageError> {
        let state = query.state.as_deref().ok_or(PageError::Tampered("the answer carries no state"))?;
        let (opaque, nonce) = state.split_once('.').ok_or(PageError::Tampered("the state is not one toolgate made"))?;
        let key = flow_key(opaque);
        let flow: Flow =
            self.inner.vault.get(&key).await.map_err(|_| PageError::Unavailable)?.ok_or(PageError::Unknown)?;
        let Some(started) = &flow.started else { return Err(PageError::Unknown) };
        if !constant_eq(&started.nonce, nonce) {
            return Err(PageError::Tampered("the state does not match the consent link"));
        }
        if browser.is_none_or(|b| !constant_eq(&started.browser, b)) {
            return Err(PageError::Tampered("this browser did not open the consent link"));
        }
        // Single use: whoever takes the flow first completes it.
        let flow: Flow =
            self.inner.vault.take(&key).await.map_err(|_| PageError::Unavailable)?.ok_or(PageError::Unknown)?;
        let started = flow.started.as_ref().ok_or(PageError::Unknown)?;
        self.inner.open.invalidate(&format!(
            "{}\n{}\n{}",
            flow.principal,
            flow.upstream,
            flow.session.as_deref().unwrap_or("")
        ));
        if flow.expires_at <= now_secs() {
            return Err(PageError::Unknown);
        }
        let failed = |e: PageError| {
            self.event(&flow.upstream, "failed");
            tracing::info!(upstream = %flow.upstream, principal = %flow.principal, why = %e, "OAuth consent failed");
            e
        };
        let server = self.server(&started.issuer).await.map_err(|e| failed(PageError::Server(e.to_string())))?;
        // RFC 9207: the answer names its issuer; a mix-up attack sends another's.
        match query.iss.as_deref() {
            Some(iss) if iss != server.issuer => {
                return Err(failed(PageError::Tampered("the answer names another issuer (iss)")));
            }
            None if server.authorization_response_iss_parameter_supported => {
                return Err(failed(PageError::Tampered("the answer names no issuer (iss)")));
            }
            _ => {}
        }
        if let Some(error) = &query.error {
            let code: String = error.chars().filter(|c| c.is_ascii_alphanumeric() || *c == '_').take(64).collect();
            return Err(failed(PageError::Refused(code)));
        }
        let code = query.code.as_deref().ok_or_else(|| failed(PageError::Tampered("the answer carries no code")))?;
        let up = upstreams.iter().find(|u| u.name == flow.upstream).ok_or_else(|| failed(PageError::Unknown))?;
        let client = self.client_at(up, &server).await.map_err(|e| failed(PageError::Server(e.to_string())))?;
        let oauth = oauth_client(&client, &server, &self.redirect_uri())
            .map_err(|e| failed(PageError::Server(e.to_string())))?;
        let mut request = oauth
            .exchange_code(AuthorizationCode::new(code.to_owned()))
            .set_pkce_verifier(PkceCodeVerifier::new(started.verifier.clone()));
        if let Some(resource) = resource_of(up) {
            request = request.add_extra_param("resource", resource);
        }
        let http = self.http_fn();
        let answer = request.request_async(&http).await.map_err(|e| {
            let why = match token_refusal(e) {
                Refusal::Invalid(why) => why,
                Refusal::Failed(e) => e.to_string(),
            };
            failed(PageError::Server(why))
        })?;
        let set = token_set(&answer, &server.issuer);
        let key = Self::token_key(&flow.principal, &flow.upstream);
        self.keep(&key, &flow.principal, &flow.upstream, set).await.map_err(|_| failed(PageError::Unavailable))?;
        tracing::info!(upstream = %flow.upstream, principal = %flow.principal, "OAuth consent completed");
        self.event(&flow.upstream, "completed");
        let completed = Completed {
            principal: flow.principal.clone(),
            upstream: flow.upstream.clone(),
            session: flow.session.clone(),
            elicitation_id: flow.elicitation.clone(),
        };
        if let Some(o) = self.inner.observer.get() {
            o.completed(&completed);
        }
        Ok(completed)
    }

    /// Every kept authorization (in memory, this process's; with Redis,
    /// every replica's).
    pub async fn list(&self) -> Result<Vec<Kept>, OAuthError> {
        let mut out: Vec<Kept> = match self.inner.vault.is_shared() {
            true => {
                let entries = self.inner.vault.index(INDEX).await?;
                entries.iter().filter_map(|(_, v)| serde_json::from_str(v).ok()).collect()
            }
            false => self.inner.holders.iter().map(|(_, kept)| kept).collect(),
        };
        out.sort_by(|a, b| (&a.principal, &a.upstream).cmp(&(&b.principal, &b.upstream)));
        Ok(out)
    }

    /// Drops `principal`'s tokens for `up` (its logged name), and revokes
    /// the refresh token (or the access token) at the authorization server
    /// when it has a revocation endpoint. `true` when a token was kept.
    pub async fn revoke(&self, up: &UpstreamConfig, principal: &str) -> Result<bool, OAuthError> {
        let key = Self::token_key(principal, &up.name);
        self.inner.tokens.invalidate(&key).await;
        let Some(kept) = self.inner.vault.get::<TokenSet>(&key).await? else {
            self.inner.vault.set_index(INDEX, &index_field(principal, &up.name), None).await;
            return Ok(false);
        };
        self.drop_token(&key, principal, &up.name).await;
        self.event(&up.name, "revoked");
        let server = self.server(&kept.issuer).await?;
        if let Some(endpoint) = &server.revocation_endpoint {
            // RFC 7009 by hand: `oauth2` refuses an `http://` endpoint, which
            // a loopback authorization server has.
            let client = self.client_at(up, &server).await?;
            let (token, hint) = match &kept.refresh_token {
                Some(refresh) => (refresh.as_str(), "refresh_token"),
                None => (kept.access_token.as_str(), "access_token"),
            };
            let mut form = vec![("token", token), ("token_type_hint", hint)];
            let mut request = self.inner.http.post(endpoint).timeout(TOKEN_TIMEOUT);
            match (client.auth, &client.client_secret) {
                (ClientAuth::Basic, Some(secret)) => request = basic_auth(request, &client.client_id, secret),
                (ClientAuth::Post, Some(secret)) => {
                    form.push(("client_id", &client.client_id));
                    form.push(("client_secret", secret));
                }
                _ => form.push(("client_id", &client.client_id)),
            }
            let body = url::form_urlencoded::Serializer::new(String::new()).extend_pairs(&form).finish();
            let response = request
                .header(http::header::CONTENT_TYPE, "application/x-www-form-urlencoded")
                .body(body)
                .send()
                .await
                .map_err(|e| OAuthError::Token(format!("revocation: {}", crate::upstream::report(&e.without_url()))))?;
            if !response.status().is_success() {
                return Err(OAuthError::Token(format!("revocation answered HTTP {}", response.status())));
            }
        }
        Ok(true)
    }

    /// The HTTP client `oauth2` sends through: toolgate's own.
    fn http_fn(&self) -> impl Fn(oauth2::HttpRequest) -> BoxFuture<'static, Result<oauth2::HttpResponse, HttpFailed>> {
        let http = self.inner.http.clone();
        move |request| {
            let http = http.clone();
            Box::pin(async move {
                let (parts, body) = request.into_parts();
                let response = http
                    .request(parts.method, parts.uri.to_string())
                    .headers(parts.headers)
                    .body(body)
                    .timeout(TOKEN_TIMEOUT)
                    .send()
                    .await
                    .map_err(|e| HttpFailed(crate::upstream::report(&e.without_url()).to_string()))?;
                let mut builder = http::Response::builder().status(response.status());
                for (name, value) in response.headers() {
                    builder = builder.header(name, value);
                }
                let bytes = response
                    .bytes()
                    .await
                    .map_err(|e| HttpFailed(crate::upstream::report(&e.without_url()).to_string()))?;
                builder.body(bytes.to_vec()).map_err(|e| HttpFailed(e.to_string()))
            })
        }
    }
}

/// Why the HTTP exchange of a token request failed.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct HttpFailed(String);

/// A token request's failure: the grant no longer works, or it could not be asked.
enum Refusal {
    Invalid(String),
    Failed(OAuthError),
}

type TokenError = RequestTokenError<HttpFailed, oauth2::StandardErrorResponse<BasicErrorResponseType>>;

fn token_refusal(e: TokenError) -> Refusal {
    match e {
        RequestTokenError::ServerResponse(answer) => {
            let code = answer.error().as_ref().to_owned();
            match answer.error() {
                BasicErrorResponseType::InvalidGrant
                | BasicErrorResponseType::InvalidClient
                | BasicErrorResponseType::UnauthorizedClient => Refusal::Invalid(code),
                _ => Refusal::Failed(OAuthError::Token(code)),
            }
        }
        RequestTokenError::Request(e) => Refusal::Failed(OAuthError::Token(format!("no answer: {e}"))),
        RequestTokenError::Parse(_, _) => Refusal::Failed(OAuthError::Token("an answer that is not a token".into())),
        RequestTokenError::Other(why) => Refusal::Failed(OAuthError::Token(why)),
    }
}

fn token_set(answer: &oauth2::basic::BasicTokenResponse, issuer: &str) -> TokenSet {
    let now = now_secs();
    TokenSet {
        access_token: answer.access_token().secret().clone(),
        refresh_token: answer.refresh_token().map(|r| r.secret().clone()),
        expires_at: answer.expires_in().map(|d| now + d.as_secs()),
        issuer: issuer.to_owned(),
        obtained_at: now,
    }
}

type Configured = BasicClient<
    oauth2::EndpointSet,
    oauth2::EndpointNotSet,
    oauth2::EndpointNotSet,
    oauth2::EndpointNotSet,
    oauth2::EndpointSet,
>;

/// An `oauth2` client for `client` at `server`.
fn oauth_client(client: &Registered, server: &Server, redirect: &str) -> Result<Configured, OAuthError> {
    let bad = |what: &str, e: String| OAuthError::Discovery(format!("the server's {what} is not a URL: {e}"));
    let auth = AuthUrl::new(server.authorization_endpoint.clone())
        .map_err(|e| bad("authorization_endpoint", e.to_string()))?;
    let token = TokenUrl::new(server.token_endpoint.clone()).map_err(|e| bad("token_endpoint", e.to_string()))?;
    let redirect = RedirectUrl::new(redirect.to_owned()).map_err(|e| bad("redirect URI", e.to_string()))?;
    let mut oauth = BasicClient::new(ClientId::new(client.client_id.clone()))
        .set_auth_uri(auth)
        .set_token_uri(token)
        .set_redirect_uri(redirect)
        .set_auth_type(match client.auth {
            ClientAuth::Post => AuthType::RequestBody,
            _ => AuthType::BasicAuth,
        });
    if let Some(secret) = &client.client_secret {
        oauth = oauth.set_client_secret(ClientSecret::new(secret.clone()));
    }
    Ok(oauth)
}

/// The RFC 8707 `resource` of `up`: its URL, unless turned off.
fn resource_of(up: &UpstreamConfig) -> Option<String> {
    let wanted = up.oauth.as_ref().is_none_or(|o| o.resource);
    wanted.then(|| up.url.clone()).flatten()
}

/// The scopes asked of `up`: configured, else what its metadata names.
fn scopes_for(up: &UpstreamConfig, named: &[String]) -> Vec<String> {
    match up.oauth.as_ref().map(|o| &o.scopes).filter(|s| !s.is_empty()) {
        Some(configured) => configured.clone(),
        None => named.to_vec(),
    }
}

/// What a browser brings back to `/oauth/callback`.
#[derive(Debug, Default, Deserialize)]
pub struct CallbackQuery {
    pub code: Option<String>,
    pub state: Option<String>,
    pub iss: Option<String>,
    pub error: Option<String>,
}

/// Why a consent page cannot go on: shown to the user, never a secret.
#[derive(Debug, thiserror::Error)]
pub enum PageError {
    #[error("This consent link is unknown, was used already, or has expired. Call the tool again for a new one.")]
    Unknown,
    #[error("This answer was refused: {0}. Call the tool again for a new link.")]
    Tampered(&'static str),
    #[error("The authorization server refused: {0}.")]
    Refused(String),
    #[error("toolgate could not complete the authorization: {0}")]
    Server(String),
    #[error("toolgate's state store is unavailable; try again in a moment.")]
    Unavailable,
}

/// The index of kept authorizations (names only).
const INDEX: &str = "index";

fn index_field(principal: &str, upstream: &str) -> String {
    format!("{principal}\n{upstream}")
}

fn flow_key(opaque: &str) -> String {
    format!("f\n{opaque}")
}

/// `(principal, upstream)` of a token key.
fn split_key(key: &str) -> (&str, &str) {
    let mut parts = key.splitn(3, '\n').skip(1);
    (parts.next().unwrap_or_default(), parts.next().unwrap_or_default())
}

/// `bytes` random bytes as URL-safe text.
fn random_text(bytes: usize) -> String {
    let mut buf = vec![0u8; bytes];
    aws_lc_rs::rand::fill(&mut buf).unwrap_or_default();
    URL_SAFE_NO_PAD.encode(buf)
}

fn constant_eq(a: &str, b: &str) -> bool {
    use subtle::ConstantTimeEq as _;
    a.len() == b.len() && bool::from(a.as_bytes().ct_eq(b.as_bytes()))
}

/// How an OAuth upstream's catalog connection gets its token.
enum CatalogKind {
    /// Client credentials, kept until due.
    Client(tokio::sync::Mutex<Option<TokenSet>>),
    /// An authorized client's.
    User,
}

/// The per-request credential of an OAuth upstream's catalog connection.
struct Catalog {
    oauth: OAuth,
    up: Arc<UpstreamConfig>,
    kind: CatalogKind,
}

impl Catalog {
    async fn current(&self) -> Result<HeaderMap, Cause> {
        let token = match &self.kind {
            CatalogKind::Client(kept) => {
                let mut kept = kept.lock().await;
                match kept.as_ref().filter(|t| !t.is_due()) {
                    Some(token) => token.access_token.clone(),
                    None => {
                        let fresh = self.oauth.client_token(&self.up).await.map_err(|e| Cause::msg(e.to_string()))?;
                        let token = fresh.access_token.clone();
                        *kept = Some(fresh);
                        token
                    }
                }
            }
            CatalogKind::User => match self.oauth.any_holder(&self.up).await.map_err(|e| Cause::msg(e.to_string()))? {
                Some(token) => token.access_token.clone(),
                None => {
                    return Err(Cause::msg(format!(
                        "no client has authorized toolgate for `{}` yet (`toolgate oauth login` makes a consent link)",
                        self.up.name
                    )));
                }
            },
        };
        bearer(&token)
    }
}

impl CredentialSource for Catalog {
    fn headers(&self) -> BoxFuture<'_, Result<HeaderMap, Cause>> {
        Box::pin(self.current())
    }
}

/// The per-request credential of one principal's connection to an OAuth
/// upstream: its access token, refreshed when due.
struct Source {
    oauth: OAuth,
    up: Arc<UpstreamConfig>,
    principal: String,
}

impl Source {
    async fn current(&self) -> Result<HeaderMap, Cause> {
        let token = self.oauth.usable(&self.up, &self.principal).await.map_err(|e| Cause::msg(e.to_string()))?;
        let Some(token) = token else {
            return Err(Cause::msg(format!(
                "this client has not authorized toolgate for upstream `{}`: call one of its tools for a consent link",
                self.up.name
            )));
        };
        bearer(&token.access_token)
    }
}

impl CredentialSource for Source {
    fn headers(&self) -> BoxFuture<'_, Result<HeaderMap, Cause>> {
        Box::pin(self.current())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_keys_split_back_into_principal_and_upstream() {
        let key = OAuth::token_key("jwt:alice", "github");
        assert_eq!(split_key(&key), ("jwt:alice", "github"));
    }

    #[test]
    fn a_token_is_due_a_minute_before_it_expires() {
        let mut set = TokenSet {
            access_token: "a".into(),
            refresh_token: None,
            expires_at: Some(now_secs() + 3600),
            issuer: "i".into(),
            obtained_at: now_secs(),
        };
        assert!(!set.is_due());
        set.expires_at = Some(now_secs() + 30);
        assert!(set.is_due() && !set.is_expired());
        set.expires_at = None;
        assert!(!set.is_due(), "a token without an expiry is used until the upstream refuses it");
    }

    fn flow(expires_at: u64, started: bool) -> Flow {
        Flow {
            principal: "alice".into(),
            upstream: "up".into(),
            session: None,
            elicitation: "e".into(),
            expires_at,
            started: started.then(|| Started {
                nonce: "n".into(),
                browser: "b".into(),
                verifier: "v".into(),
                issuer: "http://127.0.0.1:1".into(),
            }),
        }
    }

    #[tokio::test]
    async fn expired_tampered_foreign_and_used_flows_are_refused_before_any_request() {
        let oauth =
            OAuth::new(&Config::default(), reqwest::Client::new(), None, "127.0.0.1:1".parse().unwrap()).unwrap();
        let vault = &oauth.inner.vault;
        let ttl = Duration::from_secs(60);
        let past = now_secs() - 1;
        vault.put(&flow_key("old"), &flow(past, false), ttl).await.unwrap();
        assert!(matches!(oauth.start("old", &[]).await, Err(PageError::Unknown)), "an expired link");
        assert!(matches!(oauth.start("nope", &[]).await, Err(PageError::Unknown)), "a made-up link");
        let back =
            |state: &str| CallbackQuery { state: Some(state.into()), code: Some("c".into()), ..Default::default() };
        vault.put(&flow_key("late"), &flow(past, true), ttl).await.unwrap();
        assert!(matches!(oauth.callback(&back("late.n"), Some("b"), &[]).await, Err(PageError::Unknown)), "expired");
        assert!(vault.get::<Flow>(&flow_key("late")).await.unwrap().is_none(), "an expired flow is used up");
        let soon = now_secs() + 60;
        vault.put(&flow_key("f"), &flow(soon, true), ttl).await.unwrap();
        let tampered = oauth.callback(&back("f.x"), Some("b"), &[]).await;
        assert!(matches!(tampered, Err(PageError::Tampered(_))), "another nonce");
        let foreign = oauth.callback(&back("f.n"), Some("other"), &[]).await;
        assert!(matches!(foreign, Err(PageError::Tampered(_))), "another browser");
        assert!(matches!(oauth.callback(&back("f.n"), None, &[]).await, Err(PageError::Tampered(_))), "no cookie");
        assert!(vault.get::<Flow>(&flow_key("f")).await.unwrap().is_some(), "refusals leave the flow to its browser");
        assert!(matches!(oauth.callback(&back("no-dot"), Some("b"), &[]).await, Err(PageError::Tampered(_))));
    }

    #[test]
    fn random_texts_differ_and_compare_in_constant_time() {
        let (a, b) = (random_text(24), random_text(24));
        assert_ne!(a, b);
        assert_eq!(a.len(), 32);
        assert!(constant_eq(&a, &a.clone()));
        assert!(!constant_eq(&a, &b));
        assert!(!constant_eq(&a, &a[..10]));
    }
}
