//! Unit tests of `events` (events.rs).

use serde_json::json;

use super::untag;
use crate::jsonrpc::Notification;

#[test]
fn the_upstream_subscription_id_is_removed_and_the_rest_kept() {
    let tagged = Notification::new(
        "notifications/resources/updated",
        Some(json!({"uri": "a://x", "_meta": {"io.modelcontextprotocol/subscriptionId": 4}})),
    );
    assert_eq!(untag(tagged).params, Some(json!({"uri": "a://x"})));
    let other = json!({"uri": "a://x", "_meta": {"io.modelcontextprotocol/subscriptionId": 4, "vendor/k": 1}});
    let kept = untag(Notification::new("notifications/resources/updated", Some(other)));
    assert_eq!(kept.params, Some(json!({"uri": "a://x", "_meta": {"vendor/k": 1}})));
    assert_eq!(untag(Notification::new("notifications/tools/list_changed", None)).params, None);
}
