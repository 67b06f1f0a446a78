use super::*;

#[test]
fn request_methods_are_told_from_notifications() {
    for request in
        ["tools/call", "tools/list", "resources/read", "initialize", "ping", "sampling/createMessage", "roots/list"]
    {
        assert!(is_request_method(request), "{request}");
    }
    for notification in
        ["notifications/roots/list_changed", "notifications/cancelled", "notifications/progress", "vendor/thing", "$/x"]
    {
        assert!(!is_request_method(notification), "{notification}");
    }
}
