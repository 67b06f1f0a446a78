//! toolgate's client at an authorization server, in the order MCP gives:
//! pre-registered (`[upstream.oauth] client_id`), a Client ID Metadata
//! Document (toolgate's own `https://` URL as its id, where the server
//! supports one), or RFC 7591 Dynamic Client Registration. A registration
//! is kept (in Redis, sealed, with `[state] redis_url`), so it happens once
//! per authorization server, not per user or replica.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::OAuthError;
use super::discovery::Server;

/// How long a registration request may take.
const TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);
/// Most characters of a server's error shown.
const SHOWN: usize = 200;

/// How toolgate proves it is the client at the token endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ClientAuth {
    /// HTTP Basic with the id and secret.
    Basic,
    /// The id and secret in the form.
    Post,
    /// A public client: the id only (PKCE protects the code).
    None,
}

/// toolgate's client at one authorization server.
#[derive(Clone, Serialize, Deserialize)]
pub struct Registered {
    pub client_id: String,
    #[serde(default)]
    pub client_secret: Option<String>,
    pub auth: ClientAuth,
    /// How it came to be: `configured`, `metadata_document` or `dynamic`.
    pub how: String,
}

impl std::fmt::Debug for Registered {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registered").field("client_id", &self.client_id).field("how", &self.how).finish()
    }
}

/// The Client ID Metadata Document toolgate serves at `client_id` (its own URL).
pub fn metadata_document(client_id: &str, client_name: &str, redirect_uri: &str) -> Value {
    json!({
        "client_id": client_id,
        "client_name": client_name,
        "redirect_uris": [redirect_uri],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
    })
}

/// Registers toolgate at `server` by RFC 7591.
pub async fn register(
    http: &reqwest::Client,
    server: &Server,
    client_name: &str,
    redirect_uri: &str,
    scopes: &[String],
) -> Result<Registered, OAuthError> {
    let Some(endpoint) = &server.registration_endpoint else {
        return Err(OAuthError::Registration(format!(
            "the authorization server `{}` offers no dynamic client registration, and no `client_id` is configured \
             in [upstream.oauth]",
            server.issuer
        )));
    };
    // A confidential client where the server takes one: a secret beside PKCE.
    let methods = &server.token_endpoint_auth_methods_supported;
    let method = if methods.is_empty() || methods.iter().any(|m| m == "client_secret_basic") {
        "client_secret_basic"
    } else if methods.iter().any(|m| m == "client_secret_post") {
        "client_secret_post"
    } else {
        "none"
    };
    let mut body = json!({
        "client_name": client_name,
        "redirect_uris": [redirect_uri],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": method,
    });
    if !scopes.is_empty() {
        body["scope"] = Value::from(scopes.join(" "));
    }
    let failed = |why: String| OAuthError::Registration(format!("registering at `{}`: {why}", server.issuer));
    let response = http
        .post(endpoint)
        .json(&body)
        .timeout(TIMEOUT)
        .send()
        .await
        .map_err(|e| failed(crate::upstream::report(&e.without_url()).to_string()))?;
    let status = response.status();
    let answer: Value = response.json().await.unwrap_or_default();
    if !status.is_success() {
        let code = answer.get("error").and_then(Value::as_str).unwrap_or("no error code");
        let text: String = code.chars().filter(|c| c.is_ascii_graphic() || *c == ' ').take(SHOWN).collect();
        return Err(failed(format!("HTTP {status}: {text}")));
    }
    let Some(client_id) = answer.get("client_id").and_then(Value::as_str) else {
        return Err(failed("the answer holds no client_id".into()));
    };
    let client_secret = answer.get("client_secret").and_then(Value::as_str).map(str::to_owned);
    let granted = answer.get("token_endpoint_auth_method").and_then(Value::as_str).unwrap_or(method);
    let auth = match (granted, &client_secret) {
        (_, None) | ("none", _) => ClientAuth::None,
        ("client_secret_post", Some(_)) => ClientAuth::Post,
        _ => ClientAuth::Basic,
    };
    tracing::info!(issuer = %server.issuer, "registered toolgate as an OAuth client (dynamic client registration)");
    Ok(Registered { client_id: client_id.to_owned(), client_secret, auth, how: "dynamic".into() })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_metadata_document_names_its_own_url_and_the_callback() {
        let doc = metadata_document(
            "https://tg.example.com/oauth/client.json",
            "toolgate",
            "https://tg.example.com/oauth/callback",
        );
        assert_eq!(doc["client_id"], "https://tg.example.com/oauth/client.json");
        assert_eq!(doc["redirect_uris"][0], "https://tg.example.com/oauth/callback");
        assert_eq!(doc["token_endpoint_auth_method"], "none");
        assert_eq!(doc["grant_types"], json!(["authorization_code", "refresh_token"]));
    }

    #[test]
    fn debug_never_shows_the_secret() {
        let r = Registered {
            client_id: "id".into(),
            client_secret: Some("s3cr3t".into()),
            auth: ClientAuth::Basic,
            how: "dynamic".into(),
        };
        assert!(!format!("{r:?}").contains("s3cr3t"));
    }
}
