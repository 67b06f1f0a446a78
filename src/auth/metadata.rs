//! OAuth 2.0 Protected Resource Metadata (RFC 9728), served with `[auth.jwt]`.
//!
//! toolgate's public URL is the first of `auth.jwt.audiences` (it has to be
//! an audience anyway: tokens are issued for it, RFC 8707). It is the
//! document's `resource`, and the metadata URL is derived from it as RFC 9728
//! §3.1 says: `/.well-known/oauth-protected-resource` inserted between the
//! host and the path. So `https://gw.example.com/mcp` gives
//! `https://gw.example.com/.well-known/oauth-protected-resource/mcp`.

use serde_json::{Value, json};

use crate::config::JwtConfig;

/// The well-known path prefix (RFC 9728 §3).
pub const WELL_KNOWN: &str = "/.well-known/oauth-protected-resource";

/// The metadata document: `resource`, `authorization_servers`,
/// `bearer_methods_supported: ["header"]`, and `scopes_supported` when
/// configured.
pub fn protected_resource_metadata(jwt: &JwtConfig) -> Value {
    let mut doc = json!({
        "resource": jwt.resource().unwrap_or_default(),
        "authorization_servers": jwt.authorization_servers(),
        "bearer_methods_supported": ["header"],
    });
    if !jwt.scopes_supported.is_empty()
        && let Some(map) = doc.as_object_mut()
    {
        map.insert("scopes_supported".into(), json!(jwt.scopes_supported));
    }
    doc
}

/// The URL of the metadata of `resource` (RFC 9728 §3.1), for the
/// `resource_metadata` parameter of challenges. `None` when `resource` is
/// not an absolute http(s) URL.
pub fn resource_metadata_url(resource: &str) -> Option<String> {
    let url = url::Url::parse(resource).ok()?;
    if !matches!(url.scheme(), "http" | "https") || url.host().is_none() {
        return None;
    }
    let mut out = url.clone();
    out.set_path(&format!("{WELL_KNOWN}{}", resource_path(&url)));
    // RFC 9728 §3.1: a query in the resource is kept after the path.
    out.set_fragment(None);
    Some(out.to_string())
}

/// `""` for a resource at the root, else its path (`/mcp`), so that the
/// well-known URL has no trailing slash.
fn resource_path(url: &url::Url) -> &str {
    match url.path() {
        "/" => "",
        path => path,
    }
}

/// The request paths at which toolgate serves the document: the bare
/// well-known path, the one derived from the public URL, and the one for the
/// local `server.path` (when a proxy maps the public path onto it). Without
/// duplicates.
pub fn well_known_paths(resource: &str, server_path: &str) -> Vec<String> {
    let mut paths = vec![WELL_KNOWN.to_owned()];
    if let Ok(url) = url::Url::parse(resource) {
        paths.push(format!("{WELL_KNOWN}{}", resource_path(&url)));
    }
    if server_path != "/" {
        paths.push(format!("{WELL_KNOWN}{server_path}"));
    }
    let mut seen = std::collections::HashSet::new();
    paths.retain(|p| seen.insert(p.clone()));
    paths
}

#[cfg(test)]
mod tests;
