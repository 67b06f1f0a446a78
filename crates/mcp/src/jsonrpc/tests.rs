use super::*;
use serde_json::json;

#[test]
fn ids_keep_their_json_type() {
    let m = Message::decode(br#"{"jsonrpc":"2.0","id":"1","method":"ping"}"#).unwrap();
    let Message::Request(r) = &m else { panic!("not a request: {m:?}") };
    assert_eq!(r.id.as_json(), "\"1\"");
    assert_ne!(r.id, Id::number(1));
    assert_eq!(m.encode(), r#"{"jsonrpc":"2.0","id":"1","method":"ping"}"#);

    let m = Message::decode(br#"{"jsonrpc":"2.0","id":7,"result":{}}"#).unwrap();
    let Message::Response(r) = &m else { panic!() };
    assert_eq!(r.id.as_ref().unwrap(), &Id::number(7));
}

#[test]
fn ids_are_echoed_exactly_as_written() {
    // Short ids are kept inline, the rest as their text: either way a
    // response carries the id byte for byte as the client wrote it.
    for id in [
        "0",
        "-0",
        "7",
        "-42",
        "18446744073709551615",
        "-9223372036854775808",
        "100000000000000000000000000000",
        r#""""#,
        r#""abc""#,
        r#""é 🎉""#,
        r#""\u0041""#,
        r#""a\"b""#,
        r#""a string id longer than any inline one""#,
    ] {
        let text = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}"#);
        let m = Message::decode(text.as_bytes()).unwrap();
        let Message::Request(r) = &m else { panic!("not a request: {m:?}") };
        assert_eq!(r.id.as_json(), id);
        let answer = Message::Response(Response { id: Some(r.id.clone()), outcome: Outcome::Result(json!({})) });
        assert_eq!(answer.encode(), format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{}}}}"#));
    }
}

#[test]
fn rejects_ids_mcp_forbids() {
    for bad in [r#"1.5"#, r#"1e3"#, r#"-2E-1"#, r#"-0.0"#, r#"true"#, r#"{}"#, r#"[1]"#] {
        let text = format!(r#"{{"jsonrpc":"2.0","id":{bad},"method":"x"}}"#);
        assert!(matches!(Message::decode(text.as_bytes()), Err(DecodeError::Invalid { .. })), "{bad} accepted");
    }
}

#[test]
fn null_id_is_only_for_errors() {
    let m = Message::decode(br#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"x"}}"#).unwrap();
    assert!(matches!(m, Message::Response(Response { id: None, .. })));
    // A method with a null id is a notification in JSON-RPC terms.
    let m = Message::decode(br#"{"jsonrpc":"2.0","id":null,"method":"x"}"#).unwrap();
    assert!(matches!(m, Message::Notification(_)));
}

#[test]
fn classifies_and_keeps_unknown_payload_fields() {
    let text = br#"{"jsonrpc":"2.0","method":"notifications/x","params":{"_meta":{"a":1},"x-extra":[1,2]}}"#;
    let m = Message::decode(text).unwrap();
    assert_eq!(m.to_value(), serde_json::from_slice::<Value>(text).unwrap());
}

#[test]
fn malformed_input_is_classified() {
    assert!(matches!(Message::decode(b"{not json"), Err(DecodeError::Parse(_))));
    assert!(matches!(Message::decode(b"[]"), Err(DecodeError::Invalid { .. })));
    let e = Message::decode(br#"{"jsonrpc":"1.0","id":3,"method":"x"}"#).unwrap_err();
    let resp = e.to_response();
    assert_eq!(resp.id, Some(Id::number(3)));
    assert_eq!(resp.outcome.error_code(), Some(codes::INVALID_REQUEST));
    assert!(Message::decode(br#"{"jsonrpc":"2.0","id":3,"method":"x","result":1}"#).is_err());
    assert!(Message::decode(br#"{"jsonrpc":"2.0","id":3,"method":"x","params":5}"#).is_err());
}

#[test]
fn progress_token_helpers() {
    let mut params = Some(json!({"name": "x"}));
    assert!(progress_token(params.as_ref()).is_none());
    set_progress_token(&mut params, json!(42));
    assert_eq!(progress_token(params.as_ref()), Some(&json!(42)));
    let mut none = None;
    set_progress_token(&mut none, json!("t"));
    assert_eq!(none, Some(json!({"_meta": {"progressToken": "t"}})));
}

mod props {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn a_member_is_what_get_finds(keys in proptest::collection::vec("[a-c_]{0,3}", 0..20), key in "[a-c_]{0,3}") {
            // Short objects are scanned, longer ones hashed: both agree with `get`.
            let object: serde_json::Map<String, Value> =
                keys.iter().enumerate().map(|(i, k)| (k.clone(), json!(i))).collect();
            let value = Value::Object(object);
            prop_assert_eq!(member(&value, &key), value.get(&key));
            let array = json!([1]);
            prop_assert_eq!(member(&array, &key), None);
        }

        #[test]
        fn decode_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
            let _ = Message::decode(&bytes);
        }

        #[test]
        fn integer_and_string_ids_round_trip(n in any::<i64>(), s in ".{0,20}") {
            for id in [json!(n), json!(s)] {
                let text = json!({"jsonrpc": "2.0", "id": id, "method": "m"}).to_string();
                let m = Message::decode(text.as_bytes()).unwrap();
                prop_assert_eq!(m.to_value(), serde_json::from_str::<Value>(&text).unwrap());
            }
        }

        #[test]
        fn ids_made_and_decoded_are_the_same_id(n in any::<u64>(), s in "\\PC{0,30}") {
            let decoded = |text: String| match Message::decode(text.as_bytes()).unwrap() {
                Message::Request(r) => r.id,
                other => panic!("not a request: {other:?}"),
            };
            let number = decoded(format!(r#"{{"jsonrpc":"2.0","id":{n},"method":"m"}}"#));
            prop_assert_eq!(&number, &Id::number(n));
            prop_assert_eq!(number.as_u64(), Some(n));
            prop_assert_eq!(Id::number(n).as_json().to_owned(), n.to_string());
            let string = decoded(json!({"jsonrpc": "2.0", "id": s, "method": "m"}).to_string());
            prop_assert_eq!(&string, &Id::string(&s));
            prop_assert_eq!(string.to_value(), json!(s));
            prop_assert_eq!(serde_json::to_string(&Id::string(&s)).unwrap(), json!(s).to_string());
            prop_assert_eq!(string.as_u64(), None, "a string id is no number, whatever it says");
        }

        #[test]
        fn only_a_non_negative_integer_id_is_a_number(i in any::<i64>()) {
            let decoded = match Message::decode(format!(r#"{{"jsonrpc":"2.0","id":{i},"method":"m"}}"#).as_bytes()).unwrap() {
                Message::Request(r) => r.id,
                other => panic!("not a request: {other:?}"),
            };
            prop_assert_eq!(decoded.as_u64(), u64::try_from(i).ok());
        }
    }
}

#[test]
fn a_result_object_is_kept_as_written_with_its_members_found() {
    let text = r#"{"jsonrpc":"2.0","id":3,"result": {"content":[{"type":"text","text":"a\"b"}] , "isError":false}}"#;
    let Message::Response(r) = Message::decode(text.as_bytes()).unwrap() else { panic!("a response") };
    let Outcome::Prepared(raw) = &r.outcome else { panic!("kept as text: {:?}", r.outcome) };
    assert_eq!(raw.get(), r#"{"content":[{"type":"text","text":"a\"b"}] , "isError":false}"#);
    let object = raw.object().expect("its members found");
    assert_eq!(object.get("isError"), Some("false"));
    assert_eq!(object.get("content"), Some(r#"[{"type":"text","text":"a\"b"}]"#));

    // What is not an object with plain keys is kept as text, unindexed.
    for (result, kept) in
        [(r#"[1, 2]"#, r#"[1, 2]"#), (r#""s""#, r#""s""#), (r#"{"\u0061":1}"#, r#"{"\u0061":1}"#), (r#"{ }"#, "{}")]
    {
        let text = format!(r#"{{"jsonrpc":"2.0","id":3,"result":{result}}}"#);
        let Message::Response(r) = Message::decode(text.as_bytes()).unwrap() else { panic!("a response") };
        let Outcome::Prepared(raw) = &r.outcome else { panic!("kept as text") };
        assert_eq!(raw.get(), kept);
        assert_eq!(raw.object().is_some(), result.starts_with('{') && !result.contains('\\'), "{result}");
    }
    // `null` is no result, as before.
    assert!(Message::decode(br#"{"jsonrpc":"2.0","id":3,"result":null}"#).is_err());
    // A batch's elements are read the same way.
    let Ok(Body::Batch(items)) = Body::decode(br#"[{"jsonrpc":"2.0","id":1,"result":{"a":1}}]"#) else { panic!() };
    let Some(Ok(Message::Response(r))) = items.into_iter().next() else { panic!() };
    assert!(matches!(&r.outcome, Outcome::Prepared(raw) if raw.object().is_some_and(|o| o.get("a") == Some("1"))));
}

#[test]
fn a_result_with_line_breaks_is_encoded_on_one_line() {
    // A pretty-printed answer (as an HTTP upstream may send) goes out to a
    // stdio client as one line, with the same value.
    let text = "{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{\r\n  \"content\": [\n    {\"type\": \"text\", \"text\": \"a\\nb\"}\n  ]\n}}";
    let m = Message::decode(text.as_bytes()).unwrap();
    let line = m.encode();
    assert!(!line.contains(['\n', '\r']), "{line}");
    let value: Value = serde_json::from_str(&line).unwrap();
    assert_eq!(value["result"], json!({"content": [{"type": "text", "text": "a\nb"}]}));
    assert_eq!(value["id"], json!(3));
    // The same through serde (a batch's answers), and for a result held whole.
    let whole = Message::Response(Response {
        id: Some(Id::number(3)),
        outcome: Outcome::Prepared(RawValue::from_string("[\n1]".to_owned()).unwrap().into()),
    });
    assert_eq!(whole.encode(), r#"{"jsonrpc":"2.0","id":3,"result":[ 1]}"#);
    assert_eq!(serde_json::to_value(&m).unwrap()["result"], value["result"]);
    // What that rests on: a line break inside a string is refused, whether
    // the result is indexed or held whole.
    assert!(Message::decode(b"{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{\"t\":\"a\nb\"}}").is_err());
    assert!(Message::decode(b"{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":[\"a\nb\"]}").is_err());
}
