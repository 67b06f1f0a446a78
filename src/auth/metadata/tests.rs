use serde_json::json;

use super::*;

fn jwt(audience: &str, scopes: &[&str], servers: &[&str]) -> JwtConfig {
    JwtConfig {
        issuer: "https://idp.example.com".into(),
        audiences: vec![audience.into(), "https://other.example.com".into()],
        jwks_url: Some("https://idp.example.com/jwks".into()),
        jwks_file: None,
        client_claim: "sub".into(),
        authorization_servers: servers.iter().map(|s| (*s).to_owned()).collect(),
        scopes_supported: scopes.iter().map(|s| (*s).to_owned()).collect(),
    }
}

#[test]
fn the_document_names_the_resource_servers_scopes_and_header_method() {
    let doc =
        protected_resource_metadata(&jwt("https://gateway.example.com/mcp", &["mcp"], &["https://idp.example.com"]));
    assert_eq!(
        doc,
        json!({
            "resource": "https://gateway.example.com/mcp",
            "authorization_servers": ["https://idp.example.com"],
            "bearer_methods_supported": ["header"],
            "scopes_supported": ["mcp"],
        })
    );
    // Key order is part of what clients see; keep it stable.
    let keys: Vec<&String> = doc.as_object().expect("object").keys().collect();
    assert_eq!(keys, ["resource", "authorization_servers", "bearer_methods_supported", "scopes_supported"]);
}

#[test]
fn the_issuer_is_the_default_server_and_empty_scopes_are_left_out() {
    let doc = protected_resource_metadata(&jwt("https://gateway.example.com/mcp", &[], &[]));
    assert_eq!(doc["authorization_servers"], json!(["https://idp.example.com"]));
    assert!(doc.get("scopes_supported").is_none());
}

#[test]
fn the_metadata_url_goes_between_host_and_path() {
    assert_eq!(
        resource_metadata_url("https://gateway.example.com/mcp").as_deref(),
        Some("https://gateway.example.com/.well-known/oauth-protected-resource/mcp")
    );
    assert_eq!(
        resource_metadata_url("https://gateway.example.com").as_deref(),
        Some("https://gateway.example.com/.well-known/oauth-protected-resource")
    );
    assert_eq!(
        resource_metadata_url("http://127.0.0.1:8080/tools/mcp?tenant=a").as_deref(),
        Some("http://127.0.0.1:8080/.well-known/oauth-protected-resource/tools/mcp?tenant=a")
    );
    assert_eq!(resource_metadata_url("api://gateway"), None);
    assert_eq!(resource_metadata_url("not a url"), None);
}

#[test]
fn both_well_known_paths_are_served() {
    assert_eq!(
        well_known_paths("https://gateway.example.com/mcp", "/mcp"),
        ["/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp"]
    );
    // Behind a proxy that maps /tools/mcp onto toolgate's /mcp.
    assert_eq!(
        well_known_paths("https://example.com/tools/mcp", "/mcp"),
        [
            "/.well-known/oauth-protected-resource",
            "/.well-known/oauth-protected-resource/tools/mcp",
            "/.well-known/oauth-protected-resource/mcp"
        ]
    );
    assert_eq!(well_known_paths("https://example.com", "/"), ["/.well-known/oauth-protected-resource"]);
}
