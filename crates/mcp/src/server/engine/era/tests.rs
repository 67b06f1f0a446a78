//! The era rules of both transports, body by body.

use serde_json::{Value, json};

use super::{Era, Pinned, of_post, opens_session};
use crate::jsonrpc::{Body, Id};
use crate::protocol::modern::meta;

fn body(value: Value) -> Result<Body, crate::jsonrpc::DecodeError> {
    Body::decode(value.to_string().as_bytes())
}

fn enveloped(method: &str, id: u64) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method,
           "params": {"_meta": {meta::PROTOCOL_VERSION: "2026-07-28"}}})
}

fn plain(method: &str, id: u64) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": {}})
}

fn refused_code(era: &Era) -> Option<(i64, u16)> {
    match era {
        Era::Refused(response, status) => response.outcome.error_code().map(|code| (code, *status)),
        _ => None,
    }
}

#[test]
fn a_post_is_decided_by_its_body_then_its_header() {
    assert!(matches!(of_post(body(enveloped("tools/list", 1)), None), Era::Sessionless(_)));
    assert!(matches!(of_post(body(plain("tools/list", 1)), None), Era::Handshake(Ok(_))));
    assert!(matches!(of_post(body(plain("tools/list", 1)), Some("2025-11-25")), Era::Handshake(Ok(_))));
    let answer = json!({"jsonrpc": "2.0", "id": 3, "result": {}});
    assert!(matches!(of_post(body(answer), Some("2026-07-28")), Era::Handshake(Ok(_))));
    // A modern header without the envelope: a malformed modern request.
    assert_eq!(refused_code(&of_post(body(plain("tools/list", 1)), Some(" 2026-07-28\t"))), Some((-32602, 400)));
    // initialize under a modern header: the header does not match.
    assert_eq!(refused_code(&of_post(body(plain("initialize", 1)), Some("2026-07-28"))), Some((-32020, 400)));
    assert!(matches!(of_post(body(plain("initialize", 1)), Some("2025-06-18")), Era::Handshake(Ok(_))));
    // Notifications mean nothing in the modern era.
    let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    assert!(matches!(of_post(body(note.clone()), Some("2026-07-28")), Era::Dropped));
    assert!(matches!(of_post(body(note), None), Era::Handshake(Ok(_))));
    // A malformed body is the session logic's to answer.
    assert!(matches!(of_post(Body::decode(b"{not json"), None), Era::Handshake(Err(_))));
}

#[test]
fn a_batch_claiming_the_modern_era_is_refused() {
    let claimed = json!([plain("tools/list", 1), enveloped("tools/list", 2)]);
    assert_eq!(refused_code(&of_post(body(claimed), None)), Some((-32600, 400)));
    let plain_batch = json!([plain("tools/list", 1), plain("prompts/list", 2)]);
    assert!(matches!(of_post(body(plain_batch), None), Era::Handshake(Ok(Body::Batch(_)))));
}

#[test]
fn initialize_opens_a_session_and_nothing_else_does() {
    assert!(opens_session(&body(plain("initialize", 1))));
    assert!(!opens_session(&body(plain("tools/list", 1))));
    assert!(!opens_session(&body(json!([plain("initialize", 1)]))));
    assert!(!opens_session(&Body::decode(b"[")));
}

#[test]
fn a_connection_is_pinned_modern_by_an_enveloped_first_request() {
    let mut pinned = Pinned::default();
    assert!(matches!(pinned.of(body(enveloped("tools/list", 1))), Era::Sessionless(_)));
    assert_eq!(pinned, Pinned::Sessionless);
    // initialize is refused naming the revisions served.
    assert_eq!(refused_code(&pinned.of(body(plain("initialize", 2)))).map(|(c, _)| c), Some(-32022));
    let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 7}});
    assert!(matches!(pinned.of(body(cancel)), Era::Cancel(id) if id == Id::from_value(&json!(7)).expect("an id")));
    let no_id = json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {}});
    assert!(matches!(pinned.of(body(no_id)), Era::Dropped));
    assert!(matches!(pinned.of(body(json!({"jsonrpc": "2.0", "id": 1, "result": {}}))), Era::Dropped));
    assert_eq!(refused_code(&pinned.of(body(json!([enveloped("ping", 3)])))).map(|(c, _)| c), Some(-32600));
    assert_eq!(pinned, Pinned::Sessionless, "pinned once");
}

#[test]
fn a_connection_is_pinned_to_the_handshake_by_any_other_first_request() {
    // Even an enveloped initialize: initialize is the handshake.
    let mut pinned = Pinned::default();
    assert!(matches!(pinned.of(body(enveloped("initialize", 1))), Era::Handshake(Ok(_))));
    assert_eq!(pinned, Pinned::Handshake);
    assert_eq!(refused_code(&pinned.of(body(enveloped("tools/list", 2)))).map(|(c, _)| c), Some(-32600));
    assert!(matches!(pinned.of(body(plain("tools/list", 3))), Era::Handshake(Ok(_))));

    // A notification before any request pins nothing.
    let mut open = Pinned::default();
    let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    assert!(matches!(open.of(body(note)), Era::Handshake(Ok(_))));
    assert_eq!(open, Pinned::Open);
}
