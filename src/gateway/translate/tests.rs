//! Unit tests of `translate` (translate.rs).

use super::*;

#[test]
fn new_block_types_become_old_ones_keeping_their_information() {
    let original = json!({"content": [
        {"type": "text", "text": "hi"},
        {"type": "audio", "data": "UklGRg==", "mimeType": "audio/wav"},
        {"type": "resource_link", "uri": "file:///a.txt", "name": "a.txt", "description": "the file"}
    ]});

    let mut r = original.clone();
    result("tools/call", &mut r, Version::V2024_11_05);
    assert_eq!(r["content"][0], json!({"type": "text", "text": "hi"}));
    assert_eq!(r["content"][1]["type"], "resource");
    assert_eq!(r["content"][1]["resource"]["blob"], "UklGRg==");
    assert_eq!(r["content"][1]["resource"]["mimeType"], "audio/wav");
    assert_eq!(r["content"][2], json!({"type": "text", "text": "Resource link: a.txt <file:///a.txt> (the file)"}));

    let mut r = original.clone();
    result("tools/call", &mut r, Version::V2025_03_26);
    assert_eq!(r["content"][1]["type"], "audio", "2025-03-26 knows audio");
    assert_eq!(r["content"][2]["type"], "text");

    let mut r = original.clone();
    result("tools/call", &mut r, Version::V2025_06_18);
    assert_eq!(r, original, "nothing to do for current clients");
}

#[test]
fn raw_results_are_parsed_only_for_older_clients() {
    let raw: std::sync::Arc<serde_json::value::RawValue> =
        serde_json::value::to_raw_value(&json!({"content": [{"type": "resource_link", "uri": "x://y", "name": "y"}]}))
            .unwrap()
            .into();
    let kept = outcome("tools/call", Outcome::Prepared(raw.clone().into()), Version::V2025_06_18);
    assert!(matches!(kept, Outcome::Prepared(r) if r.get() == raw.get()), "passed through as text");
    let Outcome::Result(v) = outcome("tools/call", Outcome::Prepared(raw.into()), Version::V2025_03_26) else {
        panic!("a translated result");
    };
    assert_eq!(v["content"][0]["type"], "text");
}

#[test]
fn structured_only_results_get_a_text_block() {
    let mut r = json!({"content": [], "structuredContent": {"n": 1}});
    result("tools/call", &mut r, Version::V2025_03_26);
    assert_eq!(r["content"], json!([{"type": "text", "text": "{\"n\":1}"}]));
}

#[test]
fn prompt_and_sampling_messages_are_translated() {
    let mut p =
        json!({"messages": [{"role": "user", "content": {"type": "resource_link", "uri": "x://y", "name": "y"}}]});
    result("prompts/get", &mut p, Version::V2025_03_26);
    assert_eq!(p["messages"][0]["content"]["type"], "text");
    let mut s =
        json!({"messages": [{"role": "user", "content": [{"type": "audio", "data": "", "mimeType": "audio/mp3"}]}]});
    request_params("sampling/createMessage", &mut s, Version::V2024_11_05);
    assert_eq!(s["messages"][0]["content"][0]["type"], "resource");
}
