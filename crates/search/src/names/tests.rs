//! Unit tests of `names.rs`.

use super::*;

#[test]
fn identifiers_as_the_regex() {
    let ids: Vec<&str> = identifiers("Run jira_get_issue on -INC-12_, x; _a_ café__b é").collect();
    assert_eq!(ids, ["Run", "jira_get_issue", "on", "INC-12", "caf"]);
}

fn doc(exposed: &str, name: &str) -> Document {
    Document { exposed: exposed.into(), name: name.into(), ..Document::default() }
}

#[test]
fn multi_word_names_only() {
    let docs =
        [doc("fetch__fetch", "fetch"), doc("jira__jira_get_issue", "jira_get_issue"), doc("b__getSum", "getSum")];
    let names = Names::build(&docs);
    let named = |q| {
        let mut v: Vec<u32> = names.named(q).collect();
        v.sort_unstable();
        v.dedup();
        v
    };
    assert_eq!(named("fetch https://example.com"), Vec::<u32>::new());
    assert_eq!(named("call JIRA_GET_ISSUE for INC-12"), [1]);
    assert_eq!(named("jira__jira_get_issue and getsum"), [1, 2]);
    assert_eq!(named("fetch__fetch"), Vec::<u32>::new());
    assert_eq!(named("jira_get_issues"), Vec::<u32>::new());
}
