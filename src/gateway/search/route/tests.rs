use serde_json::json;

use super::*;
use crate::jsonrpc::Id;

fn call(params: Value) -> Request {
    Request { id: Id::from_value(&json!(1)).expect("an id"), method: method::TOOLS_CALL.into(), params: Some(params) }
}

fn tool() -> CallTool<'static> {
    CallTool { name: "call_tool", synthesized: ["search_tools", "describe_tools"] }
}

fn refusal(routed: Routed) -> String {
    match routed {
        Routed::Refused(Outcome::Result(result)) => {
            assert_eq!(result["isError"], true);
            result["content"][0]["text"].as_str().unwrap_or_default().to_owned()
        }
        _ => panic!("not refused"),
    }
}

#[test]
fn a_routed_call_is_the_direct_call_with_everything_else_of_the_request_kept() {
    let request = call(json!({
        "name": "call_tool",
        "arguments": {"name": "github__create_issue", "arguments": {"title": "t"}},
        "_meta": {"progressToken": 7, "vendor": "x"},
        "task": {"ttl": 1000},
        "requestState": "s",
    }));
    assert!(calls(&request, tool().name));
    let Routed::Call(routed) = tool().unwrap(request) else { panic!("not routed") };
    assert_eq!(
        routed.params,
        Some(json!({
            "name": "github__create_issue",
            "arguments": {"title": "t"},
            "_meta": {"progressToken": 7, "vendor": "x"},
            "task": {"ttl": 1000},
            "requestState": "s",
        }))
    );
    assert_eq!(routed.id, Id::from_value(&json!(1)).expect("an id"), "the client's id stays");
}

#[test]
fn a_call_naming_no_tool_or_a_synthesized_one_or_without_object_arguments_is_a_tool_error() {
    for (arguments, says) in [
        (json!({"arguments": {}}), "exact name"),
        (json!({"name": "", "arguments": {}}), "exact name"),
        (json!({"name": 3, "arguments": {}}), "exact name"),
        (json!({"name": "search_tools", "arguments": {}}), "toolgate's own tool"),
        (json!({"name": "describe_tools", "arguments": {}}), "toolgate's own tool"),
        (json!({"name": "call_tool", "arguments": {}}), "toolgate's own tool"),
        (json!({"name": "t", "arguments": [1]}), "must be an object"),
        (json!({"name": "t", "arguments": "x"}), "must be an object"),
        (json!({"name": "t"}), "needs `arguments`"),
    ] {
        let text = refusal(tool().unwrap(call(json!({"name": "call_tool", "arguments": arguments}))));
        assert!(text.contains(says), "{text}");
    }
    assert!(refusal(tool().unwrap(call(json!({"name": "call_tool"})))).contains("exact name"));
}

#[test]
fn other_requests_are_not_the_call_tool_s() {
    assert!(!calls(&call(json!({"name": "github__create_issue"})), tool().name));
    let mut list = call(json!({"name": "call_tool"}));
    list.method = "tools/list".into();
    assert!(!calls(&list, tool().name));
}
