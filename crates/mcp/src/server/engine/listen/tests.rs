//! Unit tests of `listen.rs`.

use super::*;

#[test]
fn subscriptions_read_what_is_on_and_ignore_the_rest() {
    let params = json!({"notifications": {"toolsListChanged": true, "promptsListChanged": false,
        "resourceSubscriptions": ["a://x", "a://x", "b://y"], "futureThing": true}});
    let s = Subscriptions::read(Some(&params)).unwrap();
    assert!(s.tools_list_changed && !s.prompts_list_changed && !s.resources_list_changed);
    assert_eq!(s.resource_subscriptions, ["a://x", "b://y"]);
    assert_eq!(s.to_value(), json!({"toolsListChanged": true, "resourceSubscriptions": ["a://x", "b://y"]}));
    assert!(s.wants("notifications/resources/updated", Some(&json!({"uri": "b://y"}))));
    assert!(!s.wants("notifications/resources/updated", Some(&json!({"uri": "c://z"}))));
    assert!(!s.wants("notifications/prompts/list_changed", None));
    assert_eq!(Subscriptions::read(None).unwrap(), Subscriptions::default());
    assert!(Subscriptions::read(Some(&json!({"notifications": {"resourceSubscriptions": [1]}}))).is_err());
    assert!(Subscriptions::read(Some(&json!({"notifications": []}))).is_err());
}

#[tokio::test]
async fn the_sink_tags_every_notification_with_the_listen_id() {
    let (downlink, mut frames) = Downlink::channel();
    let sink = ListenSink { id: Id::string("L1"), downlink };
    assert!(sink.send(Notification::new("notifications/resources/updated", Some(json!({"uri": "a://x"})))));
    let Some(crate::server::Frame::Message(crate::jsonrpc::Message::Notification(n))) = frames.recv().await else {
        panic!("expected a notification")
    };
    assert_eq!(n.params, Some(json!({"uri": "a://x", "_meta": {meta::SUBSCRIPTION_ID: "L1"}})));
}
