use proptest::prelude::*;
use serde_json::json;

use super::*;

fn tools(names: &[&str]) -> Option<Selection> {
    Some(Selection::Tools(names.iter().map(|n| (*n).to_owned()).collect()))
}

#[test]
fn only_the_descriptions_resource_is_recognized() {
    assert_eq!(parse_selection("resource:///tool_descriptions"), Some(Selection::Missing));
    assert_eq!(parse_selection("RESOURCE:///tool_descriptions?tools=a"), tools(&["a"]));
    assert_eq!(parse_selection("resource:/tool_descriptions?tools=a"), tools(&["a"]));
    assert_eq!(parse_selection("resource://tool_descriptions?tools=a"), tools(&["a"]));
    assert_eq!(parse_selection("resource:///tool_descriptions#top"), Some(Selection::Missing));
    for other in [
        "resource:///other",
        "resource:///tool_descriptions/",
        "resource:///tool_descriptions/x?tools=a",
        "resource://host/tool_descriptions?tools=a",
        "file:///tool_descriptions?tools=a",
        "test://static/resource/1",
        "tool_descriptions?tools=a",
        "",
    ] {
        assert_eq!(parse_selection(other), None, "{other}");
    }
}

#[test]
fn a_missing_or_empty_tools_parameter_is_missing() {
    for uri in [
        "resource:///tool_descriptions?",
        "resource:///tool_descriptions?tools",
        "resource:///tool_descriptions?tools=",
        "resource:///tool_descriptions?tools=,, ,",
        "resource:///tool_descriptions?tools=%20%2C",
        "resource:///tool_descriptions?tool=a",
        "resource:///tool_descriptions?other=a&x",
    ] {
        assert_eq!(parse_selection(uri), Some(Selection::Missing), "{uri}");
    }
}

#[test]
fn names_are_split_decoded_trimmed_and_deduplicated() {
    assert_eq!(parse_selection("resource:///tool_descriptions?tools=a,b"), tools(&["a", "b"]));
    assert_eq!(parse_selection("resource:///tool_descriptions?tools=%20a%20,,b ,a"), tools(&["a", "b"]));
    assert_eq!(parse_selection("resource:///tool_descriptions?tools=gh__a%2Cfs__b"), tools(&["gh__a", "fs__b"]));
    assert_eq!(parse_selection("resource:///tool_descriptions?tools=caf%C3%A9"), tools(&["café"]));
    assert_eq!(parse_selection("resource:///tool_descriptions?tools=a+b"), tools(&["a+b"]), "`+` is literal");
    assert_eq!(parse_selection("resource:///tool_descriptions?x=1&tools=b&y&tools=a,b"), tools(&["b", "a"]));
    assert_eq!(parse_selection("resource:///tool_descriptions?tools=a#frag"), tools(&["a"]));
    assert_eq!(parse_selection("resource:///tool_descriptions?%74ools=a"), tools(&["a"]), "encoded key");
    assert_eq!(parse_selection("resource:///tool_descriptions?tools=%ZZ"), tools(&["%ZZ"]), "bad escapes stay");
}

#[test]
fn selection_uris_encode_only_what_needs_it() {
    assert_eq!(selection_uri(&["read_file"]), "resource:///tool_descriptions?tools=read_file");
    assert_eq!(selection_uri(&["a.b-c", "d"]), "resource:///tool_descriptions?tools=a.b-c,d");
    assert_eq!(
        selection_uri(&["a b", "x&y", "c,d", "é"]),
        "resource:///tool_descriptions?tools=a%20b,x%26y,c%2Cd,%C3%A9"
    );
}

#[test]
fn describe_arguments() {
    let ok = |v: serde_json::Value| parse_describe_args(Some(&v));
    assert_eq!(ok(json!({"tools": ["a", "b", "a"]})), Ok(vec!["a".to_owned(), "b".to_owned()]));
    assert_eq!(ok(json!({"tools": "a, b"})), Ok(vec!["a".to_owned(), "b".to_owned()]));
    assert_eq!(ok(json!({"tools": [" a ", 3, null]})), Ok(vec!["a".to_owned()]));
    let message = "You must specify one or more tool names in the 'tools' parameter.".to_owned();
    for bad in [json!({"tools": []}), json!({"tools": ""}), json!({"tools": [" ", 1]}), json!({"tool": "a"}), json!([])]
    {
        assert_eq!(ok(bad.clone()), Err(message.clone()), "{bad}");
    }
    assert_eq!(parse_describe_args(None), Err(message));
}

/// A tool name that survives a round trip: no comma (the separator) and no
/// surrounding whitespace (trimmed).
fn name() -> impl Strategy<Value = String> {
    "[^,]{1,16}".prop_map(|s| s.trim().to_owned()).prop_filter("non-empty", |s| !s.is_empty())
}

proptest! {
    #[test]
    fn never_panics(uri in "\\PC{0,80}") {
        let _ = parse_selection(&uri);
    }

    #[test]
    fn any_query_on_the_resource_parses(query in "\\PC{0,80}") {
        let parsed = parse_selection(&format!("resource:///tool_descriptions?{query}"));
        match parsed {
            Some(Selection::Missing) => {}
            Some(Selection::Tools(names)) => {
                prop_assert!(!names.is_empty());
                let mut seen = std::collections::HashSet::new();
                for n in &names {
                    prop_assert!(!n.is_empty() && n.trim() == n && !n.contains(','), "{n:?}");
                    prop_assert!(seen.insert(n), "duplicate {n:?}");
                }
            }
            None => prop_assert!(false, "the resource was not recognized"),
        }
    }

    #[test]
    fn selection_uris_round_trip(names in prop::collection::vec(name(), 1..6)) {
        let mut unique: Vec<String> = Vec::new();
        for n in names {
            if !unique.contains(&n) {
                unique.push(n);
            }
        }
        let uri = selection_uri(&unique);
        prop_assert_eq!(parse_selection(&uri), Some(Selection::Tools(unique)), "{}", uri);
    }
}
