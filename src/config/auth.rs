//! `[auth]`: who may use toolgate over HTTP, and what each client may do.
//!
//! The typed model users write, and its validation. The model only describes;
//! [`crate::auth`] turns it into an authenticator, tool policies and limits.
//! `toolgate stdio` serves the local user who launched it and ignores `[auth]`.
//!
//! Secrets (`api_key`) are held in [`Secret`], whose `Debug` and `Serialize`
//! print `<redacted>`, so neither logs nor `toolgate check-config` show them.

use std::collections::HashMap;
use std::fmt;
use std::net::SocketAddr;
use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize, Serializer};

use super::UpstreamConfig;
use super::path::TomlPath;
use super::validate::Problem;

/// `[auth]`: client authentication and per-client policy, for HTTP clients (`toolgate stdio`
/// ignores it). Authentication is on when at least one `[[auth.clients]]` entry has a key or
/// `[auth.jwt]` is set; then every HTTP request needs a credential. Without either, toolgate serves
/// anyone who can reach it, and on a listen address that is not loopback it refuses to start unless
/// `allow_anonymous = true` (the message names both ways out: credentials, or that key).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct AuthConfig {
    /// Serve without credentials on a non-loopback address. An error when credentials are
    /// configured (it would have no effect).
    pub allow_anonymous: bool,
    /// `[[auth.clients]]`: API-key clients, and policies for JWT clients.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("default" = []))]
    pub clients: Vec<ClientConfig>,
    /// `[auth.jwt]`: accept JWT access tokens, as an OAuth 2.1 resource server.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub jwt: Option<JwtConfig>,
}

impl AuthConfig {
    /// Whether any credential is configured: a client with a key, or JWT.
    pub fn is_enabled(&self) -> bool {
        self.jwt.is_some() || self.clients.iter().any(ClientConfig::has_key)
    }
}

/// `[[auth.clients]]`: one client (with an API key) or one JWT policy (without a key).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ClientConfig {
    /// Unique, `[a-z0-9_-]+`, at most 64 characters; used in logs and metrics. For a JWT policy:
    /// the value of `client_claim` it covers, or `default` for JWT clients without an entry of
    /// their own.
    pub name: String,
    /// The key the client sends as `Authorization: Bearer <key>`; at least 16 characters, no
    /// spaces. Usually `"${VAR}"`. Compared in constant time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key: Option<Secret>,
    /// The SHA-256 of the key, 64 hex digits (`printf %s "$KEY" | sha256sum`), so the file holds no
    /// secret. At most one of `api_key` and `api_key_sha256`; neither makes the entry a JWT policy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key_sha256: Option<String>,
    /// Upstreams (by `[[upstream]]` name) this client may use at all. The others' tools, resources,
    /// templates, prompts, completions and list-change notifications vanish for it. Unset: all of
    /// them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upstreams: Option<Vec<String>>,
    /// Allowlist of globs over exposed tool names (after prefixing, e.g. `github__get_*`): `*` any
    /// run of characters, `?` one, `[abc]` a class, `{a,b}` either.
    #[serde(default = "all_tools")]
    #[schemars(with = "Vec<super::schema::Glob>")]
    pub tools: Vec<String>,
    /// Globs of tools refused even when `tools` allows them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(with = "Vec<super::schema::Glob>")]
    #[schemars(extend("default" = []))]
    pub deny_tools: Vec<String>,
    /// Most sessions this client may hold at once; the next `initialize` gets HTTP 429 and JSON-RPC
    /// error `-32014`. Unset: no per-client cap. At least `1`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub max_sessions: Option<u32>,
    /// Token bucket over `tools/call` (the describe tool included) and reads of the descriptions
    /// resource: a burst of this many, refilled evenly over a minute. Over it: JSON-RPC error
    /// `-32015` with `data.retryAfterSeconds`; the call never reaches the upstream. Unset: no rate
    /// limit. At least `1`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub calls_per_minute: Option<u32>,
    /// The client's concern configuration (declared `[[concerns]]` name →
    /// value), in effect until the client sends its own. Default none: the
    /// client sees everything until it configures concerns.
    #[serde(default, skip_serializing_if = "indexmap::IndexMap::is_empty")]
    #[schemars(extend("default" = {}))]
    pub concerns: super::ConcernValues,
    /// Per-tool budgets of this client, on top of the top-level `[[limits]]` (same form, without
    /// `defaults`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub limits: Vec<super::ToolLimit>,
    /// Headers for HTTP upstreams (by `[[upstream]]` name) on every request toolgate makes there
    /// for this client, replacing the upstream's `headers` of the same name, e.g. `{ github = {
    /// Authorization = "Bearer ${ALICE_GITHUB_TOKEN}" } }`. The client then gets upstream sessions
    /// of its own, whatever `sharing` says. The upstream's tool list keeps its own `headers`.
    #[serde(default, skip_serializing_if = "indexmap::IndexMap::is_empty")]
    #[schemars(extend("default" = {}))]
    pub upstream_headers: indexmap::IndexMap<String, indexmap::IndexMap<String, Secret>>,
    /// Environment variables for stdio upstreams (by name), merged over the upstream's `env`: the
    /// client gets children of its own (counted in `max_instances`, stopped when idle), never
    /// shared with another client.
    #[serde(default, skip_serializing_if = "indexmap::IndexMap::is_empty")]
    #[schemars(extend("default" = {}))]
    pub upstream_env: indexmap::IndexMap<String, indexmap::IndexMap<String, Secret>>,
    /// Extra claims in the signed identity assertions toolgate presents for this client
    /// (`[upstream.identity] mode = "assertion"`); they win over the upstream's `claims`.
    #[serde(default, skip_serializing_if = "indexmap::IndexMap::is_empty")]
    #[schemars(extend("default" = {}))]
    pub identity_claims: indexmap::IndexMap<String, serde_json::Value>,
}

fn all_tools() -> Vec<String> {
    vec!["*".to_owned()]
}

impl ClientConfig {
    /// Whether this entry authenticates a client by API key.
    pub fn has_key(&self) -> bool {
        self.api_key.is_some() || self.api_key_sha256.is_some()
    }
}

/// `[auth.jwt]`: accept JWT access tokens from one issuer (an OAuth 2.1 resource server, as the MCP
/// authorization spec describes).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct JwtConfig {
    /// The `iss` every token must carry.
    pub issuer: String,
    /// Accepted `aud` values (a token must name one). The first is toolgate's public MCP endpoint
    /// URL, e.g. `https://gateway.example.com/mcp`: the `resource` of the Protected Resource
    /// Metadata, which it locates. `https://`, or `http://` on a loopback host.
    pub audiences: Vec<String>,
    /// The issuer's JWK Set (`https://`, or `http://` on loopback), fetched with the gateway's HTTP
    /// client, cached, and fetched again on an unknown `kid` at a bounded rate. Exactly one of
    /// `jwks_url` and `jwks_file`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jwks_url: Option<String>,
    /// A JWK Set file instead (relative to the config file's directory).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jwks_file: Option<PathBuf>,
    /// The claim whose string value names the client: the `[[auth.clients]]` entry of that name
    /// without a key gives its policy, else the entry named `default`, else all tools.
    #[serde(default = "default_client_claim")]
    pub client_claim: String,
    /// Advertised in the Protected Resource Metadata. Unset: `[issuer]`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub authorization_servers: Vec<String>,
    /// Advertised in the metadata and the `WWW-Authenticate` challenge; left out when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("default" = []))]
    pub scopes_supported: Vec<String>,
}

fn default_client_claim() -> String {
    "sub".to_owned()
}

impl JwtConfig {
    /// The authorization servers to advertise: as configured, or the issuer.
    pub fn authorization_servers(&self) -> Vec<String> {
        if self.authorization_servers.is_empty() {
            vec![self.issuer.clone()]
        } else {
            self.authorization_servers.clone()
        }
    }

    /// The public URL of the MCP endpoint: the first audience.
    pub fn resource(&self) -> Option<&str> {
        self.audiences.first().map(String::as_str)
    }
}

/// A secret string from the configuration. `Debug` and `Serialize` print `<redacted>`;
/// `Secret::expose` gives the value to the code that needs it.
#[derive(Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(transparent)]
#[schemars(inline)]
pub struct Secret(String);

impl Secret {
    /// Wraps a value.
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    /// The secret itself. Never log it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

impl Serialize for Secret {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str("<redacted>")
    }
}

/// The name under which a JWT client without an entry of its own finds its
/// policy.
pub const DEFAULT_CLIENT: &str = "default";

/// Shortest accepted raw `api_key`: a shorter one can be guessed.
const MIN_KEY_CHARS: usize = 16;
/// Longest client name (it becomes a metrics label).
const MAX_NAME_CHARS: usize = 64;

/// Every problem in `auth`, with its TOML path. `upstreams` are the configured
/// upstreams (clients may only name those); `listen` is `server.listen`.
pub(crate) fn check(auth: &AuthConfig, upstreams: &[UpstreamConfig], listen: SocketAddr) -> Vec<Problem> {
    let mut out = Vec::new();
    let root = TomlPath::root().key("auth");
    let mut push = |path: TomlPath, message: String| out.push(Problem { path: path.to_string(), message });

    if !auth.is_enabled() && auth.clients.is_empty() && !auth.allow_anonymous && !is_loopback(listen) {
        push(
            root.key("allow_anonymous"),
            format!(
                "toolgate would serve anyone who can reach {listen}: configure credentials \
                 ([[auth.clients]] with an api_key, or [auth.jwt]), or set allow_anonymous = true \
                 to serve without authentication"
            ),
        );
    }
    if auth.allow_anonymous && auth.is_enabled() {
        push(
            root.key("allow_anonymous"),
            "has no effect when credentials are configured (every request must then carry one): remove it".into(),
        );
    }

    let known: Vec<&str> = upstreams.iter().map(|u| u.name.as_str()).collect();
    let mut names: HashMap<&str, usize> = HashMap::new();
    let mut keys: HashMap<[u8; 32], usize> = HashMap::new();
    for (i, client) in auth.clients.iter().enumerate() {
        let path = root.key("clients").index(i);
        check_name(&client.name, &path.key("name"), &mut push);
        if let Some(first) = names.get(client.name.as_str()) {
            push(path.key("name"), format!("client name `{}` is already used by auth.clients[{first}]", client.name));
        } else {
            names.insert(&client.name, i);
        }
        match (&client.api_key, &client.api_key_sha256) {
            (Some(_), Some(_)) => {
                push(path.clone(), "has both `api_key` and `api_key_sha256`: keep one".into());
            }
            (None, None) if auth.jwt.is_none() => push(
                path.clone(),
                "needs `api_key` or `api_key_sha256` (an entry without a key only gives a JWT client its \
                 policy, and [auth.jwt] is not set)"
                    .into(),
            ),
            (Some(key), None) => check_raw_key(key.expose(), &path.key("api_key"), &mut push),
            (None, Some(digest)) => {
                if decode_sha256_hex(digest).is_none() {
                    push(path.key("api_key_sha256"), "must be 64 hexadecimal digits (a SHA-256 digest)".into());
                }
            }
            (None, None) => {}
        }
        // Two clients with one key could not be told apart.
        if let Some(digest) = client.key_digest() {
            if let Some(first) = keys.get(&digest) {
                push(path.clone(), format!("has the same key as auth.clients[{first}]: give each client its own"));
            } else {
                keys.insert(digest, i);
            }
        }
        for (j, name) in client.upstreams.iter().flatten().enumerate() {
            if !known.contains(&name.as_str()) {
                push(
                    path.key("upstreams").index(j),
                    format!("`{name}` is not a configured upstream (known: {})", list(&known)),
                );
            }
        }
        for key in ["tools", "deny_tools"] {
            let patterns = if key == "tools" { &client.tools } else { &client.deny_tools };
            for (j, pattern) in patterns.iter().enumerate() {
                if let Err(e) = compile_glob(pattern) {
                    push(path.key(key).index(j), e);
                }
            }
        }
        for (key, value) in [("max_sessions", client.max_sessions), ("calls_per_minute", client.calls_per_minute)] {
            if value == Some(0) {
                push(path.key(key), "must be at least 1 (remove it for no limit)".into());
            }
        }
    }

    if let Some(jwt) = &auth.jwt {
        check_jwt(jwt, &root.key("jwt"), &mut push);
    }
    out
}

fn check_name(name: &str, path: &TomlPath, push: &mut impl FnMut(TomlPath, String)) {
    if name.is_empty() {
        push(path.clone(), "must not be empty".into());
    } else if name.len() > MAX_NAME_CHARS
        || !name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-')
    {
        push(
            path.clone(),
            format!(
                "`{name}` is not a valid client name: use at most {MAX_NAME_CHARS} lowercase letters, digits, `_` \
                 and `-`"
            ),
        );
    }
}

/// The key itself is never echoed in a message.
fn check_raw_key(key: &str, path: &TomlPath, push: &mut impl FnMut(TomlPath, String)) {
    if key.chars().count() < MIN_KEY_CHARS {
        push(path.clone(), format!("is too short: use at least {MIN_KEY_CHARS} random characters"));
    }
    if !key.bytes().all(|b| b.is_ascii_graphic()) {
        push(
            path.clone(),
            "may only contain visible ASCII characters (no spaces), as it is sent in an HTTP header".into(),
        );
    }
}

fn check_jwt(jwt: &JwtConfig, path: &TomlPath, push: &mut impl FnMut(TomlPath, String)) {
    if jwt.issuer.trim().is_empty() {
        push(path.key("issuer"), "must not be empty".into());
    }
    if jwt.audiences.is_empty() {
        push(
            path.key("audiences"),
            "must name at least one audience; the first is toolgate's public MCP URL, \
             e.g. \"https://gateway.example.com/mcp\""
                .into(),
        );
    }
    for (i, audience) in jwt.audiences.iter().enumerate() {
        if audience.trim().is_empty() {
            push(path.key("audiences").index(i), "must not be empty".into());
        } else if i == 0
            && let Err(e) = check_public_url(audience, true)
        {
            push(path.key("audiences").index(0), format!("the first audience is toolgate's public MCP URL: {e}"));
        }
    }
    match (&jwt.jwks_url, &jwt.jwks_file) {
        (Some(_), Some(_)) => push(path.clone(), "has both `jwks_url` and `jwks_file`: keep one".into()),
        (None, None) => push(path.clone(), "needs `jwks_url` or `jwks_file` (where the issuer's keys are)".into()),
        (Some(url), None) => {
            if let Err(e) = check_public_url(url, false) {
                push(path.key("jwks_url"), e);
            }
        }
        (None, Some(file)) => match std::fs::metadata(file) {
            Ok(meta) if meta.is_file() => {}
            Ok(_) => push(path.key("jwks_file"), format!("`{}` is not a file", file.display())),
            Err(e) => push(path.key("jwks_file"), format!("cannot read `{}`: {e}", file.display())),
        },
    }
    let claim = &jwt.client_claim;
    if claim.is_empty() {
        push(path.key("client_claim"), "must not be empty".into());
    }
    for (i, server) in jwt.authorization_servers.iter().enumerate() {
        if let Err(e) = check_public_url(server, false) {
            push(path.key("authorization_servers").index(i), e);
        }
    }
    for (i, scope) in jwt.scopes_supported.iter().enumerate() {
        // RFC 6749 §3.3: scope-token = 1*( %x21 / %x23-5B / %x5D-7E ).
        if scope.is_empty() || !scope.bytes().all(|b| b.is_ascii_graphic() && b != b'"' && b != b'\\') {
            push(
                path.key("scopes_supported").index(i),
                format!("`{scope}` is not a valid scope: use visible ASCII without spaces, `\"` or `\\`"),
            );
        }
    }
}

/// An absolute `https://` URL, or `http://` on a loopback host (for tests and
/// local identity providers). `resource` also refuses a fragment (RFC 8707).
pub(super) fn check_public_url(text: &str, resource: bool) -> Result<(), String> {
    let url = url::Url::parse(text).map_err(|e| format!("`{text}` is not a valid URL: {e}"))?;
    match url.scheme() {
        "https" => {}
        "http" if url.host().is_some_and(is_loopback_host) => {}
        "http" => return Err(format!("`{text}` must use https:// (http:// is accepted only on a loopback host)")),
        _ => return Err(format!("`{text}` must be an https:// URL")),
    }
    if resource && url.fragment().is_some() {
        return Err(format!("`{text}` must not have a fragment (`#…`)"));
    }
    Ok(())
}

fn is_loopback_host(host: url::Host<&str>) -> bool {
    match host {
        url::Host::Domain(name) => name.eq_ignore_ascii_case("localhost"),
        url::Host::Ipv4(ip) => ip.is_loopback(),
        url::Host::Ipv6(ip) => ip.to_canonical().is_loopback(),
    }
}

/// Whether `listen` only accepts connections from this machine.
fn is_loopback(listen: SocketAddr) -> bool {
    listen.ip().to_canonical().is_loopback()
}

/// `a`, `b` and `c` for messages; `none` when empty.
fn list(names: &[&str]) -> String {
    if names.is_empty() {
        "none".to_owned()
    } else {
        names.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", ")
    }
}

/// The SHA-256 digest of `data`.
pub fn sha256(data: &[u8]) -> [u8; 32] {
    let digest = aws_lc_rs::digest::digest(&aws_lc_rs::digest::SHA256, data);
    let mut out = [0u8; 32];
    out.copy_from_slice(digest.as_ref());
    out
}

impl ClientConfig {
    /// The digest of the client's key, from `api_key` or `api_key_sha256`;
    /// `None` for an entry without a key (or with a malformed digest).
    pub fn key_digest(&self) -> Option<[u8; 32]> {
        match (&self.api_key, &self.api_key_sha256) {
            (Some(key), _) => Some(sha256(key.expose().as_bytes())),
            (None, Some(hex)) => decode_sha256_hex(hex),
            (None, None) => None,
        }
    }
}

/// Compiles one tool pattern (`tools`, `deny_tools`, `pinned`) with the
/// semantics [`crate::auth::ToolPolicy`] documents, or says why it is not
/// valid (a message for the config validation).
pub fn compile_glob(pattern: &str) -> Result<globset::Glob, String> {
    if pattern.is_empty() {
        return Err("a tool pattern must not be empty (use \"*\" for every tool)".to_owned());
    }
    globset::GlobBuilder::new(pattern)
        .literal_separator(false)
        .backslash_escape(true)
        .case_insensitive(false)
        .build()
        .map_err(|e| format!("`{pattern}` is not a valid glob pattern: {}", e.kind()))
}

/// The 32 bytes of a 64-digit hex SHA-256 digest (either case).
pub(crate) fn decode_sha256_hex(text: &str) -> Option<[u8; 32]> {
    let bytes = text.as_bytes();
    if bytes.len() != 64 {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, pair) in bytes.chunks_exact(2).enumerate() {
        let high = char::from(pair[0]).to_digit(16)?;
        let low = char::from(pair[1]).to_digit(16)?;
        // Both digits are below 16, so the byte fits.
        out[i] = u8::try_from(high * 16 + low).ok()?;
    }
    Some(out)
}

#[cfg(test)]
mod props;
#[cfg(test)]
mod tests;
