use std::time::{Duration, SystemTime};

use serde_json::json;

use super::*;

fn codec() -> Codec {
    Codec::with_key(b"test key of toolgate", "replica-a")
}

fn binding(args: Value, principal: &str) -> Binding {
    let params = json!({"name": "test_elicitation", "arguments": args, "_meta": {"progressToken": 1}});
    Binding::of("fixture", "tools/call", Some(&params), principal)
}

fn later(secs: u64) -> SystemTime {
    SystemTime::now() + Duration::from_secs(secs)
}

#[test]
fn a_state_verifies_for_its_own_request_and_client_and_names_its_hold() {
    let b = binding(json!({"message": "hi"}), "anonymous");
    let token = codec().sign("hold-1", &b, later(60));
    assert!(codec().is_own(&token));
    assert_eq!(codec().verify(&token, &b, SystemTime::now()), Ok("hold-1".to_owned()));
    assert_eq!(b.name, "test_elicitation");
}

#[test]
fn a_changed_state_fails_the_integrity_check() {
    let b = binding(json!({"message": "hi"}), "anonymous");
    let token = codec().sign("hold-1", &b, later(60));
    // Flip one character of the payload, then of the tag.
    for at in [2, token.len() - 2] {
        let mut bytes = token.clone().into_bytes();
        bytes[at] = if bytes[at] == b'A' { b'B' } else { b'A' };
        let changed = String::from_utf8(bytes).expect("ascii");
        assert_eq!(codec().verify(&changed, &b, SystemTime::now()), Err(StateError::Tampered), "at {at}");
        assert!(!codec().is_own(&changed));
    }
    // Another key is another toolgate.
    let other = Codec::with_key(b"another key", "replica-a");
    assert_eq!(other.verify(&token, &b, SystemTime::now()), Err(StateError::Tampered));
    for junk in ["", "abc", "a.b.c", "!!!.???"] {
        assert!(matches!(
            codec().verify(junk, &b, SystemTime::now()),
            Err(StateError::Malformed | StateError::Tampered)
        ));
    }
}

#[test]
fn an_expired_state_is_refused() {
    let b = binding(json!({}), "anonymous");
    let token = codec().sign("hold-1", &b, later(10));
    assert_eq!(codec().verify(&token, &b, later(11)), Err(StateError::Expired));
}

#[test]
fn another_client_cannot_use_the_state() {
    let alice = binding(json!({"message": "hi"}), "key.alice");
    let token = codec().sign("hold-1", &alice, later(60));
    let bob = binding(json!({"message": "hi"}), "key.bob");
    assert_eq!(codec().verify(&token, &bob, SystemTime::now()), Err(StateError::OtherClient));
}

#[test]
fn the_state_is_bound_to_the_arguments_the_name_and_the_upstream() {
    let b = binding(json!({"message": "hi", "n": {"x": 1, "y": [1, 2]}}), "anonymous");
    let token = codec().sign("hold-1", &b, later(60));
    // Key order does not matter; _meta, inputResponses and requestState do not count.
    let reordered = json!({
        "arguments": {"n": {"y": [1, 2], "x": 1}, "message": "hi"}, "name": "test_elicitation",
        "inputResponses": {"r1": {}}, "requestState": token,
    });
    let same = Binding::of("fixture", "tools/call", Some(&reordered), "anonymous");
    assert_eq!(codec().verify(&token, &same, SystemTime::now()), Ok("hold-1".to_owned()));
    let other_args = binding(json!({"message": "bye", "n": {"x": 1, "y": [1, 2]}}), "anonymous");
    assert_eq!(codec().verify(&token, &other_args, SystemTime::now()), Err(StateError::OtherRequest));
    let other_tool = Binding::of("fixture", "tools/call", Some(&json!({"name": "echo"})), "anonymous");
    assert_eq!(codec().verify(&token, &other_tool, SystemTime::now()), Err(StateError::OtherRequest));
    let other_upstream = Binding { upstream: "other".into(), ..b.clone() };
    assert_eq!(codec().verify(&token, &other_upstream, SystemTime::now()), Err(StateError::OtherRequest));
}

#[test]
fn a_state_of_another_replica_is_refused_by_name() {
    let b = binding(json!({}), "anonymous");
    let token = Codec::with_key(b"test key of toolgate", "replica-b").sign("hold-1", &b, later(60));
    assert_eq!(codec().verify(&token, &b, SystemTime::now()), Err(StateError::OtherReplica));
}

#[test]
fn with_a_shared_key_every_replica_checks_a_state_and_learns_who_holds_its_call() {
    let b = binding(json!({"x": 1}), "key.alice");
    let token = Codec::with_key(b"test key of toolgate", "replica-b").sign("hold-1", &b, later(60));
    let here = codec();
    let verified = here.check(&token, &b, SystemTime::now()).expect("checks out");
    assert_eq!(verified, Verified { hold: "hold-1".into(), replica: "replica-b".into() });
    // Everything but the replica is still checked here.
    assert_eq!(
        here.check(&token, &binding(json!({"x": 1}), "key.bob"), SystemTime::now()),
        Err(StateError::OtherClient)
    );
    assert_eq!(
        here.check(&token, &binding(json!({"x": 2}), "key.alice"), SystemTime::now()),
        Err(StateError::OtherRequest)
    );
    assert_eq!(here.check(&token, &b, later(120)), Err(StateError::Expired));
    let (payload, tag) = token.split_once('.').expect("two parts");
    let flipped = if tag.starts_with('A') { "B" } else { "A" };
    let forged = format!("{payload}.{flipped}{}", &tag[1..]);
    assert_eq!(here.check(&forged, &b, SystemTime::now()), Err(StateError::Tampered));
}

#[test]
fn random_codecs_do_not_accept_each_others_states() {
    let b = binding(json!({}), "anonymous");
    let (one, two) = (Codec::random(), Codec::random());
    let token = one.sign("h", &b, later(60));
    assert!(one.is_own(&token));
    assert!(!two.is_own(&token));
}
