use serde_json::json;

use super::*;

#[test]
fn the_envelope_names_what_is_missing() {
    let full = json!({"_meta": {
        meta::PROTOCOL_VERSION: "2026-07-28",
        meta::CLIENT_CAPABILITIES: {"sampling": {}},
        meta::LOG_LEVEL: "info"}});
    let envelope = Envelope::read(Some(&full)).unwrap();
    assert_eq!(envelope.version, "2026-07-28");
    assert_eq!(envelope.capabilities, json!({"sampling": {}}));
    assert_eq!(envelope.client_info, None, "clientInfo is optional");
    assert_eq!(envelope.log_level.as_deref(), Some("info"));

    let e = Envelope::read(Some(&json!({}))).unwrap_err();
    assert_eq!(e.code, -32602);
    assert_eq!(e.data.unwrap()["envelope"]["missing"], json!(["_meta"]));
    let e = Envelope::read(None).unwrap_err();
    assert_eq!(e.data.unwrap()["envelope"]["missing"], json!(["_meta"]));
    let e = Envelope::read(Some(&json!({"_meta": {meta::CLIENT_CAPABILITIES: {}}}))).unwrap_err();
    assert_eq!(e.data.unwrap()["envelope"]["missing"], json!([meta::PROTOCOL_VERSION]));
    let e = Envelope::read(Some(&json!({"_meta": {meta::PROTOCOL_VERSION: "2026-07-28"}}))).unwrap_err();
    assert_eq!(e.data.unwrap()["envelope"]["missing"], json!([meta::CLIENT_CAPABILITIES]));
    let e = Envelope::read(Some(&json!({"_meta": {meta::PROTOCOL_VERSION: 7, meta::CLIENT_CAPABILITIES: []}})))
        .unwrap_err();
    assert_eq!(e.data.unwrap()["envelope"]["missing"], json!([meta::PROTOCOL_VERSION, meta::CLIENT_CAPABILITIES]));
}

#[test]
fn taking_the_envelope_moves_client_info_out_and_keeps_the_rest() {
    let info = json!({"name": "host", "version": "1"});
    let mut params = json!({"name": "t", "_meta": {
        "progressToken": 3,
        meta::PROTOCOL_VERSION: "2026-07-28",
        meta::CLIENT_INFO: info,
        meta::CLIENT_CAPABILITIES: {"sampling": {}},
        "vendor/key": true}});
    let read = Envelope::read(Some(&params)).unwrap();
    let taken = Envelope::take(Some(&mut params)).unwrap();
    assert_eq!(taken, read, "the same envelope as read");
    assert_eq!(taken.client_info, Some(info));
    let keys: Vec<&str> = params["_meta"].as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(keys, ["progressToken", meta::PROTOCOL_VERSION, meta::CLIENT_CAPABILITIES, "vendor/key"], "in order");
    // A clientInfo that is not an object is no client info, and stays.
    let mut odd =
        json!({"_meta": {meta::PROTOCOL_VERSION: "2026-07-28", meta::CLIENT_CAPABILITIES: {}, meta::CLIENT_INFO: 7}});
    assert_eq!(Envelope::take(Some(&mut odd)).unwrap().client_info, None);
    assert_eq!(odd["_meta"][meta::CLIENT_INFO], 7);
    assert_eq!(Envelope::take(Some(&mut json!({}))).unwrap_err().code, -32602);
    assert_eq!(Envelope::take(None).unwrap_err().code, -32602);
}

#[test]
fn header_values_are_trimmed_and_base64_decoded() {
    assert_eq!(decode_header_value(b"  get_weather\t").as_deref(), Some("get_weather"));
    // "héllo wörld" in standard base64.
    assert_eq!(decode_header_value(b"=?base64?aMOpbGxvIHfDtnJsZA==?=").as_deref(), Some("héllo wörld"));
    assert_eq!(decode_header_value(b" =?base64?IGxlYWRpbmc=?= ").as_deref(), Some(" leading"));
    assert_eq!(decode_header_value(b"=?base64?not*base64?="), None);
    assert_eq!(decode_header_value(b"=?base64?aGk?="), None, "bad padding is malformed");
    assert_eq!(decode_header_value(b"=?base64?/w==?="), None, "not UTF-8");
    // Without both ends it is a literal value.
    assert_eq!(decode_header_value(b"=?base64?aGk=").as_deref(), Some("=?base64?aGk="));
}

#[test]
fn errors_carry_what_the_revision_asks_and_map_to_statuses() {
    let e = unsupported_version("v999.0.0");
    assert_eq!(e.code, -32022);
    assert_eq!(e.data.as_ref().unwrap()["supported"], json!(VERSIONS));
    assert_eq!(e.data.as_ref().unwrap()["requested"], "v999.0.0");
    assert_eq!(header_mismatch("Mcp-Method", None, "tools/list").code, -32020);
    assert_eq!(http_status(-32020), 400);
    assert_eq!(http_status(-32021), 400);
    assert_eq!(http_status(-32022), 400);
    assert_eq!(http_status(-32600), 400);
    assert_eq!(http_status(-32601), 404);
    assert_eq!(http_status(-32602), 200, "a handler's invalid params stay in-band");
    assert_eq!(http_status(-32603), 200);
    assert!(is_handshake_version("2025-11-25") && !is_handshake_version("2026-07-28"));
    assert!(log_rank("debug") < log_rank("warning") && log_rank("bogus").is_none());
    assert_eq!(method::name_param("resources/read"), Some("uri"));
    assert_eq!(method::name_param("tools/list"), None);
}
