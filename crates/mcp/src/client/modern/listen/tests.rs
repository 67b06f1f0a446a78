//! Unit tests of `listen.rs`.

use serde_json::json;

use super::*;

#[test]
fn the_filter_asks_for_what_the_capabilities_offer() {
    let caps =
        json!({"tools": {"listChanged": true}, "prompts": {}, "resources": {"listChanged": true, "subscribe": true}});
    assert_eq!(filter(&caps), Some(json!({"toolsListChanged": true, "resourcesListChanged": true})));
    assert_eq!(filter(&json!({"tools": {}})), None);
}
