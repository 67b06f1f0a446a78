//! Upstream identity: what a call presents upstream on a client's behalf.
//!
//! `[identity]` (toolgate as the issuer of signed identity assertions),
//! `[upstream.identity]` (what one upstream is shown: a signed assertion, or a
//! token from the client's identity provider), and the checks of both with
//! the per-client `upstream_headers`/`upstream_env` of `[[auth.clients]]`.
//! The model only describes; [`crate::identity`] does the signing and the
//! exchanges.

use std::path::PathBuf;
use std::time::Duration;

use indexmap::IndexMap;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::path::TomlPath;
use super::validate::Problem;
use super::{Config, Secret};

/// `[identity]`: toolgate as an issuer of signed identity assertions (`[upstream.identity] mode =
/// "assertion"`). The public keys are served as a JWK Set at `/.well-known/jwks.json` on the main
/// listener, with no credential.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct IdentityConfig {
    /// The `iss` of every assertion, usually toolgate's public URL. Required once an upstream uses
    /// `mode = "assertion"`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub issuer: Option<String>,
    /// PKCS#8 PEM private keys (P-256 for ES256, or Ed25519 for EdDSA). The first signs; all are
    /// published, so tokens signed by a previous key stay valid until they expire. Relative paths
    /// are relative to the config file's directory.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("default" = []))]
    pub signing_keys: Vec<PathBuf>,
    /// How long an assertion is valid (`exp - iat`): at most 5 minutes. toolgate reuses one per
    /// client and upstream until a fifth of this is left.
    #[serde(with = "humantime_serde")]
    #[schemars(with = "super::schema::DurationText")]
    pub lifetime: Duration,
    /// The `sub` of the assertions toolgate's own connection to an upstream presents (the one that
    /// lists its tools, resources and prompts, for no client).
    pub service_subject: String,
    /// Most exchanged tokens kept in memory (per subject, upstream and scope); the oldest go first.
    /// At least `1`.
    #[schemars(range(min = 1))]
    pub cache_entries: u64,
}

/// Longest assertion lifetime the issue of assertions allows.
pub const MAX_ASSERTION_LIFETIME: Duration = Duration::from_secs(300);

impl Default for IdentityConfig {
    fn default() -> Self {
        Self {
            issuer: None,
            signing_keys: Vec::new(),
            lifetime: MAX_ASSERTION_LIFETIME,
            service_subject: "toolgate".into(),
            cache_entries: 10_000,
        }
    }
}

/// `[upstream.identity]`: what this HTTP upstream is shown of the client a call is made for. Each
/// authenticated client then gets upstream sessions of its own (whatever `sharing` says); the
/// upstream's own connection (its tool list) keeps `headers`, or for `assertion` presents
/// `[identity] service_subject`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UpstreamIdentity {
    /// `assertion`: a short-lived JWT toolgate signs (`[identity]`); `token_exchange`: the client's
    /// access token exchanged at `token_endpoint` (RFC 8693); `jwt_bearer`: the client's access
    /// token presented as an assertion grant (RFC 7523). The last two need JWT clients.
    pub mode: IdentityMode,
    /// The request header that carries the token. Unset: `Authorization: Bearer <token>`; another
    /// header carries the bare token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub header: Option<String>,
    /// `assertion`: the `aud` (default: the upstream's URL). `token_exchange`/`jwt_bearer`: the
    /// `audience` requested.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audience: Option<String>,
    /// `assertion`: extra claims in every assertion for this upstream (a client's own
    /// `identity_claims` win).
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    #[schemars(extend("default" = {}))]
    pub claims: IndexMap<String, Value>,
    /// `token_exchange`/`jwt_bearer`: the identity provider's token endpoint (`https://`, or
    /// `http://` on loopback).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_endpoint: Option<String>,
    /// `token_exchange`/`jwt_bearer`: toolgate's client id at the identity provider.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_id: Option<String>,
    /// `token_exchange`/`jwt_bearer`: toolgate's client secret, usually `"${VAR}"` (not with
    /// `private_key_jwt`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_secret: Option<Secret>,
    /// How toolgate authenticates to the token endpoint: `client_secret_basic` (HTTP Basic),
    /// `client_secret_post` (in the form) or `private_key_jwt` (a JWT signed with `[identity]`'s
    /// first signing key: no secret).
    #[serde(default)]
    pub client_auth: ClientAuth,
    /// `token_exchange`/`jwt_bearer`: the `resource` requested (RFC 8707), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource: Option<String>,
    /// `token_exchange`/`jwt_bearer`: the `scope` requested, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    /// `token_exchange`/`jwt_bearer`: more form fields of the token request, for a provider that
    /// needs some beyond the standard ones (e.g. Entra ID's `requested_token_use =
    /// "on_behalf_of"`). They cannot replace the standard ones.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    #[schemars(extend("default" = {}))]
    pub parameters: IndexMap<String, String>,
}

/// How an upstream learns who a call is for (`[upstream.identity] mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum IdentityMode {
    /// A JWT signed by toolgate.
    Assertion,
    /// RFC 8693 token exchange of the client's access token.
    TokenExchange,
    /// RFC 7523 JWT bearer grant with the client's access token.
    JwtBearer,
}

/// How toolgate authenticates to a token endpoint.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ClientAuth {
    /// HTTP Basic with the client id and secret.
    #[default]
    ClientSecretBasic,
    /// `client_id` and `client_secret` in the form.
    ClientSecretPost,
    /// A JWT signed with `[identity]`'s first signing key (RFC 7523 client authentication), whose
    /// public key the provider knows from toolgate's `/.well-known/jwks.json`; no secret.
    PrivateKeyJwt,
}

/// The form fields of a token request that toolgate sets itself.
const STANDARD_PARAMETERS: [&str; 12] = [
    "grant_type",
    "subject_token",
    "subject_token_type",
    "requested_token_type",
    "assertion",
    "audience",
    "resource",
    "scope",
    "client_id",
    "client_secret",
    "client_assertion",
    "client_assertion_type",
];

impl UpstreamIdentity {
    /// Whether the client's own access token is traded for the upstream's.
    pub fn exchanges(&self) -> bool {
        self.mode != IdentityMode::Assertion
    }
}

/// Every problem of `[identity]`, `[upstream.identity]` and the clients'
/// per-upstream credentials, with its TOML path.
pub(super) fn check(config: &Config) -> Vec<Problem> {
    let mut out = Vec::new();
    let mut push = |path: TomlPath, message: String| out.push(Problem { path: path.to_string(), message });
    let root = TomlPath::root().key("identity");
    let identity = &config.identity;
    if identity.lifetime.is_zero() || identity.lifetime > MAX_ASSERTION_LIFETIME {
        push(root.key("lifetime"), "must be more than 0s and at most 5m".into());
    }
    if identity.cache_entries == 0 {
        push(root.key("cache_entries"), "must be at least 1".into());
    }
    if identity.service_subject.trim().is_empty() {
        push(root.key("service_subject"), "must not be empty".into());
    }
    for (i, key) in identity.signing_keys.iter().enumerate() {
        if let Err(e) = crate::identity::SigningKey::load(key) {
            push(root.key("signing_keys").index(i), e.to_string());
        }
    }
    let jwt_clients = config.auth.jwt.is_some();
    for (i, upstream) in config.upstreams.iter().enumerate() {
        let Some(id) = &upstream.identity else { continue };
        let path = TomlPath::root().key("upstream").index(i).key("identity");
        if upstream.url.is_none() {
            push(path.clone(), "applies only to HTTP upstreams (`url`)".into());
        }
        if !config.auth.is_enabled() {
            push(
                path.clone(),
                "needs [auth]: an identity is presented for an authenticated client, and without [auth] every \
                 request is the same anonymous one"
                    .into(),
            );
        }
        if let Some(header) = &id.header
            && http::HeaderName::from_bytes(header.as_bytes()).is_err()
        {
            push(path.key("header"), format!("`{header}` is not a valid HTTP header name"));
        }
        match id.mode {
            IdentityMode::Assertion => {
                if identity.issuer.as_deref().is_none_or(|i| i.trim().is_empty()) {
                    push(root.key("issuer"), format!("is needed: upstream[{i}] presents signed assertions"));
                }
                if identity.signing_keys.is_empty() {
                    push(root.key("signing_keys"), format!("needs a key: upstream[{i}] presents signed assertions"));
                }
                for key in ["token_endpoint", "client_id", "client_secret", "resource", "scope", "parameters"] {
                    let set = match key {
                        "token_endpoint" => id.token_endpoint.is_some(),
                        "client_id" => id.client_id.is_some(),
                        "client_secret" => id.client_secret.is_some(),
                        "resource" => id.resource.is_some(),
                        "scope" => id.scope.is_some(),
                        _ => !id.parameters.is_empty(),
                    };
                    if set {
                        push(path.key(key), "applies only to `token_exchange` and `jwt_bearer`".into());
                    }
                }
            }
            IdentityMode::TokenExchange | IdentityMode::JwtBearer => {
                if !jwt_clients {
                    push(
                        path.key("mode"),
                        "trades the client's own access token, which only JWT clients have: set [auth.jwt]".into(),
                    );
                }
                match &id.token_endpoint {
                    None => push(path.key("token_endpoint"), "is needed for this mode".into()),
                    Some(url) => {
                        if let Err(e) = super::auth::check_public_url(url, false) {
                            push(path.key("token_endpoint"), e);
                        }
                    }
                }
                if id.client_id.as_deref().is_none_or(str::is_empty) {
                    push(path.key("client_id"), "is needed for this mode".into());
                }
                let by_key = id.client_auth == ClientAuth::PrivateKeyJwt;
                if by_key && id.client_secret.is_some() {
                    let why = "is not used with `client_auth = \"private_key_jwt\"`: remove it";
                    push(path.key("client_secret"), why.into());
                }
                if by_key && identity.signing_keys.is_empty() {
                    let why = format!("needs a key: upstream[{i}] authenticates with `private_key_jwt`");
                    push(root.key("signing_keys"), why);
                }
                if !by_key && id.client_secret.is_none() {
                    push(path.key("client_secret"), "is needed for this mode".into());
                }
                if id.audience.is_none() && id.resource.is_none() {
                    push(path.clone(), "needs `audience` or `resource`: the token is asked for one upstream".into());
                }
                if !id.claims.is_empty() {
                    push(path.key("claims"), "applies only to `assertion`".into());
                }
                for name in id.parameters.keys().filter(|n| STANDARD_PARAMETERS.contains(&n.as_str())) {
                    push(path.key("parameters").key(name), "is set by toolgate itself: remove it".into());
                }
            }
        }
    }
    for (i, client) in config.auth.clients.iter().enumerate() {
        let path = TomlPath::root().key("auth").key("clients").index(i);
        for (upstream, headers) in &client.upstream_headers {
            let at = path.key("upstream_headers").key(upstream);
            match config.upstreams.iter().find(|u| &u.name == upstream) {
                None => push(at.clone(), format!("`{upstream}` is not a configured upstream")),
                Some(u) if u.url.is_none() => push(
                    at.clone(),
                    format!("`{upstream}` runs a `command`: give its children variables with `upstream_env`"),
                ),
                Some(_) => {}
            }
            for (name, value) in headers {
                if http::HeaderName::from_bytes(name.as_bytes()).is_err() {
                    push(at.key(name), "invalid HTTP header name".into());
                } else if http::HeaderValue::from_str(value.expose()).is_err() {
                    // The value is never echoed: it is a credential.
                    push(at.key(name), "invalid HTTP header value (control characters are not allowed)".into());
                }
            }
        }
        for (upstream, env) in &client.upstream_env {
            let at = path.key("upstream_env").key(upstream);
            match config.upstreams.iter().find(|u| &u.name == upstream) {
                None => push(at.clone(), format!("`{upstream}` is not a configured upstream")),
                Some(u) if u.command.is_none() => push(
                    at.clone(),
                    format!("`{upstream}` is an HTTP upstream (`url`): give it headers with `upstream_headers`"),
                ),
                Some(_) => {}
            }
            for (name, value) in env {
                if name.is_empty() || name.contains(['=', '\0']) {
                    push(at.key(name), "invalid environment variable name (empty, or contains `=` or NUL)".into());
                } else if value.expose().contains('\0') {
                    push(at.key(name), "the value contains a NUL character".into());
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests;
