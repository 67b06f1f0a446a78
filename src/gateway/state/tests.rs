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
fn client_contexts_are_made_once_per_roots_setting_and_follow_the_log_level() {
    let s = GatewaySession::new(1);
    let made = std::sync::atomic::AtomicUsize::new(0);
    let make = |v: Value| {
        made.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        ClientContext { capabilities: Some(Arc::new(v)), log_level: s.log_level(), param_headers: Vec::new() }
    };
    let without = s.client_context(false, || make(serde_json::json!({"sampling": {}})));
    let again = s.client_context(false, || make(serde_json::json!({"other": {}})));
    assert!(Arc::ptr_eq(&without, &again), "the first one, shared");
    assert_eq!(again.capabilities.as_deref(), Some(&serde_json::json!({"sampling": {}})));
    let with = s.client_context(true, || make(serde_json::json!({"sampling": {}, "roots": {}})));
    assert_eq!(
        with.capabilities.as_deref(),
        Some(&serde_json::json!({"sampling": {}, "roots": {}})),
        "with roots, apart"
    );
    assert_eq!(made.load(std::sync::atomic::Ordering::Relaxed), 2);

    // A new log level: the next calls say it, with the same capabilities.
    assert_eq!(without.log_level, None);
    s.set_log_level(serde_json::json!("debug"));
    let after = s.client_context(false, || make(serde_json::json!({"other": {}})));
    assert_eq!(after.log_level, Some(serde_json::json!("debug")));
    assert!(Arc::ptr_eq(after.capabilities.as_ref().unwrap(), without.capabilities.as_ref().unwrap()));
    let with_after = s.client_context(true, || make(serde_json::json!({"other": {}})));
    assert_eq!(with_after.log_level, Some(serde_json::json!("debug")));
    assert_eq!(made.load(std::sync::atomic::Ordering::Relaxed), 2, "remade from the old, not made again");
}
