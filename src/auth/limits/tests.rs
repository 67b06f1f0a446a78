use std::num::NonZeroU32;
use std::sync::Arc;
use std::time::Duration;

use governor::clock::FakeRelativeClock;

use super::*;
use crate::auth::{ClientPolicy, PrincipalKind, ToolPolicy};

fn principal(kind: PrincipalKind, name: &str, calls_per_minute: u32, max_sessions: u32) -> Principal {
    let policy = ClientPolicy {
        entry: Some(name.to_owned()),
        tools: ToolPolicy::allow_all(),
        max_sessions: NonZeroU32::new(max_sessions),
        calls_per_minute: NonZeroU32::new(calls_per_minute),
        concerns: Default::default(),
        limits: Default::default(),
        upstream: Default::default(),
        identity_claims: Default::default(),
        generation: 0,
    };
    Principal::new(PrincipalId::new(kind, name), Arc::new(policy))
}

#[test]
fn a_burst_of_calls_per_minute_then_one_every_interval() {
    let clock = FakeRelativeClock::default();
    let limiter = CallLimiter::with_clock(clock.clone());
    let alice = principal(PrincipalKind::ApiKey, "alice", 3, 0);
    for _ in 0..3 {
        assert_eq!(limiter.check(&alice), Ok(()));
    }
    // Refill is one call per 60 s / 3 = 20 s.
    assert_eq!(limiter.check(&alice), Err(RetryAfter(Duration::from_secs(20))));
    clock.advance(Duration::from_secs(5));
    assert_eq!(limiter.check(&alice), Err(RetryAfter(Duration::from_secs(15))));
    clock.advance(Duration::from_secs(15));
    assert_eq!(limiter.check(&alice), Ok(()));
    assert!(limiter.check(&alice).is_err());
    // After a full minute the whole burst is back.
    clock.advance(Duration::from_secs(60));
    for _ in 0..3 {
        assert_eq!(limiter.check(&alice), Ok(()));
    }
    assert!(limiter.check(&alice).is_err());
}

#[test]
fn each_client_has_its_own_bucket() {
    let limiter = CallLimiter::with_clock(FakeRelativeClock::default());
    let alice = principal(PrincipalKind::ApiKey, "alice", 1, 0);
    let bob = principal(PrincipalKind::ApiKey, "bob", 1, 0);
    // Same name, other kind: another client.
    let jwt_alice = principal(PrincipalKind::Jwt, "alice", 1, 0);
    assert_eq!(limiter.check(&alice), Ok(()));
    assert!(limiter.check(&alice).is_err());
    assert_eq!(limiter.check(&bob), Ok(()));
    assert_eq!(limiter.check(&jwt_alice), Ok(()));
}

#[test]
fn no_limit_means_no_limit() {
    let limiter = CallLimiter::new();
    let free = principal(PrincipalKind::ApiKey, "free", 0, 0);
    for _ in 0..10_000 {
        assert_eq!(limiter.check(&free), Ok(()));
    }
    assert_eq!(limiter.check(&Principal::anonymous()), Ok(()));
}

#[test]
fn retry_after_rounds_up_to_whole_seconds() {
    assert_eq!(RetryAfter(Duration::from_millis(1)).header_secs(), 1);
    assert_eq!(RetryAfter(Duration::ZERO).header_secs(), 1);
    assert_eq!(RetryAfter(Duration::from_millis(1500)).header_secs(), 2);
    assert_eq!(RetryAfter(Duration::from_secs(20)).header_secs(), 20);
    assert_eq!(RetryAfter(Duration::from_secs(20)).to_string(), "rate limit exceeded: retry in 20 s");
}

#[test]
fn sessions_are_capped_per_client_and_released_on_drop() {
    let sessions = SessionLimiter::new();
    let alice = principal(PrincipalKind::ApiKey, "alice", 0, 2);
    let bob = principal(PrincipalKind::ApiKey, "bob", 0, 1);
    let first = sessions.acquire(&alice).expect("first");
    let second = sessions.acquire(&alice).expect("second");
    assert_eq!(sessions.acquire(&alice).unwrap_err(), TooManySessions { limit: 2 });
    assert_eq!(sessions.count(alice.id()), 2);
    let bobs = sessions.acquire(&bob).expect("bob is counted apart");
    drop(first);
    assert_eq!(sessions.count(alice.id()), 1);
    let third = sessions.acquire(&alice).expect("a slot was released");
    assert_eq!(third.principal(), alice.id());
    drop((second, third, bobs));
    assert_eq!(sessions.count(alice.id()), 0);
    assert!(sessions.counts.lock().is_empty(), "no entry is kept for clients without sessions");
}

#[test]
fn unlimited_clients_are_still_counted() {
    let sessions = SessionLimiter::new();
    let anon = Principal::anonymous();
    let guards: Vec<_> = (0..100).map(|_| sessions.acquire(&anon).expect("no cap")).collect();
    assert_eq!(sessions.count(anon.id()), 100);
    drop(guards);
    assert_eq!(sessions.count(anon.id()), 0);
}

#[test]
fn concurrent_acquires_never_exceed_the_cap() {
    let sessions = SessionLimiter::new();
    let alice = principal(PrincipalKind::ApiKey, "alice", 0, 5);
    let granted: Vec<SessionGuard> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..16).map(|_| scope.spawn(|| sessions.acquire(&alice).ok())).collect();
        handles.into_iter().filter_map(|h| h.join().expect("thread")).collect()
    });
    assert_eq!(granted.len(), 5);
    assert_eq!(sessions.count(alice.id()), 5);
}
