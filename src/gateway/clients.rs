//! The gateway's clients under `[auth]`: who may connect ([`Clients::admission`],
//! the engine's admission hook), the Protected Resource Metadata served with
//! `[auth.jwt]`, and each client's `max_sessions`.
//!
//! Without credentials configured there is no admission hook: every HTTP
//! client is the anonymous principal, unrestricted, as on stdio.

use std::num::NonZeroU32;
use std::sync::Arc;

use arc_swap::ArcSwap;
use axum::Router;
use serde_json::json;

use super::admission::{Admission, metadata_routes};
use crate::auth::{Authenticator, BuildError, Principal, RetryAfter, SessionGuard, SessionLimiter};
use crate::budgets::CallRate;
use crate::config::Config;
use crate::jsonrpc::{ErrorObject, codes};
use crate::server::http::Admit;

/// Authentication and per-client session counts.
pub struct Clients {
    /// `None` when no credentials are configured. A reload that changes
    /// `[[auth.clients]]` swaps in a new one.
    authenticator: Option<Arc<ArcSwap<Authenticator>>>,
    sessions: SessionLimiter,
    /// Each client's `calls_per_minute` (in Redis once shared).
    calls: Arc<CallRate>,
    /// The metadata routes (with `[auth.jwt]`).
    metadata: Option<Router>,
}

impl Clients {
    /// The clients of `config.auth` (none when it configures no credentials).
    pub fn new(config: &Config) -> Result<Self, BuildError> {
        if !config.auth.is_enabled() {
            return Ok(Self::anonymous());
        }
        let authenticator = Arc::new(ArcSwap::from_pointee(Authenticator::new(&config.auth)?));
        let metadata = config.auth.jwt.as_ref().map(|jwt| metadata_routes(jwt, &config.server.path));
        Ok(Self { authenticator: Some(authenticator), metadata, ..Self::anonymous() })
    }

    /// Everyone is the anonymous principal.
    pub fn anonymous() -> Self {
        Self { authenticator: None, sessions: SessionLimiter::new(), calls: Arc::default(), metadata: None }
    }

    /// Whether requests need credentials.
    pub fn is_enabled(&self) -> bool {
        self.authenticator.is_some()
    }

    /// The authenticator, when credentials are configured.
    pub fn authenticator(&self) -> Option<Arc<Authenticator>> {
        self.authenticator.as_ref().map(|a| a.load_full())
    }

    /// `principal` as the clients in effect have it: itself when the current
    /// authenticator resolved it, else resolved again (a reload replaced the
    /// clients after its request was admitted, e.g. while its body was
    /// still arriving, or a legacy stream opened before the reload). `Err`
    /// when its client is gone.
    pub fn current(&self, principal: &Principal) -> Result<Principal, ErrorObject> {
        let Some(authenticator) = &self.authenticator else { return Ok(principal.clone()) };
        let authenticator = authenticator.load();
        if authenticator.resolved(principal) {
            return Ok(principal.clone());
        }
        authenticator.refreshed(principal).ok_or_else(|| revoked(principal))
    }

    /// Whether `principal` was resolved by the authenticator in effect (no
    /// need for [`Clients::current`]).
    pub fn is_current(&self, principal: &Principal) -> bool {
        self.authenticator.as_ref().is_none_or(|a| a.load().resolved(principal))
    }

    /// Puts `authenticator` in effect for the requests that follow (a reload
    /// changed `[[auth.clients]]`). Without credentials configured at start
    /// there is none to replace (the reload keeps `[auth]` then).
    pub fn replace_authenticator(&self, authenticator: Arc<Authenticator>) {
        if let Some(current) = &self.authenticator {
            current.store(authenticator);
        }
    }

    /// The admission hook for the HTTP transports (`None`: everyone is
    /// anonymous).
    /// `subjects` keeps the access tokens of JWT clients, for the token
    /// exchanges made for them.
    pub fn admission(&self, subjects: Option<crate::identity::Subjects>) -> Option<Arc<dyn Admit>> {
        let authenticator = self.authenticator.clone()?;
        Some(Arc::new(Admission::new(authenticator).keeping_tokens(subjects)))
    }

    /// The RFC 9728 metadata routes, with `[auth.jwt]`.
    pub fn metadata_routes(&self) -> Option<Router> {
        self.metadata.clone()
    }

    /// Each client's `calls_per_minute` (for the policy layer).
    pub fn calls(&self) -> &Arc<CallRate> {
        &self.calls
    }

    /// Takes `n` calls from `principal`'s `calls_per_minute`, for a request
    /// that makes `n` upstream calls, or refuses it with
    /// [`codes::RATE_LIMITED`].
    pub async fn take_calls(&self, principal: &Principal, n: usize) -> Result<(), ErrorObject> {
        let n = NonZeroU32::new(u32::try_from(n).unwrap_or(u32::MAX)).unwrap_or(NonZeroU32::MIN);
        self.calls.take(principal, n).await.map_err(|wait| {
            tracing::info!(client = %principal.id(), retry_after = ?wait.0, calls = n, "request refused: calls_per_minute");
            rate_limited(principal, wait)
        })
    }

    /// Counts a new session of `principal` against its `max_sessions`, or
    /// refuses it with [`codes::LIMIT_EXCEEDED`] (which the engine answers
    /// with HTTP 429). The guard holds the slot until the session ends.
    pub fn open_session(&self, principal: &Principal) -> Result<Option<SessionGuard>, ErrorObject> {
        if principal.policy().max_sessions.is_none() {
            return Ok(None);
        }
        self.sessions.acquire(principal).map(Some).map_err(|refused| {
            tracing::info!(client = %principal.id(), limit = refused.limit, "new session refused: the client's max_sessions");
            too_many_sessions(principal, refused.limit)
        })
    }
}

/// The refusal of a new session over the client's `max_sessions`.
pub(super) fn too_many_sessions(principal: &Principal, limit: u32) -> ErrorObject {
    ErrorObject::new(
        codes::LIMIT_EXCEEDED,
        format!(
            "Too many sessions: client `{}` may hold at most {limit} at once; end one (HTTP DELETE) or let one \
             expire first",
            principal.name()
        ),
    )
    .with_data(json!({"maxSessions": limit}))
}

/// The refusal of a call over the limit: what the limit is and when to retry.
pub(super) fn rate_limited(principal: &Principal, wait: RetryAfter) -> ErrorObject {
    let limit = principal.policy().calls_per_minute.map_or(0, |n| n.get());
    let seconds = wait.header_secs();
    ErrorObject::new(
        codes::RATE_LIMITED,
        format!(
            "Rate limit exceeded: client `{}` may make {limit} tool calls and description fetches per minute; \
             retry in {seconds} s",
            principal.name()
        ),
    )
    .with_data(json!({
        "retryAfterSeconds": seconds,
        "retryAfterMs": u64::try_from(wait.0.as_millis()).unwrap_or(u64::MAX),
        "callsPerMinute": limit,
    }))
}

/// The refusal of a request whose client a reload removed after the request
/// was admitted (its credentials are no longer accepted).
pub(super) fn revoked(principal: &Principal) -> ErrorObject {
    tracing::info!(client = %principal.id(), "request refused: its client was removed from [auth] by a reload");
    ErrorObject::new(
        codes::SERVER_ERROR,
        "Unauthorized: these credentials are no longer accepted (toolgate's clients were reconfigured)",
    )
}
