//! The grant stores: expiry, refresh on use, scoping, definitions; the Redis
//! store against a real `redis-server` (see `toolgate_test_support::RedisServer`).

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::memory::MemoryStore;
use super::redis::RedisStore;
use toolgate_test_support::RedisServer;

use super::*;
use crate::auth::{ClientPolicy, PrincipalId};
use crate::jsonrpc::codes;

fn principal(kind: PrincipalKind, name: &str) -> Principal {
    Principal::new(PrincipalId::new(kind, name), Arc::new(ClientPolicy::unrestricted()))
}

fn scope(name: &str) -> Scope {
    Scope::of(&principal(PrincipalKind::ApiKey, name))
}

fn grant(tool: &str, fingerprint: u64) -> Vec<(String, u64)> {
    vec![(tool.to_owned(), fingerprint)]
}

const HOUR: Duration = Duration::from_secs(3600);

// === scopes ===

#[test]
fn scopes_keep_clients_and_credential_kinds_apart_and_anonymous_clients_together() {
    assert_eq!(Scope::of(&Principal::anonymous()), Scope::of(&principal(PrincipalKind::Anonymous, "anonymous")));
    assert_eq!(scope("alice").as_str(), "key.alice");
    assert_ne!(scope("alice"), Scope::of(&principal(PrincipalKind::Jwt, "alice")), "an API key is not a JWT");
    assert_ne!(scope("alice"), scope("bob"));
    // A JWT claim may hold anything; it never reaches into another key.
    let odd = Scope::of(&principal(PrincipalKind::Jwt, "a:b c/é"));
    assert_eq!(odd.as_str(), "jwt.a%3Ab%20c%2F%C3%A9");
}

#[test]
fn redis_keys_escape_tool_names() {
    let store = RedisStore::new(connection("redis://127.0.0.1:1/0"), "toolgate:grant:", HOUR);
    assert_eq!(store.key(&scope("alice"), "search_issues"), "toolgate:grant:key.alice:search_issues");
    assert_eq!(store.key(&scope("alice"), "a:b*c"), "toolgate:grant:key.alice:a%3Ab%2Ac");
    assert_ne!(store.key(&scope("alice"), "x:y"), store.key(&scope("alice:x"), "y"));
    assert_eq!(store.ttl_ms(), 3_600_000);
}

// === the memory store ===

#[tokio::test(start_paused = true)]
async fn a_memory_grant_expires_after_its_ttl() {
    let store = MemoryStore::new(Duration::from_secs(10));
    store.grant(&scope("alice"), &grant("echo", 1));
    assert!(store.allows(&scope("alice"), "echo", 1));
    tokio::time::advance(Duration::from_secs(11)).await;
    assert!(!store.allows(&scope("alice"), "echo", 1), "expired");
}

#[tokio::test(start_paused = true)]
async fn a_memory_grant_is_refreshed_by_each_use_and_each_fetch() {
    let store = MemoryStore::new(Duration::from_secs(10));
    let alice = scope("alice");
    store.grant(&alice, &grant("echo", 1));
    for _ in 0..3 {
        tokio::time::advance(Duration::from_secs(8)).await;
        assert!(store.allows(&alice, "echo", 1), "used within its TTL, so still alive");
    }
    // 24 s after the grant, 8 s after its last use. A fetch refreshes too.
    store.grant(&alice, &grant("echo", 1));
    tokio::time::advance(Duration::from_secs(9)).await;
    assert!(store.allows(&alice, "echo", 1));
    tokio::time::advance(Duration::from_secs(11)).await;
    assert!(!store.allows(&alice, "echo", 1), "unused for longer than the TTL");
}

#[tokio::test(start_paused = true)]
async fn a_failed_check_does_not_refresh_a_grant() {
    let store = MemoryStore::new(Duration::from_secs(10));
    store.grant(&scope("alice"), &grant("echo", 1));
    tokio::time::advance(Duration::from_secs(8)).await;
    assert!(!store.allows(&scope("alice"), "echo", 2), "another definition");
    tokio::time::advance(Duration::from_secs(3)).await;
    assert!(!store.allows(&scope("alice"), "echo", 1), "the refused check did not extend it");
}

#[test]
fn memory_grants_are_per_client_and_per_definition() {
    let store = MemoryStore::new(HOUR);
    store.grant(&scope("alice"), &[("echo".into(), 1), ("add".into(), 7)]);
    assert!(store.allows(&scope("alice"), "echo", 1));
    assert!(store.allows(&scope("alice"), "add", 7));
    assert!(!store.allows(&scope("bob"), "echo", 1), "another client");
    assert!(!store.allows(&Scope::of(&Principal::anonymous()), "echo", 1), "the anonymous scope");
    assert!(!store.allows(&scope("alice"), "echo", 2), "a changed definition must be fetched again");
    store.grant(&scope("alice"), &grant("echo", 2));
    assert!(store.allows(&scope("alice"), "echo", 2), "fetched again");
    assert!(!store.allows(&scope("alice"), "echo", 1), "the old definition no longer");
}

#[test]
fn the_memory_store_is_bounded() {
    let store = MemoryStore::with_capacity(HOUR, 50);
    for i in 0..1000 {
        store.grant(&scope(&format!("c{i}")), &grant("echo", 1));
    }
    let held = store.len();
    assert!(held <= 50, "{held} grants held, more than the capacity");
}

#[tokio::test]
async fn grants_of_a_session_and_of_a_scope() {
    let session = Grants::session();
    session.grant(&grant("echo", 1)).await.unwrap();
    assert!(session.allows("echo", 1).await.unwrap());
    assert!(!Grants::session().allows("echo", 1).await.unwrap(), "sessions share nothing");

    let store = Arc::new(GrantStore::Memory(MemoryStore::new(HOUR)));
    let alice = Grants::shared(store.clone(), scope("alice"));
    alice.grant(&grant("echo", 1)).await.unwrap();
    assert!(Grants::shared(store.clone(), scope("alice")).allows("echo", 1).await.unwrap(), "same client");
    assert!(!Grants::shared(store, scope("bob")).allows("echo", 1).await.unwrap(), "another client");
}

// === the Redis store, on a real redis-server ===

fn redis_store(server: &RedisServer, ttl: Duration) -> RedisStore {
    RedisStore::new(connection(&server.url()), "toolgate:grant:", ttl)
}

/// `[state]`'s connection to the Redis at `url`.
fn connection(url: &str) -> Arc<crate::shared::Connection> {
    Arc::new(crate::shared::Connection::open(url, &crate::config::StateConfig::default()).expect("a valid URL"))
}

/// Asks until the store answers (Redis restarting; the connection manager
/// reconnecting), for up to 30 s.
async fn until_ok<T>(mut f: impl AsyncFnMut() -> Result<T, Unavailable>) -> T {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        match f().await {
            Ok(v) => return v,
            Err(e) if Instant::now() < deadline => {
                eprintln!("not yet: {e}");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(e) => panic!("the store did not recover within 30 s: {e}"),
        }
    }
}

#[tokio::test]
async fn two_stores_on_one_redis_honour_each_others_grants_per_client() {
    let Some(server) = RedisServer::start() else { return };
    // Two stores: two replicas' connections to the same Redis.
    let (a, b) = (redis_store(&server, HOUR), redis_store(&server, HOUR));
    a.ping().await.expect("Redis answers");
    assert!(!b.allows(&scope("alice"), "echo", 1).await.unwrap());
    a.grant(&scope("alice"), &[("echo".into(), 1), ("a:b".into(), 2)]).await.unwrap();
    assert!(b.allows(&scope("alice"), "echo", 1).await.unwrap(), "granted through the other replica");
    assert!(b.allows(&scope("alice"), "a:b", 2).await.unwrap());
    assert!(!b.allows(&scope("alice"), "echo", 9).await.unwrap(), "another definition");
    assert!(!b.allows(&scope("bob"), "echo", 1).await.unwrap(), "another client");
    assert!(!b.allows(&Scope::of(&Principal::anonymous()), "echo", 1).await.unwrap());
    assert_eq!(server.command("GET toolgate:grant:key.alice:a%3Ab"), "$1", "one key per grant, the tool escaped");
}

#[tokio::test]
async fn a_grant_expires_in_redis_and_each_use_sets_its_ttl_again() {
    let Some(server) = RedisServer::start() else { return };
    let store = redis_store(&server, Duration::from_secs(60));
    store.grant(&scope("alice"), &grant("echo", 1)).await.unwrap();
    let key = store.key(&scope("alice"), "echo");
    let pttl = |s: String| s.trim_start_matches(':').parse::<i64>().unwrap();
    let set = pttl(server.command(&format!("PTTL {key}")));
    assert!((1..=60_000).contains(&set), "the TTL is set in Redis: {set} ms");

    // Let Redis expire it soon; a use sets the full TTL again.
    server.command(&format!("PEXPIRE {key} 5000"));
    assert!(store.allows(&scope("alice"), "echo", 1).await.unwrap());
    let refreshed = pttl(server.command(&format!("PTTL {key}")));
    assert!(refreshed > 5000, "refreshed by the use: {refreshed} ms");

    // And Redis forgets it once the TTL has run out.
    server.command(&format!("PEXPIRE {key} 50"));
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(server.command(&format!("PTTL {key}")), ":-2", "gone from Redis");
    assert!(!store.allows(&scope("alice"), "echo", 1).await.unwrap(), "expired");

    // A short TTL, end to end.
    let short = redis_store(&server, Duration::from_millis(200));
    short.grant(&scope("bob"), &grant("echo", 1)).await.unwrap();
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert!(!short.allows(&scope("bob"), "echo", 1).await.unwrap(), "expired after its TTL");
}

#[tokio::test]
async fn without_redis_requests_fail_within_the_bound_and_recover_when_it_returns() {
    let Some(mut server) = RedisServer::start() else { return };
    let store = redis_store(&server, HOUR);
    store.grant(&scope("alice"), &grant("echo", 1)).await.unwrap();

    server.stop();
    for _ in 0..3 {
        let started = Instant::now();
        let error = store.allows(&scope("alice"), "echo", 1).await.expect_err("Redis is down");
        // The bound, with room for a loaded machine: never a hang.
        assert!(started.elapsed() < STORE_TIMEOUT + Duration::from_secs(3), "took {:?}", started.elapsed());
        assert_eq!(error.to_error().code, codes::STATE_STORE_UNAVAILABLE);
        assert!(store.grant(&scope("alice"), &grant("echo", 1)).await.is_err(), "nor can it grant");
    }

    server.resume();
    // Nothing persisted: the grant is gone, and can be given again.
    assert!(!until_ok(async || store.allows(&scope("alice"), "echo", 1).await).await);
    store.grant(&scope("alice"), &grant("echo", 1)).await.unwrap();
    assert!(store.allows(&scope("alice"), "echo", 1).await.unwrap());
}

#[tokio::test]
async fn a_redis_that_stops_answering_fails_requests_within_the_bound() {
    let Some(server) = RedisServer::start() else { return };
    let store = redis_store(&server, HOUR);
    store.grant(&scope("alice"), &grant("echo", 1)).await.unwrap();

    // Connected, but nothing comes back: only the timeouts end the wait.
    server.freeze();
    let started = Instant::now();
    let result = store.allows(&scope("alice"), "echo", 1).await;
    let took = started.elapsed();
    server.thaw();
    assert!(result.is_err(), "a hung Redis is unavailable, not a refusal: {result:?}");
    assert!(took < STORE_TIMEOUT + Duration::from_secs(3), "took {took:?}");

    assert!(until_ok(async || store.allows(&scope("alice"), "echo", 1).await).await, "the grant is still there");
}

#[tokio::test]
async fn a_store_made_while_redis_is_down_works_once_it_is_up() {
    let Some(mut server) = RedisServer::start() else { return };
    server.stop();
    let store = redis_store(&server, HOUR);
    assert!(store.ping().await.is_err());
    assert!(store.allows(&scope("alice"), "echo", 1).await.is_err());
    server.resume();
    until_ok(async || store.grant(&scope("alice"), &grant("echo", 1)).await).await;
    assert!(store.allows(&scope("alice"), "echo", 1).await.unwrap());
}
