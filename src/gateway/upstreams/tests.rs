//! Unit tests of `upstreams` (upstreams.rs).

use super::*;

fn handle(transport: &str, sharing: &str) -> UpstreamHandle {
    let config: UpstreamConfig = match transport {
        "stdio" => serde_json::from_value(json!({"name": "u", "command": "x", "sharing": sharing})),
        t => serde_json::from_value(
            json!({"name": "u", "url": "http://127.0.0.1:1/mcp", "transport": t, "sharing": sharing}),
        ),
    }
    .expect("config");
    let target = config.target().expect("target");
    UpstreamHandle::new(0, config, target, HashMap::new())
}

/// What a control connection that carries clients' calls declares.
fn reverse() -> Value {
    json!({
        "sampling": {},
        "elicitation": {"form": {}, "url": {}},
        "tasks": {"list": {}, "cancel": {},
                  "requests": {"sampling": {"createMessage": {}}, "elicitation": {"create": {}}}},
    })
}

#[test]
fn control_connections_declare_reverse_capabilities_unless_shared_without_per_call_streams() {
    for (transport, sharing, reverse) in [
        ("streamable_http", "shared", true),
        // Its control connection carries sessionless clients' calls.
        ("streamable_http", "per_session", true),
        ("sse", "shared", false),
        ("sse", "per_session", true),
        ("stdio", "shared", false),
        ("stdio", "per_session", true),
    ] {
        let up = handle(transport, sharing);
        assert_eq!(up.target.attributes_calls(), transport == "streamable_http", "{transport}");
        let declared = up.control_hello().capabilities;
        let expected = if reverse { self::reverse() } else { json!({}) };
        assert_eq!(declared, expected, "{transport} {sharing}");
    }
}

#[test]
fn roots_are_declared_only_with_forward_roots() {
    let config: UpstreamConfig =
        serde_json::from_value(json!({"name": "u", "command": "x", "forward_roots": true})).expect("config");
    let target = config.target().expect("target");
    let up = UpstreamHandle::new(0, config, target, HashMap::new());
    let mut expected = reverse();
    expected["roots"] = json!({});
    assert_eq!(up.control_hello().capabilities, expected);
}
