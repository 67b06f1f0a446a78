//! Unit tests of `reply.rs`.

use std::sync::Arc;

use serde_json::value::RawValue;

use super::*;

/// Both ways of sending a prepared result (copied when small, held when
/// large) give the JSON a serialized answer would, with its exact length.
#[tokio::test]
async fn a_prepared_answer_is_the_same_json_as_a_serialized_one() {
    let large = "x".repeat(COPIED_RESULT);
    for (result, id) in [
        (serde_json::json!({"tools": [{"name": "a"}]}), Id::string("x-1")),
        (serde_json::json!({"content": [{"type": "text", "text": large}]}), Id::number(7)),
    ] {
        let result: Arc<RawValue> = serde_json::value::to_raw_value(&result).unwrap().into();
        let response = prepared(&id, result.clone().into());
        assert_eq!(response.headers()[header::CONTENT_TYPE], "application/json");
        let exact = http_body::Body::size_hint(response.body()).exact();
        let body = axum::body::to_bytes(Body::new(response.into_body()), usize::MAX).await.unwrap();
        let serialized =
            Message::Response(RpcResponse { id: Some(id), outcome: crate::jsonrpc::Outcome::Prepared(result.into()) });
        assert_eq!(std::str::from_utf8(&body).unwrap(), serialized.encode());
        assert_eq!(exact, Some(body.len() as u64));
    }
}
