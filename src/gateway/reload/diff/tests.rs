use super::*;
use crate::config::load_str_jailed;

fn config(text: &str) -> Config {
    load_str_jailed(text).expect("valid config")
}

const A: &str = "[[upstream]]\nname = \"a\"\ncommand = \"a-server\"\n";
const B: &str = "[[upstream]]\nname = \"b\"\nurl = \"http://127.0.0.1:1/mcp\"\n";
const C: &str = "[[upstream]]\nname = \"c\"\ncommand = \"c-server\"\n";

#[test]
fn the_same_file_changes_nothing() {
    let old = config(&format!("{A}{B}"));
    let changes = diff(&old, &old.clone());
    assert!(changes.is_empty());
    assert!(changes.needs_restart.is_empty());
    assert_eq!(changes.to_string(), "no upstream changed");
}

#[test]
fn upstreams_are_added_removed_and_changed_by_name() {
    let old = config(&format!("{A}{B}"));
    let new = config(&format!("{B}\nmode = \"passthrough\"\n{C}"));
    let changes = diff(&old, &new);
    assert_eq!(changes.added, ["c"]);
    assert_eq!(changes.removed, ["a"]);
    assert_eq!(changes.changed, ["b"]);
    assert!(changes.starts("c") && changes.starts("b") && !changes.starts("a"));
    assert_eq!(changes.to_string(), "upstreams added: c; upstreams removed: a; upstreams restarted: b");
}

#[test]
fn reordering_upstreams_changes_none_of_them() {
    let changes = diff(&config(&format!("{A}{B}")), &config(&format!("{B}{A}")));
    assert!(changes.is_empty(), "{changes}");
}

#[test]
fn a_tool_override_is_a_change_of_its_upstream_only() {
    let old = config(&format!("{A}{B}"));
    let new = config(&format!("{A}[upstream.tools.read]\ndescription = \"Read one file\"\n{B}"));
    assert_eq!(diff(&old, &new).changed, ["a"]);
}

#[test]
fn restart_only_sections_are_reported_and_kept() {
    let old = config(&format!("[server]\nlisten = \"127.0.0.1:1\"\n{A}"));
    let new = config(&format!("[server]\nlisten = \"127.0.0.1:2\"\n[disclosure]\ndescription_max_chars = 99\n{A}{C}"));
    let changes = diff(&old, &new);
    assert_eq!(changes.needs_restart, ["server", "disclosure"]);
    assert_eq!(changes.added, ["c"]);
    assert!(changes.to_string().ends_with("changed but kept until a restart: [server], [disclosure]"), "{changes}");

    let effective = effective(&old, new.clone());
    assert_eq!(effective.server, old.server, "the listener stays");
    assert_eq!(effective.disclosure, old.disclosure);
    assert_eq!(effective.upstreams, new.upstreams, "the upstreams are the new ones");
    assert!(diff(&old, &effective).needs_restart.is_empty());
}

const KEYED: &str = "[[auth.clients]]\nname = \"agent\"\napi_key = \"k-0123456789abcdef0123\"\n";

#[test]
fn a_client_policy_change_applies_but_turning_auth_on_needs_a_restart() {
    let open = config(A);
    let keyed = config(&format!("{KEYED}{A}"));
    let denied = config(&format!("{KEYED}deny_tools = [\"a__*\"]\n{A}"));

    let policy = diff(&keyed, &denied);
    assert!(policy.clients && policy.needs_restart.is_empty(), "{policy:?}");
    assert_eq!(policy.to_string(), "no upstream changed; client policies changed");
    assert_eq!(effective(&keyed, denied.clone()).auth, denied.auth, "the new policy is put in effect");

    let turned_on = diff(&open, &keyed);
    assert!(!turned_on.clients && turned_on.needs_restart == ["auth"], "{turned_on:?}");
    assert_eq!(effective(&open, keyed).auth, open.auth, "credentials wait for a restart");
}
