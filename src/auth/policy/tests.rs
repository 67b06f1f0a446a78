use proptest::prelude::*;

use super::*;

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| (*s).to_owned()).collect()
}

fn policy(upstreams: Option<&[&str]>, tools: &[&str], deny: &[&str]) -> ToolPolicy {
    let upstreams = upstreams.map(strings);
    ToolPolicy::new(upstreams.as_deref(), &strings(tools), &strings(deny)).expect("valid policy")
}

#[test]
fn the_issue_example() {
    let alice = policy(Some(&["github", "time"]), &["github__get_*", "time__*"], &["*__delete_*"]);
    assert!(alice.allows_tool("github__get_issue", "github__get_issue", "github"));
    assert!(alice.allows_tool("github__get_pull_request_files", "github__get_pull_request_files", "github"));
    assert!(!alice.allows_tool("github__create_issue", "github__create_issue", "github"), "not in the allowlist");
    assert!(alice.allows_tool("time__now", "time__now", "time"));
    assert!(!alice.allows_tool("time__delete_timer", "time__delete_timer", "time"), "denied after the allowlist");
    assert!(
        !alice.allows_tool("github__get_x__delete_y", "github__get_x__delete_y", "github"),
        "`*` on both sides of the deny pattern"
    );
    assert!(
        alice.allows_tool("github__get_delete_me", "github__get_delete_me", "github"),
        "`_delete_` is not `__delete_`"
    );
    assert!(alice.allows_upstream("github") && alice.allows_upstream("time"));
    assert!(!alice.allows_upstream("files"));
    // A name the globs allow, on an upstream the client may not use.
    assert!(!alice.allows_tool("time__now", "time__now", "files"));
    assert!(!alice.is_unrestricted());
}

#[test]
fn a_rename_never_moves_a_tool_past_the_policy() {
    // `b`'s tool `added` was pushed to `added_2` by a collision.
    let deny = policy(None, &["*"], &["added"]);
    assert!(!deny.allows_tool("added_2", "added", "b"), "a deny pattern matching the natural name hides it");
    assert!(!deny.allows_tool("added", "added", "a"));
    assert!(deny.allows_tool("other", "other", "a"));
    let allow = policy(None, &["added"], &[]);
    assert!(allow.allows_tool("added", "added", "a"), "the tool the operator saw under that name");
    assert!(!allow.allows_tool("added_2", "added", "b"), "the allowlist must allow the exposed name too");
    assert!(!allow.allows_tool("added", "other", "a"), "and the natural one");
    let prefixed = policy(None, &["b__*"], &[]);
    assert!(prefixed.allows_tool("b__added_2", "b__added", "b"));
}

#[test]
fn star_matches_any_run_of_characters_including_underscores() {
    let p = policy(None, &["git*issue"], &[]);
    assert!(p.allows_name("github__get_issue"));
    assert!(p.allows_name("gitissue"), "`*` matches nothing too");
    assert!(p.allows_name("git/la.b-issue"), "no character is special to `*`");
    assert!(!p.allows_name("github__get_issues"), "patterns are anchored at the end");
    assert!(!p.allows_name("a_github_issue"), "and at the start");
}

#[test]
fn patterns_are_anchored_and_case_sensitive() {
    let p = policy(None, &["github"], &[]);
    assert!(p.allows_name("github"));
    assert!(!p.allows_name("github__x"));
    assert!(!p.allows_name("GitHub"));
}

#[test]
fn question_marks_classes_alternatives_and_escapes() {
    let p = policy(None, &["t?", "v[0-9]_*", "{read,write}_file", r"lit\*"], &["v9_*"]);
    assert!(p.allows_name("t1") && p.allows_name("tx"));
    assert!(!p.allows_name("t") && !p.allows_name("t12"));
    assert!(p.allows_name("v2_run"));
    assert!(!p.allows_name("v9_run"), "denied");
    assert!(!p.allows_name("vx_run"));
    assert!(p.allows_name("read_file") && p.allows_name("write_file"));
    assert!(!p.allows_name("delete_file"));
    assert!(p.allows_name("lit*"));
    assert!(!p.allows_name("literal"), "an escaped star is a literal star");
}

#[test]
fn defaults_allow_everything_and_an_empty_allowlist_nothing() {
    let default = policy(None, &["*"], &[]);
    assert!(default.is_unrestricted());
    assert!(default.allows_tool("anything__at_all", "anything__at_all", "any"));
    assert!(ToolPolicy::allow_all().allows_tool("x", "x", "y"));
    assert!(ToolPolicy::allow_all().is_unrestricted());

    let nothing = policy(None, &[], &[]);
    assert!(!nothing.allows_name("x"));
    assert!(!nothing.allows_tool("x", "x", "y"));
    assert!(nothing.allows_upstream("y"), "the upstream itself is still allowed");

    let no_upstreams = policy(Some(&[]), &["*"], &[]);
    assert!(!no_upstreams.allows_upstream("github"));
    assert!(!no_upstreams.allows_tool("github__x", "github__x", "github"));
    assert!(!no_upstreams.is_unrestricted());

    let deny_all = policy(None, &["*"], &["*"]);
    assert!(!deny_all.allows_name("x"));
}

#[test]
fn bad_patterns_are_refused_with_a_reason() {
    assert_eq!(compile_glob("").unwrap_err(), "a tool pattern must not be empty (use \"*\" for every tool)");
    let unclosed = compile_glob("github__[get").unwrap_err();
    assert!(unclosed.starts_with("`github__[get` is not a valid glob pattern: "), "{unclosed}");
    let err = ToolPolicy::new(None, &strings(&["ok"]), &strings(&["{a,b"])).unwrap_err();
    assert!(err.0.starts_with("`{a,b` is not a valid glob pattern"), "{err}");
}

#[test]
fn debug_lists_the_patterns() {
    let p = policy(Some(&["time", "github"]), &["a*"], &["b"]);
    assert_eq!(
        format!("{p:?}"),
        r#"ToolPolicy { upstreams: Some(["github", "time"]), tools: ["a*"], deny_tools: ["b"] }"#
    );
}

/// Escapes every glob metacharacter of `name`.
fn literal(name: &str) -> String {
    name.chars().fold(String::new(), |mut out, c| {
        if "*?[]{}\\!,".contains(c) {
            out.push('\\');
        }
        out.push(c);
        out
    })
}

proptest! {
    #[test]
    fn star_allows_every_name(name in "\\PC{0,40}") {
        prop_assert!(policy(None, &["*"], &[]).allows_name(&name));
        prop_assert!(!policy(None, &["*"], &["*"]).allows_name(&name));
    }

    #[test]
    fn a_literal_pattern_allows_exactly_that_name(name in "[a-z_\\-*?\\[\\]{},]{1,20}", other in "[a-z_\\-*?]{1,20}") {
        let p = policy(None, &[&literal(&name)], &[]);
        prop_assert!(p.allows_name(&name));
        prop_assert_eq!(p.allows_name(&other), other == name);
    }

    #[test]
    fn a_tool_is_allowed_only_on_an_allowed_upstream(
        tool in "[a-z_]{1,12}", upstream in "[a-z]{1,6}", allowed in proptest::collection::vec("[a-z]{1,6}", 0..4)
    ) {
        let allowed: Vec<&str> = allowed.iter().map(String::as_str).collect();
        let p = policy(Some(&allowed), &["*"], &[]);
        prop_assert_eq!(p.allows_tool(&tool, &tool, &upstream), allowed.contains(&upstream.as_str()));
    }

    #[test]
    fn compiling_arbitrary_patterns_never_panics(pattern in "\\PC{0,40}") {
        let _ = compile_glob(&pattern);
    }

    #[test]
    fn prefix_star_is_a_prefix_test(prefix in "[a-z_]{0,8}", name in "[a-z_]{0,16}") {
        let p = policy(None, &[&format!("{prefix}*")], &[]);
        prop_assert_eq!(p.allows_name(&name), name.starts_with(&prefix));
    }
}
