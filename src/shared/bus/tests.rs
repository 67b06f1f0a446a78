//! Unit tests of `bus` (bus.rs).

use serde_json::json;

use super::BusMessage;

#[test]
fn a_message_round_trips_and_carries_json_rpc_as_text() {
    let answer =
        BusMessage::Answer { session: "s".into(), response: r#"{"jsonrpc":"2.0","id":"r-1","result":{}}"#.into() };
    assert_eq!(BusMessage::decode(answer.encode().as_bytes()), Some(answer));
    // A replica of the earlier release sent the message itself.
    let earlier = json!({"k": "notify", "s": "s", "from": "r2", "message": {"jsonrpc": "2.0", "method": "m"}});
    let Some(BusMessage::Notify { message, .. }) = BusMessage::decode(earlier.to_string().as_bytes()) else {
        panic!("not decoded")
    };
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&message).ok(),
        Some(json!({"jsonrpc": "2.0", "method": "m"}))
    );
}
