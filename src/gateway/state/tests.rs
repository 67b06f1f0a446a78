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

#[test]
fn declared_capabilities_are_worked_out_once_per_roots_setting() {
    let s = GatewaySession::new(1);
    let made = std::sync::atomic::AtomicUsize::new(0);
    let make = |v: Value| {
        made.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        v
    };
    let without = s.declared_capabilities(false, || make(serde_json::json!({"sampling": {}})));
    let again = s.declared_capabilities(false, || make(serde_json::json!({"other": {}})));
    assert!(Arc::ptr_eq(&without, &again), "the first one, shared");
    assert_eq!(*again, serde_json::json!({"sampling": {}}));
    let with = s.declared_capabilities(true, || make(serde_json::json!({"sampling": {}, "roots": {}})));
    assert_eq!(*with, serde_json::json!({"sampling": {}, "roots": {}}), "with roots, apart");
    assert_eq!(made.load(std::sync::atomic::Ordering::Relaxed), 2);
}
