use super::*;

#[test]
fn credential_names() {
    for name in [
        "GITHUB_PERSONAL_ACCESS_TOKEN",
        "BRAVE_API_KEY",
        "apiKey",
        "X-API-Key",
        "Authorization",
        "X-Auth-Token",
        "DB_PASSWORD",
        "CLIENT_SECRET",
        "GITHUB_PAT",
        "SENTRY_DSN",
        "ACCESSTOKEN",
        "Cookie",
        "--api-key",
        "access_token",
    ] {
        assert!(is_secret_name(name), "{name}");
    }
    for name in ["MEMORY_FILE_PATH", "NODE_ENV", "LOG_LEVEL", "KEYWORDS", "Accept", "X-Client-Name", "PATH", "region"] {
        assert!(!is_secret_name(name), "{name}");
    }
}

#[test]
fn token_shapes() {
    for value in [
        "ghp_16C7e42F292c6912E7710c838347Ae178B4a",
        "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz",
        "sk-proj-abcdefghijklmnopqrstuvwx",
        "xoxb-1234567890-abcdefghijkl",
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.sig",
        "BSAx7Kq2vP9mN3rT5wY8zL1",
        "3f8a9c2e7b1d4f6a8c0e2b4d6f8a0c2e",
    ] {
        assert!(looks_like_token(value), "{value}");
    }
    for value in [
        "/Users/me/Desktop",
        "production",
        "true",
        "8080",
        "@modelcontextprotocol/server-filesystem",
        "mcp-server-fetch",
        "api.example-2024.example.com",
        "550e8400-e29b-41d4-a716-446655440000",
        "--local-timezone=America/New_York",
        "short1234",
        "server-perplexity-ask",
    ] {
        assert!(!looks_like_token(value), "{value}");
    }
}

#[test]
fn schemes() {
    assert_eq!(split_scheme("Bearer abc123"), Some(("Bearer", "abc123")));
    assert_eq!(split_scheme("token ghp_x"), Some(("token", "ghp_x")));
    assert_eq!(split_scheme("abc123"), None);
    assert_eq!(split_scheme("Bearer "), None);
    assert_eq!(split_scheme("something else"), None);
}

fn secrets_of(url: &str) -> Vec<(&str, String)> {
    url_secrets(url).into_iter().map(|s| (&url[s.range], s.what)).collect()
}

#[test]
fn url_credentials() {
    assert_eq!(secrets_of("postgresql://me:hunter2@db.example/app"), [("hunter2", "PASSWORD".into())]);
    assert_eq!(secrets_of("https://abc123token@host.example/x"), [("abc123token", "URL_CREDENTIALS".into())]);
    assert_eq!(
        secrets_of("https://server.example/mcp?api_key=k123&profile=work&token=t9"),
        [("k123", "API_KEY".into()), ("t9", "TOKEN".into())]
    );
    assert_eq!(
        secrets_of("https://actions.example/mcp/sk-ak-0123456789abcdefghij/sse"),
        [("sk-ak-0123456789abcdefghij", "URL_SECRET".into())]
    );
    assert!(secrets_of("https://mcp.context7.com/mcp").is_empty());
    assert!(secrets_of("postgresql://localhost/mydb").is_empty());
    assert!(secrets_of("not a url").is_empty());
    assert!(secrets_of("https://example.com/?q=hello&page=2").is_empty());
}
