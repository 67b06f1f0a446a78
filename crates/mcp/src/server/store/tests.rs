use std::sync::Arc;
use std::time::Duration;

use serde_json::json;

use super::*;
use crate::protocol::Version;
use crate::server::caller::Caller;

fn session() -> Arc<Session<()>> {
    Arc::new(Session::new(SessionStore::<()>::new_id(), Version::LATEST, &json!({}), (), Caller::anonymous()))
}

fn add(store: &SessionStore<()>) -> Option<Arc<Session<()>>> {
    let place = store.reserve()?;
    let s = session();
    store.insert(place, s.clone());
    Some(s)
}

#[test]
fn places_are_counted_exactly_and_given_back() {
    let limits = Limits { max_sessions: 2, ..Limits::default() };
    let (store, mut ended) = SessionStore::<()>::with_limits(Duration::from_secs(60), limits);
    let a = add(&store).expect("room");
    let pending = store.reserve().expect("room for a second");
    assert!(store.reserve().is_none(), "a reserved place counts");
    assert!(!store.has_room());
    drop(pending);
    let _b = add(&store).expect("the unused place was given back");
    assert!(add(&store).is_none());
    assert!(store.remove(a.id()));
    assert!(a.closed().is_cancelled(), "a removed session is closed");
    assert_eq!(ended.try_recv().map(|s| s.id().to_owned()).ok(), Some(a.id().to_owned()));
    assert!(add(&store).is_some(), "a removed session frees its place");
    store.clear();
    assert!(add(&store).is_some() && add(&store).is_some(), "clear frees every place");
}

#[test]
fn idle_sessions_expire_but_pinned_ones_live_on() {
    let limits = Limits { max_sessions: 2, ..Limits::default() };
    let (store, mut ended) = SessionStore::<()>::with_limits(Duration::from_millis(200), limits);
    let idle = add(&store).expect("room");
    let pinned = add(&store).expect("room");
    store.pin(&pinned);
    assert!(pinned.is_pinned());
    std::thread::sleep(Duration::from_millis(500));
    assert!(store.get(idle.id()).is_none(), "idle past the timeout");
    let listed: Vec<_> = store.sessions().iter().map(|s| s.id().to_owned()).collect();
    assert_eq!(listed, [pinned.id().to_owned()], "an expired session is not listed");
    assert!(!idle.closed().is_cancelled(), "ended on the sweep, not on the lookup");
    store.run_pending();
    assert!(idle.closed().is_cancelled(), "the sweep ends it");
    assert_eq!(ended.try_recv().map(|s| s.id().to_owned()).ok(), Some(idle.id().to_owned()));
    assert!(store.get(pinned.id()).is_some(), "a pinned session does not expire");
    assert!(!pinned.closed().is_cancelled());
    assert!(store.reserve().is_some(), "the expired session's place is free again");
}

#[test]
fn lookups_keep_a_session_alive() {
    let (store, _ended) = SessionStore::<()>::new(Duration::from_millis(300));
    let s = add(&store).expect("room");
    for _ in 0..6 {
        std::thread::sleep(Duration::from_millis(100));
        store.touch(s.id());
    }
    store.run_pending();
    assert!(store.get(s.id()).is_some(), "600 ms of traffic every 100 ms kept it alive");
}

#[test]
fn the_same_id_again_ends_the_session_it_replaces() {
    let limits = Limits { max_sessions: 2, ..Limits::default() };
    let (store, mut ended) = SessionStore::<()>::with_limits(Duration::from_secs(60), limits);
    let first = add(&store).expect("room");
    let again = Arc::new(Session::new(first.id_arc(), Version::LATEST, &json!({}), (), Caller::anonymous()));
    store.insert(store.reserve().expect("room"), again.clone());
    assert!(first.closed().is_cancelled(), "the replaced session is closed");
    assert_eq!(ended.try_recv().map(|s| Arc::ptr_eq(&s, &first)).ok(), Some(true));
    assert!(Arc::ptr_eq(&store.get(first.id()).expect("the newcomer"), &again));
    assert!(add(&store).is_some(), "the replaced session gave its place back");
    assert!(add(&store).is_none(), "two places, two sessions");
}
