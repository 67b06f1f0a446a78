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
