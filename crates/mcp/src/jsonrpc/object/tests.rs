use super::*;

#[test]
fn an_object_is_found_in_its_message_with_the_text_as_it_was_written() {
    let message = r#"{"id":1, "result" : { "content" :[{"type":"text","text":"hi"}] ,"resultType":"complete"  } }"#;
    let env: serde_json::Map<String, serde_json::Value> = serde_json::from_str(message).unwrap();
    assert!(env.contains_key("result"));
    let start = message.find("{ \"content\"").unwrap();
    let members: Found<'_> = serde_json::from_str(&message[start..message.len() - 2]).unwrap();
    let Found::Members(members) = members else { panic!("an object's members") };
    let object = Object::found(message, members).expect("found");
    assert_eq!(object.text(), r#"{ "content" :[{"type":"text","text":"hi"}] ,"resultType":"complete"  }"#);
    let all: Vec<_> = object.iter().collect();
    assert_eq!(all, [("content", r#"[{"type":"text","text":"hi"}]"#), ("resultType", r#""complete""#)]);
    assert_eq!(object.get("resultType"), Some(r#""complete""#));
    assert_eq!(object.count("content"), 1);
    assert_eq!(object.get("nope"), None);
}

#[test]
fn what_is_not_an_object_with_plain_keys_is_not_indexed() {
    for text in ["[1,2]", "\"s\"", "1", "true", r#"{"\u0061":1}"#, r#"{"a":1,"b\n":2}"#] {
        assert!(Object::parse(text).is_none(), "{text}");
    }
    assert!(matches!(serde_json::from_str::<Found<'_>>("null").unwrap(), Found::Null));
    // Members of another text are not taken for this one's.
    let other = r#"{"a":1}"#;
    let Found::Members(members) = serde_json::from_str::<Found<'_>>(other).unwrap() else { panic!() };
    assert!(Object::found(r#"{"a":1}"#.to_owned().as_str(), members).is_none());
}

#[test]
fn an_empty_object_is_written_as_braces() {
    for text in ["{}", "{ }", " {\n} "] {
        let object = Object::parse(text).expect("an object");
        assert_eq!(object.text(), "{}");
        assert_eq!(object.iter().count(), 0);
        let mut object = object;
        object.push("a", "1");
        assert_eq!(object.text(), r#"{"a":1}"#, "the first member pushed takes no comma");
        assert_eq!(object.get("a"), Some("1"));
    }
}

#[test]
fn a_writer_indexes_what_it_writes() {
    let mut w = Object::writer(64);
    w.member("a", "[1, 2]");
    w.member("k\"q", r#""v""#);
    w.member("b", "{}");
    let object = w.finish();
    assert_eq!(object.text(), r#"{"a":[1, 2],"k\"q":"v","b":{}}"#);
    serde_json::from_str::<serde_json::Value>(object.text()).expect("valid JSON");
    assert_eq!(object.get("a"), Some("[1, 2]"));
    assert_eq!(object.get("k\\\"q"), Some(r#""v""#), "an escaped key is found by its text");
    assert_eq!(object.get("b"), Some("{}"));
    assert_eq!(Object::writer(0).finish().text(), "{}");
}

proptest::proptest! {
    /// Whatever the object (keys, values, whitespace between them), its
    /// index holds the members a parser reads, and its text is the text.
    #[test]
    fn the_index_agrees_with_a_parser(
        members in proptest::collection::vec(("[a-z_/.]{0,12}", proptest::arbitrary::any::<u8>()), 0..10),
        spaces in proptest::collection::vec("[ \t\n\r]{0,2}", 40),
    ) {
        let mut text = format!("{}{{", spaces[0]);
        for (i, (key, n)) in members.iter().enumerate() {
            if i > 0 {
                text.push(',');
            }
            let value = match n % 4 { 0 => n.to_string(), 1 => format!("\"{key}{n}\""), 2 => format!("[{n}, {{\"x\":{n}}}]"), _ => "null".to_owned() };
            text.push_str(&format!("{}\"{key}\"{}:{}{value}{}", spaces[i % 40], spaces[(i + 1) % 40], spaces[(i + 2) % 40], spaces[(i + 3) % 40]));
        }
        text.push('}');
        text.push_str(&spaces[39]);
        let object = Object::parse(&text).expect("an object with plain keys");
        let parsed: Vec<(String, serde_json::Value)> = object.iter().map(|(k, v)| (k.to_owned(), serde_json::from_str(v).unwrap())).collect();
        let expected: Vec<(String, serde_json::Value)> = members.iter().map(|(key, n)| {
            let value = match n % 4 { 0 => serde_json::json!(n), 1 => serde_json::json!(format!("{key}{n}")), 2 => serde_json::json!([n, {"x": n}]), _ => serde_json::Value::Null };
            (key.clone(), value)
        }).collect();
        proptest::prop_assert_eq!(parsed, expected);
        if members.is_empty() {
            proptest::prop_assert_eq!(object.text(), "{}");
        } else {
            proptest::prop_assert_eq!(object.text(), text.trim_matches(|c: char| c.is_ascii_whitespace()));
        }
    }
}

#[test]
fn members_are_cut_and_values_replaced_in_place() {
    let text = r#"{ "a" : 1 , "b":[2],"c" :{"d":3}  }"#;
    let mut object = Object::parse(text).unwrap();
    object.remove(1);
    assert_eq!(object.text(), r#"{ "a" : 1,"c" :{"d":3}  }"#, "the comma before it goes with it");
    object.replace_value(1, r#""long value""#);
    assert_eq!(object.get("c"), Some(r#""long value""#));
    object.remove(0);
    assert_eq!(object.iter().collect::<Vec<_>>(), [("c", r#""long value""#)]);
    object.remove(0);
    assert_eq!(object.iter().count(), 0);
    serde_json::from_str::<serde_json::Value>(object.text()).expect("still JSON");
    object.remove(0);
    object.replace_value(3, "1");
    assert_eq!(object.iter().count(), 0, "past the end: nothing");
}

proptest::proptest! {
    /// Whatever is cut and replaced, in whatever order, the text stays the
    /// JSON a tree would make (member order kept) and the index agrees
    /// with a parser of the new text.
    #[test]
    fn edits_keep_the_text_and_the_index_true(
        members in proptest::collection::vec(("[a-z]{1,6}", 0u32..1000), 1..8),
        spaces in proptest::collection::vec("[ \t\n]{0,2}", 16),
        edits in proptest::collection::vec((0u8..3, 0usize..8, 0u32..100_000), 0..10),
    ) {
        let mut text = String::from("{");
        for (i, (key, n)) in members.iter().enumerate() {
            if i > 0 {
                text.push_str(&spaces[i % 16]);
                text.push(',');
            }
            text.push_str(&format!("{}\"{key}\"{}:{}[{n}]", spaces[(i + 1) % 16], spaces[(i + 2) % 16], spaces[(i + 3) % 16]));
        }
        text.push_str(&spaces[15]);
        text.push('}');
        let mut object = Object::parse(&text).expect("an object");
        let mut expected: Vec<(String, serde_json::Value)> =
            members.iter().map(|(k, n)| (k.clone(), serde_json::json!([n]))).collect();
        for (kind, at, n) in edits {
            if kind == 0 {
                object.remove(at);
                if at < expected.len() {
                    expected.remove(at);
                }
            } else if kind == 2 {
                // Added after the last member, whatever the edits before.
                object.push(&format!("p{n}"), &format!("[{n}, true]"));
                expected.push((format!("p{n}"), serde_json::json!([n, true])));
            } else {
                object.replace_value(at, &format!("{{\"v\": {n}}}"));
                if let Some((_, v)) = expected.get_mut(at) {
                    *v = serde_json::json!({"v": n});
                }
            }
            let seen: Vec<(String, serde_json::Value)> =
                object.iter().map(|(k, v)| (k.to_owned(), serde_json::from_str(v).unwrap())).collect();
            proptest::prop_assert_eq!(&seen, &expected);
            let reparsed = Object::parse(object.text()).expect("still an object");
            let again: Vec<(String, serde_json::Value)> =
                reparsed.iter().map(|(k, v)| (k.to_owned(), serde_json::from_str(v).unwrap())).collect();
            proptest::prop_assert_eq!(&again, &expected);
        }
    }
}
