use serde_json::json;

use super::*;

fn tool(schema: Value) -> Map<String, Value> {
    json!({"name": "t", "inputSchema": schema}).as_object().cloned().unwrap_or_default()
}

fn header<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).map(|v| v.to_str().unwrap_or("<binary>"))
}

#[test]
fn request_headers_mirror_the_body() {
    let specs = annotations(&tool(json!({"type": "object", "properties": {
        "region": {"type": "string", "x-mcp-header": "Region"},
        "priority": {"type": "integer", "x-mcp-header": "Priority"},
        "verbose": {"type": "boolean", "x-mcp-header": "Verbose"},
        "empty": {"type": "string", "x-mcp-header": "EmptyVal"},
        "gone": {"type": "string", "x-mcp-header": "Gone"},
        "nul": {"type": "string", "x-mcp-header": "Nul"},
        "method_val": {"type": "string", "x-mcp-header": "Method"}
    }})))
    .expect("valid");
    let params = json!({"name": "test_custom_headers", "arguments": {
        "region": "us-west1", "priority": 42.0, "verbose": false, "empty": "", "nul": null, "method_val": "test-method"
    }});
    let client = [
        (HeaderName::from_static("mcp-param-extra"), HeaderValue::from_static("from-client")),
        (HeaderName::from_static("mcp-param-region"), HeaderValue::from_static("forged")),
        (HeaderName::from_static("x-other"), HeaderValue::from_static("no")),
    ];
    let routing = ToolRouting::new("test_custom_headers", specs);
    let h = request_headers("2026-07-28", "tools/call", Some(&params), Some(&routing), &client);
    assert_eq!(header(&h, "mcp-protocol-version"), Some("2026-07-28"));
    assert_eq!(header(&h, "mcp-method"), Some("tools/call"));
    assert_eq!(header(&h, "mcp-name"), Some("test_custom_headers"));
    assert_eq!(header(&h, "mcp-param-region"), Some("us-west1"));
    assert_eq!(header(&h, "mcp-param-priority"), Some("42"));
    assert_eq!(header(&h, "mcp-param-verbose"), Some("false"));
    assert_eq!(header(&h, "mcp-param-emptyval"), Some(""));
    assert_eq!(header(&h, "mcp-param-method"), Some("test-method"));
    assert_eq!(header(&h, "mcp-param-gone"), None);
    assert_eq!(header(&h, "mcp-param-nul"), None);
    // The client's unknown parameter header travels; its copy of one toolgate
    // generates does not, and nothing else of the client's does.
    assert_eq!(header(&h, "mcp-param-extra"), Some("from-client"));
    assert_eq!(h.get_all("mcp-param-region").iter().count(), 1);
    assert_eq!(header(&h, "x-other"), None);
}
#[test]
fn names_are_mirrored_for_reads_and_prompts_only() {
    let read = request_headers("2026-07-28", "resources/read", Some(&json!({"uri": "file:///a b"})), None, &[]);
    assert_eq!(header(&read, "mcp-name"), Some("file:///a b"));
    let prompt = request_headers("2026-07-28", "prompts/get", Some(&json!({"name": "p"})), None, &[]);
    assert_eq!(header(&prompt, "mcp-name"), Some("p"));
    let list = request_headers("2026-07-28", "tools/list", Some(&json!({"name": "x"})), None, &[]);
    assert_eq!(header(&list, "mcp-name"), None);
    assert_eq!(header(&list, "mcp-method"), Some("tools/list"));
}
#[test]
fn the_table_holds_each_tools_name_header_and_only_valid_annotations() {
    let table = ToolHeaders::default();
    let tools = [
        json!({"name": "good", "inputSchema": {"type": "object", "properties": {"r": {"type": "string", "x-mcp-header": "R"}}}}),
        json!({"name": "bad", "inputSchema": {"type": "object", "properties": {"r": {"type": "number", "x-mcp-header": "R"}}}}),
        json!({"name": "plain", "inputSchema": {"type": "object"}}),
    ];
    // A leg without routing headers: only the tools that mirror arguments.
    table.update(&tools, false);
    assert_eq!(table.get("good").map(|t| t.params.len()), Some(1));
    assert!(table.get("bad").is_none());
    assert!(table.get("plain").is_none());
    table.update(&tools, true);
    assert_eq!(table.get("good").map(|t| t.params.len()), Some(1));
    assert_eq!(table.get("bad").map(|t| t.params.len()), Some(0), "invalid annotations mirror nothing");
    assert_eq!(table.get("plain").map(|t| t.params.len()), Some(0));
    assert!(table.get("absent").is_none());
    // Each name's header is made once, as the table is built, and encoded
    // as one sent with the call would be.
    table.update(&[json!({"name": "héllo", "inputSchema": {"type": "object"}})], true);
    let routing = table.get("héllo").expect("listed");
    assert_eq!(routing.name, encode_value("héllo"));
    let params = json!({"name": "héllo", "arguments": {}});
    let h = request_headers("2026-07-28", "tools/call", Some(&params), Some(&routing), &[]);
    assert_eq!(header(&h, "mcp-name"), Some("=?base64?aMOpbGxv?="));
    assert_eq!(
        request_headers("2026-07-28", "tools/call", Some(&params), None, &[]),
        h,
        "the same as encoded per call"
    );
}
#[test]
fn only_unknown_client_param_headers_are_forwarded() {
    let specs = annotations(&tool(json!({"type": "object", "properties": {
        "region": {"type": "string", "x-mcp-header": "Region"},
        "gone": {"type": "string", "x-mcp-header": "Gone"}
    }})))
    .expect("valid");
    let params = json!({"name": "t", "arguments": {"region": "eu"}});
    let client = [
        (HeaderName::from_static("mcp-param-custom"), HeaderValue::from_static("=?base64?w6k=?=")),
        // Declared, its argument absent: toolgate sends no header, and the
        // client's copy does not stand in for one.
        (HeaderName::from_static("mcp-param-gone"), HeaderValue::from_static("stale")),
        (HeaderName::from_static("authorization"), HeaderValue::from_static("Bearer secret")),
        (HeaderName::from_static("mcp-method"), HeaderValue::from_static("forged/method")),
        (HeaderName::from_static("mcp-name"), HeaderValue::from_static("forged")),
    ];
    let h = request_headers("2026-07-28", "tools/call", Some(&params), Some(&ToolRouting::new("t", specs)), &client);
    assert_eq!(header(&h, "mcp-param-custom"), Some("=?base64?w6k=?="), "forwarded as sent");
    assert_eq!(header(&h, "mcp-param-region"), Some("eu"));
    assert_eq!(header(&h, "mcp-param-gone"), None);
    assert_eq!(header(&h, "authorization"), None);
    assert_eq!(header(&h, "mcp-method"), Some("tools/call"));
    assert_eq!(header(&h, "mcp-name"), Some("t"));
    assert_eq!(h.get_all("mcp-method").iter().count() + h.get_all("mcp-name").iter().count(), 2);
    // A tool without annotations forwards every client parameter header.
    let h = request_headers("2026-07-28", "tools/call", Some(&params), None, &client);
    assert_eq!(header(&h, "mcp-param-gone"), Some("stale"));
}

#[test]
fn constant_values_are_checked_like_any_other() {
    assert_eq!(constant_value("2026-07-28").expect("valid"), "2026-07-28");
    assert!(constant_value("a\nb").is_none() && HeaderValue::from_str("a\nb").is_err());
    assert!(constant_value("a\u{7f}").is_none() && HeaderValue::from_str("a\u{7f}").is_err());
    assert_eq!(method_value("tools/call").expect("common"), "tools/call");
    assert_eq!(method_value("vendor/x").expect("copied"), "vendor/x");
    assert!(method_value("bad\r\nmethod").is_none());
}
