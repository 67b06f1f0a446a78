//! Unit tests of `error.rs`.

use super::*;

#[derive(Debug, thiserror::Error)]
#[error("connection refused")]
struct Refused;

#[derive(Debug, thiserror::Error)]
#[error("cannot connect to 127.0.0.1:9")]
struct Connect(#[source] Refused);

#[test]
fn messages_carry_the_whole_chain_and_retry_follows_the_facts() {
    let e = UpstreamError::Unavailable { upstream: "gh".into(), source: Cause::new(Connect(Refused)) };
    assert_eq!(e.to_string(), "upstream 'gh' is unavailable", "Display is this error alone");
    assert_eq!(
        e.report().to_string(),
        "upstream 'gh' is unavailable: cannot connect to 127.0.0.1:9: connection refused"
    );
    let object = e.to_error_object();
    assert_eq!((object.code, object.message.as_str()), (codes::UPSTREAM_UNAVAILABLE, &*e.report().to_string()));
    assert_eq!(e.retry(), Retry::NotSent);
    let closed = UpstreamError::Closed { upstream: "gh".into(), source: Cause::msg("exited (status 3)") };
    assert_eq!(closed.report().to_string(), "upstream 'gh' closed the connection: exited (status 3)");
    assert_eq!(closed.retry(), Retry::SentNoReply);
    assert_eq!(UpstreamError::SessionExpired { upstream: "gh".into() }.retry(), Retry::NotSent);
    assert_eq!(UpstreamError::Cancelled.retry(), Retry::Never);
}

#[test]
fn a_401_is_found_through_a_failed_handshake_with_its_resource_metadata() {
    let challenge = r#"Bearer error="invalid_token", resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp""#;
    let refused =
        HttpStatus { status: http::StatusCode::UNAUTHORIZED, body: String::new(), challenge: Some(challenge.into()) };
    let http = UpstreamError::Http { upstream: "gh".into(), source: Cause::new(refused) };
    let start = UpstreamError::Start { upstream: "gh".into(), source: Cause::new(http.clone()) };
    for e in [&http, &start] {
        assert!(e.is_unauthorized(), "{e:?}");
        assert_eq!(
            e.resource_metadata().as_deref(),
            Some("https://mcp.example.com/.well-known/oauth-protected-resource/mcp")
        );
    }
    let forbidden = HttpStatus { status: http::StatusCode::FORBIDDEN, body: String::new(), challenge: None };
    let e = UpstreamError::Http { upstream: "gh".into(), source: Cause::new(forbidden) };
    assert!(!e.is_unauthorized() && e.resource_metadata().is_none());
    assert_eq!(
        resource_metadata_of("Bearer resource_metadata=https://a/x, scope=\"y\"").as_deref(),
        Some("https://a/x")
    );
    assert_eq!(resource_metadata_of("Basic realm=\"x\""), None);
    assert_eq!(resource_metadata_of("Bearer realm=\"x\""), None);
}
