//! The stamp on a built result and on JSON text: the same fields either way,
//! keys already present replaced (never added twice), the rest of the text
//! byte for byte.

use serde_json::value::RawValue;
use serde_json::{Value, json};

use super::*;

fn info() -> ServerInfo {
    ServerInfo::new(json!({"name": "gw", "version": "1"}))
}

fn prepared(text: &str) -> Outcome {
    Outcome::Prepared(RawValue::from_string(text.to_owned()).expect("valid JSON").into())
}

/// `text` as an upstream's answer is decoded: its members found.
fn decoded(text: &str) -> Outcome {
    let message = format!(r#"{{"jsonrpc":"2.0","id":1,"result":{text}}}"#);
    let Ok(crate::jsonrpc::Message::Response(r)) = crate::jsonrpc::Message::decode(message.as_bytes()) else {
        panic!("an answer: {message}")
    };
    r.outcome
}

/// The stamped text of `text`, checking the built path agrees, and that a
/// result decoded with its members found is stamped the same (and stays
/// indexed).
fn stamped(stamp: &Stamp<'_>, text: &str) -> String {
    let Outcome::Prepared(raw) = stamp.apply(prepared(text)) else { panic!("stays prepared") };
    let Outcome::Prepared(from_decoded) = stamp.apply(decoded(text)) else { panic!("stays prepared") };
    assert_eq!(from_decoded.get(), raw.get(), "held whole or indexed, the same stamp");
    let object = from_decoded.object().expect("a stamped result is indexed");
    assert_eq!(object.get(result::RESULT_TYPE).map(|t| serde_json::from_str::<Value>(t).unwrap()), {
        let v: Value = serde_json::from_str(raw.get()).unwrap();
        v.get(result::RESULT_TYPE).cloned()
    });
    let value: Value = serde_json::from_str(text).expect("valid");
    let Outcome::Result(built) = stamp.apply(Outcome::Result(value)) else { panic!("stays a result") };
    let spliced: Value = serde_json::from_str(raw.get()).expect("the splice is valid JSON");
    assert_eq!(spliced, built, "the text and the tree get the same stamp");
    raw.get().to_owned()
}

/// How often `key` appears as a key in `text`.
fn keys(text: &str, key: &str) -> usize {
    text.matches(&format!("\"{key}\":")).count()
}

#[test]
fn every_result_gets_result_type_and_the_servers_identity() {
    let info = info();
    let stamp = Stamp { cache: None, server_info: Some(&info) };
    let big = "x".repeat(10_000);
    let text = format!(r#"{{"content":[{{"type":"text","text":"{big}"}}],"isError":false}}"#);
    let out = stamped(&stamp, &text);
    assert!(out.contains(&text[1..text.len() - 1]), "the rest is copied as it was");
    let v: Value = serde_json::from_str(&out).expect("valid");
    assert_eq!(v["resultType"], "complete");
    assert_eq!(v["_meta"][meta::SERVER_INFO], json!({"name": "gw", "version": "1"}));
    assert!(v.get("ttlMs").is_none(), "not a cacheable method");
    // An empty result.
    let v: Value = serde_json::from_str(&stamped(&stamp, " {} ")).expect("valid");
    assert_eq!(v, json!({"resultType": "complete", "_meta": {meta::SERVER_INFO: {"name": "gw", "version": "1"}}}));
}

#[test]
fn an_upstreams_identity_moves_aside_and_other_meta_keys_stay() {
    let info = info();
    let stamp = Stamp { cache: None, server_info: Some(&info) };
    let text = r#"{"resultType":"input_required","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"up","version":"9"},"vendor/x":1},"requestState":"s"}"#;
    let out = stamped(&stamp, text);
    assert_eq!(keys(&out, "_meta"), 1);
    assert_eq!(keys(&out, "resultType"), 1);
    let v: Value = serde_json::from_str(&out).expect("valid");
    assert_eq!(v["resultType"], "input_required");
    assert_eq!(v["_meta"][meta::SERVER_INFO]["name"], "gw");
    assert_eq!(v["_meta"][meta::UPSTREAM_SERVER_INFO], json!({"name": "up", "version": "9"}));
    assert_eq!(v["_meta"]["vendor/x"], 1);
    assert_eq!(v["requestState"], "s");
    // Its own identity, however it is written, stays where it is.
    let text = r#"{"_meta":{"io.modelcontextprotocol/serverInfo":{ "version": "1", "name": "gw" }}}"#;
    let v: Value = serde_json::from_str(&stamped(&stamp, text)).expect("valid");
    assert_eq!(v["_meta"], json!({meta::SERVER_INFO: {"name": "gw", "version": "1"}}), "not moved aside");
    // A `_meta` that is not an object (or null) is replaced, never doubled.
    let out = stamped(&stamp, r#"{"_meta":null,"content":[]}"#);
    assert_eq!(keys(&out, "_meta"), 1);
}

#[test]
fn cacheable_results_get_hints_and_private_wins() {
    let private = Stamp { cache: Some(CacheHints { ttl_ms: 5, scope: CacheScope::Private }), server_info: None };
    let v: Value =
        serde_json::from_str(&stamped(&private, r#"{"tools":[],"cacheScope":"public","ttlMs":60}"#)).expect("valid");
    assert_eq!((v["cacheScope"].clone(), v["ttlMs"].clone()), (json!("private"), json!(60)));
    assert!(v.get("_meta").is_none(), "no identity to stamp");
    let public = Stamp { cache: Some(CacheHints::default()), server_info: None };
    let v: Value = serde_json::from_str(&stamped(&public, r#"{"tools":[]}"#)).expect("valid");
    assert_eq!((v["cacheScope"].clone(), v["ttlMs"].clone()), (json!("public"), json!(0)));
    // An input-required result carries no cache hints.
    let v: Value = serde_json::from_str(&stamped(&public, r#"{"resultType":"input_required"}"#)).expect("valid");
    assert!(v.get("ttlMs").is_none());
}

#[test]
fn odd_text_falls_back_or_passes() {
    let info = info();
    let stamp = Stamp { cache: None, server_info: Some(&info) };
    // A key the stamp sets, twice: decoded whole (the last one wins, as a
    // parser would), so it is never left doubled.
    let Outcome::Result(v) = stamp.apply(prepared(r#"{"_meta":{"a":1},"_meta":{"a":2}}"#)) else { panic!("decoded") };
    assert_eq!(v["_meta"]["a"], 2);
    assert_eq!(v["resultType"], "complete");
    // Not an object: nothing to stamp.
    assert_eq!(stamp.apply(prepared("[1]")), prepared("[1]"));
    // Errors pass unchanged.
    let error = Outcome::Error(json!({"code": -1, "message": "m"}));
    assert_eq!(stamp.apply(error.clone()), error);
}
