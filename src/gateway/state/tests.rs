//! Unit tests of `state` (state.rs).

use super::*;

#[tokio::test]
async fn grants_are_per_definition() {
    let s = GatewaySession::new(2);
    assert!(!s.grants.allows("a", 1).await.unwrap());
    s.grants.grant(&[("a".to_owned(), 1)]).await.unwrap();
    assert!(s.grants.allows("a", 1).await.unwrap());
    assert!(!s.grants.allows("a", 2).await.unwrap(), "a changed definition must be fetched again");
    assert!(!GatewaySession::new(2).grants.allows("a", 1).await.unwrap(), "sessions do not share grants");
}
