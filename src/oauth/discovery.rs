//! Where an upstream's authorization server is and what it supports: the
//! upstream's RFC 9728 protected-resource metadata, then the server's
//! RFC 8414 metadata, or OpenID Connect discovery where it has none.

use serde::{Deserialize, Serialize};
use url::Url;

use super::OAuthError;

/// How long a metadata request may take.
const TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);
/// Largest metadata document read.
const MAX_BYTES: usize = 256 * 1024;

/// An authorization server, as its metadata describes it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Server {
    pub issuer: String,
    pub authorization_endpoint: String,
    pub token_endpoint: String,
    #[serde(default)]
    pub registration_endpoint: Option<String>,
    #[serde(default)]
    pub revocation_endpoint: Option<String>,
    #[serde(default)]
    pub code_challenge_methods_supported: Vec<String>,
    #[serde(default)]
    pub authorization_response_iss_parameter_supported: bool,
    #[serde(default)]
    pub client_id_metadata_document_supported: bool,
    #[serde(default)]
    pub token_endpoint_auth_methods_supported: Vec<String>,
}

/// What an upstream says of itself (RFC 9728).
#[derive(Debug, Clone, Default, Deserialize)]
pub struct Resource {
    #[serde(default)]
    pub resource: Option<String>,
    #[serde(default)]
    pub authorization_servers: Vec<String>,
    #[serde(default)]
    pub scopes_supported: Vec<String>,
}

/// The places of an upstream's protected-resource metadata, the
/// path-specific one first (RFC 9728 §3.1).
pub fn resource_metadata_urls(upstream: &Url) -> Vec<Url> {
    let mut out = Vec::with_capacity(2);
    let path = upstream.path().trim_end_matches('/');
    for suffix in [path, ""] {
        let mut url = upstream.clone();
        url.set_query(None);
        url.set_fragment(None);
        url.set_path(&format!("/.well-known/oauth-protected-resource{suffix}"));
        if !out.contains(&url) {
            out.push(url);
        }
    }
    out
}

/// The places of an issuer's metadata: RFC 8414 (path inserted), then
/// OpenID Connect discovery (path inserted, then appended).
pub fn server_metadata_urls(issuer: &Url) -> Vec<Url> {
    let path = issuer.path().trim_end_matches('/');
    let mut out = Vec::with_capacity(3);
    for (well_known, appended) in
        [("oauth-authorization-server", false), ("openid-configuration", false), ("openid-configuration", true)]
    {
        let mut url = issuer.clone();
        url.set_query(None);
        url.set_fragment(None);
        url.set_path(&match appended {
            false => format!("/.well-known/{well_known}{path}"),
            true => format!("{path}/.well-known/{well_known}"),
        });
        if !out.contains(&url) {
            out.push(url);
        }
    }
    out
}

/// GETs `url` as JSON: `None` for a 4xx (not there), an error otherwise.
async fn fetch<T: for<'de> Deserialize<'de>>(http: &reqwest::Client, url: &Url) -> Result<Option<T>, OAuthError> {
    let failed = |why: String| OAuthError::Discovery(format!("{url}: {why}"));
    let response = http
        .get(url.clone())
        .header(http::header::ACCEPT, "application/json")
        .timeout(TIMEOUT)
        .send()
        .await
        .map_err(|e| failed(crate::upstream::report(&e.without_url()).to_string()))?;
    let status = response.status();
    if status.is_client_error() {
        return Ok(None);
    }
    if !status.is_success() {
        return Err(failed(format!("HTTP {status}")));
    }
    let bytes = response.bytes().await.map_err(|e| failed(crate::upstream::report(&e.without_url()).to_string()))?;
    if bytes.len() > MAX_BYTES {
        return Err(failed("the document is too large".into()));
    }
    serde_json::from_slice(&bytes).map(Some).map_err(|e| failed(format!("not the expected JSON: {e}")))
}

/// The upstream's protected-resource metadata, if it serves any.
pub async fn resource(http: &reqwest::Client, upstream: &Url) -> Result<Option<Resource>, OAuthError> {
    for url in resource_metadata_urls(upstream) {
        if let Some(found) = fetch::<Resource>(http, &url).await? {
            return Ok(Some(found));
        }
    }
    Ok(None)
}

/// The metadata of the authorization server `issuer`. Its `issuer` must be
/// `issuer` (RFC 8414 §3.3), and it must support PKCE with S256 (MCP
/// refuses servers that do not say so).
pub async fn server(http: &reqwest::Client, issuer: &str) -> Result<Server, OAuthError> {
    let parsed = Url::parse(issuer).map_err(|e| OAuthError::Discovery(format!("`{issuer}` is not a URL: {e}")))?;
    for url in server_metadata_urls(&parsed) {
        let Some(server) = fetch::<Server>(http, &url).await? else { continue };
        if server.issuer.trim_end_matches('/') != issuer.trim_end_matches('/') {
            return Err(OAuthError::Discovery(format!("{url} names the issuer `{}`, not `{issuer}`", server.issuer)));
        }
        if !server.code_challenge_methods_supported.iter().any(|m| m == "S256") {
            return Err(OAuthError::Discovery(format!(
                "the authorization server `{issuer}` does not offer PKCE (S256)"
            )));
        }
        return Ok(server);
    }
    Err(OAuthError::Discovery(format!("the authorization server `{issuer}` publishes no metadata")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn urls(list: Vec<Url>) -> Vec<String> {
        list.into_iter().map(String::from).collect()
    }

    #[test]
    fn resource_metadata_is_looked_up_by_path_then_at_the_root() {
        let up = Url::parse("https://mcp.example.com/v1/mcp?x=1").unwrap();
        assert_eq!(
            urls(resource_metadata_urls(&up)),
            [
                "https://mcp.example.com/.well-known/oauth-protected-resource/v1/mcp",
                "https://mcp.example.com/.well-known/oauth-protected-resource"
            ]
        );
        let root = Url::parse("https://mcp.example.com/").unwrap();
        assert_eq!(
            urls(resource_metadata_urls(&root)),
            ["https://mcp.example.com/.well-known/oauth-protected-resource"]
        );
    }

    #[test]
    fn server_metadata_tries_rfc_8414_then_openid_discovery() {
        let issuer = Url::parse("https://auth.example.com/tenant1").unwrap();
        assert_eq!(
            urls(server_metadata_urls(&issuer)),
            [
                "https://auth.example.com/.well-known/oauth-authorization-server/tenant1",
                "https://auth.example.com/.well-known/openid-configuration/tenant1",
                "https://auth.example.com/tenant1/.well-known/openid-configuration"
            ]
        );
        let bare = Url::parse("https://auth.example.com").unwrap();
        assert_eq!(
            urls(server_metadata_urls(&bare)),
            [
                "https://auth.example.com/.well-known/oauth-authorization-server",
                "https://auth.example.com/.well-known/openid-configuration"
            ]
        );
    }
}
