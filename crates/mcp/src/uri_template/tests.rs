use proptest::prelude::*;

use super::*;

fn matches(template: &str, uri: &str) -> Option<HashMap<String, String>> {
    UriTemplate::parse(template).unwrap_or_else(|| panic!("{template} parses")).matches(uri)
}

#[test]
fn level_one_variables_stay_within_a_segment() {
    assert_eq!(matches("test://template/{id}/data", "test://template/123/data").unwrap()["id"], "123");
    for no in ["test://template//data", "test://template/1/2/data", "test://template/1/datax", "file://template/1/data"]
    {
        assert!(matches("test://template/{id}/data", no).is_none(), "{no}");
    }
    assert_eq!(matches("demo://projects/{key}", "demo://projects/ATLAS").unwrap()["key"], "ATLAS");
    assert!(matches("demo://projects/{key}", "demo://projects/").is_none());
    assert!(matches("demo://projects/{key}", "demo://projects/A/B").is_none());
    assert!(matches("notes://{name}", "notes://todo?x").is_none());
    // A value may hold a comma (a list expanded by a client).
    let t = "resource:///tool_descriptions?tools={tools}";
    assert_eq!(matches(t, "resource:///tool_descriptions?tools=a,b").unwrap()["tools"], "a,b");
}

#[test]
fn variables_split_at_every_place_the_next_literal_fits() {
    let t = UriTemplate::parse("x://{a}-{b}").unwrap();
    let m = t.matches("x://one-two").unwrap();
    assert_eq!((m["a"].as_str(), m["b"].as_str()), ("one", "two"));
    assert_eq!(t.variables().collect::<Vec<_>>(), ["a", "b"]);
    // The first split that lets the rest match wins.
    let m = t.matches("x://one-two-three").unwrap();
    assert_eq!((m["a"].as_str(), m["b"].as_str()), ("one", "two-three"));
    let t = UriTemplate::parse("x://{a}.txt").unwrap();
    assert_eq!(t.matches("x://v1.2.txt").unwrap()["a"], "v1.2");
    // Multi-byte characters are never split.
    assert_eq!(matches("x://{a}é", "x://ééé").unwrap()["a"], "éé");
}

#[test]
fn reserved_variables_span_segments() {
    let m = matches("file:///{+path}", "file:///a/b/c.txt").unwrap();
    assert_eq!(m["path"], "a/b/c.txt");
    assert_eq!(matches("git://{+path}/HEAD", "git://a/b/HEAD").unwrap()["path"], "a/b");
    assert!(matches("file:///{+path}", "file:///").is_none(), "a variable is never empty");
}

#[test]
fn other_operators_match_loosely_and_capture_nothing() {
    let t = UriTemplate::parse("api://items{?page,limit}").unwrap();
    assert!(!t.captures_all());
    assert_eq!(t.variables().count(), 0);
    assert!(t.is_match("api://items?page=2&limit=5"));
    assert!(t.is_match("api://items"));
    assert!(!t.is_match("api://other"));
    for loose in
        ["x://{#frag}", "x://a{/seg*}", "x://a{.ext}", "x://a{;p}", "x://a{?q}z{&r}", "x://{v:3}", "x://{list*}"]
    {
        let parsed = UriTemplate::parse(loose);
        assert!(parsed.as_ref().is_some_and(|t| !t.captures_all()), "{loose}: {parsed:?}");
    }
    assert!(UriTemplate::parse("x://{id}").unwrap().captures_all());
}

#[test]
fn literal_templates_match_only_themselves() {
    let t = UriTemplate::parse("static://x").unwrap();
    assert!(t.is_match("static://x"));
    assert!(!t.is_match("static://y"));
    assert!(!t.is_match("static://xx"));
    assert_eq!(t.as_str(), "static://x");
}

#[test]
fn malformed_templates_are_refused() {
    for bad in ["x://{", "x://}", "x://{}", "x://{a}{b}", "x://{a b}", "x://{+}", "x://{a:x}", "x://{a,}"] {
        assert!(UriTemplate::parse(bad).is_none(), "{bad}");
    }
}

proptest! {
    /// Expanding a template with values the expression allows, then
    /// matching the result, gives the values back.
    #[test]
    fn expansions_match_and_give_their_values_back(
        a in "[A-Za-z0-9_,.~-]{1,12}",
        b in "[A-Za-z0-9_~-]{1,12}",
        path in "[A-Za-z0-9_./-]{1,20}",
    ) {
        let t = UriTemplate::parse("x://{a}/items/{b}/{+path}").unwrap();
        let uri = format!("x://{a}/items/{b}/{path}");
        let m = t.matches(&uri).unwrap();
        prop_assert_eq!(&m["a"], &a);
        prop_assert_eq!(&m["b"], &b);
        prop_assert_eq!(&m["path"], &path);
    }

    /// Whatever the input, parsing and matching never panic.
    #[test]
    fn arbitrary_templates_and_uris_never_panic(template in "[a-z{}+#?/:,*.é-]{0,16}", uri in "[a-z/?#,.é-]{0,16}") {
        if let Some(t) = UriTemplate::parse(&template) {
            let _ = t.matches(&uri);
        }
    }
}
