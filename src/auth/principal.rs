//! [`Principal`]: who made a request, and the [`ClientPolicy`] that applies.
//!
//! A principal is what the HTTP layer hands on to the engine once a request is
//! authenticated: its identity (for logs, metrics, session ownership and rate
//! buckets) and the policy of the `[[auth.clients]]` entry that covers it.

use std::fmt;
use std::num::NonZeroU32;
use std::sync::Arc;

use super::policy::{PolicyError, ToolPolicy};
use crate::config::{ClientConfig, ConcernValues};

/// How a principal proved who it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PrincipalKind {
    /// Authentication is off (no credentials configured, or `toolgate stdio`).
    Anonymous,
    /// An `[[auth.clients]]` API key.
    ApiKey,
    /// A JWT access token; the name is the value of `client_claim`.
    Jwt,
}

/// A principal's identity. Two requests belong to the same client exactly
/// when their ids are equal: the kind is part of it, so a JWT whose subject
/// is `alice` is not the API-key client `alice`.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct PrincipalId {
    kind: PrincipalKind,
    name: Arc<str>,
}

impl PrincipalId {
    /// An identity of `kind` named `name`.
    pub fn new(kind: PrincipalKind, name: impl Into<Arc<str>>) -> Self {
        Self { kind, name: name.into() }
    }

    /// How it was authenticated.
    pub fn kind(&self) -> PrincipalKind {
        self.kind
    }

    /// The client name (API key entry, or JWT claim value; `anonymous`).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The client name, shared.
    pub fn name_arc(&self) -> Arc<str> {
        self.name.clone()
    }

    /// The authenticated client a log names (what `Display` writes):
    /// `jwt:<claim value>` for a JWT client, else an API-key client's name.
    /// What an operator types to name a client (`toolgate oauth login`).
    pub fn from_logged(name: &str) -> Self {
        match name.strip_prefix("jwt:") {
            Some(claim) => Self::new(PrincipalKind::Jwt, claim),
            None => Self::new(PrincipalKind::ApiKey, name),
        }
    }
}

/// For logs: `alice`, `jwt:user-123`, `anonymous`.
impl fmt::Display for PrincipalId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.kind {
            PrincipalKind::Jwt => write!(f, "jwt:{}", self.name),
            PrincipalKind::ApiKey | PrincipalKind::Anonymous => f.write_str(&self.name),
        }
    }
}

impl fmt::Debug for PrincipalId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PrincipalId({self})")
    }
}

/// What one `[[auth.clients]]` entry allows (or everything, when no entry
/// applies).
#[derive(Debug)]
pub struct ClientPolicy {
    /// The entry it comes from (`default` for JWT clients without their own),
    /// or `None` for the unrestricted policy.
    pub entry: Option<String>,
    /// Which upstreams and tools the client may see and call.
    pub tools: ToolPolicy,
    /// Most sessions at once; `None`: no per-client cap.
    pub max_sessions: Option<NonZeroU32>,
    /// Token bucket over calls and description fetches; `None`: no limit.
    pub calls_per_minute: Option<NonZeroU32>,
    /// The client's stored concern configuration (until it sends its own).
    pub concerns: ConcernValues,
    /// The client's own per-tool budgets (`limits`), on top of the gateway's.
    pub limits: crate::budgets::Rules,
    /// Per-upstream credentials of the client (`upstream_headers`, `upstream_env`).
    pub upstream: UpstreamCredentials,
    /// Extra claims of the identity assertions made for the client.
    pub identity_claims: indexmap::IndexMap<String, serde_json::Value>,
    /// The [`Authenticator`](super::Authenticator) that made it (0: none).
    /// A principal whose policy is of an older one than the gateway's
    /// current one is resolved again before it is used (a reload changed
    /// the clients after the request was admitted).
    pub generation: u64,
}

impl ClientPolicy {
    /// Everything allowed, no limits.
    pub fn unrestricted() -> Self {
        Self {
            entry: None,
            tools: ToolPolicy::allow_all(),
            max_sessions: None,
            calls_per_minute: None,
            concerns: ConcernValues::new(),
            limits: crate::budgets::Rules::default(),
            upstream: UpstreamCredentials::default(),
            identity_claims: indexmap::IndexMap::new(),
            generation: 0,
        }
    }

    /// The policy of one `[[auth.clients]]` entry. Zero limits (refused by
    /// validation) are taken as no limit.
    pub fn from_config(client: &ClientConfig) -> Result<Self, PolicyError> {
        Ok(Self {
            entry: Some(client.name.clone()),
            tools: ToolPolicy::new(client.upstreams.as_deref(), &client.tools, &client.deny_tools)?,
            max_sessions: client.max_sessions.and_then(NonZeroU32::new),
            calls_per_minute: client.calls_per_minute.and_then(NonZeroU32::new),
            concerns: client.concerns.clone(),
            limits: crate::budgets::Rules::client(&client.limits),
            upstream: UpstreamCredentials::of(client),
            identity_claims: client.identity_claims.clone(),
            generation: 0,
        })
    }

    /// This policy, as made by the authenticator of `generation`.
    pub fn of_generation(mut self, generation: u64) -> Self {
        self.generation = generation;
        self
    }
}

/// A client's own credentials toward upstreams, by upstream name. `Debug`
/// shows which upstreams, never a value.
#[derive(Default, PartialEq)]
pub struct UpstreamCredentials {
    /// Headers for HTTP upstreams (sensitive values).
    pub headers: indexmap::IndexMap<String, http::HeaderMap>,
    /// Environment variables for stdio upstreams.
    pub env: indexmap::IndexMap<String, indexmap::IndexMap<String, String>>,
}

impl UpstreamCredentials {
    /// The credentials of `client` (validation checked the header names and values).
    fn of(client: &ClientConfig) -> Self {
        let headers = client
            .upstream_headers
            .iter()
            .map(|(upstream, headers)| {
                let map = headers
                    .iter()
                    .filter_map(|(name, value)| {
                        let name = http::HeaderName::from_bytes(name.as_bytes()).ok()?;
                        let mut value = http::HeaderValue::from_str(value.expose()).ok()?;
                        value.set_sensitive(true);
                        Some((name, value))
                    })
                    .collect();
                (upstream.clone(), map)
            })
            .collect();
        let env = client
            .upstream_env
            .iter()
            .map(|(upstream, env)| {
                (upstream.clone(), env.iter().map(|(k, v)| (k.clone(), v.expose().to_owned())).collect())
            })
            .collect();
        Self { headers, env }
    }

    /// Whether the client has credentials of its own for `upstream`.
    pub fn has(&self, upstream: &str) -> bool {
        (!self.headers.is_empty() && self.headers.contains_key(upstream))
            || (!self.env.is_empty() && self.env.contains_key(upstream))
    }
}

impl fmt::Debug for UpstreamCredentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("UpstreamCredentials")
            .field("headers", &self.headers.keys().collect::<Vec<_>>())
            .field("env", &self.env.keys().collect::<Vec<_>>())
            .finish()
    }
}

/// The access token a JWT client authenticated with: what a token exchange
/// trades for an upstream's. `Debug` never shows it.
pub struct Bearer {
    token: Box<str>,
    subject: Arc<str>,
    /// Unix seconds.
    expires_at: u64,
}

impl Bearer {
    /// A verified token, its `sub` and its `exp`.
    pub fn new(token: &str, subject: Arc<str>, expires_at: u64) -> Self {
        Self { token: token.into(), subject, expires_at }
    }

    /// The token itself. Never log it.
    pub fn token(&self) -> &str {
        &self.token
    }

    /// Its `sub`.
    pub fn subject(&self) -> &Arc<str> {
        &self.subject
    }

    /// How long it stays valid.
    pub fn remaining(&self) -> std::time::Duration {
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
        std::time::Duration::from_secs(self.expires_at.saturating_sub(now))
    }
}

impl fmt::Debug for Bearer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Bearer(sub={}, <redacted>)", self.subject)
    }
}

/// An authenticated client (or the anonymous one) and its policy. Cheap to
/// clone. The only credential it carries is a JWT client's access token
/// ([`Bearer`], kept for token exchange), which `Debug` never shows.
#[derive(Debug, Clone)]
pub struct Principal {
    id: PrincipalId,
    policy: Arc<ClientPolicy>,
    bearer: Option<Arc<Bearer>>,
}

/// The name of the anonymous principal.
pub const ANONYMOUS: &str = "anonymous";

impl Principal {
    /// A principal with `id` under `policy`.
    pub fn new(id: PrincipalId, policy: Arc<ClientPolicy>) -> Self {
        Self { id, policy, bearer: None }
    }

    /// The same client (and access token) under `policy` (a reload changed it).
    pub fn with_policy(&self, policy: Arc<ClientPolicy>) -> Self {
        Self { id: self.id.clone(), policy, bearer: self.bearer.clone() }
    }

    /// This principal, with the access token it authenticated with.
    pub fn with_bearer(mut self, bearer: Bearer) -> Self {
        self.bearer = Some(Arc::new(bearer));
        self
    }

    /// The access token a JWT client authenticated with.
    pub fn bearer(&self) -> Option<&Arc<Bearer>> {
        self.bearer.as_ref()
    }

    /// The principal used when authentication is off: no restriction.
    /// Built once: every request without `[auth]` (each sessionless one
    /// included) is this client.
    pub fn anonymous() -> Self {
        static ANONYMOUS_PRINCIPAL: std::sync::LazyLock<Principal> = std::sync::LazyLock::new(|| {
            Principal::new(
                PrincipalId::new(PrincipalKind::Anonymous, ANONYMOUS),
                Arc::new(ClientPolicy::unrestricted()),
            )
        });
        ANONYMOUS_PRINCIPAL.clone()
    }

    /// Its identity (session ownership, rate buckets).
    pub fn id(&self) -> &PrincipalId {
        &self.id
    }

    /// Its name, for logs and metrics.
    pub fn name(&self) -> &str {
        self.id.name()
    }

    /// How it was authenticated.
    pub fn kind(&self) -> PrincipalKind {
        self.id.kind()
    }

    /// The policy that applies to it.
    pub fn policy(&self) -> &ClientPolicy {
        &self.policy
    }

    /// The policy, shared: its address identifies it (a reload makes new
    /// ones).
    pub fn policy_arc(&self) -> &Arc<ClientPolicy> {
        &self.policy
    }

    /// Shortcut for `policy().tools`.
    pub fn tools(&self) -> &ToolPolicy {
        &self.policy.tools
    }
}
