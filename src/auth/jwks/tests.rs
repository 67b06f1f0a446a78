use std::sync::Arc;
use std::time::Duration;

use serde_json::json;

use super::*;
use toolgate_test_support::jwt::{JwksServer, Reply, TestKey, client, jwks};

fn settings(min_refresh_interval: Duration) -> JwksSettings {
    JwksSettings {
        min_refresh_interval,
        max_age: Duration::from_secs(3600),
        fetch_timeout: Duration::from_secs(5),
        max_bytes: 64 * 1024,
    }
}

fn store(server: &JwksServer, settings: JwksSettings) -> KeyStore {
    KeyStore::remote(server.url.parse().expect("url"), client(), settings)
}

fn kids(keys: &[Arc<VerifyKey>]) -> Vec<&str> {
    keys.iter().map(|k| k.kid.as_deref().unwrap_or("-")).collect()
}

#[test]
fn only_usable_signing_keys_are_kept() {
    let ec = TestKey::ec("ec");
    let ed = TestKey::ed("ed");
    let mut rsa_no_alg = TestKey::rsa("rsa").jwk();
    rsa_no_alg.as_object_mut().expect("object").remove("alg");
    let mut enc = rsa_no_alg.clone();
    enc["kid"] = json!("enc");
    enc["use"] = json!("enc");
    let mut mismatch = ec.jwk();
    mismatch["kid"] = json!("mismatch");
    mismatch["alg"] = json!("ES384");
    let mut sign_only = ed.jwk();
    sign_only["kid"] = json!("sign-only");
    sign_only["key_ops"] = json!(["sign"]);
    let mut verify_ops = ed.jwk();
    verify_ops["kid"] = json!("verify-ops");
    verify_ops["key_ops"] = json!(["verify"]);
    let set = json!({ "keys": [
        ec.jwk(),
        ed.jwk(),
        rsa_no_alg,
        enc,
        mismatch,
        sign_only,
        verify_ops,
        { "kty": "EC", "crv": "P-384", "kid": "p384", "x": "AAAA", "y": "AAAA" },
        { "kty": "oct", "kid": "hmac", "k": "c2VjcmV0" },
        { "kty": "OKP", "crv": "X25519", "kid": "x25519", "x": "AAAA" },
        { "kty": "PQ", "kid": "future" },
        42,
        "not a key",
    ]});
    let keys = parse_jwks(set.to_string().as_bytes()).expect("parses");
    assert_eq!(kids(&keys), ["ec", "ed", "rsa", "verify-ops"]);
    let algs: Vec<Algorithm> = keys.iter().map(|k| k.alg).collect();
    assert_eq!(algs, [Algorithm::ES256, Algorithm::EdDSA, Algorithm::RS256, Algorithm::EdDSA]);
}

#[test]
fn documents_that_are_not_key_sets_are_refused() {
    assert!(matches!(parse_jwks(b"not json"), Err(JwksError::Parse(_))));
    assert!(matches!(parse_jwks(b"[]"), Err(JwksError::Parse(_))));
    assert!(matches!(parse_jwks(br#"{"keys": {}}"#), Err(JwksError::Parse(_))));
    assert_eq!(parse_jwks(br#"{"keys": []}"#).unwrap_err(), JwksError::NoUsableKey);
    assert_eq!(parse_jwks(br#"{"keys": [{"kty": "oct", "k": "AA"}]}"#).unwrap_err(), JwksError::NoUsableKey);
}

#[test]
fn a_token_without_kid_may_use_any_key_of_its_algorithm() {
    let (a, b, c) = (TestKey::ec("a"), TestKey::ec("b"), TestKey::ed("c"));
    let set = KeySet {
        keys: parse_jwks(jwks(&[&a, &b, &c]).to_string().as_bytes()).expect("parses"),
        loaded_at: None,
        generation: 1,
    };
    assert_eq!(kids(&set.matching(None, Algorithm::ES256)), ["a", "b"]);
    assert_eq!(kids(&set.matching(Some("b"), Algorithm::ES256)), ["b"]);
    assert!(set.matching(Some("c"), Algorithm::ES256).is_empty(), "the kid's key is of another algorithm");
    assert!(set.matching(None, Algorithm::RS256).is_empty());
}

#[tokio::test]
async fn keys_are_fetched_on_first_use_and_then_cached() {
    let key = TestKey::ec("k1");
    let server = JwksServer::start(Reply::Json(jwks(&[&key]))).await;
    let keys = store(&server, settings(Duration::from_secs(30)));
    assert_eq!(server.hits(), 0, "nothing is fetched before it is needed");
    assert_eq!(kids(&keys.find(Some("k1"), Algorithm::ES256).await.expect("found")), ["k1"]);
    for _ in 0..10 {
        keys.find(Some("k1"), Algorithm::ES256).await.expect("found");
    }
    assert_eq!(server.hits(), 1);
}

#[tokio::test]
async fn an_unknown_kid_refreshes_and_finds_a_rotated_key() {
    let (old, new) = (TestKey::ec("old"), TestKey::ed("new"));
    let server = JwksServer::start(Reply::Json(jwks(&[&old]))).await;
    let keys = store(&server, settings(Duration::ZERO));
    assert_eq!(keys.refresh_now().await, Ok(1));
    server.set(Reply::Json(jwks(&[&old, &new])));
    assert_eq!(kids(&keys.find(Some("new"), Algorithm::EdDSA).await.expect("found after refresh")), ["new"]);
    assert_eq!(server.hits(), 2);
    assert_eq!(keys.len(), 2);
}

#[tokio::test]
async fn unknown_kids_cannot_make_toolgate_fetch_more_than_once_per_interval() {
    let (known, rotated) = (TestKey::ec("known"), TestKey::ec("rotated"));
    let server = JwksServer::start(Reply::Json(jwks(&[&known]))).await;
    let keys = store(&server, settings(Duration::from_secs(3600)));
    keys.find(Some("known"), Algorithm::ES256).await.expect("found");
    assert_eq!(server.hits(), 1);
    server.set(Reply::Json(jwks(&[&known, &rotated])));
    for i in 0..50 {
        let kid = format!("forged-{i}");
        assert_eq!(keys.find(Some(&kid), Algorithm::ES256).await.unwrap_err(), KeyLookupError::UnknownKey);
    }
    assert_eq!(keys.find(Some("rotated"), Algorithm::ES256).await.unwrap_err(), KeyLookupError::UnknownKey);
    assert_eq!(server.hits(), 1, "the rate bound held");
    keys.find(Some("known"), Algorithm::ES256).await.expect("known keys still work");
}

#[tokio::test]
async fn after_the_interval_an_unknown_kid_refreshes_again() {
    let (first, second) = (TestKey::ec("first"), TestKey::ec("second"));
    let server = JwksServer::start(Reply::Json(jwks(&[&first]))).await;
    let keys = store(&server, settings(Duration::from_millis(300)));
    keys.find(Some("first"), Algorithm::ES256).await.expect("found");
    server.set(Reply::Json(jwks(&[&first, &second])));
    assert_eq!(keys.find(Some("second"), Algorithm::ES256).await.unwrap_err(), KeyLookupError::UnknownKey);
    assert_eq!(server.hits(), 1);
    tokio::time::sleep(Duration::from_millis(400)).await;
    keys.find(Some("second"), Algorithm::ES256).await.expect("found after the interval");
    assert_eq!(server.hits(), 2);
}

#[tokio::test]
async fn concurrent_lookups_share_one_fetch() {
    let key = TestKey::ed("k");
    let server = JwksServer::start(Reply::Slow(Duration::from_millis(200), jwks(&[&key]))).await;
    let keys = Arc::new(store(&server, settings(Duration::ZERO)));
    let lookups: Vec<_> = (0..20)
        .map(|_| {
            let keys = keys.clone();
            crate::spawn(async move { keys.find(Some("k"), Algorithm::EdDSA).await.map(|k| k.len()) })
        })
        .collect();
    for lookup in lookups {
        assert_eq!(lookup.await.expect("task"), Ok(1));
    }
    assert_eq!(server.hits(), 1);
}

#[tokio::test]
async fn a_failing_refresh_keeps_the_keys_already_loaded() {
    let key = TestKey::rsa("k");
    let server = JwksServer::start(Reply::Json(jwks(&[&key]))).await;
    let keys = store(&server, settings(Duration::ZERO));
    keys.find(Some("k"), Algorithm::RS256).await.expect("found");
    for failure in [Reply::Status(500), Reply::Json(json!({"keys": []})), Reply::Json(json!("junk"))] {
        server.set(failure);
        assert_eq!(keys.find(Some("other"), Algorithm::RS256).await.unwrap_err(), KeyLookupError::UnknownKey);
        keys.find(Some("k"), Algorithm::RS256).await.expect("the old key is still there");
    }
    assert_eq!(server.hits(), 4);
}

#[tokio::test]
async fn keys_that_never_loaded_are_unavailable() {
    let server = JwksServer::start(Reply::Status(503)).await;
    let keys = store(&server, settings(Duration::ZERO));
    assert_eq!(keys.find(Some("k"), Algorithm::ES256).await.unwrap_err(), KeyLookupError::Unavailable);
    let status = keys.refresh_now().await.unwrap_err();
    assert_eq!(status, JwksError::Status { url: server.url.clone(), status: 503 });

    // Nobody listening at all.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}/jwks.json", listener.local_addr().expect("addr"));
    drop(listener);
    let keys = KeyStore::remote(url.parse().expect("url"), client(), settings(Duration::ZERO));
    assert_eq!(keys.find(None, Algorithm::ES256).await.unwrap_err(), KeyLookupError::Unavailable);
    assert!(matches!(keys.refresh_now().await, Err(JwksError::Fetch { .. })));
}

#[tokio::test]
async fn a_slow_server_is_given_up_on_after_the_timeout() {
    let key = TestKey::ec("k");
    let server = JwksServer::start(Reply::Slow(Duration::from_secs(30), jwks(&[&key]))).await;
    let mut slow = settings(Duration::ZERO);
    slow.fetch_timeout = Duration::from_millis(200);
    let keys = store(&server, slow);
    let started = std::time::Instant::now();
    assert_eq!(keys.find(Some("k"), Algorithm::ES256).await.unwrap_err(), KeyLookupError::Unavailable);
    assert!(started.elapsed() < Duration::from_secs(10), "took {:?}", started.elapsed());
    match keys.refresh_now().await {
        Err(JwksError::Fetch { message, .. }) => assert!(message.contains("timed out"), "{message}"),
        other => panic!("expected a timeout, got {other:?}"),
    }
}

#[tokio::test]
async fn oversized_bodies_and_redirects_are_refused() {
    let server = JwksServer::start(Reply::Huge(100_000)).await;
    let keys = store(&server, settings(Duration::ZERO));
    assert_eq!(keys.refresh_now().await, Err(JwksError::TooLarge { limit: 64 * 1024 }));
    server.set(Reply::Redirect("http://127.0.0.1:1/elsewhere"));
    assert_eq!(keys.refresh_now().await, Err(JwksError::Status { url: server.url.clone(), status: 302 }));
    assert_eq!(keys.len(), 0);
}

#[tokio::test]
async fn stale_keys_are_refreshed_so_withdrawn_keys_stop_working() {
    let (a, b) = (TestKey::ec("a"), TestKey::ec("b"));
    let server = JwksServer::start(Reply::Json(jwks(&[&a, &b]))).await;
    let mut stale = settings(Duration::ZERO);
    stale.max_age = Duration::ZERO;
    let keys = store(&server, stale);
    keys.find(Some("a"), Algorithm::ES256).await.expect("found");
    server.set(Reply::Json(jwks(&[&b])));
    assert_eq!(keys.find(Some("a"), Algorithm::ES256).await.unwrap_err(), KeyLookupError::UnknownKey);
    keys.find(Some("b"), Algorithm::ES256).await.expect("b is still published");
    assert_eq!(server.hits(), 3);
    // A stale set whose refresh fails is still used.
    server.set(Reply::Status(500));
    keys.find(Some("b"), Algorithm::ES256).await.expect("kept after a failed refresh");
}

#[tokio::test]
async fn a_jwks_file_is_read_once() {
    let key = TestKey::ed("file-key");
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("jwks.json");
    std::fs::write(&path, jwks(&[&key]).to_string()).expect("write");
    let keys = KeyStore::from_file(&path).expect("loads");
    std::fs::remove_file(&path).expect("remove");
    assert_eq!(kids(&keys.find(Some("file-key"), Algorithm::EdDSA).await.expect("found")), ["file-key"]);
    assert_eq!(keys.find(Some("other"), Algorithm::EdDSA).await.unwrap_err(), KeyLookupError::UnknownKey);
    assert_eq!(keys.refresh_now().await, Ok(1));
    assert!(matches!(KeyStore::from_file(&path), Err(JwksError::File { .. })));
}

#[test]
fn urls_in_messages_lose_their_secrets() {
    let url = url::Url::parse("https://user:pw@idp.example.com/jwks?token=abc#frag").expect("url");
    assert_eq!(shown_url(&url), "https://idp.example.com/jwks");
}
