use serde_json::json;

use super::*;

fn upstream(name: &str, prefix: Option<&str>) -> UpstreamConfig {
    let mut v = json!({"name": name, "command": "server"});
    if let Some(p) = prefix {
        v["prefix"] = json!(p);
    }
    serde_json::from_value(v).expect("valid upstream config")
}

fn candidate<'a>(upstream: &'a str, original: &'a str, natural: &str) -> Candidate<'a> {
    Candidate { upstream, original, natural: natural.to_owned() }
}

#[test]
fn one_upstream_keeps_names_unless_a_prefix_is_set() {
    assert_eq!(natural_name(&upstream("fs", None), 1, "read"), "read");
    assert_eq!(natural_name(&upstream("fs", Some("files")), 1, "read"), "files__read");
    assert_eq!(natural_name(&upstream("fs", Some("")), 1, "read"), "read");
}

#[test]
fn several_upstreams_prefix_with_the_prefix_or_the_name() {
    assert_eq!(natural_name(&upstream("fs", None), 2, "read"), "fs__read");
    assert_eq!(natural_name(&upstream("fs", Some("files")), 3, "read"), "files__read");
    assert_eq!(natural_name(&upstream("fs", Some("")), 2, "read"), "read");
}

#[test]
fn unique_names_are_kept() {
    let mut problems = Vec::new();
    let c = [candidate("a", "x", "x"), candidate("b", "y", "y")];
    assert_eq!(assign(&c, &[], &mut problems), ["x", "y"]);
    assert!(problems.is_empty());
}

#[test]
fn the_first_occurrence_keeps_a_name_and_later_ones_get_suffixes() {
    let mut problems = Vec::new();
    let c = [candidate("a", "x", "x"), candidate("b", "x", "x"), candidate("c", "x", "x")];
    assert_eq!(assign(&c, &[], &mut problems), ["x", "x_2", "x_3"]);
    assert_eq!(
        problems,
        [
            "tool name collision on `x`: upstream `a` tool `x` keeps it; upstream `b` tool `x` is exposed as `x_2`",
            "tool name collision on `x`: upstream `a` tool `x` keeps it; upstream `c` tool `x` is exposed as `x_3`",
        ]
    );
}

#[test]
fn suffixes_avoid_names_other_tools_have_naturally() {
    let mut problems = Vec::new();
    // `x_2` belongs to a later tool, so the duplicate `x` must skip it.
    let c = [candidate("a", "x", "x"), candidate("b", "x", "x"), candidate("c", "x_2", "x_2")];
    assert_eq!(assign(&c, &[], &mut problems), ["x", "x_3", "x_2"]);
    assert_eq!(problems.len(), 1);
}

#[test]
fn the_describe_tool_name_is_reserved() {
    let mut problems = Vec::new();
    let c = [candidate("a", "describe_tools", "describe_tools"), candidate("b", "y", "y")];
    assert_eq!(
        assign(&c, &[Reserved { name: "describe_tools", what: "toolgate's describe tool" }], &mut problems),
        ["describe_tools_2", "y"]
    );
    assert_eq!(problems.len(), 1);
    assert!(problems[0].contains("upstream `a` tool `describe_tools`"), "{}", problems[0]);
    assert!(problems[0].contains("describe tool"), "{}", problems[0]);
    assert!(problems[0].contains("`describe_tools_2`"), "{}", problems[0]);
}

#[test]
fn flags_names_llm_clients_reject() {
    assert_eq!(name_problem("read_file.v2-beta"), None);
    assert_eq!(name_problem(&"a".repeat(64)), None);
    assert_eq!(name_problem(&"a".repeat(65)).as_deref(), Some("is 65 characters long (over 64)"));
    assert_eq!(name_problem("read file").as_deref(), Some("has characters outside [A-Za-z0-9_.-] (' ')"));
    assert_eq!(name_problem("a/b/c").as_deref(), Some("has characters outside [A-Za-z0-9_.-] ('/')"));
    assert_eq!(name_problem("lire_é").as_deref(), Some("has characters outside [A-Za-z0-9_.-] ('é')"));
    let both = name_problem(&format!("{}:", "a".repeat(64))).expect("a problem");
    assert!(both.starts_with("is 65 characters long") && both.contains("(':')"), "{both}");
}
