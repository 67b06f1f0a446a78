//! OAuth toward protected upstreams: `[oauth]` (toolgate's public URL, where
//! users' browsers come back) and an upstream's `auth = "oauth"` with its
//! optional `[upstream.oauth]` client settings. The model only describes;
//! [`crate::oauth`] runs the flows and keeps the tokens.

use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::path::TomlPath;
use super::validate::Problem;
use super::{Config, Secret};

/// `[oauth]`: toolgate as an OAuth client of protected upstreams (`auth = "oauth"`), asking each
/// user for consent at the first call that needs it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct OAuthConfig {
    /// toolgate's public base URL as users' browsers reach it (`https://`, or `http://` on a
    /// loopback host), e.g. `"https://toolgate.example.com"`. The consent link is
    /// `<public_url>/oauth/start/<opaque>`, the redirect URI registered at authorization servers is
    /// `<public_url>/oauth/callback`, and the Client ID Metadata Document is served at
    /// `<public_url>/oauth/client.json`. Unset: `http://<listen address>`, allowed only when
    /// `[server] listen` is a loopback address. Its host must pass `allowed_hosts`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub public_url: Option<String>,
    /// How long a consent link works, from the call that asked for it to the return to
    /// `/oauth/callback`. Each link works once. Between 1 minute and 1 hour.
    #[serde(with = "humantime_serde")]
    #[schemars(with = "super::schema::DurationText")]
    pub flow_lifetime: Duration,
    /// The `client_name` toolgate registers with (Dynamic Client Registration, the Client ID
    /// Metadata Document): what the authorization server shows users on its consent page.
    pub client_name: String,
    /// Most users' tokens kept in memory (each user and upstream is one). With `[state]
    /// redis_url` the tokens also live in Redis, sealed with `[state] encryption_keys`. At least 1.
    #[schemars(range(min = 1))]
    pub cache_entries: u64,
}

impl Default for OAuthConfig {
    fn default() -> Self {
        Self {
            public_url: None,
            flow_lifetime: Duration::from_secs(600),
            client_name: "toolgate".into(),
            cache_entries: 10_000,
        }
    }
}

/// How toolgate authenticates to an upstream beyond `headers` (`[[upstream]] auth`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum UpstreamAuth {
    /// Only `headers` (and clients' `upstream_headers`, `[upstream.identity]`).
    #[default]
    None,
    /// An OAuth 2.1 protected resource: each authenticated client authorizes toolgate once, at its
    /// first call, and its calls then carry its own access token (`[upstream.oauth]`).
    Oauth,
}

/// `[upstream.oauth]`: toolgate's client settings at the upstream's authorization server. All
/// optional: the authorization server is discovered from the upstream (RFC 9728, then RFC 8414 or
/// OpenID discovery), and without `client_id` toolgate registers itself (a Client ID Metadata
/// Document where the server supports one and `public_url` is `https://`, else Dynamic Client
/// Registration, RFC 7591).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct UpstreamOAuth {
    /// A client pre-registered at the authorization server, with `<public_url>/oauth/callback` as
    /// its redirect URI.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_id: Option<String>,
    /// The pre-registered client's secret, usually `"${VAR}"` (none for a public client). Sent
    /// with HTTP Basic.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_secret: Option<Secret>,
    /// The scopes asked for. Empty: the upstream's `scopes_supported` from its protected-resource
    /// metadata, if any.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("default" = []))]
    pub scopes: Vec<String>,
    /// Send the RFC 8707 `resource` (the upstream's URL) on the authorization and token requests,
    /// as MCP asks. `false` for a provider that refuses it.
    #[serde(default = "yes")]
    pub resource: bool,
    /// The authorization server's issuer URL, for an upstream that serves no protected-resource
    /// metadata. Unset: discovered.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub authorization_server: Option<String>,
    /// What toolgate's own connection (the tool list, descriptions, search: no user's call)
    /// presents: `"headers"`, the upstream's `headers` (a static service token, or none for an
    /// upstream that lists its tools openly); `"client_credentials"`, a token toolgate gets for
    /// itself with the client credentials grant (needs `client_id`); `"authorized_user"`, the token
    /// of a client that authorized toolgate (until one has, the upstream lists nothing: `toolgate
    /// oauth login` makes a consent link ahead of any call).
    #[serde(default, skip_serializing_if = "is_headers")]
    pub catalog: OAuthCatalog,
}

/// What an OAuth upstream's catalog connection presents (`[upstream.oauth] catalog`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum OAuthCatalog {
    /// The upstream's `headers`.
    #[default]
    Headers,
    /// A token from the client credentials grant, for toolgate itself.
    ClientCredentials,
    /// A token of a client that authorized toolgate.
    AuthorizedUser,
}

fn is_headers(catalog: &OAuthCatalog) -> bool {
    *catalog == OAuthCatalog::Headers
}

fn yes() -> bool {
    true
}

/// Shortest and longest `flow_lifetime`.
const FLOW_LIFETIME: (Duration, Duration) = (Duration::from_secs(60), Duration::from_secs(3600));

/// Every problem of `[oauth]` and of the upstreams' `auth = "oauth"`, with its TOML path.
pub(super) fn check(config: &Config) -> Vec<Problem> {
    let mut out = Vec::new();
    let mut push = |path: TomlPath, message: String| out.push(Problem { path: path.to_string(), message });
    let root = TomlPath::root().key("oauth");
    let oauth = &config.oauth;
    if oauth.flow_lifetime < FLOW_LIFETIME.0 || oauth.flow_lifetime > FLOW_LIFETIME.1 {
        push(root.key("flow_lifetime"), "must be between 1m and 1h".into());
    }
    if oauth.cache_entries == 0 {
        push(root.key("cache_entries"), "must be at least 1".into());
    }
    if oauth.client_name.trim().is_empty() {
        push(root.key("client_name"), "must not be empty".into());
    }
    if let Some(url) = &oauth.public_url {
        if let Err(e) = super::auth::check_public_url(url, true) {
            push(root.key("public_url"), e);
        } else if url::Url::parse(url).is_ok_and(|u| u.query().is_some()) {
            push(root.key("public_url"), "must not have a query".into());
        }
    }
    let mut any = false;
    for (i, upstream) in config.upstreams.iter().enumerate() {
        let path = TomlPath::root().key("upstream").index(i);
        if upstream.auth != UpstreamAuth::Oauth {
            if upstream.oauth.is_some() {
                push(path.key("oauth"), "applies only with `auth = \"oauth\"`".into());
            }
            continue;
        }
        any = true;
        if upstream.url.is_none() {
            push(path.key("auth"), "`oauth` applies only to HTTP upstreams (`url`)".into());
        }
        if upstream.identity.is_some() {
            push(path.key("identity"), "cannot be combined with `auth = \"oauth\"`: keep one".into());
        }
        if !config.auth.is_enabled() {
            push(
                path.key("auth"),
                "`oauth` needs [auth]: tokens are kept per authenticated client, and without [auth] every \
                 request is the same anonymous one, so one person's consent would serve everyone"
                    .into(),
            );
        }
        let Some(settings) = &upstream.oauth else { continue };
        if settings.client_secret.is_some() && settings.client_id.is_none() {
            push(path.key("oauth").key("client_secret"), "needs `client_id`".into());
        }
        if settings.catalog == OAuthCatalog::ClientCredentials && settings.client_secret.is_none() {
            push(
                path.key("oauth").key("catalog"),
                "`client_credentials` needs a confidential client: set `client_id` and `client_secret`".into(),
            );
        }
        if let Some(server) = &settings.authorization_server
            && let Err(e) = super::auth::check_public_url(server, false)
        {
            push(path.key("oauth").key("authorization_server"), e);
        }
        for (j, scope) in settings.scopes.iter().enumerate() {
            if scope.is_empty() || !scope.bytes().all(|b| b.is_ascii_graphic() && b != b'"' && b != b'\\') {
                push(path.key("oauth").key("scopes").index(j), format!("`{scope}` is not a valid scope"));
            }
        }
    }
    if any {
        if oauth.public_url.is_none() && !config.server.listen.ip().is_loopback() {
            push(
                root.key("public_url"),
                "is needed: an upstream has `auth = \"oauth\"` and `[server] listen` is not loopback, so users' \
                 browsers need toolgate's public URL to come back to"
                    .into(),
            );
        }
        if config.state.redis_url.is_some() && config.state.encryption_keys.is_empty() {
            push(
                TomlPath::root().key("state").key("encryption_keys"),
                "is needed: an upstream has `auth = \"oauth\"`, and users' tokens are shared in Redis only sealed"
                    .into(),
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn problems(toml: &str) -> Vec<String> {
        let config: Config = toml::from_str(toml).expect("parses");
        check(&config).into_iter().map(|p| format!("{}: {}", p.path, p.message)).collect()
    }

    const CLIENT: &str = "[[auth.clients]]\nname = \"alice\"\napi_key_sha256 = \"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"\n";

    #[test]
    fn an_oauth_upstream_needs_clients_http_and_no_identity() {
        let p = problems(
            "[[upstream]]\nname = \"a\"\ncommand = \"x\"\nauth = \"oauth\"\n\
             [upstream.identity]\nmode = \"assertion\"\n",
        );
        assert!(p.iter().any(|p| p.starts_with("upstream[0].auth: `oauth` applies only to HTTP")), "{p:?}");
        assert!(p.iter().any(|p| p.starts_with("upstream[0].identity: cannot be combined")), "{p:?}");
        assert!(p.iter().any(|p| p.starts_with("upstream[0].auth: `oauth` needs [auth]")), "{p:?}");
    }

    #[test]
    fn settings_without_oauth_and_bad_values_are_named() {
        let p = problems(&format!(
            "{CLIENT}[oauth]\npublic_url = \"http://toolgate.example.com\"\nflow_lifetime = \"5s\"\n\
             [[upstream]]\nname = \"a\"\nurl = \"http://127.0.0.1:1/mcp\"\n[upstream.oauth]\nclient_id = \"x\"\n\
             [[upstream]]\nname = \"b\"\nurl = \"http://127.0.0.1:1/mcp\"\nauth = \"oauth\"\n\
             [upstream.oauth]\nclient_secret = \"s\"\nscopes = [\"a b\"]\n"
        ));
        assert!(p.iter().any(|p| p.starts_with("upstream[0].oauth: applies only with")), "{p:?}");
        assert!(p.iter().any(|p| p.starts_with("upstream[1].oauth.client_secret: needs `client_id`")), "{p:?}");
        assert!(p.iter().any(|p| p.starts_with("upstream[1].oauth.scopes[0]:")), "{p:?}");
        assert!(p.iter().any(|p| p.starts_with("oauth.flow_lifetime:")), "{p:?}");
        assert!(p.iter().any(|p| p.starts_with("oauth.public_url:")), "{p:?}");
    }

    #[test]
    fn a_public_listener_needs_a_public_url_and_redis_needs_keys() {
        let p = problems(&format!(
            "{CLIENT}[server]\nlisten = \"0.0.0.0:8080\"\n[state]\nredis_url = \"redis://127.0.0.1:1\"\n\
             [[upstream]]\nname = \"a\"\nurl = \"http://127.0.0.1:1/mcp\"\nauth = \"oauth\"\n"
        ));
        assert!(p.iter().any(|p| p.starts_with("oauth.public_url: is needed")), "{p:?}");
        assert!(p.iter().any(|p| p.starts_with("state.encryption_keys: is needed")), "{p:?}");
        let fine = problems(&format!(
            "{CLIENT}[[upstream]]\nname = \"a\"\nurl = \"http://127.0.0.1:1/mcp\"\nauth = \"oauth\"\n"
        ));
        assert!(fine.is_empty(), "{fine:?}");
    }
}
