//! The trace context an HTTP upstream gets as headers.

use serde_json::{Value, json};

use super::*;
use crate::jsonrpc::Request;

#[test]
fn outgoing_headers_mirror_meta() {
    let request = |params: Value| {
        Message::Request(Request { id: Id::number(1), method: "tools/call".into(), params: Some(params) })
    };
    let (parent, state) =
        trace_headers(&request(json!({"_meta": {"traceparent": "00-a-b-01", "tracestate": "x=1"}}))).unwrap();
    assert_eq!((parent.to_str().unwrap(), state.unwrap().to_str().unwrap()), ("00-a-b-01", "x=1"));
    assert!(trace_headers(&request(json!({"name": "t"}))).is_none());
    assert!(trace_headers(&request(json!({"_meta": {"traceparent": "bad\nvalue"}}))).is_none());
}
